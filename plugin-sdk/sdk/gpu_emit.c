/* gpu_emit.c — the GPU emitter of coil-sdk (coil/coil_gpu.h): CUDA-like C++ for the kernels of a
 * Wrapper IR program, spelled by a dialect (the cuda plugin's is the first).
 *
 * Each kernel is `KERNEL_DECL void NAME(...)` under its Wrapper IR name (a profiler shows the names
 * of the dumped source), with the SDK's C-family emitter (coil/coil_sdk.h) printing indices and
 * instructions, so CPU and GPU plugins read the same loop IR the same way. The structure:
 *
 *   pointwise (no r ranges): the x space flattened; each thread takes elements xindex, striding
 *     by the whole grid (the mask is the loop bound), unravels them into x0, x1, ... and runs the
 *     body;
 *   reduction: one block per x point (striding by the grid); per reduce, every thread folds the
 *     r elements rindex = tid, tid + blockDim, ... of its cone into a private accumulator, then
 *     the block combines them (warp shuffles, one partial per warp in shared memory) and every
 *     thread holds the result; per-r stores run in a last strided r loop; stores of per-x
 *     values are done by thread 0; with a scan, the last loop walks the row in block-sized
 *     chunks in order, a block scan each. Welford reductions keep (mean, m2, n) per thread and combine
 *     with Chan's formula; argmax/argmin keep (value, first index).
 *
 * Kernels take their params (pointers) then their size symbols (int64). The launch picks the grid
 * and a block of warp..256 threads (a multiple of the warp: the shuffles use full warps); the
 * plans (gpu_plan.c) say which layout each kernel gets. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu.h"
#include "gpu_int.h"

typedef struct {
  const coil_gpu_dialect *dl;
  const coil_wir_program *p;
  const coil_kernel *k;
  coil_gpu_plan plan;
  coil_strbuf *b;
  bool *per_r;
  bool *done; /* reduces computed with an earlier one (welford pairs) */
  char **names; /* per value: its C name: vN, or vN[j] for a row held in registers */
  bool i32;     /* x variables and indices in 32 bits (index32) */
  bool keep;    /* vector loads through the dialect's load_keep */
} kgen;

/* A persistent kernel's x points per block (> 1: a warp or a thread each), the threads that share
 * a row, a thread's index among them, and the reduction across them. */
static int
rows(const kgen *g)
{
  return g->plan.kind == COIL_GPU_PERSISTENT && g->plan.rows > 1 ? g->plan.rows : 1;
}

static unsigned
rthreads(const kgen *g)
{
  return rows(g) > 1 ? g->plan.threads / (unsigned)rows(g) : g->plan.threads;
}

static const char *
tid(const kgen *g)
{
  return rows(g) > 1 ? "coil_lane" : g->dl->thread_idx;
}

static const char *
reduce_fn(const kgen *g)
{
  return rows(g) == 1 ? "coil_block_reduce" : rthreads(g) == 1 ? "coil_own_reduce" : "coil_warp_reduce";
}

static void
indent(coil_strbuf *b, int n)
{
  for (int i = 0; i < n; i++)
    coil_strbuf_puts(b, "  ");
}

/* The type of x variables and the lane shadows. */
static const char *
ity(const kgen *g)
{
  return g->i32 ? "int32_t" : "int64_t";
}

static const char *
var(const kgen *g, const coil_sym *s)
{
  return coil_sym_var_name(g->p->sym, s->var);
}

/* `const T vI = expr;` (or `vI[j] = expr;` for a row in registers) or a store, for instruction i
 * (not a reduce). */
static void
emit_inst(kgen *g, int i, int depth)
{
  const coil_kinst *in = &g->k->insts[i];
  coil_strbuf *b = g->b;
  if (in->op == COIL_KOP_INDIRECT) { /* vI, then iI: in range, or 0 after recording the value */
    char pad[2 * 32 + 1], oob[512];
    snprintf(pad, sizeof pad, "%*s", 2 * (depth < 32 ? depth : 32), "");
    snprintf(oob, sizeof oob, "if (%s) coil_oob[1] = %%s;", g->dl->oob_first);
    coil_c_indirect_inst(g->p, g->k, i, (const char *const *)g->names, oob, pad, b);
    return;
  }
  indent(b, depth);
  if (in->op == COIL_KOP_STORE) {
    coil_c_store_inst(g->p, g->k, i, (const char *const *)g->names, b);
    coil_strbuf_puts(b, "\n");
    return;
  }
  if (strchr(g->names[i], '['))
    coil_strbuf_printf(b, "%s = ", g->names[i]);
  else
    coil_strbuf_printf(b, "const %s %s = ", coil_c_compute_type(in->dtype), g->names[i]);
  coil_c_value(&g->dl->c, g->p, g->k, i, (const char *const *)g->names, b);
  coil_strbuf_puts(b, ";\n");
}

static void
mark_cone(const kgen *g, int i, bool *cone)
{
  if (i < 0 || cone[i] || !g->per_r[i])
    return;
  cone[i] = true;
  const coil_kinst *in = &g->k->insts[i];
  for (int a = 0; a < coil_kop_arity(in->op); a++)
    mark_cone(g, in->args[a], cone);
  int deps[8], nd = coil_kinst_indirect_deps(g->p, g->k, i, deps, 8); /* the iN its index uses */
  for (int d = 0; d < nd; d++)
    mark_cone(g, deps[d], cone);
}

/* Unravels flat index `flat` over sizes into the variables vars (last fastest). */
static void
unravel(kgen *g, const char *flat, int n, const coil_sym *const *vars, const coil_sym *const *sizes, int depth)
{
  coil_strbuf *b = g->b;
  if (n == 0)
    return;
  indent(b, depth);
  coil_strbuf_printf(b, "%s %s_rem = %s;\n", g->i32 ? "uint32_t" : "int64_t", flat, flat);
  for (int i = n - 1; i >= 0; i--) {
    indent(b, depth);
    if (i == 0) {
      coil_strbuf_printf(b, "const %s %s = %s_rem;\n", ity(g), var(g, vars[i]), flat);
      break;
    }
    coil_strbuf_printf(b, "const %s %s = %s_rem %% (", ity(g), var(g, vars[i]), flat);
    coil_c_index(g->p, sizes[i], b);
    coil_strbuf_printf(b, ");\n");
    indent(b, depth);
    coil_strbuf_printf(b, "%s_rem /= (", flat);
    coil_c_index(g->p, sizes[i], b);
    coil_strbuf_puts(b, ");\n");
  }
}

static void
product(kgen *g, int n, const coil_sym *const *sizes)
{
  coil_strbuf_puts(g->b, "(int64_t)1");
  for (int i = 0; i < n; i++) {
    coil_strbuf_puts(g->b, " * (");
    coil_c_index(g->p, sizes[i], g->b);
    coil_strbuf_puts(g->b, ")");
  }
}

/* LOOPED: for (rindex = tid; rindex < rnumel; rindex += blockDim.x) { r0 = ...;
 * PERSISTENT: for (j = 0; j < P; j++) { rindex = tid + j * T; if (rindex < rnumel) { r0 = ...;
 * (the mask only where the row does not fill the tile); close_r closes either. */
/* PERSISTENT, vectorised: the thread's vectors j (masked where the row does not fill the
 * tile), then their lanes l (rindex = rbase + l; with shadow, the innermost r variable too). */
