/* cpu_codegen.c — C + OpenMP source for a Wrapper IR program.
 *
 * One C function per kernel, named as in the Wrapper IR (so profilers show those names), and
 * the wrapper coil_cpu_entry that binds size symbols, checks the guards, allocates, calls
 * kernels and library ops, frees and fills the outputs, all in program order.
 *
 * A kernel iterates its x ranges (outer loops parallel with OpenMP when the work is large
 * enough, the innermost vectorised with `omp simd`). In a reduction kernel each x point runs
 * its instructions in order: values that vary over r are computed inside r loops, one loop per
 * reduce (recomputing the loads it needs, as Inductor's looped reductions do) and one final
 * loop for the stores of per-r values, which also runs the scans (in r order, no simd, each
 * with a running value); every other value is a scalar of the x point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* Parallelise a loop nest when it does at least this many element operations. */
#define PARALLEL_MIN_WORK 32768

static const char *
cpu_math_fn(coil_kop op, coil_dtype t)
{
  if (t != COIL_F32)
    return NULL;
  switch (op) { /* coil_cpu_math.h: branch-free, vectorisable */
  case COIL_KOP_EXP: return "coil_expf";
  case COIL_KOP_LOG: return "coil_logf";
  case COIL_KOP_LOG1P: return "coil_log1pf";
  case COIL_KOP_ERF: return "coil_erff";
  case COIL_KOP_TANH: return "coil_tanhf";
  case COIL_KOP_SIGMOID: return "coil_sigmoidf";
  case COIL_KOP_SIN: return "coil_sinf";
  case COIL_KOP_COS: return "coil_cosf";
  default: return NULL;
  }
}

static const coil_c_dialect dialect_math = {cpu_math_fn};
static const coil_c_dialect dialect_libm = {NULL};

typedef struct {
  const coil_wir_program *p;
  const coil_kernel *k;
  const coil_c_dialect *dl;
  coil_strbuf *b;
  bool *per_r;
  char **names;              /* per value: its C name */
  int64_t row;               /* r elements when constant and small enough to keep a row, else 0 */
  int64_t row_bytes;         /* bytes of rows declared so far in this kernel */
  bool *kept;                /* per value: kept in a row array vN_row[] by an earlier r loop */
  coil_strbuf *decls;        /* declarations of the rows, placed at the top of the x body */
  bool *done;                /* per value: a reduce already computed with an earlier one */
} kgen;

/* Rows of per-r values kept between the r loops of one x point live on the stack: at most
 * this many elements a row and this many bytes in all. */
#define ROW_MAX 16384
#define ROW_BYTES_MAX (256 * 1024)

static void
indent(coil_strbuf *b, int n)
{
  for (int i = 0; i < n; i++)
    coil_strbuf_puts(b, "  ");
}

static void
sym_name(const coil_wir_program *p, const coil_sym *s, coil_strbuf *b)
{
  coil_strbuf_puts(b, coil_sym_var_name(p->sym, s->var));
}

static void flat_r(kgen *g);

/* Emits instruction i (not REDUCE): a local `T vI = expr;` or a store. */
static void
emit_inst(kgen *g, int i, int depth)
{
  const coil_kinst *in = &g->k->insts[i];
  coil_strbuf *b = g->b;
  if (in->op == COIL_KOP_INDIRECT) { /* vI, then iI: in range, or 0 after recording the value */
    char pad[2 * 32 + 1];
    snprintf(pad, sizeof pad, "%*s", 2 * (depth < 32 ? depth : 32), "");
    coil_c_indirect_inst(g->p, g->k, i, (const char *const *)g->names,
                         "int64_t coil_none = INT64_MIN; __atomic_compare_exchange_n(coil_oob, &coil_none, %s, 0, "
                         "__ATOMIC_RELAXED, __ATOMIC_RELAXED);" /* the first found */, pad, b);
    return;
  }
  indent(b, depth);
  if (in->op == COIL_KOP_STORE) {
    coil_c_store_inst(g->p, g->k, i, (const char *const *)g->names, b);
    coil_strbuf_puts(b, "\n");
    return;
  }
  if (in->op == COIL_KOP_SCAN) { /* in the last r loop, run in order: vI_acc declared before it */
    char acc[32];
    snprintf(acc, sizeof acc, "%s_acc", g->names[i]);
    coil_strbuf_printf(b, "%s = ", acc);
    coil_c_scan_combine(in->dtype, in->red, acc, g->names[in->args[0]], b);
    coil_strbuf_printf(b, ";\n");
    indent(b, depth);
    coil_strbuf_printf(b, "const %s %s = %s;\n", coil_c_compute_type(in->dtype), g->names[i], acc);
    return;
  }
  coil_strbuf_printf(b, "const %s %s = ", coil_c_compute_type(in->dtype), g->names[i]);
  if (g->kept && g->kept[i]) {
    coil_strbuf_printf(b, "%s_row[", g->names[i]);
    flat_r(g);
    coil_strbuf_puts(b, "];\n");
    return;
  }
  coil_c_value(g->dl, g->p, g->k, i, (const char *const *)g->names, b);
  coil_strbuf_puts(b, ";\n");
}

