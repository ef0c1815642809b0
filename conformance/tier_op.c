/* tier_op.c — the op tier: every template of op_cases.h over its dtypes and shape classes, each
 * case a small graph compiled by the core, checked against what the plugin claims (not
 * claimed: "not supported"), compiled and run by the plugin with guard bytes around every
 * output (and, in the unaligned class, inputs starting off a 64-byte boundary), and compared
 * with the reference interpreter by NMSE (floats), exactly (integers, bools), NaN/Inf
 * positions equal. A symbolic case compiles once and runs at two sizes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h"
#include "conf.h"
#include "graph.h"
#include "op_cases.h"

typedef enum {
  C_BASE, C_ODD, C_SCALAR, C_ODD1D, C_BROADCAST, C_PERMUTED, C_SLICED, C_ZERO, C_LARGE, C_UNALIGNED,
  C_SYMBOLIC, C_CHAIN, C_COUNT
} shape_class;

static const char *const class_names[] = {"base", "odd", "scalar", "odd1d", "broadcast", "permuted", "sliced",
                                          "zero", "large", "unaligned", "symbolic", "chain"};

typedef struct {
  const op_template *t;
  coil_dtype dtype;
  shape_class cls;
} op_case;

/* One input spec: KIND[DIMS]MOD */
typedef struct {
  char kind[8];        /* T, f32, i64, bool */
  int rank;            /* -1: pointwise (the class decides) */
  char dims[6][16];
  bool positive;
  bool unit;           /* "~": inside (-1, 1) */
  bool from1;          /* "^": at least 1 */
  char below[16];      /* "<X": integers in [0, X) */
} input_spec;

static int
parse_inputs(const char *s, input_spec *in, int max)
{
  int n = 0;
  while (*s && n < max) {
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    input_spec *p = &in[n++];
    memset(p, 0, sizeof *p);
    p->rank = -1;
    int k = 0;
    while (*s && *s != '[' && *s != ' ' && *s != '+' && *s != '<' && *s != '~' && *s != '^' && k < 7)
      p->kind[k++] = *s++;
    if (*s == '[') {
      s++;
      p->rank = 0;
      while (*s && *s != ']') {
        while (*s == ' ' || *s == ',')
          s++;
        int j = 0;
        while (*s && *s != ',' && *s != ']' && j < 15)
          p->dims[p->rank][j++] = *s++;
        if (j)
          p->rank++;
      }
      if (*s == ']')
        s++;
    }
    if (*s == '+')
      p->positive = true, s++;
    if (*s == '~')
      p->unit = true, s++;
    if (*s == '^')
      p->from1 = true, s++;
    if (*s == '<') {
      s++;
      int j = 0;
      while (*s && *s != ' ' && j < 15)
        p->below[j++] = *s++;
    }
  }
  return n;
}

static coil_dtype
dtype_of_bit(unsigned bit)
{
  switch (bit) {
  case DT_F32: return COIL_F32;
  case DT_F16: return COIL_F16;
  case DT_BF16: return COIL_BF16;
  case DT_I64: return COIL_I64;
  default: return COIL_BOOL;
  }
}

/* The value of letter X in class cls ("s0" when symbolic and X is A). */
static const char *
letter(char x, shape_class cls)
{
  static const char *const base[] = {"5", "7", "3", "4"}, *const odd[] = {"3", "13", "5", "9"},
                           *const large[] = {"1024", "1025", "3", "4"};
  int i = x - 'A';
  if (i < 0 || i > 3)
    return "1";
  if (cls == C_ODD)
    return odd[i];
  if (cls == C_LARGE)
    return large[i];
  if (cls == C_ZERO && i == 0)
    return "0";
  if (cls == C_SYMBOLIC && i == 0)
    return "s0";
  return base[i];
}

static void
dim_text(const char *d, shape_class cls, char *out, size_t n)
{
  if (d[0] >= 'A' && d[0] <= 'D' && !d[1])
    snprintf(out, n, "%s", letter(d[0], cls));
  else
    snprintf(out, n, "%s", d);
}