static void
open_vj(kgen *g, int depth)
{
  coil_strbuf *b = g->b;
  indent(b, depth);
  coil_strbuf_printf(b, "#pragma unroll\n");
  indent(b, depth);
  coil_strbuf_printf(b, "for (int j = 0; j < %d; j++) {\n", g->plan.per_thread);
  indent(b, depth + 1);
  coil_strbuf_printf(b, "const int64_t rbase = ((int64_t)j * %u + %s) * %d;\n", rthreads(g), tid(g), g->plan.vec);
  indent(b, depth + 1);
  coil_strbuf_puts(b, (int64_t)rthreads(g) * g->plan.per_thread * g->plan.vec == gpu_fixed_rnumel(g->k)
                          ? "{\n" : "if (rbase < rnumel) {\n");
}

static void
open_lanes(kgen *g, int depth, const char *shadow)
{
  coil_strbuf *b = g->b;
  if (shadow) {
    indent(b, depth);
    coil_strbuf_printf(b, "const %s coil_lane0 = %s;\n", ity(g), shadow);
  }
  indent(b, depth);
  coil_strbuf_printf(b, "#pragma unroll\n");
  indent(b, depth);
  coil_strbuf_printf(b, "for (int l = 0; l < %d; l++) {\n", g->plan.vec);
  if (g->plan.kind == COIL_GPU_PERSISTENT) {
    indent(b, depth + 1);
    coil_strbuf_puts(b, "const int64_t rindex = rbase + l;\n");
  }
  if (shadow) {
    indent(b, depth + 1);
    coil_strbuf_printf(b, "const %s %s = coil_lane0 + l;\n", ity(g), shadow);
  }
}

static void
open_r(kgen *g, int depth, bool unravel_r)
{
  coil_strbuf *b = g->b;
  if (g->plan.kind == COIL_GPU_PERSISTENT && g->plan.vec > 1) {
    open_vj(g, depth);
    if (unravel_r)
      unravel(g, "rbase", g->k->nr, g->k->rvars, g->k->rsize, depth + 2);
    open_lanes(g, depth + 2, unravel_r ? var(g, g->k->rvars[g->k->nr - 1]) : NULL);
    return;
  }
  indent(b, depth);
  if (g->plan.kind == COIL_GPU_PERSISTENT) {
    coil_strbuf_printf(b, "#pragma unroll\n");
    indent(b, depth);
    coil_strbuf_printf(b, "for (int j = 0; j < %d; j++) {\n", g->plan.per_thread);
    indent(b, depth + 1);
    coil_strbuf_printf(b, "const int64_t rindex = %s + (int64_t)j * %u;\n", tid(g), rthreads(g));
    indent(b, depth + 1);
    coil_strbuf_puts(b, (int64_t)rthreads(g) * g->plan.per_thread == gpu_fixed_rnumel(g->k)
                            ? "{\n" : "if (rindex < rnumel) {\n");
    if (unravel_r)
      unravel(g, "rindex", g->k->nr, g->k->rvars, g->k->rsize, depth + 2);
    return;
  }
  coil_strbuf_printf(b, "for (int64_t rindex = %s; rindex < rnumel; rindex += %s) {\n", g->dl->thread_idx, g->dl->block_dim);
  if (unravel_r)
    unravel(g, "rindex", g->k->nr, g->k->rvars, g->k->rsize, depth + 1);
}

static void
close_r(kgen *g, int depth)
{
  if (g->plan.kind == COIL_GPU_PERSISTENT && g->plan.vec > 1) {
    indent(g->b, depth + 2);
    coil_strbuf_puts(g->b, "}\n");
  }
  if (g->plan.kind == COIL_GPU_PERSISTENT) {
    indent(g->b, depth + 1);
    coil_strbuf_puts(g->b, "}\n");
  }
  indent(g->b, depth);
  coil_strbuf_puts(g->b, "}\n");
}

/* the depth of the body inside open_r */
static int
r_body(const kgen *g, int depth)
{
  return depth + (g->plan.kind != COIL_GPU_PERSISTENT ? 1 : g->plan.vec > 1 ? 3 : 2);
}

static bool
is_welford(coil_reduction r)
{
  return r == COIL_REDUCE_WELFORD_MEAN || r == COIL_REDUCE_WELFORD_M2;
}

static void
emit_acc_init(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  const coil_kinst *in = &k->insts[i];
  coil_strbuf *b = g->b;
  int a = in->args[0];
  const char *T = coil_c_compute_type(k->insts[a].dtype), *R = coil_c_compute_type(in->dtype);
  indent(b, depth);
  coil_strbuf_printf(b, "/* reduce %s of v%d */\n", coil_reduction_name(in->red), a);
  indent(b, depth);
  switch (in->red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "%s acc%d = 0;\n", R, i); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "%s acc%d = 1;\n", R, i); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "bool acc%d = false;\n", i); break;
  case COIL_REDUCE_MAX: case COIL_REDUCE_MIN: { /* from the identity: -inf / +inf, or the int extreme */
    static const char *const lo[] = {[COIL_I64] = "INT64_MIN", [COIL_I32] = "INT32_MIN", [COIL_I16] = "INT16_MIN",
                                     [COIL_I8] = "INT8_MIN", [COIL_U8] = "0", [COIL_BOOL] = "false"};
    static const char *const hi[] = {[COIL_I64] = "INT64_MAX", [COIL_I32] = "INT32_MAX", [COIL_I16] = "INT16_MAX",
                                     [COIL_I8] = "INT8_MAX", [COIL_U8] = "UINT8_MAX", [COIL_BOOL] = "true"};
    bool mx = in->red == COIL_REDUCE_MAX;
    const char *id = coil_dtype_is_float(in->dtype) ? (mx ? "-INFINITY" : "INFINITY") : mx ? lo[in->dtype] : hi[in->dtype];
    coil_strbuf_printf(b, "%s acc%d = (%s)(%s);\n", R, i, R, id);
    break;
  }
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "coil_arg<%s> acc%d; acc%d.v = 0; acc%d.i = -1;\n", T, i, i, i);
    break;
  default: /* welford */
    coil_strbuf_printf(b, "coil_wf<%s> acc%d; acc%d.m = 0; acc%d.q = 0; acc%d.n = 0;\n", T, i, i, i, i);
    for (int j = i; j < k->ninsts; j++)
      if (k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a)
        g->done[j] = true;
    break;
  }
}

/* One element into the accumulator (inside the r loop, rindex in scope). */
static void
emit_acc_fold(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  const coil_kinst *in = &k->insts[i];
  coil_strbuf *b = g->b;
  int a = in->args[0];
  const char *v = g->names[a];
  const char *T = coil_c_compute_type(k->insts[a].dtype), *R = coil_c_compute_type(in->dtype);
  indent(b, depth);
  switch (in->red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "acc%d = (%s)(acc%d + %s);\n", i, R, i, v); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "acc%d = (%s)(acc%d * %s);\n", i, R, i, v); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "acc%d = acc%d || (%s != 0);\n", i, i, v); break;
  case COIL_REDUCE_MAX: coil_strbuf_printf(b, "acc%d = coil_maxv(acc%d, (%s)%s);\n", i, i, R, v); break;
  case COIL_REDUCE_MIN: coil_strbuf_printf(b, "acc%d = coil_minv(acc%d, (%s)%s);\n", i, i, R, v); break;
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "if (coil_arg_better<%s, %s>(%s, rindex, acc%d.v, acc%d.i)) { acc%d.v = %s; acc%d.i = rindex; }\n",
                       T, in->red == COIL_REDUCE_ARGMAX ? "true" : "false", v, i, i, i, v, i);
    break;
  default:
    coil_strbuf_printf(b, "{ acc%d.n++; const %s d = %s - acc%d.m; acc%d.m += d / (%s)acc%d.n; acc%d.q += d * (%s - acc%d.m); }\n",
                       i, T, v, i, i, T, i, i, v, i);
    break;
  }
}