/* Marks in cone[] the per-r instructions value i depends on (i included). */
static void
mark_cone(const kgen *g, int i, bool *cone)
{
  if (i < 0 || cone[i] || !g->per_r[i])
    return;
  cone[i] = true;
  if (g->kept[i])
    return; /* read back from its row: what it was computed from is not needed */
  const coil_kinst *in = &g->k->insts[i];
  for (int a = 0; a < coil_kop_arity(in->op); a++)
    mark_cone(g, in->args[a], cone);
  int deps[8], nd = coil_kinst_indirect_deps(g->p, g->k, i, deps, 8); /* the iN its index uses */
  for (int d = 0; d < nd; d++)
    mark_cone(g, deps[d], cone);
}

/* for (r0 ...) for (r1 ...) { — with `simd` on the innermost loop when asked */
static void
open_r_loops(kgen *g, int depth, const char *simd)
{
  if (g->k->nx == 0 && simd && simd[0]) {
    /* no x loop to share between threads: the reduction itself is split (per-thread partials,
     * combined by OpenMP) when it is large */
    indent(g->b, depth);
    coil_strbuf_printf(g->b, "#pragma omp parallel for%s collapse(%d)%s if((int64_t)1", g->k->nr == 1 ? " simd" : "",
                       g->k->nr, simd);
    for (int r = 0; r < g->k->nr; r++) {
      coil_strbuf_puts(g->b, " * (");
      coil_c_index(g->p, g->k->rsize[r], g->b);
      coil_strbuf_puts(g->b, ")");
    }
    coil_strbuf_printf(g->b, " >= %d) num_threads(coil_nthreads)\n", PARALLEL_MIN_WORK);
    simd = NULL;
  }
  for (int r = 0; r < g->k->nr; r++) {
    if (r == g->k->nr - 1 && simd) {
      indent(g->b, depth + r);
      coil_strbuf_printf(g->b, "#pragma omp simd%s\n", simd);
    }
    indent(g->b, depth + r);
    coil_strbuf_puts(g->b, "for (int64_t ");
    sym_name(g->p, g->k->rvars[r], g->b);
    coil_strbuf_puts(g->b, " = 0; ");
    sym_name(g->p, g->k->rvars[r], g->b);
    coil_strbuf_puts(g->b, " < ");
    coil_c_index(g->p, g->k->rsize[r], g->b);
    coil_strbuf_puts(g->b, "; ");
    sym_name(g->p, g->k->rvars[r], g->b);
    coil_strbuf_puts(g->b, "++) {\n");
  }
}

static void
close_loops(coil_strbuf *b, int depth, int n)
{
  for (int r = n - 1; r >= 0; r--) {
    indent(b, depth + r);
    coil_strbuf_puts(b, "}\n");
  }
}

static void
type_extreme(coil_strbuf *b, coil_dtype t, bool smallest)
{
  if (coil_dtype_is_float(t)) {
    coil_strbuf_printf(b, "%sINFINITY", smallest ? "-" : "");
    return;
  }
  static const char *const lo[] = {[COIL_I64] = "INT64_MIN", [COIL_I32] = "INT32_MIN", [COIL_I16] = "INT16_MIN",
                                   [COIL_I8] = "INT8_MIN", [COIL_U8] = "0", [COIL_BOOL] = "false"};
  static const char *const hi[] = {[COIL_I64] = "INT64_MAX", [COIL_I32] = "INT32_MAX", [COIL_I16] = "INT16_MAX",
                                   [COIL_I8] = "INT8_MAX", [COIL_U8] = "UINT8_MAX", [COIL_BOOL] = "true"};
  coil_strbuf_puts(b, smallest ? lo[t] : hi[t]);
}

/* The flat index over the r ranges (for argmax/argmin): ((r0 * R1 + r1) * R2 + r2). */
static void
flat_r(kgen *g)
{
  coil_strbuf e = {0};
  sym_name(g->p, g->k->rvars[0], &e);
  for (int r = 1; r < g->k->nr; r++) {
    coil_strbuf next = {0};
    coil_strbuf_printf(&next, "(%s) * (", e.s);
    coil_c_index(g->p, g->k->rsize[r], &next);
    coil_strbuf_puts(&next, ") + ");
    sym_name(g->p, g->k->rvars[r], &next);
    coil_strbuf_free(&e);
    e = next;
  }
  coil_strbuf_printf(g->b, "(int64_t)(%s)", e.s);
  coil_strbuf_free(&e);
}

/* The per-r instructions reduce i needs (its cone), and which of them to keep in rows: a value
 * later loops need again is kept in a row instead of computed again (the cost of recomputing
 * exp in softmax's last loop, say). Rows are declared in g->decls, before the x body runs
 * the loops that fill and read them. */
static void
plan_cone(kgen *g, int i, int depth, bool *cone, bool *keep)
{
  const coil_kinst *in = &g->k->insts[i];
  mark_cone(g, in->args[0], cone);
  for (int j = 0; j < g->k->ninsts && g->row; j++) {
    if (!cone[j] || g->kept[j] || g->k->insts[j].op == COIL_KOP_LOAD || g->k->insts[j].op == COIL_KOP_INDEX ||
        g->k->insts[j].op == COIL_KOP_INDIRECT) /* recomputed: its iN is declared where it is */
      continue;
    bool later = false;
    for (int q = i + 1; q < g->k->ninsts && !later; q++) {
      if (g->done[q])
        continue; /* computed with reduce i, in its loop */
      for (int a = 0; a < coil_kop_arity(g->k->insts[q].op); a++)
        later = later || g->k->insts[q].args[a] == j;
    }
    int64_t bytes = g->row * (int64_t)sizeof(double);
    if (later && g->row_bytes + bytes <= ROW_BYTES_MAX) {
      g->row_bytes += bytes;
      keep[j] = true;
      indent(g->decls, depth);
      coil_strbuf_printf(g->decls, "%s %s_row[%lld];\n", coil_c_compute_type(g->k->insts[j].dtype), g->names[j],
                         (long long)g->row);
    }
  }
}