static bool
class_applies(const op_template *t, const input_spec *in, int nin, coil_dtype dt, shape_class c)
{
  if (t->flags & PW) {
    switch (c) {
    case C_BASE: case C_ODD: return false;
    case C_BROADCAST: return nin >= 2 && !(t->flags & NB);
    case C_LARGE: return dt == COIL_F32 || dt == COIL_I64 || dt == COIL_BOOL;
    default: return nin >= 1;
    }
  }
  switch (c) {
  case C_BASE: return true;
  case C_ODD: case C_UNALIGNED: return nin >= 1;
  case C_PERMUTED: return nin >= 1 && in[0].rank >= 2 && !(t->flags & NV);
  case C_SLICED: return nin >= 1 && in[0].rank >= 1 && !(t->flags & NV);
  case C_ZERO: return t->flags & Z;
  case C_LARGE: return (t->flags & L) && dt == COIL_F32;
  case C_SYMBOLIC: return t->flags & S;
  default: return false;
  }
}

/* Replaces $T and $A..$D in body. */
static void
expand_body(const char *body, coil_dtype dt, shape_class cls, coil_strbuf *b)
{
  for (const char *s = body; *s; s++) {
    if (s[0] == '$' && s[1] == 'T') {
      coil_strbuf_puts(b, coil_dtype_name(dt));
      s++;
    } else if (s[0] == '$' && s[1] >= 'A' && s[1] <= 'D') {
      coil_strbuf_puts(b, letter(s[1], cls));
      s++;
    } else {
      coil_strbuf_printf(b, "%c", *s);
    }
  }
}