/* The block's combination of the accumulators: v<i> (and the welford partner) for every thread. */
static void
emit_acc_finish(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  const coil_kinst *in = &k->insts[i];
  coil_strbuf *b = g->b;
  int a = in->args[0];
  const char *T = coil_c_compute_type(k->insts[a].dtype), *R = coil_c_compute_type(in->dtype);
  indent(b, depth);
  switch (in->red) {
  case COIL_REDUCE_SUM: case COIL_REDUCE_PROD: case COIL_REDUCE_ANY: case COIL_REDUCE_MAX: case COIL_REDUCE_MIN:
    /* the combining functor is named after the reduction: coil_op_sum, coil_op_max, ... */
    coil_strbuf_printf(b, "const %s v%d = %s(acc%d, coil_op_%s(), coil_smem);\n", R, i, reduce_fn(g), i,
                       coil_reduction_name(in->red));
    break;
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "const int64_t v%d = %s(acc%d, coil_op_arg<%s, %s>(), coil_smem).i;\n", i, reduce_fn(g), i,
                       T, in->red == COIL_REDUCE_ARGMAX ? "true" : "false");
    break;
  default:
    coil_strbuf_printf(b, "const coil_wf<%s> wf%d = %s(acc%d, coil_op_wf(), coil_smem);\n", T, i, reduce_fn(g), i);
    for (int j = i; j < k->ninsts; j++)
      if (g->done[j] && k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a) {
        indent(b, depth);
        if (k->insts[j].red == COIL_REDUCE_WELFORD_M2)
          coil_strbuf_printf(b, "const %s v%d = wf%d.q;\n", T, j, i);
        else
          coil_strbuf_printf(b, "const %s v%d = wf%d.n ? wf%d.m : (%s)NAN;\n", T, j, i, i, T);
      }
    break;
  }
}

/* LOOPED: the reduce's cone recomputed in its own r loop. */
static void
emit_reduce_looped(kgen *g, int i, int depth)
{
  bool *cone = calloc((size_t)g->k->ninsts + 1, sizeof(bool));
  mark_cone(g, g->k->insts[i].args[0], cone);
  emit_acc_init(g, i, depth);
  open_r(g, depth, true);
  for (int j = 0; j < g->k->ninsts; j++)
    if (cone[j])
      emit_inst(g, j, r_body(g, depth));
  emit_acc_fold(g, i, r_body(g, depth));
  close_r(g, depth);
  emit_acc_finish(g, i, depth);
  free(cone);
}

static void
emit_params(kgen *g, const char *suffix)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  coil_strbuf_printf(b, "%s void ", g->dl->kernel_decl);
  if (g->dl->launch_bounds)
    coil_strbuf_printf(b, g->dl->launch_bounds, g->plan.threads ? g->plan.threads : 256);
  coil_strbuf_printf(b, "\n%s%s(", k->name, suffix);
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(b, "%s%s%s *%s %s", i ? ", " : "", k->params[i].is_output ? "" : "const ",
                       coil_c_storage_type(k->params[i].dtype), g->dl->restrict_kw, k->params[i].name);
  for (int i = 0; i < k->nsyms; i++)
    coil_strbuf_printf(b, "%sint64_t %s", k->nparams || i ? ", " : "", var(g, k->syms[i]));
  if (coil_kernel_has_indirect(k)) /* [0] = 1 and [1] = the value when an index is out of range */
    coil_strbuf_printf(b, "%slong long *coil_oob", k->nparams || k->nsyms ? ", " : "");
  coil_strbuf_puts(b, ")\n{\n  const int64_t xnumel = ");
  product(g, k->nx, k->xsize);
  coil_strbuf_puts(b, ";\n");
}

/* Whether the x extent is a constant multiple of tile (every tile full). */
static bool
whole_tiles(const coil_kernel *k, int64_t tile)
{
  int64_t n = 1, v;
  for (int i = 0; i < k->nx; i++) {
    if (!coil_sym_is_const(k->xsize[i], &v))
      return false;
    n *= v;
  }
  return n > 0 && n % tile == 0;
}

/* Whether index e is the row-major flattening of vars over sizes, the flat index the kernel
 * unravelled them from (then its name is printed instead: the multiply-adds go and, in 32 bits,
 * the signed sum's widening; on an H200 the gelu(x*w+b) kernel's two-vector form went from 34
 * registers to 32, 6 blocks of 256 an SM to 8, tools/device/gelu_variants.sh, 2026-12-04). Every
 * size but the outermost must be a constant; variables of size 1 may be absent from e. */
static bool
flat_index(const coil_sym *e, int n, const coil_sym *const *vars, const coil_sym *const *sizes)
{
  enum { MAXV = 64 };
  int64_t stride[MAXV], one;
  bool seen[MAXV] = {false};
  if (n < 1 || n > MAXV)
    return false;
  stride[n - 1] = 1;
  for (int i = n - 2; i >= 0; i--) {
    int64_t s;
    if (!coil_sym_is_const(sizes[i + 1], &s) || s < 1 || stride[i + 1] > INT64_MAX / s)
      return false;
    stride[i] = stride[i + 1] * s;
  }
  int nt = e->kind == COIL_SYM_ADD ? e->nargs : 1;
  for (int t = 0; t < nt; t++) {
    const coil_sym *term = e->kind == COIL_SYM_ADD ? e->args[t] : e, *v = term;
    int64_t coef = 1;
    if (term->kind == COIL_SYM_MUL && term->nargs == 2) {
      int c = term->args[0]->kind == COIL_SYM_CONST ? 0 : 1;
      if (term->args[c]->kind != COIL_SYM_CONST)
        return false;
      coef = term->args[c]->value, v = term->args[1 - c];
    }
    if (v->kind != COIL_SYM_VAR)
      return false;
    int i = 0;
    while (i < n && vars[i]->var != v->var)
      i++;
    if (i == n || seen[i] || coef != stride[i])
      return false;
    seen[i] = true;
  }
  for (int i = 0; i < n; i++)
    if (!seen[i] && !(coil_sym_is_const(sizes[i], &one) && one == 1))
      return false;
  return true;
}

/* One vector position of a vectorised kernel, its first element `flat` (xindex or rbase,
 * unravelled over vars here): the unit-stride loads of instructions seg[0..n) along the innermost
 * of vars as one aligned vector each, then per lane (that variable shadowed) the instructions,
 * unit-stride stores gathered into vectors written last. */