/* The body of an r loop over a cone: its instructions, then the stores of the kept rows. */
static void
emit_cone(kgen *g, const bool *cone, const bool *keep, int inner)
{
  for (int j = 0; j < g->k->ninsts; j++)
    if (cone[j])
      emit_inst(g, j, inner);
  for (int j = 0; j < g->k->ninsts; j++)
    if (keep[j]) {
      indent(g->b, inner);
      coil_strbuf_printf(g->b, "%s_row[", g->names[j]);
      flat_r(g);
      coil_strbuf_printf(g->b, "] = %s;\n", g->names[j]);
    }
}

/* Marks the rows of a finished r loop as kept, for the loops after it. */
static void
rows_filled(kgen *g, const bool *keep)
{
  for (int j = 0; j < g->k->ninsts; j++)
    g->kept[j] = g->kept[j] || keep[j];
}

static bool
is_welford(coil_reduction r)
{
  return r == COIL_REDUCE_WELFORD_MEAN || r == COIL_REDUCE_WELFORD_M2;
}

/* Lanes of a Welford reduction: the innermost r loop runs in chunks of this many elements,
 * each element into its own lane, so every lane has seen the same count and one reciprocal
 * serves a whole chunk; the loop over a chunk vectorises. */
#define WELFORD_LANES 16

/* welford_mean and welford_m2 of one operand (and every other welford reduce of it in the
 * kernel), computed together in one pass:
 *
 *   lanes m[L], q[L] and a chunk count c; for each full chunk of the innermost r range,
 *     w = 1/++c; for each lane l: d = x - m[l]; m[l] += d*w; q[l] += d*(x - m[l]);
 *   the elements past the last full chunk update one scalar Welford triple;
 *   then lanes and tail combine by Chan's formula (coil_welford_*, in the prelude).
 *
 * With no x loop, threads split the outermost r loop (or the chunks), each with its own
 * lanes, and combine under `omp critical`. */