/* The graph of a case. */
static void
case_text(const op_case *oc, coil_strbuf *b)
{
  const op_template *t = oc->t;
  input_spec in[8];
  int nin = parse_inputs(t->inputs, in, 8);
  shape_class c = oc->cls;
  coil_strbuf views = {0};
  coil_strbuf_puts(b, "coil 1\ngraph conformance_case(");
  for (int i = 0; i < nin; i++) {
    char name = (char)('a' + i);
    const char *dt = strcmp(in[i].kind, "T") == 0 ? coil_dtype_name(oc->dtype) : in[i].kind;
    char dims[6][16];
    int rank = in[i].rank;
    if (rank < 0) { /* pointwise: the class decides */
      static const char *const shapes[][2] = {[C_SCALAR] = {"", ""}, [C_ODD1D] = {"17", "17"},
                                              [C_BROADCAST] = {"5, 1", "1, 7"}, [C_PERMUTED] = {"7, 5", "7, 5"},
                                              [C_SLICED] = {"5, 14", "5, 14"}, [C_ZERO] = {"0, 7", "0, 7"},
                                              [C_LARGE] = {"1048583", "1048583"}, [C_UNALIGNED] = {"5, 7", "5, 7"},
                                              [C_SYMBOLIC] = {"s0, 7", "s0, 7"}, [C_CHAIN] = {"5, 7", "5, 7"}};
      coil_strbuf_printf(b, "%s%%%c%s: %s[%s]", i ? ", " : "", name, c == C_PERMUTED || c == C_SLICED ? "_in" : "", dt,
                         shapes[c][i % 2]);
      if (c == C_PERMUTED)
        coil_strbuf_printf(&views, "  %%%c = aten.permute.default(%%%c_in, [1, 0])\n", name, name);
      else if (c == C_SLICED)
        coil_strbuf_printf(&views, "  %%%c = aten.slice.Tensor(%%%c_in, 1, 0, 14, 2)\n", name, name);
      continue;
    }
    for (int k = 0; k < rank; k++)
      dim_text(in[i].dims[k], c, dims[k], sizeof dims[k]);
    bool view = i == 0 && (c == C_PERMUTED || c == C_SLICED);
    if (view && c == C_PERMUTED) { /* declared with the last two dims swapped, permuted back */
      char tmp[16];
      memcpy(tmp, dims[rank - 1], sizeof tmp);
      memcpy(dims[rank - 1], dims[rank - 2], sizeof tmp);
      memcpy(dims[rank - 2], tmp, sizeof tmp);
      coil_strbuf_printf(&views, "  %%%c = aten.permute.default(%%%c_in, [", name, name);
      for (int k = 0; k < rank; k++)
        coil_strbuf_printf(&views, "%s%d", k ? ", " : "", k < rank - 2 ? k : k == rank - 2 ? rank - 1 : rank - 2);
      coil_strbuf_puts(&views, "])\n");
    } else if (view) { /* declared twice as long in the last dim, every second element taken */
      char last[16];
      snprintf(last, sizeof last, "%s", dims[rank - 1]);
      snprintf(dims[rank - 1], sizeof dims[rank - 1], "%lld", 2 * atoll(last));
      coil_strbuf_printf(&views, "  %%%c = aten.slice.Tensor(%%%c_in, %d, 0, %s, 2)\n", name, name, rank - 1,
                         dims[rank - 1]);
    }
    coil_strbuf_printf(b, "%s%%%c%s: %s[", i ? ", " : "", name, view ? "_in" : "", dt);
    for (int k = 0; k < rank; k++)
      coil_strbuf_printf(b, "%s%s", k ? ", " : "", dims[k]);
    coil_strbuf_puts(b, "]");
  }
  coil_strbuf_puts(b, ") {\n");
  if (views.len)
    coil_strbuf_puts(b, views.s);
  coil_strbuf_free(&views);
  coil_strbuf body = {0};
  expand_body(t->body, oc->dtype, c, &body);
  for (char *line = strtok(body.s, "\n"); line; line = strtok(NULL, "\n"))
    coil_strbuf_printf(b, "  %s\n", line);
  coil_strbuf_free(&body);
  if (strstr(t->body, "return"))
    ;
  else if (c == C_CHAIN) /* pointwise -> reduction -> pointwise */
    coil_strbuf_puts(b, "  %of = aten._to_copy.default(%out, dtype=f32)\n"
                        "  %r = aten.amax.default(%of, [1], True)\n"
                        "  %z = aten.sub.Tensor(%of, %r)\n  return (%z)\n");
  else
    coil_strbuf_puts(b, "  return (%out)\n");
  coil_strbuf_puts(b, "}\n");
}

/* Inputs for one run: the graph's inputs, sizes with s0 = size, values by spec. */
static int
make_inputs(const coil_graph *g, const op_case *oc, int64_t size, uint64_t seed, coil_tensor_list *out, char *msg,
            size_t n)
{
  input_spec in[8];
  int nin = parse_inputs(oc->t->inputs, in, 8);
  for (int i = 0; i < g->ninputs; i++) {
    const coil_type *ty = &g->inputs[i]->type;
    int64_t shape[COIL_MAX_RANK];
    int nv = coil_sym_nvars(g->sym);
    int64_t *vals = calloc((size_t)nv + 1, sizeof *vals);
    for (int v = 0; v < nv; v++)
      vals[v] = size;
    coil_diag d = {0};
    for (int k = 0; k < ty->rank; k++)
      if (coil_sym_eval(g->sym, ty->dims[k], vals, nv, &shape[k], &d)) {
        snprintf(msg, n, "input %s: %.400s", g->inputs[i]->name, d.msg);
        free(vals);
        return -1;
      }
    free(vals);
    coil_tensor x;
    if (coil_tensor_init(&x, ty->dtype, ty->rank, shape, &d)) {
      snprintf(msg, n, "%.400s", d.msg);
      return -1;
    }
    const input_spec *sp = i < nin ? &in[i] : NULL;
    int64_t lo = -5, hi = 6;
    if (sp && (sp->positive || sp->from1))
      lo = 1;
    if (sp && sp->unit)
      lo = -1, hi = 2;
    if (sp && sp->below[0]) {
      char v[16];
      dim_text(sp->below, oc->cls, v, sizeof v);
      lo = 0, hi = strcmp(v, "s0") == 0 ? size : atoll(v);
      if (hi <= 0)
        hi = 1;
    }
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
    conf_random(&x, &s, sp && sp->positive, lo, hi);
    if (sp && (sp->unit || sp->from1) && coil_dtype_is_float(x.dtype)) /* normal values reshaped */
      for (int64_t e = 0; e < coil_tensor_numel(&x); e++) {
        double v = coil_tensor_get_f64(&x, e);
        coil_tensor_set_f64(&x, e, sp->unit ? tanh(v) : 1 + fabs(v));
      }
    coil_tensor_list_add(out, g->inputs[i]->name, &x);
  }
  return 0;
}