static void
emit_lanes(kgen *g, const int *seg, int n, int nvars, const coil_sym *const *vars, const coil_sym *const *sizes,
           const char *flat, int d)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  int unit = vars[nvars - 1]->var, V = g->plan.vec;
  unravel(g, flat, nvars, vars, sizes, d);
  for (int pass = 0; pass < 3; pass++) { /* vectors in, the lanes, vectors out */
    if (pass == 1) {
      open_lanes(g, d, var(g, vars[nvars - 1]));
      for (int s = 0; s < n; s++) {
        int i = seg[s];
        const coil_kinst *in = &k->insts[i];
        if ((in->op != COIL_KOP_LOAD && in->op != COIL_KOP_STORE) || gpu_index_kind(in->index, unit, V) != 1) {
          emit_inst(g, i, d + 1);
          continue;
        }
        char t[32];
        snprintf(t, sizeof t, "t%d.e", i);
        indent(b, d + 1);
        if (in->op == COIL_KOP_LOAD) {
          if (strchr(g->names[i], '['))
            coil_strbuf_printf(b, "%s = ", g->names[i]);
          else
            coil_strbuf_printf(b, "const %s %s = ", coil_c_compute_type(in->dtype), g->names[i]);
          coil_c_load(b, k->params[in->param].dtype, t, "l");
          coil_strbuf_puts(b, ";\n");
        } else {
          coil_c_store(b, k->params[in->param].dtype, t, "l", g->names[in->args[0]]);
          coil_strbuf_puts(b, "\n");
        }
      }
      indent(b, d);
      coil_strbuf_puts(b, "}\n");
      continue;
    }
    for (int s = 0; s < n; s++) {
      const coil_kinst *in = &k->insts[seg[s]];
      if ((in->op != COIL_KOP_LOAD && in->op != COIL_KOP_STORE) || gpu_index_kind(in->index, unit, V) != 1 ||
          (pass == 2 && in->op != COIL_KOP_STORE))
        continue;
      const char *st = coil_c_storage_type(k->params[in->param].dtype), *name = k->params[in->param].name;
      indent(b, d);
      if (pass == 0 && in->op == COIL_KOP_STORE) {
        coil_strbuf_printf(b, "coil_vec<%s, %d> t%d;\n", st, V, seg[s]);
        continue;
      }
      if (pass == 0)
        coil_strbuf_printf(b, "const coil_vec<%s, %d> t%d = %s(const coil_vec<%s, %d> *)&%s[", st, V, seg[s],
                           g->keep ? g->dl->load_keep : "*", st, V, name);
      else
        coil_strbuf_printf(b, "*(coil_vec<%s, %d> *)&%s[", st, V, name);
      if (flat_index(in->index, nvars, vars, sizes))
        coil_strbuf_puts(b, flat);
      else
        coil_c_index(g->p, in->index, b);
      if (pass == 0)
        coil_strbuf_puts(b, g->keep ? "]);\n" : "];\n");
      else
        coil_strbuf_printf(b, "] = t%d;\n", seg[s]);
    }
  }
}

/* Whether s and each of its subexpressions provably lie in 32 bits (from the loop ranges),
 * including the partial sums and products C forms on the way (a + b - c, c * x * y): for a sum
 * the largest magnitudes of its terms add, for a product those of its factors multiply, below 2^31. */
static bool
fits_i32(const coil_symctx *c, const coil_sym *s)
{
  int64_t lo, hi, acc = s->kind == COIL_SYM_MUL ? 1 : 0;
  coil_sym_bounds(c, s, &lo, &hi);
  if (lo < INT32_MIN || hi > INT32_MAX)
    return false;
  for (int i = 0; i < s->nargs; i++) {
    if (!fits_i32(c, s->args[i]))
      return false;
    coil_sym_bounds(c, s->args[i], &lo, &hi);
    int64_t m = -lo > hi ? -lo : hi; /* |arg| <= m < 2^31 */
    if (s->kind == COIL_SYM_ADD)
      acc += m;
    else if (s->kind == COIL_SYM_MUL)
      acc = m && acc > INT32_MAX / m ? (int64_t)INT32_MAX + 1 : acc * m;
    if (acc > INT32_MAX)
      return false;
  }
  return true;
}

/* Whether a pointwise kernel of tiles of `tile` elements can run as one tile a block with 32-bit
 * indices: the grid covers the largest x extent the loop ranges allow (coil_gpu_grid_blocks gives
 * ceil(xnumel / tile) blocks up to 2^22), the last tile ends below 2^31, no indirect index (its
 * value comes from a tensor), and every load, store and index value, term by term, fits in 32
 * bits. On an H200 the 64-bit grid-stride form ran gelu(x*w+b) 8192^2 at 0.983x Inductor, this
 * one at 0.990x (do_bench beside Inductor, tools/device/gelu_variants.sh, 2026-12-03): fewer
 * instructions per element. */
static bool
index32(const kgen *g, int64_t tile)
{
  const coil_kernel *k = g->k;
  if (coil_kernel_has_indirect(k))
    return false;
  int64_t n = 1, lo, hi;
  for (int i = 0; i < k->nx; i++) {
    coil_sym_bounds(g->p->sym, k->xsize[i], &lo, &hi);
    if (hi < 0 || hi > INT32_MAX || (hi && n > INT32_MAX / hi))
      return false;
    n *= hi;
  }
  if ((n + tile - 1) / tile > (1 << 22) || n + tile > INT32_MAX)
    return false;
  for (int i = 0; i < k->ninsts; i++)
    if (k->insts[i].index && !fits_i32(g->p->sym, k->insts[i].index))
      return false;
  return true;
}

/* POINTWISE: tiles of threads * per_thread elements, or with vec > 1 of threads *
 * vec_per_thread vectors of vec; full tiles unmasked (every load of a thread issued up front),
 * the last partial tile, if the extent allows one, masked and not unrolled. Where index32 holds,
 * block b takes tile b alone with 32-bit indices; otherwise blocks stride over the tiles. */
static void
emit_pointwise(kgen *g)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  bool vec = g->plan.vec > 1;
  unsigned T = g->plan.threads;
  int P = vec ? g->plan.vec_per_thread : g->plan.per_thread, V = vec ? g->plan.vec : 1;
  unsigned tile = T * (unsigned)(P * V);
  g->i32 = index32(g, tile);
  const char *xt = g->i32 ? "uint32_t" : "int64_t";
  if (g->i32)
    coil_strbuf_printf(b, "  {\n    const uint32_t xbase = (uint32_t)%s * %uu;\n", g->dl->block_idx, tile);
  else
    coil_strbuf_printf(b, "  for (int64_t xbase = (int64_t)%s * %u; xbase < xnumel; xbase += (int64_t)%s * %u) {\n",
                       g->dl->block_idx, tile, g->dl->grid_dim, tile);
  bool full = whole_tiles(k, tile);
  int *all = malloc(((size_t)k->ninsts + 1) * sizeof *all);
  for (int i = 0; i < k->ninsts; i++)
    all[i] = i;
  for (int masked = 0; masked < (full ? 1 : 2); masked++) {
    if (masked)
      coil_strbuf_puts(b, "    } else {\n");
    else if (full)
      coil_strbuf_puts(b, "    {\n");
    else
      coil_strbuf_printf(b, "    if (xbase + %u <= xnumel) {\n", tile);
    coil_strbuf_printf(b, "#pragma unroll%s\n      for (int j = 0; j < %d; j++) {\n", masked ? " 1" : "", P);
    if (vec)
      coil_strbuf_printf(b, "        const %s xindex = xbase + ((%s)j * %u + %s) * %d;\n", xt, xt, T, g->dl->thread_idx, V);
    else
      coil_strbuf_printf(b, "        const %s xindex = xbase + (%s)j * %u + %s;\n", xt, xt, T, g->dl->thread_idx);
    int d = masked ? 5 : 4;
    if (masked)
      coil_strbuf_puts(b, "        if (xindex < xnumel) {\n");
    if (vec) {
      emit_lanes(g, all, k->ninsts, k->nx, k->xvars, k->xsize, "xindex", d);
    } else {
      unravel(g, "xindex", k->nx, k->xvars, k->xsize, d);
      for (int i = 0; i < k->ninsts; i++)
        emit_inst(g, i, d);
    }
    if (masked)
      coil_strbuf_puts(b, "        }\n");
    coil_strbuf_puts(b, "      }\n");
  }
  free(all);
  g->i32 = false;
  coil_strbuf_puts(b, "    }\n  }\n}\n\n");
}