static void
emit_welford(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  const coil_kinst *in = &k->insts[i];
  coil_strbuf *b = g->b;
  int nr = k->nr, a = in->args[0];
  bool dbl = k->insts[a].dtype == COIL_F64;
  const char *T = dbl ? "double" : "float", *fn = dbl ? "coil_welford_d" : "coil_welford_f";
  const char *acc = g->names[i], *v = g->names[a];
  for (int j = i; j < k->ninsts; j++)
    if (k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a)
      g->done[j] = true;
  bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
  bool *keep = calloc((size_t)k->ninsts + 1, sizeof(bool));
  plan_cone(g, i, depth, cone, keep);
  bool par = k->nx == 0;
  int d = depth;
  indent(b, d);
  coil_strbuf_printf(b, "%s %s_M = 0, %s_Q = 0;\n", T, acc, acc);
  indent(b, d);
  coil_strbuf_printf(b, "int64_t %s_N = 0;\n", acc);
  indent(b, d);
  if (par) {
    coil_strbuf_puts(b, "#pragma omp parallel if((int64_t)1");
    for (int r = 0; r < nr; r++) {
      coil_strbuf_puts(b, " * (");
      coil_c_index(g->p, k->rsize[r], b);
      coil_strbuf_puts(b, ")");
    }
    coil_strbuf_printf(b, " >= %d) num_threads(coil_nthreads)\n", PARALLEL_MIN_WORK);
    indent(b, d);
  }
  coil_strbuf_puts(b, "{\n");
  d++;
  indent(b, d);
  coil_strbuf_printf(b, "%s %s_m[%d] = {0}, %s_q[%d] = {0}, %s_tm = 0, %s_tq = 0;\n", T, acc, WELFORD_LANES, acc, WELFORD_LANES, acc, acc);
  indent(b, d);
  coil_strbuf_printf(b, "int64_t %s_c = 0, %s_tn = 0;\n", acc, acc);
  for (int r = 0; r < nr - 1; r++) { /* the outer r loops */
    if (par && r == 0) {
      indent(b, d);
      coil_strbuf_puts(b, "#pragma omp for nowait\n");
    }
    indent(b, d);
    const char *rv = coil_sym_var_name(g->p->sym, k->rvars[r]->var);
    coil_strbuf_printf(b, "for (int64_t %s = 0; %s < ", rv, rv);
    coil_c_index(g->p, k->rsize[r], b);
    coil_strbuf_printf(b, "; %s++) {\n", rv);
    d++;
  }
  const char *rl = coil_sym_var_name(g->p->sym, k->rvars[nr - 1]->var);
  indent(b, d);
  coil_strbuf_printf(b, "const int64_t %s_end = (", acc);
  coil_c_index(g->p, k->rsize[nr - 1], b);
  coil_strbuf_printf(b, ") / %d * %d;\n", WELFORD_LANES, WELFORD_LANES);
  if (par && nr == 1) {
    indent(b, d);
    coil_strbuf_puts(b, "#pragma omp for nowait\n");
  }
  indent(b, d);
  coil_strbuf_printf(b, "for (int64_t %s_c = 0; %s_c < %s_end; %s_c += %d) {\n", rl, rl, acc, rl, WELFORD_LANES);
  indent(b, d + 1);
  coil_strbuf_printf(b, "const %s %s_w = (%s)1 / (%s)++%s_c;\n", T, acc, T, T, acc);
  indent(b, d + 1);
  coil_strbuf_puts(b, "#pragma omp simd\n");
  indent(b, d + 1);
  coil_strbuf_printf(b, "for (int64_t %s = %s_c; %s < %s_c + %d; %s++) {\n", rl, rl, rl, rl, WELFORD_LANES, rl);
  emit_cone(g, cone, keep, d + 2);
  indent(b, d + 2);
  coil_strbuf_printf(b, "const %s %s_d = %s - %s_m[%s - %s_c];\n", T, acc, v, acc, rl, rl);
  indent(b, d + 2);
  coil_strbuf_printf(b, "%s_m[%s - %s_c] += %s_d * %s_w;\n", acc, rl, rl, acc, acc);
  indent(b, d + 2);
  coil_strbuf_printf(b, "%s_q[%s - %s_c] += %s_d * (%s - %s_m[%s - %s_c]);\n", acc, rl, rl, acc, v, acc, rl, rl);
  indent(b, d + 1);
  coil_strbuf_puts(b, "}\n");
  indent(b, d);
  coil_strbuf_puts(b, "}\n");
  if (par && nr == 1) { /* the tail of the one r loop: one thread's */
    indent(b, d);
    coil_strbuf_puts(b, "if (omp_get_thread_num() == 0)\n");
  }
  indent(b, d);
  coil_strbuf_printf(b, "for (int64_t %s = %s_end; %s < ", rl, acc, rl);
  coil_c_index(g->p, k->rsize[nr - 1], b);
  coil_strbuf_printf(b, "; %s++) {\n", rl);
  emit_cone(g, cone, keep, d + 1);
  indent(b, d + 1);
  coil_strbuf_printf(b, "const %s %s_d = %s - %s_tm;\n", T, acc, v, acc);
  indent(b, d + 1);
  coil_strbuf_printf(b, "%s_tm += %s_d / (%s)++%s_tn;\n", acc, acc, T, acc);
  indent(b, d + 1);
  coil_strbuf_printf(b, "%s_tq += %s_d * (%s - %s_tm);\n", acc, acc, v, acc);
  indent(b, d);
  coil_strbuf_puts(b, "}\n");
  for (int r = nr - 2; r >= 0; r--) {
    indent(b, --d);
    coil_strbuf_puts(b, "}\n");
  }
  if (par) {
    indent(b, d);
    coil_strbuf_puts(b, "#pragma omp critical\n");
  }
  indent(b, d);
  coil_strbuf_puts(b, "{\n");
  indent(b, d + 1);
  coil_strbuf_printf(b, "for (int %s_l = 0; %s_l < %d; %s_l++)\n", acc, acc, WELFORD_LANES, acc);
  indent(b, d + 2);
  coil_strbuf_printf(b, "%s(&%s_M, &%s_Q, &%s_N, %s_m[%s_l], %s_q[%s_l], %s_c);\n", fn, acc, acc, acc, acc, acc, acc, acc, acc);
  indent(b, d + 1);
  coil_strbuf_printf(b, "%s(&%s_M, &%s_Q, &%s_N, %s_tm, %s_tq, %s_tn);\n", fn, acc, acc, acc, acc, acc, acc);
  indent(b, d);
  coil_strbuf_puts(b, "}\n");
  indent(b, --d);
  coil_strbuf_puts(b, "}\n");
  rows_filled(g, keep);
  free(keep);
  free(cone);
  for (int j = i; j < k->ninsts; j++)
    if (g->done[j] && k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a) {
      indent(b, depth);
      if (k->insts[j].red == COIL_REDUCE_WELFORD_M2)
        coil_strbuf_printf(b, "const %s %s = %s_Q;\n", T, g->names[j], acc);
      else
        coil_strbuf_printf(b, "const %s %s = %s_N ? %s_M : NAN;\n", T, g->names[j], acc, acc);
    }
}