/* The seed of a case's inputs: FNV-1a (64-bit) of its id, plus the run. A case's data depends on
 * nothing else, so --filter, --repro and --write-case all give the plugin the same inputs. */
static uint64_t
case_seed(const conf_result *r, int run)
{
  char id[256];
  conf_case_id(r, id, sizeof id);
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *q = id; *q; q++)
    h = (h ^ (unsigned char)*q) * 0x100000001b3ull;
  return h + (uint64_t)run;
}

#define CASE_GUARD_BYTES 64

/* --repro: the case's inputs (names, shapes, where they start) before a run. */
static void
repro_inputs(const coil_tensor_list *in, int offset)
{
  for (int k = 0; k < in->n; k++) {
    const coil_tensor *t = &in->tensors[k];
    printf("    input %-10s %s[", in->names[k], coil_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
      printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf("]%s\n", offset ? ", handed over one element past a 64-byte boundary" : "");
  }
}

static void
run_case(const conf_ctx *c, int i, void *user, conf_result *r)
{
  const op_case *oc = &((const op_case *)user)[i];
  coil_strbuf text = {0};
  case_text(oc, &text);
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("conformance_case.coil", text.s, text.len, &d);
  conf_prepared x = {0};
  r->status = CONF_FAIL;
  r->nmse = -1;
  if (!g) {
    snprintf(r->msg, sizeof r->msg, "the case's graph does not parse: %.400s", d.msg);
    goto done;
  }
  int64_t sizes[2] = {3, 11};
  int runs = oc->cls == C_SYMBOLIC ? 2 : 1;
  coil_exec_checks chk = {.input_offset = oc->cls == C_UNALIGNED ? 1 : 0, .guard_bytes = CASE_GUARD_BYTES};
  if (c->repro) {
    char id[256];
    conf_case_id(r, id, sizeof id);
    printf("case %s\n  data seed %llu (FNV-1a of the id; + the run for a second run)\n", id,
           (unsigned long long)case_seed(r, 0));
    printf("  outputs between %d guard bytes (0xa5) on each side, elements start as 0xff bytes\n", CASE_GUARD_BYTES);
    printf("  graph:\n");
    for (const char *q = text.s; *q;) {
      size_t n = strcspn(q, "\n");
      printf("    %.*s\n", (int)n, q);
      q += n + (q[n] == '\n');
    }
    fflush(stdout);
  }
  if (conf_prepare(c, g, "case", &x, r))
    goto done;
  double worst = 0;
  for (int run = 0; run < runs; run++) {
    coil_tensor_list in = {0}, want = {0}, got = {0};
    bool ok = make_inputs(g, oc, sizes[run], case_seed(r, run), &in, r->msg, sizeof r->msg) == 0;
    if (ok && coil_ref_run(g, &in, &want, &d)) {
      snprintf(r->msg, sizeof r->msg, "the reference interpreter cannot run the case: %.400s", d.msg);
      ok = false;
    }
    if (c->repro) {
      if (runs > 1)
        printf("  run %d of %d, s0 = %lld:\n", run + 1, runs, (long long)sizes[run]);
      else
        printf("  run:\n");
      repro_inputs(&in, chk.input_offset);
      fflush(stdout);
    }
    if (ok) {
      int rc = coil_artifact_exec_checked(x.lp, x.inst, x.art, x.p, &in, NULL, &chk, &got, &d);
      if (rc) {
        snprintf(r->msg, sizeof r->msg, "%s%.400s", rc == COIL_EXEC_GUARD ? "guard bytes: " : "run: ", d.msg);
        ok = false;
        if (c->repro)
          printf("    %s\n", r->msg);
      }
    }
    for (int k = 0; ok && k < want.n; k++) {
      double nmse;
      char m[400];
      if (k >= got.n) {
        snprintf(r->msg, sizeof r->msg, "output %d missing", k);
        ok = false;
        break;
      }
      bool same = conf_compare(&got.tensors[k], &want.tensors[k], &nmse, m, sizeof m);
      worst = nmse > worst ? nmse : worst;
      if (c->repro) {
        printf("    out%d: %s, NMSE %.3g%s%s\n", k, same ? "agrees" : "DIFFERS", nmse, same ? "" : ": ", same ? "" : m);
        printf("    the worst elements of out%d (index, flat index, got, want, errors):\n", k);
        conf_print_worst(stdout, &got.tensors[k], &want.tensors[k], 10);
      }
      if (!same) {
        snprintf(r->msg, sizeof r->msg, "out%d%s: %.420s", k, runs > 1 ? (run ? " at s0=11" : " at s0=3") : "", m);
        ok = false;
      }
    }
    coil_tensor_list_free(&in), coil_tensor_list_free(&want), coil_tensor_list_free(&got);
    if (!ok) {
      r->nmse = worst;
      goto done;
    }
  }
  r->status = CONF_PASS;
  r->nmse = worst;
done:
  conf_release(&x);
  coil_graph_free(g);
  coil_strbuf_free(&text);
}

/* The selected op cases, in the suite's order, with their results' identity fields set; *n of
 * them. With --sample N, the first selected case of each template and every Nth after it: the
 * count runs on across dtypes, so that the kept cases rotate through the shape classes. */
static op_case *
select_cases(const conf_ctx *c, conf_result **results, int *count)
{
  int n = 0, cap = 0;
  op_case *cases = NULL;
  conf_result *res = NULL;
  for (size_t t = 0; t < sizeof op_templates / sizeof *op_templates; t++) {
    const op_template *tp = &op_templates[t];
    input_spec in[8];
    int nin = parse_inputs(tp->inputs, in, 8);
    long seen = 0;
    for (unsigned bit = 1; bit <= DT_BOOL; bit <<= 1) {
      if (!(tp->dtypes & bit))
        continue;
      coil_dtype dt = dtype_of_bit(bit);
      for (int cl = 0; cl < C_COUNT; cl++) {
        if (!class_applies(tp, in, nin, dt, (shape_class)cl))
          continue;
        char shape[24];
        snprintf(shape, sizeof shape, "%s%s%s", tp->variant, tp->variant[0] ? ":" : "", class_names[cl]);
        if (!conf_selected(c, "op", tp->op, coil_dtype_name(dt), shape))
          continue;
        if (c->sample > 1 && seen++ % c->sample != 0)
          continue;
        if (n == cap) {
          cap = cap ? 2 * cap : 512;
          cases = realloc(cases, sizeof *cases * (size_t)cap);
          res = realloc(res, sizeof *res * (size_t)cap);
          if (!cases || !res)
            abort();
        }
        cases[n] = (op_case){tp, dt, (shape_class)cl};
        conf_result *r = &res[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->tier, sizeof r->tier, "op");
        snprintf(r->name, sizeof r->name, "%s", tp->op);
        snprintf(r->dtype, sizeof r->dtype, "%s", coil_dtype_name(dt));
        snprintf(r->shape, sizeof r->shape, "%s", shape);
      }
    }
  }
  *results = res;
  *count = n;
  return cases;
}

void
conf_tier_op(conf_ctx *c)
{
  int n;
  conf_result *res;
  op_case *cases = select_cases(c, &res, &n);
  if (n)
    conf_run_cases(c, n, run_case, cases, res);
  free(cases);
  free(res);
}

/* One case into dir/ID (ID: op~NAME~DTYPE~SHAPE, ':' of a shape as '-'): graph.coil; for each
 * run, inputs[_1].safetensors by the graph's input names and expected[_1].safetensors, the
 * reference interpreter's outputs out0, out1, ...; case.json. 0, or -1 with why in msg. */
static int
write_case(const op_case *oc, const conf_result *r, const char *dir, bool into_dir, char *msg, size_t n)
{
  char path[4096], id[192];
  if (into_dir) { /* --write-case ID DIR: the files go in DIR itself */
    snprintf(id, sizeof id, ".");
  } else {
    snprintf(id, sizeof id, "op~%s~%s~%s", r->name, r->dtype, r->shape);
    for (char *q = id; *q; q++)
      if (*q == ':' || *q == '/')
        *q = '-';
  }
  snprintf(path, sizeof path, "%s/%s", dir, id);
  if (mkdir(path, 0777) && errno != EEXIST) {
    snprintf(msg, n, "%.900s: %s", path, strerror(errno));
    return -1;
  }
  coil_strbuf text = {0};
  case_text(oc, &text);
  coil_diag d = {0};
  int rc = -1;
  coil_graph *g = coil_graph_parse("conformance_case.coil", text.s, text.len, &d);
  if (!g) {
    snprintf(msg, n, "%s: the case's graph does not parse: %.400s", id, d.msg);
    goto done;
  }
  snprintf(path, sizeof path, "%s/%s/graph.coil", dir, id);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text.s, f) < 0 || fclose(f)) {
    snprintf(msg, n, "%.900s: %s", path, strerror(errno));
    goto done;
  }
  int64_t sizes[2] = {3, 11};
  int runs = oc->cls == C_SYMBOLIC ? 2 : 1;
  for (int run = 0; run < runs; run++) {
    coil_tensor_list in = {0}, want = {0};
    int bad = make_inputs(g, oc, sizes[run], case_seed(r, run), &in, msg, n);
    if (!bad && coil_ref_run(g, &in, &want, &d)) {
      snprintf(msg, n, "%s: the reference interpreter cannot run the case: %.400s", id, d.msg);
      bad = 1;
    }
    snprintf(path, sizeof path, "%s/%s/inputs%s.safetensors", dir, id, run ? "_1" : "");
    bad = bad || coil_safetensors_write(path, &in, &d);
    snprintf(path, sizeof path, "%s/%s/expected%s.safetensors", dir, id, run ? "_1" : "");
    bad = bad || coil_safetensors_write(path, &want, &d);
    if (bad && !msg[0])
      snprintf(msg, n, "%.400s", d.msg);
    coil_tensor_list_free(&in), coil_tensor_list_free(&want);
    if (bad)
      goto done;
  }
  snprintf(path, sizeof path, "%s/%s/case.json", dir, id);
  f = fopen(path, "w");
  if (!f || fprintf(f,
                    "{\"id\": \"op/%s/%s/%s\", \"compare\": \"nmse\", \"nmse_max\": {\"float64\": %g, "
                    "\"float32\": %g, \"float16\": %g, \"bfloat16\": %g}, \"sizes\": %s, \"seed\": %llu, "
                    "\"input_offset_elements\": %d, \"guard_bytes\": %d, \"guard_byte\": 165, "
                    "\"output_fill_byte\": 255}\n",
                    r->name, r->dtype, r->shape, conf_nmse_max(COIL_F64), conf_nmse_max(COIL_F32),
                    conf_nmse_max(COIL_F16), conf_nmse_max(COIL_BF16), runs > 1 ? "[3, 11]" : "[]",
                    (unsigned long long)case_seed(r, 0), oc->cls == C_UNALIGNED ? 1 : 0, CASE_GUARD_BYTES) < 0 ||
      fclose(f)) {
    snprintf(msg, n, "%.900s: %s", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  coil_graph_free(g);
  coil_strbuf_free(&text);
  return rc;
}

/* For --write-case ID DIR: the one case of c->exact_id into DIR. */
int
conf_write_one_case(const conf_ctx *c, const char *dir)
{
  int n, bad = 0;
  conf_result *res;
  op_case *cases = select_cases(c, &res, &n);
  char msg[1024] = "";
  if (n != 1) {
    fprintf(stderr, "coil-conformance: --write-case: no op case has the id '%s' (see --list --tier op)\n", c->exact_id);
    bad = 1;
  } else if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "coil-conformance: --write-case %s: %s\n", dir, strerror(errno));
    bad = 1;
  } else if (write_case(&cases[0], &res[0], dir, true, msg, sizeof msg)) {
    fprintf(stderr, "coil-conformance: --write-case: %s\n", msg);
    bad = 1;
  } else {
    fprintf(stderr, "coil-conformance: wrote %s to %s (graph.coil, inputs*.safetensors, expected*.safetensors, case.json)\n",
            c->exact_id, dir);
  }
  free(cases);
  free(res);
  return bad ? -1 : 0;
}