/* Defines every x variable of a TRANSPOSE tile element: the others from `outer`, the innermost
 * from xi_, variable tvar from xj_. */
static void
transpose_vars(kgen *g, int d)
{
  const coil_kernel *k = g->k;
  const coil_sym *vars[COIL_MAX_RANK + 8], *sizes[COIL_MAX_RANK + 8];
  int n = 0;
  for (int v = 0; v < k->nx; v++)
    if (v != g->plan.tvar && v != k->nx - 1)
      vars[n] = k->xvars[v], sizes[n++] = k->xsize[v];
  indent(g->b, d);
  coil_strbuf_puts(g->b, "const int64_t coil_outer = outer;\n");
  unravel(g, "coil_outer", n, vars, sizes, d);
  indent(g->b, d);
  coil_strbuf_printf(g->b, "const int64_t %s = xi_, %s = xj_;\n", var(g, k->xvars[k->nx - 1]), var(g, k->xvars[g->plan.tvar]));
}

/* TRANSPOSE: per 32 x 32 tile of (tvar, innermost), the transposed loads read along tvar into
 * shared memory (coalesced), then the body along the innermost variable reading them from
 * there (coalesced stores). 256 threads: 32 lanes by 8 rows, each row looping over 4. */
static void
emit_transpose(kgen *g)
{
  const coil_kernel *k = g->k;
  const coil_gpu_dialect *dl = g->dl;
  coil_strbuf *b = g->b;
  coil_strbuf_puts(b, "  const int64_t si = ");
  coil_c_index(g->p, k->xsize[k->nx - 1], b);
  coil_strbuf_puts(b, ", sj = ");
  coil_c_index(g->p, k->xsize[g->plan.tvar], b);
  coil_strbuf_puts(b, ";\n  if (si == 0 || sj == 0) return;\n"
                      "  const int64_t ti_n = (si + 31) / 32, tj_n = (sj + 31) / 32, ntiles = xnumel / (si * sj) * ti_n * tj_n;\n"
                      "  const int tx = ");
  coil_strbuf_printf(b, "%s & 31, ty = %s >> 5;\n", dl->thread_idx, dl->thread_idx);
  for (int i = 0; i < k->ninsts; i++)
    if (gpu_transposed_load(k, &g->plan, i))
      coil_strbuf_printf(b, "  %s %s tile%d[32][33];\n", dl->shared, coil_c_compute_type(k->insts[i].dtype), i);
  coil_strbuf_printf(b, "  for (int64_t t = %s; t < ntiles; t += %s) {\n", dl->block_idx, dl->grid_dim);
  coil_strbuf_puts(b, "    const int64_t ti = t % ti_n, tj = t / ti_n % tj_n, outer = t / ti_n / tj_n;\n"
                      "    for (int yy = ty; yy < 32; yy += 8) {\n"
                      "      const int64_t xj_ = tj * 32 + tx, xi_ = ti * 32 + yy;\n"
                      "      if (xj_ < sj && xi_ < si) {\n");
  transpose_vars(g, 4);
  for (int i = 0; i < k->ninsts; i++)
    if (gpu_transposed_load(k, &g->plan, i)) {
      indent(b, 4);
      coil_strbuf_printf(b, "tile%d[yy][tx] = ", i);
      coil_c_value(&g->dl->c, g->p, k, i, (const char *const *)g->names, b);
      coil_strbuf_puts(b, ";\n");
    }
  coil_strbuf_printf(b, "      }\n    }\n    %s;\n", dl->barrier);
  coil_strbuf_puts(b, "    for (int yy = ty; yy < 32; yy += 8) {\n"
                      "      const int64_t xi_ = ti * 32 + tx, xj_ = tj * 32 + yy;\n"
                      "      if (xi_ < si && xj_ < sj) {\n");
  transpose_vars(g, 4);
  for (int i = 0; i < k->ninsts; i++) {
    if (gpu_transposed_load(k, &g->plan, i)) {
      indent(b, 4);
      coil_strbuf_printf(b, "const %s %s = tile%d[tx][yy];\n", coil_c_compute_type(k->insts[i].dtype), g->names[i], i);
    } else {
      emit_inst(g, i, 4);
    }
  }
  coil_strbuf_printf(b, "      }\n    }\n    %s;\n  }\n}\n\n", dl->barrier);
}

/* PERSISTENT: the per-r instructions in program order, each computed once into a register array
 * v<i>[P]; runs of them between reduces share one unrolled loop over the thread's elements. */
/* A segment of a vectorised PERSISTENT kernel: unit-stride loads as one aligned vector per j,
 * the instructions per lane, unit-stride stores gathered and written as vectors. */
static void
flush_segment_vec(kgen *g, const int *seg, int n, int depth)
{
  open_vj(g, depth);
  emit_lanes(g, seg, n, g->k->nr, g->k->rvars, g->k->rsize, "rbase", depth + 2);
  indent(g->b, depth + 1);
  coil_strbuf_puts(g->b, "}\n");
  indent(g->b, depth);
  coil_strbuf_puts(g->b, "}\n");
}

static void
flush_segment(kgen *g, const int *seg, int n, int depth)
{
  coil_strbuf *b = g->b;
  if (!n)
    return;
  for (int s = 0; s < n; s++) {
    const coil_kinst *in = &g->k->insts[seg[s]];
    if (in->op != COIL_KOP_STORE) {
      indent(b, depth);
      coil_strbuf_printf(b, "%s v%d[%d];\n", coil_c_compute_type(in->dtype), seg[s], g->plan.per_thread * g->plan.vec);
    }
  }
  if (g->plan.vec > 1) {
    flush_segment_vec(g, seg, n, depth);
    return;
  }
  open_r(g, depth, true);
  for (int s = 0; s < n; s++)
    emit_inst(g, seg[s], r_body(g, depth));
  close_r(g, depth);
}

/* PERSISTENT welford_mean / welford_m2 of a row in registers: the mean from the sum, then the
 * sum of squared deviations from it (two block reductions of plain adds: no division per
 * element, and as exact as Welford). */