/* One reduce: an accumulator, an r loop over its cone, the combine, then the x-level value. */
static void
emit_reduce(kgen *g, int i, int depth)
{
  const coil_kinst *in = &g->k->insts[i];
  const coil_kinst *src = &g->k->insts[in->args[0]];
  coil_strbuf *b = g->b;
  const char *T = coil_c_compute_type(src->dtype), *acc = g->names[i];
  coil_reduction red = in->red;
  if (is_welford(red)) {
    emit_welford(g, i, depth);
    return;
  }
  bool arg = red == COIL_REDUCE_ARGMAX || red == COIL_REDUCE_ARGMIN;
  indent(b, depth);
  switch (red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "%s %s = 0;\n", coil_c_compute_type(in->dtype), acc); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "%s %s = 1;\n", coil_c_compute_type(in->dtype), acc); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "bool %s = false;\n", acc); break;
  case COIL_REDUCE_MAX: case COIL_REDUCE_MIN: case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "%s %s%s = ", T, acc, arg ? "_best" : "");
    type_extreme(b, src->dtype, red == COIL_REDUCE_MAX || red == COIL_REDUCE_ARGMAX);
    coil_strbuf_puts(b, ";\n");
    if (arg) {
      indent(b, depth);
      coil_strbuf_printf(b, "int64_t %s = 0;\n", acc);
    }
    break;
  default: break;
  }
  /* float max/min: a vectorisable max plus a NaN flag (torch.max propagates NaN) */
  bool fl = coil_dtype_is_float(src->dtype);
  bool minmax = red == COIL_REDUCE_MAX || red == COIL_REDUCE_MIN;
  if (minmax && fl) {
    indent(b, depth);
    coil_strbuf_printf(b, "int %s_nan = 0;\n", acc);
  }
  char clause[96] = "";
  if (red == COIL_REDUCE_SUM || red == COIL_REDUCE_PROD)
    snprintf(clause, sizeof clause, " reduction(%c:%s)", red == COIL_REDUCE_SUM ? '+' : '*', acc);
  else if (red == COIL_REDUCE_ANY)
    snprintf(clause, sizeof clause, " reduction(||:%s)", acc);
  else if (minmax)
    snprintf(clause, sizeof clause, " reduction(%s:%s)%s%s%s", red == COIL_REDUCE_MAX ? "max" : "min", acc,
             fl ? " reduction(|:" : "", fl ? acc : "", fl ? "_nan)" : "");
  bool *cone = calloc((size_t)g->k->ninsts + 1, sizeof(bool));
  bool *keep = calloc((size_t)g->k->ninsts + 1, sizeof(bool));
  plan_cone(g, i, depth, cone, keep);
  open_r_loops(g, depth, clause[0] ? clause : NULL);
  int inner = depth + g->k->nr;
  emit_cone(g, cone, keep, inner);
  rows_filled(g, keep);
  free(keep);
  free(cone);
  const char *v = g->names[in->args[0]];
  indent(b, inner);
  switch (red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "%s += %s;\n", acc, v); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "%s *= %s;\n", acc, v); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "%s = %s || (%s != 0);\n", acc, acc, v); break;
  case COIL_REDUCE_MAX: case COIL_REDUCE_MIN: {
    const char *cmp = red == COIL_REDUCE_MAX ? ">" : "<";
    coil_strbuf_printf(b, "%s = %s %s %s ? %s : %s;\n", acc, v, cmp, acc, v, acc);
    if (fl) {
      indent(b, inner);
      coil_strbuf_printf(b, "%s_nan |= %s != %s;\n", acc, v, v);
    }
    break;
  }
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN: {
    const char *cmp = red == COIL_REDUCE_ARGMAX ? ">" : "<";
    if (fl)
      coil_strbuf_printf(b, "if (%s_best == %s_best && (%s != %s || %s %s %s_best)) { %s_best = %s; %s = ", acc, acc, v, v,
                         v, cmp, acc, acc, v, acc);
    else
      coil_strbuf_printf(b, "if (%s %s %s_best) { %s_best = %s; %s = ", v, cmp, acc, acc, v, acc);
    flat_r(g);
    coil_strbuf_puts(b, "; }\n");
    break;
  }
  default: break;
  }
  close_loops(b, depth, g->k->nr);
  if (minmax && fl) {
    indent(b, depth);
    coil_strbuf_printf(b, "if (%s_nan)\n", acc);
    indent(b, depth + 1);
    coil_strbuf_printf(b, "%s = NAN;\n", acc);
  }
}

static void
emit_params(kgen *g)
{
  const coil_kernel *k = g->k;
  coil_strbuf_printf(g->b, "void\n%s(", k->name);
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(g->b, "%s%s%s *%s", i ? ", " : "", k->params[i].is_output ? "" : "const ",
                       coil_c_storage_type(k->params[i].dtype), k->params[i].name);
  for (int i = 0; i < k->nsyms; i++) {
    coil_strbuf_printf(g->b, "%sint64_t ", k->nparams || i ? ", " : "");
    sym_name(g->p, k->syms[i], g->b);
  }
  if (coil_kernel_has_indirect(k))
    coil_strbuf_printf(g->b, "%sint64_t *coil_oob", k->nparams || k->nsyms ? ", " : "");
  else if (!k->nparams && !k->nsyms)
    coil_strbuf_puts(g->b, "void");
  coil_strbuf_puts(g->b, ")\n{\n");
}

/* The x loops: the outer ones parallel (collapsed) when the work is large, the innermost
 * vectorised for pointwise kernels. Returns the depth inside. */
static int
open_x_loops(kgen *g)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  if (!k->nx)
    return 1;
  /* work = elements of x times elements of r, for the parallel threshold */
  coil_strbuf_puts(b, "  const int64_t work = (int64_t)1");
  for (int i = 0; i < k->nx + k->nr; i++) {
    coil_strbuf_puts(b, " * (");
    coil_c_index(g->p, i < k->nx ? k->xsize[i] : k->rsize[i - k->nx], b);
    coil_strbuf_puts(b, ")");
  }
  coil_strbuf_puts(b, ";\n  (void)work;\n");
  bool pointwise = k->nr == 0;
  /* combining stores (a scatter) are atomic, and points that store to one element are no
   * independent simd lanes */
  bool simd = pointwise && !coil_kernel_has_combining_store(k);
  int par = pointwise && k->nx > 1 ? k->nx - 1 : k->nx; /* loops under `parallel for` */
  if (pointwise && k->nx == 1)
    coil_strbuf_printf(b, "  #pragma omp parallel for%s if(work >= %d) num_threads(coil_nthreads)\n",
                       simd ? " simd" : "", PARALLEL_MIN_WORK);
  else
    coil_strbuf_printf(b, "  #pragma omp parallel for collapse(%d) if(work >= %d) num_threads(coil_nthreads)\n", par,
                       PARALLEL_MIN_WORK);
  for (int i = 0; i < k->nx; i++) {
    if (simd && k->nx > 1 && i == k->nx - 1) {
      indent(b, i + 1);
      coil_strbuf_puts(b, "#pragma omp simd\n");
    }
    indent(b, i + 1);
    coil_strbuf_puts(b, "for (int64_t ");
    sym_name(g->p, k->xvars[i], b);
    coil_strbuf_puts(b, " = 0; ");
    sym_name(g->p, k->xvars[i], b);
    coil_strbuf_puts(b, " < ");
    coil_c_index(g->p, k->xsize[i], b);
    coil_strbuf_puts(b, "; ");
    sym_name(g->p, k->xvars[i], b);
    coil_strbuf_puts(b, "++) {\n");
  }
  return k->nx + 1;
}