/* For --write-cases DIR: every selected op case as files another tool can run (tier_op's data:
 * the same inputs the op tier gives a plugin). */
int
conf_write_cases(const conf_ctx *c, const char *dir)
{
  int n, bad = 0;
  conf_result *res;
  op_case *cases = select_cases(c, &res, &n);
  if (n == 0) {
    fprintf(stderr, "coil-conformance: --write-cases: no op case is selected (see --list --tier op)\n");
    bad = 1;
  } else if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "coil-conformance: --write-cases %s: %s\n", dir, strerror(errno));
    bad = 1;
  }
  for (int i = 0; i < n && !bad; i++) {
    char msg[1024] = "";
    if (write_case(&cases[i], &res[i], dir, false, msg, sizeof msg)) {
      fprintf(stderr, "coil-conformance: --write-cases: %s\n", msg);
      bad = 1;
    }
    if (!bad && ((i + 1) % 200 == 0 || i + 1 == n))
      fprintf(stderr, "coil-conformance: wrote %d of %d op cases to %s\n", i + 1, n, dir);
  }
  free(cases);
  free(res);
  return bad ? -1 : 0;
}

/* For --print-case: the graph text of the first case whose id matches the filter. */
int
conf_print_case(const conf_ctx *c, FILE *f)
{
  for (size_t t = 0; t < sizeof op_templates / sizeof *op_templates; t++) {
    const op_template *tp = &op_templates[t];
    input_spec in[8];
    int nin = parse_inputs(tp->inputs, in, 8);
    for (unsigned bit = 1; bit <= DT_BOOL; bit <<= 1) {
      coil_dtype dt = dtype_of_bit(bit);
      for (int cl = 0; cl < C_COUNT && (tp->dtypes & bit); cl++) {
        char shape[24];
        snprintf(shape, sizeof shape, "%s%s%s", tp->variant, tp->variant[0] ? ":" : "", class_names[cl]);
        if (!class_applies(tp, in, nin, dt, (shape_class)cl) || !conf_selected(c, "op", tp->op, coil_dtype_name(dt), shape))
          continue;
        coil_strbuf b = {0};
        op_case oc = {tp, dt, (shape_class)cl};
        case_text(&oc, &b);
        fputs(b.s, f);
        coil_strbuf_free(&b);
        return 0;
      }
    }
  }
  return -1;
}