static void
emit_two_pass(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  int a = k->insts[i].args[0];
  const char *T = coil_c_compute_type(k->insts[a].dtype), *v = g->names[a];
  indent(b, depth);
  coil_strbuf_printf(b, "/* welford of v%d: mean, then squared deviations */\n", a);
  indent(b, depth);
  coil_strbuf_printf(b, "%s acc%d = 0;\n", T, i);
  open_r(g, depth, false);
  indent(b, r_body(g, depth));
  coil_strbuf_printf(b, "acc%d += %s;\n", i, v);
  close_r(g, depth);
  indent(b, depth);
  coil_strbuf_printf(b, "const %s wmean%d = %s(acc%d, coil_op_sum(), coil_smem) / (%s)rnumel;\n", T, i, reduce_fn(g), i,
                     T);
  indent(b, depth);
  coil_strbuf_printf(b, "%s accq%d = 0;\n", T, i);
  open_r(g, depth, false);
  indent(b, r_body(g, depth));
  coil_strbuf_printf(b, "{ const %s d = %s - wmean%d; accq%d += d * d; }\n", T, v, i, i);
  close_r(g, depth);
  indent(b, depth);
  coil_strbuf_printf(b, "const %s wm2%d = %s(accq%d, coil_op_sum(), coil_smem);\n", T, i, reduce_fn(g), i);
  for (int j = i; j < k->ninsts; j++)
    if (k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a) {
      g->done[j] = true;
      indent(b, depth);
      coil_strbuf_printf(b, "const %s v%d = %s%d;\n", T, j, k->insts[j].red == COIL_REDUCE_WELFORD_M2 ? "wm2" : "wmean", i);
    }
}

static void
emit_persistent_body(kgen *g, int depth)
{
  const coil_kernel *k = g->k;
  int *seg = malloc(((size_t)k->ninsts + 1) * sizeof *seg), n = 0;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_REDUCE) {
      flush_segment(g, seg, n, depth);
      n = 0;
      if (g->done[i])
        continue;
      if (is_welford(in->red) && g->per_r[in->args[0]]) {
        emit_two_pass(g, i, depth);
        continue;
      }
      emit_acc_init(g, i, depth);
      open_r(g, depth, false);
      emit_acc_fold(g, i, r_body(g, depth));
      close_r(g, depth);
      emit_acc_finish(g, i, depth);
    } else if (g->per_r[i]) {
      seg[n++] = i;
    } else if (in->op == COIL_KOP_STORE) { /* a per-x value: one thread stores it */
      indent(g->b, depth);
      coil_strbuf_printf(g->b, "if (%s == 0)\n", tid(g));
      emit_inst(g, i, depth + 1);
    } else {
      emit_inst(g, i, depth);
    }
  }
  flush_segment(g, seg, n, depth);
  free(seg);
}

/* Elements per thread and chunk of a scan loop (warp-striped: lane l of warp w takes element
 * rbase + (w*lanes + l)*warp + its lane, so loads coalesce): a row of constant length is taken in
 * one chunk where SCAN_LANES_MAX lanes a thread cover it (all its loads in flight at once), else
 * in chunks of SCAN_LANES a thread. */
#define SCAN_LANES 4
#define SCAN_LANES_MAX 16

/* LOOPED, the last r loop of a kernel with scans: the block walks the row in chunks, every thread
 * in every chunk (a point past the end is computed at the last element and stores nothing: it
 * comes after every real one in the scan). Each scan combines the carry of the chunks before, the
 * block's exclusive scan of its threads' totals and the thread's own running value.
 *
 * With lanes: warp w takes warp*lanes consecutive elements of the chunk, a warp's worth per lane. A first pass
 * over the lanes computes each scan's operand (the cone below it), a warp scan of it and the
 * warp's running value; the block combines the warps' totals once per chunk; a second pass
 * computes everything after the scans and stores, recomputing the per-r values they use (their
 * loads hit L1). A scan whose operand depends on
 * another scan's value needs that one finished first: such a kernel runs one element a thread. */
static void
emit_scan_loop(kgen *g, int depth)
{
  const coil_kernel *k = g->k;
  const coil_gpu_dialect *dl = g->dl;
  coil_strbuf *b = g->b;
  int n = k->ninsts;
  bool *cone = calloc((size_t)n + 1, sizeof(bool)), *pre = calloc((size_t)n + 1, sizeof(bool));
  bool *dep = calloc((size_t)n + 1, sizeof(bool)); /* computed from a scan's value */
  for (int i = 0; i < n; i++)
    if (k->insts[i].op == COIL_KOP_STORE && g->per_r[i])
      mark_cone(g, k->insts[i].args[0], cone);
  bool chained = false;
  for (int i = 0; i < n; i++) {
    const coil_kinst *in = &k->insts[i];
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      dep[i] = dep[i] || (in->args[a] >= 0 && (dep[in->args[a]] || k->insts[in->args[a]].op == COIL_KOP_SCAN));
    if (in->op == COIL_KOP_SCAN && cone[i]) {
      chained = chained || dep[in->args[0]] || k->insts[in->args[0]].op == COIL_KOP_SCAN;
      mark_cone(g, in->args[0], pre);
    }
  }
  int lanes = chained ? 1 : SCAN_LANES;
  int64_t rn = gpu_fixed_rnumel(k);
  if (!chained && rn > 0) { /* the threads the launch gives, or the plan's */
    int64_t t = coil_gpu_block_threads(g->dl, &g->plan, rn);
    int64_t want = (rn + t - 1) / t;
    lanes = want <= SCAN_LANES_MAX ? (int)(want > SCAN_LANES ? want : SCAN_LANES) : SCAN_LANES;
  }
  for (int i = 0; i < n; i++)
    if (cone[i] && k->insts[i].op == COIL_KOP_SCAN) {
      const char *R = coil_c_compute_type(k->insts[i].dtype);
      indent(b, depth);
      coil_strbuf_printf(b, "%s carry%d = ", R, i);
      coil_c_scan_identity(k->insts[i].dtype, k->insts[i].red, b);
      coil_strbuf_puts(b, ";\n");
    }
  indent(b, depth);
  coil_strbuf_printf(b, "for (int64_t rbase = 0; rbase < rnumel; rbase += (int64_t)%s * %d) {\n", dl->block_dim, lanes);
  int d = depth + 1;
  if (lanes > 1) { /* pass 1: the scans' operands, a running value per lane */
    for (int i = 0; i < n; i++)
      if (cone[i] && k->insts[i].op == COIL_KOP_SCAN) {
        indent(b, d);
        coil_strbuf_printf(b, "%s run%d[%d], wrun%d = ", coil_c_compute_type(k->insts[i].dtype), i, lanes, i);
        coil_c_scan_identity(k->insts[i].dtype, k->insts[i].red, b);
        coil_strbuf_puts(b, ";\n");
      }
    indent(b, d);
    coil_strbuf_printf(b, "#pragma unroll\n");
    indent(b, d);
    coil_strbuf_printf(b, "for (int l = 0; l < %d; l++) {\n", lanes);
    indent(b, d + 1);
    coil_strbuf_printf(b, "const int64_t rindex = coil_min(rbase + ((int64_t)(%s >> %d) * %d + l) * %d + (%s & %d), rnumel - 1);\n",
                       dl->thread_idx, gpu_warp_shift(dl), lanes, dl->warp_size, dl->thread_idx, dl->warp_size - 1);
    unravel(g, "rindex", k->nr, k->rvars, k->rsize, d + 1);
    for (int i = 0; i < n; i++) {
      const coil_kinst *in = &k->insts[i];
      if (pre[i])
        emit_inst(g, i, d + 1);
      if (in->op == COIL_KOP_SCAN && cone[i]) { /* run: the warp's scan so far, wrun: its total */
        const char *R = coil_c_compute_type(in->dtype), *op = coil_reduction_name(in->red);
        indent(b, d + 1);
        coil_strbuf_printf(b, "run%d[l] = coil_op_%s()(wrun%d, coil_warp_scan((%s)%s, coil_op_%s()));\n", i, op, i, R,
                           g->names[in->args[0]], op);
        indent(b, d + 1);
        coil_strbuf_printf(b, "wrun%d = coil_shfl_idx(run%d[l], %d);\n", i, i, dl->warp_size - 1); /* the last lane */
      }
    }
    indent(b, d);
    coil_strbuf_puts(b, "}\n");
    for (int i = 0; i < n; i++) /* the block: what the warps before this one hold */
      if (cone[i] && k->insts[i].op == COIL_KOP_SCAN) {
        const coil_kinst *in = &k->insts[i];
        const char *R = coil_c_compute_type(in->dtype), *op = coil_reduction_name(in->red);
        indent(b, d);
        coil_strbuf_printf(b, "%s tot%d;\n", R, i);
        indent(b, d);
        coil_strbuf_printf(b, "const %s before%d = coil_op_%s()(carry%d, coil_warps_before(wrun%d, coil_op_%s(), ", R, i, op,
                           i, i, op);
        coil_c_scan_identity(in->dtype, in->red, b);
        coil_strbuf_printf(b, ", &tot%d, coil_smem));\n", i);
        indent(b, d);
        coil_strbuf_printf(b, "carry%d = coil_op_%s()(carry%d, tot%d);\n", i, op, i, i);
      }
    indent(b, d); /* pass 2: everything from the scans on, and the stores */
    coil_strbuf_printf(b, "#pragma unroll\n");
    indent(b, d);
    coil_strbuf_printf(b, "for (int l = 0; l < %d; l++) {\n", lanes);
    indent(b, d + 1);
    coil_strbuf_printf(b, "const int64_t coil_at = rbase + ((int64_t)(%s >> %d) * %d + l) * %d + (%s & %d);\n",
                       dl->thread_idx, gpu_warp_shift(dl), lanes, dl->warp_size, dl->thread_idx, dl->warp_size - 1);
    indent(b, d + 1);
    coil_strbuf_puts(b, "const bool coil_rin = coil_at < rnumel;\n");
    indent(b, d + 1);
    coil_strbuf_puts(b, "const int64_t rindex = coil_rin ? coil_at : rnumel - 1;\n");
    unravel(g, "rindex", k->nr, k->rvars, k->rsize, d + 1);
    d++;
  } else {
    indent(b, d);
    coil_strbuf_printf(b, "const bool coil_rin = rbase + %s < rnumel;\n", dl->thread_idx);
    indent(b, d);
    coil_strbuf_printf(b, "const int64_t rindex = coil_rin ? rbase + %s : rnumel - 1;\n", dl->thread_idx);
    unravel(g, "rindex", k->nr, k->rvars, k->rsize, d);
  }
  for (int i = 0; i < n; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_SCAN && cone[i]) {
      const char *R = coil_c_compute_type(in->dtype), *op = coil_reduction_name(in->red);
      if (lanes > 1) {
        indent(b, d);
        coil_strbuf_printf(b, "const %s v%d = coil_op_%s()(before%d, run%d[l]);\n", R, i, op, i, i);
        continue;
      }
      indent(b, d);
      coil_strbuf_printf(b, "%s tot%d;\n", R, i);
      indent(b, d);
      coil_strbuf_printf(b, "const %s v%d = coil_op_%s()(carry%d, coil_block_scan((%s)%s, coil_op_%s(), &tot%d, coil_smem));\n",
                         R, i, op, i, R, g->names[in->args[0]], op, i);
      indent(b, d);
      coil_strbuf_printf(b, "carry%d = coil_op_%s()(carry%d, tot%d);\n", i, op, i, i);
    } else if (in->op == COIL_KOP_STORE && g->per_r[i]) {
      indent(b, d);
      coil_strbuf_puts(b, "if (coil_rin)\n");
      emit_inst(g, i, d + 1);
    } else if (cone[i]) { /* with lanes, pre-scan values again (unused ones are dead code) */
      emit_inst(g, i, d);
    }
  }
  if (lanes > 1) {
    indent(b, depth + 1);
    coil_strbuf_puts(b, "}\n");
  }
  indent(b, depth);
  coil_strbuf_puts(b, "}\n");
  free(cone);
  free(pre);
  free(dep);
}