static void
emit_kernel(const coil_wir_program *p, const coil_kernel *k, const coil_c_dialect *dl, coil_strbuf *b)
{
  coil_c_set_loop_ranges(p, k);
  coil_strbuf body = {0}, decls = {0};
  kgen g = {p, k, dl, b, calloc((size_t)k->ninsts + 1, sizeof(bool)), calloc((size_t)k->ninsts + 1, sizeof(char *)),
            0, 0, calloc((size_t)k->ninsts + 1, sizeof(bool)), &decls, calloc((size_t)k->ninsts + 1, sizeof(bool))};
  coil_c_per_r(p, k, g.per_r);
  for (int i = 0; i < k->ninsts; i++) {
    g.names[i] = malloc(16);
    snprintf(g.names[i], 16, "v%d", i);
  }
  g.row = k->nr ? 1 : 0;
  for (int r = 0; r < k->nr; r++) {
    int64_t n;
    g.row = coil_sym_is_const(k->rsize[r], &n) && n > 0 && g.row * n <= ROW_MAX ? g.row * n : 0;
  }
  if (k->source_ops)
    coil_strbuf_printf(b, "/* %s */\n", k->source_ops);
  emit_params(&g);
  int depth = open_x_loops(&g);
  g.b = &body; /* the x body goes apart: the rows it keeps are declared before it */
  bool any_per_r_store = false;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_REDUCE) {
      if (!g.done[i])
        emit_reduce(&g, i, depth);
    }
    else if (in->op == COIL_KOP_STORE && g.per_r[i]) /* a per-r value, or a per-x one stored per r */
      any_per_r_store = true;
    else if (!g.per_r[i])
      emit_inst(&g, i, depth);
  }
  if (any_per_r_store) { /* the last r loop: every per-r store and what it needs */
    bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
    for (int i = 0; i < k->ninsts; i++)
      if (k->insts[i].op == COIL_KOP_STORE && g.per_r[i])
        mark_cone(&g, k->insts[i].args[0], cone);
    bool scan = false; /* a scan's running value, and a loop that runs in order */
    for (int i = 0; i < k->ninsts; i++)
      if (cone[i] && k->insts[i].op == COIL_KOP_SCAN) {
        indent(&body, depth);
        coil_strbuf_printf(&body, "%s %s_acc = ", coil_c_compute_type(k->insts[i].dtype), g.names[i]);
        coil_c_scan_identity(k->insts[i].dtype, k->insts[i].red, &body);
        coil_strbuf_puts(&body, ";\n");
        scan = true;
      }
    open_r_loops(&g, depth, scan ? NULL : "");
    for (int i = 0; i < k->ninsts; i++)
      if (cone[i] || (k->insts[i].op == COIL_KOP_STORE && g.per_r[i]))
        emit_inst(&g, i, depth + k->nr);
    close_loops(&body, depth, k->nr);
    free(cone);
  }
  if (decls.len)
    coil_strbuf_puts(b, decls.s);
  if (body.len)
    coil_strbuf_puts(b, body.s);
  close_loops(b, 1, k->nx);
  coil_strbuf_puts(b, "}\n\n");
  coil_strbuf_free(&body);
  coil_strbuf_free(&decls);
  for (int i = 0; i < k->ninsts; i++)
    free(g.names[i]);
  free(g.names);
  free(g.per_r);
  free(g.kept);
  free(g.done);
}

/* ---- the wrapper ---- */

static void
bytes_of(const coil_wir_program *p, const coil_buffer *w, coil_strbuf *b)
{
  coil_strbuf_printf(b, "(int64_t)%zu", coil_dtype_size(w->dtype));
  for (int i = 0; i < w->rank; i++) {
    coil_strbuf_puts(b, " * (");
    coil_c_index(p, w->sizes[i], b);
    coil_strbuf_puts(b, ")");
  }
}

static int
input_of(const coil_wir_program *p, int buffer)
{
  for (int i = 0; i < p->ninputs; i++)
    if (p->inputs[i].buffer == buffer)
      return i;
  return -1;
}