static void
emit_looped_body(kgen *g, int depth)
{
  const coil_kernel *k = g->k;
  coil_strbuf *b = g->b;
  bool any_per_r_store = false;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_REDUCE) {
      if (!g->done[i])
        emit_reduce_looped(g, i, depth);
    } else if (in->op == COIL_KOP_STORE && g->per_r[i]) {
      any_per_r_store = true;
    } else if (in->op == COIL_KOP_STORE) { /* a per-x value: one thread stores it */
      indent(b, depth);
      coil_strbuf_printf(b, "if (%s == 0)\n", g->dl->thread_idx);
      emit_inst(g, i, depth + 1);
    } else if (!g->per_r[i]) {
      emit_inst(g, i, depth);
    }
  }
  if (any_per_r_store && coil_kernel_has_scan(k)) {
    emit_scan_loop(g, depth);
  } else if (any_per_r_store) {
    bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
    for (int i = 0; i < k->ninsts; i++)
      if (k->insts[i].op == COIL_KOP_STORE && g->per_r[i])
        mark_cone(g, k->insts[i].args[0], cone);
    open_r(g, depth, true);
    for (int i = 0; i < k->ninsts; i++)
      if (cone[i] || (k->insts[i].op == COIL_KOP_STORE && g->per_r[i]))
        emit_inst(g, i, r_body(g, depth));
    close_r(g, depth);
    free(cone);
  }
}

/* One variant of a kernel with plan g->plan under the name NAME<suffix>. */
static void
emit_variant(kgen *g, const char *suffix)
{
  const coil_kernel *k = g->k;
  const coil_gpu_dialect *dl = g->dl;
  coil_strbuf *b = g->b;
  for (int i = 0; i < k->ninsts; i++) {
    g->done[i] = false;
    if (g->plan.kind == COIL_GPU_PERSISTENT && g->per_r[i] && g->plan.vec > 1)
      snprintf(g->names[i], 40, "v%d[j * %d + l]", i, g->plan.vec);
    else
      snprintf(g->names[i], 40, g->plan.kind == COIL_GPU_PERSISTENT && g->per_r[i] ? "v%d[j]" : "v%d", i);
  }
  emit_params(g, suffix);
  if (g->plan.kind == COIL_GPU_TRANSPOSE) {
    emit_transpose(g);
    return;
  }
  if (g->plan.kind == COIL_GPU_POINTWISE) {
    emit_pointwise(g);
    return;
  }
  /* scratch for the reductions: a slot of up to 32 bytes per warp */
  coil_strbuf_printf(b, "  %s %s(16) unsigned char coil_smem[32 * 32];\n  const int64_t rnumel = ", dl->shared, dl->align);
  product(g, k->nr, k->rsize);
  if (rows(g) > 1 && rthreads(g) == 1) /* a thread per x point: no barrier anywhere */
    coil_strbuf_printf(b, ";\n  const int coil_lane = 0;\n"
                          "  for (int64_t xindex = (int64_t)%s * %d + %s; xindex < xnumel; "
                          "xindex += (int64_t)%s * %d) {\n", dl->block_idx, rows(g), dl->thread_idx, dl->grid_dim, rows(g));
  else if (rows(g) > 1) /* a warp per x point: no block-wide barrier anywhere */
    coil_strbuf_printf(b, ";\n  const int coil_lane = %s & %d;\n"
                          "  for (int64_t xindex = (int64_t)%s * %d + (%s >> %d); xindex < xnumel; "
                          "xindex += (int64_t)%s * %d) {\n", dl->thread_idx, dl->warp_size - 1, dl->block_idx, rows(g),
                       dl->thread_idx, gpu_warp_shift(dl), dl->grid_dim, rows(g));
  else
    coil_strbuf_printf(b, ";\n  for (int64_t xindex = %s; xindex < xnumel; xindex += %s) {\n", dl->block_idx, dl->grid_dim);
  unravel(g, "xindex", k->nx, k->xvars, k->xsize, 2);
  if (g->plan.kind == COIL_GPU_PERSISTENT)
    emit_persistent_body(g, 2);
  else
    emit_looped_body(g, 2);
  if (rows(g) > 1)
    coil_strbuf_puts(b, "  }\n}\n\n");
  else
    coil_strbuf_printf(b, "    %s;\n  }\n}\n\n", dl->barrier);
}