static void
emit_wrapper(const coil_wir_program *p, coil_strbuf *b)
{
  const coil_line *out = &p->lines[p->nlines - 1];
  int *out_of = malloc(sizeof(int) * (size_t)(p->nbuffers + 1)); /* buffer -> first output slot */
  for (int i = 0; i < p->nbuffers; i++)
    out_of[i] = -1;
  for (int k = 0; k < out->nargs; k++)
    if (out_of[out->args[k]] < 0)
      out_of[out->args[k]] = k;
  for (int k = 0; k < out->nargs; k++) { /* the storage of a reshaped output: the caller's too */
    int st = coil_wir_output_storage((coil_wir_program *)p, k);
    if (st >= 0 && out_of[st] < 0)
      out_of[st] = k;
  }
  /* a freed buffer whose storage a later reuse takes keeps it: only the last holder releases */
  bool *reused = calloc((size_t)p->nbuffers + 1, sizeof(bool));
  for (int i = 0; i < p->nbuffers; i++)
    if (p->buffers[i].kind == COIL_BUF_REUSE && p->buffers[i].base >= 0)
      reused[p->buffers[i].base] = true;
  coil_strbuf_puts(b, "int\ncoil_cpu_entry(const coil_cpu_rt *rt, void *const *in, const int64_t *const *in_sizes,\n"
                      "               const int64_t *const *in_strides, void *const *out)\n{\n");
  coil_strbuf_puts(b, "  coil_nthreads = rt->threads > 0 ? rt->threads : omp_get_max_threads();\n");
  int nv = coil_sym_nvars(p->sym);
  coil_strbuf_printf(b, "  int64_t symv[%d] = {0};\n  (void)symv;\n", nv > 0 ? nv : 1);
  coil_strbuf_puts(b, "  int64_t coil_oob = INT64_MIN; /* an index found out of range */\n  (void)coil_oob;\n");
  for (int i = 0; i < p->nlines; i++) /* the size symbols, bound below */
    if (p->lines[i].kind == COIL_LINE_SYMBOL)
      coil_strbuf_printf(b, "  int64_t %s = 0;\n", coil_sym_var_name(p->sym, p->lines[i].sym->var));
  for (int i = 0; i < p->ninputs; i++)
    coil_strbuf_printf(b, "  char *%s = in[%d];\n", p->buffers[p->inputs[i].buffer].name, i);
  for (int li = 0; li < p->nlines; li++) {
    const coil_line *l = &p->lines[li];
    const coil_buffer *w = l->buffer >= 0 && l->buffer < p->nbuffers ? &p->buffers[l->buffer] : NULL;
    switch (l->kind) {
    case COIL_LINE_COMMENT:
      coil_strbuf_puts(b, "  /* ");
      for (const char *c = l->text; *c; c++) /* never let a comment close itself */
        coil_strbuf_putn(b, c[0] == '*' && c[1] == '/' ? "* " : c, 1);
      coil_strbuf_puts(b, " */\n");
      break;
    case COIL_LINE_SYMBOL: {
      const char *s = coil_sym_var_name(p->sym, l->sym->var);
      coil_strbuf_printf(b, "  %s = in_%s[%d][%d];\n  symv[%d] = %s;\n", s, l->is_stride ? "strides" : "sizes",
                         input_of(p, l->buffer), l->dim, l->sym->var, s);
      break;
    }
    case COIL_LINE_ASSERT: {
      int i = input_of(p, l->buffer);
      coil_strbuf cond = {0}, what = {0};
      if (l->assert_kind == COIL_ASSERT_ALIGNED) {
        coil_strbuf_printf(&cond, "((uintptr_t)in[%d] %% %lld) == 0", i, (long long)l->align);
        coil_strbuf_printf(&what, "%s is not aligned to %lld bytes", w->name, (long long)l->align);
      } else {
        const char *kind = l->assert_kind == COIL_ASSERT_SIZE ? "size" : "stride";
        coil_strbuf_printf(&cond, "in_%ss[%d][%d] == (", kind, i, l->dim);
        coil_c_index(p, l->value, &cond);
        coil_strbuf_puts(&cond, ")");
        coil_strbuf_printf(&what, "%s.%s(%d) must be ", w->name, kind, l->dim);
        coil_sym_print(p->sym, l->value, COIL_SYM_PY_SYNTAX, &what);
      }
      coil_strbuf_printf(b, "  if (!(%s))\n    return rt->fail(rt->ctx, %d, \"%s\");\n", cond.s, li, what.s);
      coil_strbuf_free(&cond);
      coil_strbuf_free(&what);
      break;
    }
    case COIL_LINE_ALLOC:
      if (out_of[l->buffer] >= 0) { /* an output: the caller's memory */
        coil_strbuf_printf(b, "  char *%s = out[%d];\n", w->name, out_of[l->buffer]);
        break;
      }
      coil_strbuf_printf(b, "  char *%s = rt->alloc(rt->ctx, ", w->name);
      bytes_of(p, w, b);
      coil_strbuf_printf(b, ");\n  if (!%s)\n    return rt->fail(rt->ctx, %d, \"out of memory\");\n", w->name, li);
      break;
    case COIL_LINE_REUSE:
      coil_strbuf_printf(b, "  char *%s = %s;\n", w->name, p->buffers[w->base].name);
      break;
    case COIL_LINE_VIEW:
      coil_strbuf_printf(b, "  char *%s = %s + %zu * (", w->name, p->buffers[w->base].name, coil_dtype_size(w->dtype));
      coil_c_index(p, w->offset, b);
      coil_strbuf_puts(b, ");\n");
      break;
    case COIL_LINE_FREE:
      if (out_of[l->buffer] < 0 && !reused[l->buffer])
        coil_strbuf_printf(b, "  rt->release(rt->ctx, %s);\n", w->name);
      break;
    case COIL_LINE_KERNEL_CALL: {
      const coil_kernel *k = &p->kernels[l->kernel];
      coil_strbuf_printf(b, "  %s(", k->name);
      for (int a = 0; a < l->nargs; a++)
        coil_strbuf_printf(b, "%s(%s%s *)%s", a ? ", " : "", k->params[a].is_output ? "" : "const ",
                           coil_c_storage_type(k->params[a].dtype), p->buffers[l->args[a]].name);
      for (int s = 0; s < k->nsyms; s++)
        coil_strbuf_printf(b, "%s%s", l->nargs || s ? ", " : "", coil_sym_var_name(p->sym, k->syms[s]->var));
      if (coil_kernel_has_indirect(k)) { /* an index out of range: the run fails, naming it */
        coil_strbuf_printf(b, "%s&coil_oob);\n", l->nargs || k->nsyms ? ", " : "");
        coil_strbuf_printf(b, "  if (coil_oob != INT64_MIN) {\n    char what[256];\n"
                              "    snprintf(what, sizeof what, \"index %%lld is out of range in %s (%s)\", (long long)coil_oob);\n"
                              "    return rt->fail(rt->ctx, %d, what);\n  }\n",
                           k->name, k->source_ops ? k->source_ops : "indirect", li);
        break;
      }
      coil_strbuf_puts(b, ");\n");
      break;
    }
    case COIL_LINE_EXTERN_CALL:
      coil_strbuf_puts(b, "  {\n    void *ptrs[] = {");
      for (int a = 0; a < l->nargs + l->nouts; a++)
        coil_strbuf_printf(b, "%s%s", a ? ", " : "", p->buffers[a < l->nargs ? l->args[a] : l->outs[a - l->nargs]].name);
      coil_strbuf_printf(b, "};\n    if (rt->extern_call(rt->ctx, %d, ptrs, symv))\n      return -1;\n  }\n", li);
      break;
    case COIL_LINE_COPY_BACK: {
      const coil_buffer *src = &p->buffers[l->source];
      coil_strbuf_printf(b, "  memcpy(%s, %s, (size_t)(", w->name, src->name);
      bytes_of(p, src, b);
      coil_strbuf_puts(b, "));\n");
      break;
    }
    case COIL_LINE_OUTPUT:
      for (int k = 0; k < l->nargs; k++) {
        const coil_buffer *ob = &p->buffers[l->args[k]];
        int st = coil_wir_output_storage((coil_wir_program *)p, k);
        if (st >= 0 && out_of[st] == k)
          continue; /* computed in place */
        coil_strbuf_printf(b, "  memcpy(out[%d], %s, (size_t)(", k, ob->name);
        bytes_of(p, ob, b);
        coil_strbuf_puts(b, "));\n");
      }
      for (int k = 0; k < l->nargs; k++) /* outputs in reused storage: copied out, now released */
        if (p->buffers[l->args[k]].kind == COIL_BUF_REUSE && out_of[l->args[k]] == k)
          coil_strbuf_printf(b, "  rt->release(rt->ctx, %s);\n", p->buffers[l->args[k]].name);
      break;
    case COIL_LINE_MULTI_OUTPUT:
      break; /* the extern call wrote it */
    }
  }
  coil_strbuf_puts(b, "  return 0;\n}\n");
  free(out_of);
  free(reused);
}

/* Chan's combination of two Welford partials (mean, m2, count), one per compute type. */
static const char welford_combine[] =
#define WELFORD_COMBINE(T, NAME)                                                                        \
  "static inline void\n" NAME "(" T " *M, " T " *Q, int64_t *N, " T " m, " T " q, int64_t n)\n"          \
  "{\n"                                                                                                  \
  "  if (n == 0)\n"                                                                                      \
  "    return;\n"                                                                                        \
  "  const int64_t t = *N + n;\n"                                                                        \
  "  const " T " dl = m - *M, f = (" T ")n / (" T ")t;\n"                                                   \
  "  *M += dl * f;\n"                                                                                    \
  "  *Q += q + dl * dl * (" T ")*N * f;\n"                                                                \
  "  *N = t;\n"                                                                                          \
  "}\n\n"
    WELFORD_COMBINE("float", "coil_welford_f") WELFORD_COMBINE("double", "coil_welford_d");
#undef WELFORD_COMBINE

int
cpu_codegen(const coil_wir_program *p, bool with_math, coil_strbuf *out, coil_diag *d)
{
  for (int i = 0; i < p->nbuffers; i++) /* names reach C: check them once more */
    for (const char *c = p->buffers[i].name; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
        return coil_diag_set(d, "cpu: buffer name '%s' is not an identifier", p->buffers[i].name);
  coil_strbuf_printf(out, "/* Generated by the coil cpu plugin from Wrapper IR program %s. */\n", p->name);
  coil_strbuf_puts(out, coil_c_prelude());
  coil_c_combining_stores(out, false);
  if (with_math)
    coil_strbuf_puts(out, "#include \"coil_cpu_math.h\"\n");
  coil_strbuf_puts(out, "#include <omp.h>\n#include <stdio.h>\n\n" COIL_CPU_RT_DECL "\nstatic int coil_nthreads = 1;\n\n");
  coil_strbuf_puts(out, welford_combine);
  for (int k = 0; k < p->nkernels; k++)
    emit_kernel(p, &p->kernels[k], with_math ? &dialect_math : &dialect_libm, out);
  emit_wrapper(p, out);
  return 0;
}