/* Kernel k with plan pl (NULL: the default plan) under NAME<suffix> (and its unaligned variant). */
static void
emit_kernel(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k, const coil_gpu_plan *pl,
            const char *suffix, coil_strbuf *b)
{
  coil_c_set_loop_ranges(p, k);
  kgen g = {dl, p, k, {0}, b, calloc((size_t)k->ninsts + 1, sizeof(bool)), calloc((size_t)k->ninsts + 1, sizeof(bool)),
            calloc((size_t)k->ninsts + 1, sizeof(char *)), false, false};
  if (pl)
    g.plan = *pl;
  else
    coil_gpu_plan_kernel(dl, p, k, &g.plan);
  /* A row a block, loaded as vectors: the row's loads ask the L2 to keep their lines. On an H200
   * the one-pass rmsnorm kernel (f16 8192 x 4096, 256 threads x 16) ran at 50.9 us with them
   * against 52.2 us with plain loads, Inductor's kernel (the same policy) at 50.6-50.9; an L1
   * hint alone did nothing, an evict_first policy cost 4 % (tools/device/rms_variants.sh,
   * 2026-12-04). Under do_bench's flush L2 is full of dirty lines when the kernel starts. */
  g.keep = dl->load_keep && g.plan.kind == COIL_GPU_PERSISTENT && g.plan.rows <= 1 && g.plan.vec > 1;
  coil_c_per_r(p, k, g.per_r);
  for (int i = 0; i < k->ninsts; i++)
    g.names[i] = malloc(40);
  if (k->source_ops)
    coil_strbuf_printf(b, "/* %s */\n", k->source_ops);
  emit_variant(&g, suffix);
  if (g.plan.vec > 1) { /* the scalar variant, for params not all vector-aligned */
    coil_strbuf_printf(b, "/* the same for params not all %d-byte aligned */\n", dl->vector_bytes);
    if (g.plan.kind == COIL_GPU_PERSISTENT)
      g.plan.per_thread = (int)((gpu_fixed_rnumel(k) + rthreads(&g) - 1) / rthreads(&g));
    g.plan.vec = 1;
    g.keep = false;
    char s2[64];
    snprintf(s2, sizeof s2, "%s" COIL_GPU_UNALIGNED_SUFFIX, suffix);
    emit_variant(&g, s2);
  }
  for (int i = 0; i < k->ninsts; i++)
    free(g.names[i]);
  free(g.names);
  free(g.per_r);
  free(g.done);
}

void
coil_gpu_kernel_source(const coil_gpu_dialect *dl, const coil_wir_program *p, int k, const coil_gpu_plan *pl,
                       coil_strbuf *out)
{
  coil_strbuf_printf(out, "/* Generated by the coil %s plugin from Wrapper IR program %s. */\n", dl->name, p->name);
  coil_gpu_prelude(dl, out);
  emit_kernel(dl, p, &p->kernels[k], pl, "", out);
}

void
coil_gpu_candidates_source(const coil_gpu_dialect *dl, const coil_wir_program *p, int k, const coil_gpu_plan *cands,
                           int n, coil_strbuf *out)
{
  coil_strbuf_printf(out, "/* Autotuning candidates for kernel %s of program %s. */\n", p->kernels[k].name, p->name);
  coil_gpu_prelude(dl, out);
  for (int i = 0; i < n; i++) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "__cand%d", i);
    emit_kernel(dl, p, &p->kernels[k], &cands[i], suffix, out);
  }
}

void
coil_gpu_program_source(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_gpu_plan *plans,
                        coil_strbuf *out)
{
  coil_strbuf_printf(out, "/* Generated by the coil %s plugin from Wrapper IR program %s: every kernel, each\n"
                          " * compiled by %s on its own with the prelude. */\n", dl->name, p->name, dl->compiler);
  coil_gpu_prelude(dl, out);
  for (int k = 0; k < p->nkernels; k++)
    emit_kernel(dl, p, &p->kernels[k], plans ? &plans[k] : NULL, "", out);
}

/* The epilogue's function (coil/coil_gpu.h): the kernel's instructions in order, written by
 * emit_inst as the kernel itself has them, except that loads of the product take coil_mm and the
 * store becomes the return. */
void
coil_gpu_gemm_epilogue_source(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_gpu_gemm_epilogue *e,
                              const char *name, coil_strbuf *out)
{
  const coil_line *kc = &p->lines[e->kernel_line];
  const coil_kernel *k = &p->kernels[kc->kernel];
  coil_c_set_loop_ranges(p, k);
  kgen g = {dl, p, k, {.kind = COIL_GPU_POINTWISE, .threads = 0, .vec = 1}, out, NULL, NULL,
            calloc((size_t)k->ninsts + 1, sizeof(char *)), false, false};
  for (int i = 0; i < k->ninsts; i++) {
    g.names[i] = malloc(40);
    snprintf(g.names[i], 40, "v%d", i);
  }
  coil_strbuf_printf(out, "/* the epilogue: kernel %s%s%s%s for the element (%s, %s) of the product, coil_mm */\n",
                     k->name, k->source_ops ? " (" : "", k->source_ops ? k->source_ops : "", k->source_ops ? ")" : "",
                     var(&g, k->xvars[0]), var(&g, k->xvars[1]));
  coil_strbuf_printf(out, "static %s %s float\n%s(float coil_mm, int64_t %s, int64_t %s", dl->device, dl->forceinline, name,
                     var(&g, k->xvars[0]), var(&g, k->xvars[1]));
  for (int i = 0; i < e->ninputs; i++) {
    const coil_kparam *pa = &k->params[e->inputs[i]];
    coil_strbuf_printf(out, ", const %s *%s %s", coil_c_storage_type(pa->dtype), dl->restrict_kw, pa->name);
  }
  coil_strbuf_puts(out, ")\n{\n");
  int stored = -1;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_STORE)
      stored = in->args[0];
    else if (in->op == COIL_KOP_LOAD && kc->args[in->param] == e->product)
      coil_strbuf_printf(out, "  const %s %s = coil_mm;\n", coil_c_compute_type(in->dtype), g.names[i]);
    else
      emit_inst(&g, i, 1);
  }
  coil_strbuf_printf(out, "  return (float)%s;\n}\n\n", stored >= 0 ? g.names[stored] : "coil_mm");
  for (int i = 0; i < k->ninsts; i++)
    free(g.names[i]);
  free(g.names);
}
