/* wir_verify.c — the Wrapper IR verifier: every invariant a plugin may rely on (wir.h, above
 * coil_wir_verify; docs/wrapper-ir.md lists them). It runs after the core builds a program and
 * after the parser reads one, and never trusts an index before checking it, so any program,
 * however broken, gets a message rather than a crash. Messages name the line as its position in
 * the program's line list, counting from 1 ("line 7 (kernel_call coil_poi_fused_add_0): ..."),
 * or the kernel and instruction ("kernel coil_poi_x_0, %3: ..."). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/wir.h"

typedef struct {
  const coil_wir_program *p;
  coil_diag *d;
  int nvars;
  bool *used;      /* scratch: variables an expression mentions */
  int *sym_line;   /* per variable: the line that defines it as a size symbol, or -1 */
  bool *allowed;   /* per variable: may appear in the kernel being checked */
  int *def_line;   /* per buffer: DEF_NONE, DEF_INPUT or the line that defines it */
  int *free_line;  /* per buffer: the line that frees it, or -1 */
  int *taken_by;   /* per buffer: the buffer that reuses its storage, or -1 */
  int output_line; /* the output line, or -1 */
} verifier;

enum { DEF_NONE = -2, DEF_INPUT = -1 };

static int fail(verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(verifier *v, const char *fmt, ...)
{
  char msg[sizeof v->d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return coil_diag_set(v->d, "%s", msg);
}

/* ---- names ---- */

/* NAME of the text form: [A-Za-z_][A-Za-z0-9_]*, at most 256 characters */
static bool
is_ident(const char *s)
{
  if (!s || !(isalpha((unsigned char)*s) || *s == '_') || strlen(s) > 256)
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return false;
  return true;
}

/* OPNAME of the text form: a NAME, then parts of [A-Za-z0-9_]+ each after one '.'; the n bytes
 * at s (aten._softmax.default) */
static bool
is_opname(const char *s, size_t n)
{
  if (n == 0 || n > 256 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (size_t i = 0; i < n; i++) {
    bool dot = s[i] == '.';
    if (!dot && !isalnum((unsigned char)s[i]) && s[i] != '_')
      return false;
    if (dot && (i + 1 == n || s[i + 1] == '.'))
      return false;
  }
  return true;
}

/* The expression in Python syntax, into buf (the program's arena stays untouched). */
static const char *
sym_text(const verifier *v, const coil_sym *s, char *buf, size_t cap)
{
  coil_strbuf b = {0};
  coil_sym_print(v->p->sym, s, COIL_SYM_PY_SYNTAX, &b);
  snprintf(buf, cap, "%s", b.s ? b.s : "");
  coil_strbuf_free(&b);
  return buf;
}

/* prefix followed by one or more digits */
static bool
is_numbered(const char *s, const char *prefix)
{
  size_t n = strlen(prefix);
  if (!s || strncmp(s, prefix, n) != 0 || !s[n])
    return false;
  for (s += n; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

/* Names a size symbol may not have: those of loop variables and of sym functions. */
static bool
is_reserved(const char *s)
{
  return is_numbered(s, "x") || is_numbered(s, "r") || is_numbered(s, "i") || strcmp(s, "min") == 0 ||
         strcmp(s, "max") == 0;
}

static const char *
bufname(const coil_wir_program *p, int b)
{
  return b >= 0 && b < p->nbuffers && p->buffers[b].name ? p->buffers[b].name : "?";
}

static const char *
varname(const verifier *v, int var)
{
  const char *s = coil_sym_var_name(v->p->sym, var);
  return s ? s : "?";
}

static int
cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name given twice in names[0..n), or NULL (sorts names). */
static const char *
duplicate(const char **names, int n)
{
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 1; i < n; i++)
    if (strcmp(names[i - 1], names[i]) == 0)
      return names[i];
  return NULL;
}

/* ---- expressions ---- */

/* Marks the variables of s in v->used (cleared first); false if s is not an expression of p. */
static void
collect(verifier *v, const coil_sym *s)
{
  memset(v->used, 0, sizeof(bool) * (size_t)v->nvars);
  coil_sym_vars_used(s, v->used, v->nvars);
}

/* Every variable of s is a size symbol defined by a symbol line before line `before` (any
 * symbol line when before < 0). Returns the first variable that is not, or -1. */
static int
undefined_symbol(verifier *v, const coil_sym *s, int before)
{
  collect(v, s);
  for (int i = 0; i < v->nvars; i++)
    if (v->used[i] && (v->sym_line[i] < 0 || (before >= 0 && v->sym_line[i] >= before)))
      return i;
  return -1;
}

static bool
uses_r(verifier *v, const coil_kernel *k, const coil_sym *s)
{
  collect(v, s);
  for (int i = 0; i < k->nr; i++)
    if (v->used[k->rvars[i]->var])
      return true;
  return false;
}

/* ---- buffers and inputs ---- */

static const char *const buf_prefix[] = {"arg", "buf", "buf", "v"};
static const char *const buf_kind_name[] = {"input", "alloc", "reuse", "view"};

static int
check_layout(verifier *v, const coil_buffer *b)
{
  if ((unsigned)b->dtype >= COIL_DTYPE_COUNT)
    return fail(v, "buffer %s: dtype %d is not a dtype", b->name, (int)b->dtype);
  if (b->rank < 0 || b->rank > COIL_MAX_RANK)
    return fail(v, "buffer %s: rank %d, expected 0 to %d", b->name, b->rank, COIL_MAX_RANK);
  for (int i = 0; i < b->rank; i++) {
    int64_t c;
    if (!b->sizes[i] || !b->strides[i])
      return fail(v, "buffer %s: dimension %d has no %s", b->name, i,
                  b->sizes[i] ? "stride" : "size");
    if (coil_sym_is_const(b->sizes[i], &c) && c < 0)
      return fail(v, "buffer %s: size %d is negative (%lld)", b->name, i, (long long)c);
  }
  if (!b->offset)
    return fail(v, "buffer %s has no offset (0 unless it is a view)", b->name);
  return 0;
}

static int
check_buffers(verifier *v)
{
  const coil_wir_program *p = v->p;
  for (int i = 0; i < p->nbuffers; i++) {
    const coil_buffer *b = &p->buffers[i];
    if ((unsigned)b->kind > COIL_BUF_VIEW)
      return fail(v, "buffer %d: kind %d is not a buffer kind", i, (int)b->kind);
    if (!is_numbered(b->name, buf_prefix[b->kind]))
      return fail(v, "buffer %d: name '%s', expected %sN for %s buffers", i,
                  b->name ? b->name : "(null)", buf_prefix[b->kind], buf_kind_name[b->kind]);
    if (check_layout(v, b))
      return -1;
    bool has_base = b->kind == COIL_BUF_VIEW || b->kind == COIL_BUF_REUSE;
    if (has_base && (b->base < 0 || b->base >= p->nbuffers || b->base == i))
      return fail(v, "buffer %s: base %d is not another buffer", b->name, b->base);
    if (!has_base && b->base != -1)
      return fail(v, "buffer %s: base is %d, expected -1 for %s buffers", b->name, b->base,
                  buf_kind_name[b->kind]);
    int64_t off;
    if (b->kind != COIL_BUF_VIEW && !(coil_sym_is_const(b->offset, &off) && off == 0))
      return fail(v, "buffer %s: only views have an offset", b->name);
  }
  const char **names = coil_xmalloc(sizeof(char *) * (size_t)(p->nbuffers + 1));
  for (int i = 0; i < p->nbuffers; i++)
    names[i] = p->buffers[i].name;
  const char *dup = duplicate(names, p->nbuffers);
  int rc = dup ? fail(v, "two buffers are named %s", dup) : 0;
  coil_xfree(names);
  return rc;
}

static int
check_inputs(verifier *v)
{
  const coil_wir_program *p = v->p;
  for (int i = 0; i < p->ninputs; i++) {
    int b = p->inputs[i].buffer;
    if (b < 0 || b >= p->nbuffers || p->buffers[b].kind != COIL_BUF_INPUT)
      return fail(v, "input %d: buffer %d is not an input buffer", i + 1, b);
    if (v->def_line[b] == DEF_INPUT)
      return fail(v, "input %d: %s is listed twice", i + 1, bufname(p, b));
    if (!p->inputs[i].label)
      return fail(v, "input %d (%s) has no label", i + 1, bufname(p, b));
    v->def_line[b] = DEF_INPUT;
  }
  for (int b = 0; b < p->nbuffers; b++)
    if (p->buffers[b].kind == COIL_BUF_INPUT && v->def_line[b] != DEF_INPUT)
      return fail(v, "buffer %s is an input buffer but not in the input list", bufname(p, b));
  /* their sizes and strides are in terms of symbols that symbol lines define (anywhere) */
  for (int i = 0; i < p->ninputs; i++) {
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    for (int d = 0; d < 2 * b->rank; d++) {
      int u = undefined_symbol(v, d < b->rank ? b->sizes[d] : b->strides[d - b->rank], -1);
      if (u >= 0)
        return fail(v, "input %s: size symbol %s is not defined by a symbol line", b->name,
                    varname(v, u));
    }
  }
  return 0;
}

/* ---- kernels ---- */

/* The dtype rules of one instruction; operands are known to be earlier values. */
static int
check_types(verifier *v, const coil_kernel *k, int n)
{
  const coil_kinst *in = &k->insts[n];
  const char *op = coil_kop_name(in->op);
  coil_dtype t = in->dtype, a = COIL_DTYPE_COUNT, b = COIL_DTYPE_COUNT;
  int arity = coil_kop_arity(in->op);
  if (arity >= 1)
    a = k->insts[in->args[0]].dtype;
  if (arity >= 2)
    b = k->insts[in->args[1]].dtype;
  const char *tn = coil_dtype_name(t), *an = coil_dtype_name(a), *bn = coil_dtype_name(b);
#define BAD(...) fail(v, "kernel %s, %%%d: " __VA_ARGS__)
  switch (coil_kop_class_of(in->op)) {
  case COIL_KCLASS_MEM: {
    const coil_kparam *pr = &k->params[in->param];
    if (in->op == COIL_KOP_STORE && !pr->is_output)
      return BAD("store to %s, which is not an output param", k->name, n, pr->name);
    if (in->op == COIL_KOP_STORE && a != t)
      return BAD("store of a %s value is marked %s", k->name, n, an, tn);
    if (in->op == COIL_KOP_LOAD && in->mode != COIL_STORE_PLAIN)
      return BAD("load with a store mode", k->name, n);
    if (in->op == COIL_KOP_STORE && !coil_store_mode_valid(in->mode, t))
      return BAD("store mode %s is not valid for %s (combining stores take numbers, not bool)",
                 k->name, n, (unsigned)in->mode < COIL_STORE_MODE_COUNT ? coil_store_mode_name(in->mode) : "?", tn);
    if (t != pr->dtype)
      return BAD("%s of %s with param %s of dtype %s", k->name, n, op, tn, pr->name,
                 coil_dtype_name(pr->dtype));
    return 0;
  }
  case COIL_KCLASS_LEAF:
    if ((in->op == COIL_KOP_INDEX || in->op == COIL_KOP_INDIRECT) && t != COIL_I64)
      return BAD("%s is %s, expected i64", k->name, n, op, tn);
    if (in->op == COIL_KOP_INDIRECT && !coil_dtype_is_int(a))
      return BAD("indirect of %s, expected an integer operand", k->name, n, an);
    if (in->op == COIL_KOP_CONST && t == COIL_BOOL && in->i != 0 && in->i != 1)
      return BAD("bool const %lld, expected 0 or 1", k->name, n, (long long)in->i);
    if (in->op == COIL_KOP_CONST && coil_dtype_is_int(t)) {
      int bits = (int)coil_dtype_size(t) * 8;
      bool is_unsigned = t == COIL_U8;
      int64_t lo = is_unsigned ? 0 : bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
      int64_t hi = bits == 64    ? INT64_MAX
                   : is_unsigned ? ((int64_t)1 << bits) - 1
                                 : ((int64_t)1 << (bits - 1)) - 1;
      if (in->i < lo || in->i > hi)
        return BAD("const %lld does not fit in %s", k->name, n, (long long)in->i, tn);
    }
    return 0;
  case COIL_KCLASS_CAST: return 0;
  case COIL_KCLASS_SELECT: {
    coil_dtype c = k->insts[in->args[2]].dtype;
    if (a != COIL_BOOL)
      return BAD("where's condition is %s, expected bool", k->name, n, an);
    if (b != c || b != t)
      return BAD("where of %s and %s gives %s, expected one dtype", k->name, n, bn,
                 coil_dtype_name(c), tn);
    return 0;
  }
  case COIL_KCLASS_REDUCE: {
    coil_dtype want = in->red == COIL_REDUCE_ARGMAX || in->red == COIL_REDUCE_ARGMIN ? COIL_I64
                      : in->red == COIL_REDUCE_ANY                                   ? COIL_BOOL
                                                                                     : a;
    if ((unsigned)in->red >= COIL_REDUCE_COUNT)
      return BAD("reduction %d is not a reduction", k->name, n, (int)in->red);
    bool welford = in->red == COIL_REDUCE_WELFORD_MEAN || in->red == COIL_REDUCE_WELFORD_M2;
    if (welford && !coil_dtype_is_float(a))
      return BAD("reduce %s of %s: expected a float operand", k->name, n, coil_reduction_name(in->red), an);
    if (t != want)
      return BAD("reduce %s of %s gives %s, expected %s", k->name, n, coil_reduction_name(in->red),
                 an, tn, coil_dtype_name(want));
    return 0;
  }
  case COIL_KCLASS_SCAN:
    if (in->red != COIL_REDUCE_SUM && in->red != COIL_REDUCE_PROD && in->red != COIL_REDUCE_MAX &&
        in->red != COIL_REDUCE_MIN)
      return BAD("scan %d is not a scan (sum prod max min)", k->name, n, (int)in->red);
    if (a == COIL_BOOL || a == COIL_F16 || a == COIL_BF16)
      return BAD("scan %s of %s, expected f32, f64 or an integer operand (cast it first)", k->name, n,
                 coil_reduction_name(in->red), an);
    if (t != a)
      return BAD("scan %s of %s gives %s, expected %s", k->name, n, coil_reduction_name(in->red), an, tn, an);
    return 0;
  case COIL_KCLASS_UNARY: {
    bool float_only = in->op == COIL_KOP_EXP || in->op == COIL_KOP_LOG ||
                      in->op == COIL_KOP_LOG1P || in->op == COIL_KOP_SQRT ||
                      in->op == COIL_KOP_RSQRT || in->op == COIL_KOP_RECIP ||
                      in->op == COIL_KOP_SIN || in->op == COIL_KOP_COS || in->op == COIL_KOP_TANH ||
                      in->op == COIL_KOP_SIGMOID || in->op == COIL_KOP_ERF ||
                      (in->op >= COIL_KOP_TAN && in->op <= COIL_KOP_LOG10);
    if (float_only && !coil_dtype_is_float(a))
      return BAD("%s of %s, expected a floating operand", k->name, n, op, an);
    if (in->op == COIL_KOP_BITNOT && coil_dtype_is_float(a))
      return BAD("bitnot of %s, expected an integer or bool operand", k->name, n, an);
    if (in->op == COIL_KOP_NOT ? t != COIL_BOOL : t != a)
      return BAD("%s of %s gives %s, expected %s", k->name, n, op, an, tn,
                 in->op == COIL_KOP_NOT ? "bool" : an);
    return 0;
  }
  case COIL_KCLASS_BINARY:
  case COIL_KCLASS_CMP: {
    bool cmp = coil_kop_class_of(in->op) == COIL_KCLASS_CMP;
    if (a != b)
      return BAD("%s operands have dtypes %s and %s", k->name, n, op, an, bn);
    if (in->op == COIL_KOP_DIV && !coil_dtype_is_float(a))
      return BAD("div of %s, expected floating operands (floordiv or truncdiv for integers)",
                 k->name, n, an);
    if ((in->op == COIL_KOP_BITAND || in->op == COIL_KOP_BITOR || in->op == COIL_KOP_BITXOR) &&
        coil_dtype_is_float(a))
      return BAD("%s of %s, expected integer or bool operands", k->name, n, op, an);
    if (in->op == COIL_KOP_ATAN2 && !coil_dtype_is_float(a))
      return BAD("atan2 of %s, expected floating operands", k->name, n, an);
    if (in->op == COIL_KOP_FMOD && a == COIL_BOOL)
      return BAD("fmod of bool, expected integer or floating operands", k->name, n);
    if (cmp ? t != COIL_BOOL : t != a)
      return BAD("%s of %s gives %s, expected %s", k->name, n, op, an, tn, cmp ? "bool" : an);
    return 0;
  }
  }
#undef BAD
  return 0;
}

static int
check_inst(verifier *v, const coil_kernel *k, int n, bool *per_r, bool *scanned, bool *stored)
{
  const coil_kinst *in = &k->insts[n];
  if ((unsigned)in->op >= COIL_KOP_COUNT)
    return fail(v, "kernel %s, %%%d: op %d is not a kernel op", k->name, n, (int)in->op);
  if ((unsigned)in->dtype >= COIL_DTYPE_COUNT)
    return fail(v, "kernel %s, %%%d: dtype %d is not a dtype", k->name, n, (int)in->dtype);
  const char *op = coil_kop_name(in->op);
  per_r[n] = false;
  scanned[n] = in->op == COIL_KOP_SCAN;
  for (int a = 0; a < coil_kop_arity(in->op); a++) {
    int x = in->args[a];
    if (x < 0 || x >= n)
      return fail(v, "kernel %s, %%%d: %s operand %d is %%%d, expected a value defined above",
                  k->name, n, op, a + 1, x);
    if (k->insts[x].op == COIL_KOP_STORE)
      return fail(v, "kernel %s, %%%d: %s operand %d is the store %%%d, which has no value",
                  k->name, n, op, a + 1, x);
    per_r[n] |= per_r[x];
    scanned[n] |= scanned[x];
  }
  bool mem = in->op == COIL_KOP_LOAD || in->op == COIL_KOP_STORE;
  if (mem && (in->param < 0 || in->param >= k->nparams))
    return fail(v, "kernel %s, %%%d: %s of param %d, which does not exist", k->name, n, op,
                in->param);
  if (in->op == COIL_KOP_INDIRECT) { /* the bound: size symbols only */
    if (!in->index)
      return fail(v, "kernel %s, %%%d: indirect without a bound", k->name, n);
    collect(v, in->index);
    for (int i = 0; i < v->nvars; i++)
      if (v->used[i] && (!v->allowed[i] || is_reserved(varname(v, i))))
        return fail(v, "kernel %s, %%%d: the bound uses %s, which is not a size symbol of the kernel",
                    k->name, n, varname(v, i));
  }
  if (mem || in->op == COIL_KOP_INDEX) {
    if (!in->index)
      return fail(v, "kernel %s, %%%d: %s without an index expression", k->name, n, op);
    collect(v, in->index);
    bool by_r = false; /* through an indirect variable whose value varies along r */
    for (int i = 0; i < v->nvars; i++) {
      if (!v->used[i] || v->allowed[i])
        continue;
      int m = coil_wir_indirect_of(v->p->sym, i);
      if (m < 0 || m >= n || k->insts[m].op != COIL_KOP_INDIRECT)
        return fail(v,
                    "kernel %s, %%%d: index uses %s, which is neither a loop variable nor a "
                    "size symbol of the kernel%s",
                    k->name, n, varname(v, i), m >= 0 ? " nor an indirect value defined above" : "");
      by_r |= per_r[m];
    }
    bool r = by_r || uses_r(v, k, in->index);
    if (in->op == COIL_KOP_STORE && per_r[n] && !r)
      return fail(v,
                  "kernel %s, %%%d: store of a value that varies along r to an index without "
                  "r (every r element would write the same place)",
                  k->name, n);
    per_r[n] |= r && in->op != COIL_KOP_STORE;
    if (in->op == COIL_KOP_STORE)
      stored[in->param] = true;
  }
  if (in->op == COIL_KOP_REDUCE) {
    if (k->nr == 0)
      return fail(v, "kernel %s, %%%d: reduce in a kernel without r ranges", k->name, n);
    if (scanned[in->args[0]])
      return fail(v, "kernel %s, %%%d: reduce of a value computed from a scan (a scan's values are only "
                  "stored or combined per r element; reduce them in another kernel)", k->name, n);
    per_r[n] = false; /* an operand that does not vary along r is reduced as that value repeated */
    scanned[n] = false;
  }
  if (in->op == COIL_KOP_SCAN) {
    if (k->nr == 0)
      return fail(v, "kernel %s, %%%d: scan in a kernel without r ranges", k->name, n);
    per_r[n] = true; /* an operand that does not vary along r is scanned as that value repeated */
  }
  return check_types(v, k, n);
}

static int
check_loop(verifier *v, const coil_kernel *k, char prefix, int n, const coil_sym *const *vars,
           const coil_sym *const *sizes)
{
  for (int i = 0; i < n; i++) {
    char want[16];
    snprintf(want, sizeof want, "%c%d", prefix, i);
    if (!vars[i] || vars[i]->kind != COIL_SYM_VAR || vars[i]->var < 0 || vars[i]->var >= v->nvars ||
        strcmp(varname(v, vars[i]->var), want) != 0)
      return fail(v, "kernel %s: loop variable %d is not the variable %s", k->name, i, want);
    if (!sizes[i])
      return fail(v, "kernel %s: loop dimension %s has no size", k->name, want);
    collect(v, sizes[i]);
    for (int j = 0; j < v->nvars; j++)
      if (v->used[j] && !v->allowed[j])
        return fail(v,
                    "kernel %s: the size of %s uses %s, which is not a size symbol of the "
                    "kernel",
                    k->name, want, varname(v, j));
  }
  return 0;
}

static int
check_kernel(verifier *v, const coil_kernel *k)
{
  if (!k->name || !is_ident(k->name))
    return fail(v, "kernel '%s': the name is not an identifier", k->name ? k->name : "(null)");
  if ((unsigned)k->kind > COIL_KERNEL_PERSISTENT)
    return fail(v, "kernel %s: kind %d is not a kernel kind", k->name, (int)k->kind);
  if (k->nx < 0 || k->nx > COIL_MAX_LOOP_DIMS || k->nr < 0 || k->nr > COIL_MAX_LOOP_DIMS)
    return fail(v, "kernel %s: %d x and %d r dimensions, expected 0 to %d each", k->name, k->nx,
                k->nr, COIL_MAX_LOOP_DIMS);
  if (k->kind == COIL_KERNEL_POINTWISE && k->nr > 0)
    return fail(v, "kernel %s: a pointwise kernel with r ranges", k->name);
  if (k->kind != COIL_KERNEL_POINTWISE && k->nr == 0)
    return fail(v, "kernel %s: a %s kernel without r ranges", k->name,
                k->kind == COIL_KERNEL_REDUCTION ? "reduction" : "persistent");
  for (const char *c = k->source_ops ? k->source_ops : ""; *c;) {
    c += strspn(c, ", \t");
    size_t n = strcspn(c, ", \t");
    if (n && !is_opname(c, n))
      return fail(v, "kernel %s: source op '%.*s' is not a dotted name such as aten.add.Tensor",
                  k->name, (int)n, c);
    c += n;
  }
  memset(v->allowed, 0, sizeof(bool) * (size_t)v->nvars);
  for (int i = 0; i < k->nsyms; i++) {
    const coil_sym *s = k->syms[i];
    if (!s || s->kind != COIL_SYM_VAR || s->var < 0 || s->var >= v->nvars)
      return fail(v, "kernel %s: size argument %d is not a symbol", k->name, i + 1);
    if (is_reserved(varname(v, s->var)))
      return fail(v, "kernel %s: size argument %s is not a size symbol", k->name,
                  varname(v, s->var));
    if (v->allowed[s->var])
      return fail(v, "kernel %s: size symbol %s is listed twice", k->name, varname(v, s->var));
    v->allowed[s->var] = true;
  }
  if (check_loop(v, k, 'x', k->nx, k->xvars, k->xsize) ||
      check_loop(v, k, 'r', k->nr, k->rvars, k->rsize))
    return -1;
  for (int i = 0; i < k->nx; i++)
    v->allowed[k->xvars[i]->var] = true;
  for (int i = 0; i < k->nr; i++)
    v->allowed[k->rvars[i]->var] = true;
  if (k->nparams < 0 || k->ninsts < 0 || k->nsyms < 0)
    return fail(v, "kernel %s: negative count", k->name);
  const char **names = coil_xmalloc(sizeof(char *) * (size_t)(k->nparams + 1));
  int rc = 0;
  for (int i = 0; i < k->nparams && rc == 0; i++) {
    names[i] = k->params[i].name;
    if (!is_ident(k->params[i].name))
      rc = fail(v, "kernel %s: param %d's name is not an identifier", k->name, i + 1);
    else if ((unsigned)k->params[i].dtype >= COIL_DTYPE_COUNT)
      rc = fail(v, "kernel %s: param %s has no dtype", k->name, k->params[i].name);
  }
  const char *dup = rc ? NULL : duplicate(names, k->nparams);
  if (dup)
    rc = fail(v, "kernel %s: two params are named %s", k->name, dup);
  coil_xfree(names);
  if (rc)
    return -1;
  bool *per_r = coil_xmalloc(sizeof(bool) * (size_t)(k->ninsts + 1));
  bool *scanned = coil_xmalloc(sizeof(bool) * (size_t)(k->ninsts + 1));
  bool *stored = coil_xcalloc((size_t)k->nparams + 1, sizeof(bool));
  for (int n = 0; n < k->ninsts && rc == 0; n++)
    rc = check_inst(v, k, n, per_r, scanned, stored);
  for (int i = 0; i < k->nparams && rc == 0; i++)
    if (k->params[i].is_output && !stored[i])
      rc = fail(v, "kernel %s: output param %s is never stored", k->name, k->params[i].name);
  coil_xfree(per_r);
  coil_xfree(scanned);
  coil_xfree(stored);
  return rc;
}

static int
check_kernels(verifier *v)
{
  const coil_wir_program *p = v->p;
  for (int i = 0; i < p->nkernels; i++)
    if (check_kernel(v, &p->kernels[i]))
      return -1;
  const char **names = coil_xmalloc(sizeof(char *) * (size_t)(p->nkernels + 1));
  for (int i = 0; i < p->nkernels; i++)
    names[i] = p->kernels[i].name;
  const char *dup = duplicate(names, p->nkernels);
  int rc = dup ? fail(v, "two kernels are named %s", dup) : 0;
  coil_xfree(names);
  return rc;
}

/* ---- lines ---- */

static const char *const line_kind_name[] = {
    "comment", "symbol",      "assert",      "alloc",        "free",      "reuse",
    "view",    "kernel_call", "extern_call", "multi_output", "copy_back", "output",
};

/* "line 7 (kernel_call coil_poi_fused_add_0)" */
static void
line_desc(const verifier *v, int i, char *buf, size_t cap)
{
  const coil_wir_program *p = v->p;
  const coil_line *l = &p->lines[i];
  const char *what = "";
  if (l->kind == COIL_LINE_KERNEL_CALL)
    what = l->kernel >= 0 && l->kernel < p->nkernels && p->kernels[l->kernel].name
               ? p->kernels[l->kernel].name
               : "?";
  else if (l->kind == COIL_LINE_EXTERN_CALL)
    what = l->op ? l->op : "?";
  else if (l->kind == COIL_LINE_SYMBOL)
    what = l->sym && l->sym->kind == COIL_SYM_VAR ? varname(v, l->sym->var) : "?";
  else if (l->kind != COIL_LINE_COMMENT && l->kind != COIL_LINE_OUTPUT)
    what = bufname(p, l->buffer);
  snprintf(buf, cap, "line %d (%s%s%s)", i + 1,
           (unsigned)l->kind <= COIL_LINE_OUTPUT ? line_kind_name[l->kind] : "?", *what ? " " : "",
           what);
}

#define LFAIL(fmt, ...) fail(v, "%s: " fmt, where, __VA_ARGS__)

/* The buffer at the root of a chain of views. */
static int
root_of(const coil_wir_program *p, int b)
{
  for (int hops = 0; p->buffers[b].kind == COIL_BUF_VIEW && hops <= p->nbuffers; hops++)
    b = p->buffers[b].base;
  return b;
}

/* b may be read or written at line i: defined above and neither it nor the buffer it views
 * freed. `role` says what b is in the line ("argument 2"). */
static int
check_use(verifier *v, const char *where, int b, const char *role)
{
  const coil_wir_program *p = v->p;
  if (b < 0 || b >= p->nbuffers)
    return LFAIL("%s is buffer %d, which does not exist", role, b);
  for (int c = b, hops = 0; hops <= p->nbuffers; hops++) {
    if (v->def_line[c] == DEF_NONE)
      return c == b ? LFAIL("%s %s is used before it is defined", role, bufname(p, b))
                    : LFAIL("%s %s views %s, which is not defined", role, bufname(p, b),
                            bufname(p, c));
    if (v->free_line[c] >= 0)
      return c == b ? LFAIL("%s %s is used after its free on line %d", role, bufname(p, b),
                            v->free_line[c] + 1)
                    : LFAIL("%s %s views %s, which is freed on line %d", role, bufname(p, b),
                            bufname(p, c), v->free_line[c] + 1);
    if (p->buffers[c].kind != COIL_BUF_VIEW)
      break;
    c = p->buffers[c].base;
  }
  return 0;
}

/* The line defines buffer b, of kind `kind`, here. */
static int
check_define(verifier *v, const char *where, int i, int b, coil_buf_kind kind)
{
  const coil_wir_program *p = v->p;
  if (b < 0 || b >= p->nbuffers)
    return LFAIL("buffer %d does not exist", b);
  if (p->buffers[b].kind != kind)
    return LFAIL(
        "%s is a%s %s buffer, expected a%s %s buffer", bufname(p, b),
        p->buffers[b].kind == COIL_BUF_INPUT || p->buffers[b].kind == COIL_BUF_ALLOC ? "n" : "",
        buf_kind_name[p->buffers[b].kind], kind == COIL_BUF_ALLOC ? "n" : "", buf_kind_name[kind]);
  if (v->def_line[b] != DEF_NONE)
    return LFAIL("%s is defined twice (first on line %d)", bufname(p, b), v->def_line[b] + 1);
  const coil_buffer *buf = &p->buffers[b];
  for (int d = 0; d <= 2 * buf->rank; d++) {
    const coil_sym *s = d < buf->rank       ? buf->sizes[d]
                        : d < 2 * buf->rank ? buf->strides[d - buf->rank]
                                            : buf->offset;
    int u = undefined_symbol(v, s, i);
    if (u >= 0)
      return LFAIL("size symbol %s is not defined by a symbol line above", varname(v, u));
  }
  v->def_line[b] = i;
  return 0;
}

/* Elements of storage a layout spans: 1 + sum((size_i - 1)*stride_i). */
static const coil_sym *
storage(const coil_wir_program *p, const coil_buffer *b)
{
  coil_symctx *c = p->sym;
  const coil_sym *n = coil_sym_const(c, 1);
  for (int d = 0; d < b->rank; d++)
    n = coil_sym_add(
        c, n, coil_sym_mul(c, coil_sym_sub(c, b->sizes[d], coil_sym_const(c, 1)), b->strides[d]));
  return n;
}

static int
check_input_dim(verifier *v, const char *where, const coil_line *l, bool want_dim)
{
  const coil_wir_program *p = v->p;
  if (l->buffer < 0 || l->buffer >= p->nbuffers || p->buffers[l->buffer].kind != COIL_BUF_INPUT)
    return LFAIL("buffer %s is not an input", bufname(p, l->buffer));
  if (want_dim && (l->dim < 0 || l->dim >= p->buffers[l->buffer].rank))
    return LFAIL("dimension %d of %s, which has rank %d", l->dim, bufname(p, l->buffer),
                 p->buffers[l->buffer].rank);
  return 0;
}

static int
check_symbol(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_sym *s = l->sym;
  if (!s || s->kind != COIL_SYM_VAR || s->var < 0 || s->var >= v->nvars)
    return LFAIL("%s", "defines something other than a symbol");
  const char *name = varname(v, s->var);
  if (!is_ident(name) || is_reserved(name))
    return LFAIL("'%s' is not a size symbol name (x0.., r0.., min and max are reserved)", name);
  if (v->sym_line[s->var] != i)
    return LFAIL("%s is defined twice (first on line %d)", name, v->sym_line[s->var] + 1);
  if (check_input_dim(v, where, l, true))
    return -1;
  const coil_buffer *b = &v->p->buffers[l->buffer];
  const coil_sym *have = l->is_stride ? b->strides[l->dim] : b->sizes[l->dim];
  char text[256];
  if (coil_sym_cmp(have, s) != 0)
    return LFAIL("%s.%s(%d) is %s, not %s", b->name, l->is_stride ? "stride" : "size", l->dim,
                 sym_text(v, have, text, sizeof text), name);
  return 0;
}

static int
check_assert(verifier *v, const char *where, int i, const coil_line *l)
{
  if ((unsigned)l->assert_kind > COIL_ASSERT_ALIGNED)
    return LFAIL("assert kind %d is not an assert kind", (int)l->assert_kind);
  if (check_input_dim(v, where, l, l->assert_kind != COIL_ASSERT_ALIGNED))
    return -1;
  if (l->assert_kind == COIL_ASSERT_ALIGNED)
    return l->align > 0 && (l->align & (l->align - 1)) == 0
               ? 0
               : LFAIL("alignment %lld is not a power of two", (long long)l->align);
  if (!l->value)
    return LFAIL("%s", "no expected value");
  int u = undefined_symbol(v, l->value, i);
  return u < 0 ? 0 : LFAIL("size symbol %s is not defined by a symbol line above", varname(v, u));
}

static int
check_reuse(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (check_define(v, where, i, l->buffer, COIL_BUF_REUSE))
    return -1;
  const coil_buffer *b = &p->buffers[l->buffer], *old = &p->buffers[b->base];
  if (v->def_line[b->base] == DEF_NONE || v->free_line[b->base] < 0)
    return LFAIL("reuses %s, which is not a freed buffer", old->name);
  if (v->taken_by[b->base] >= 0)
    return LFAIL("reuses %s, whose storage %s already took", old->name,
                 bufname(p, v->taken_by[b->base]));
  if (b->dtype != old->dtype)
    return LFAIL("%s is %s, the storage of %s holds %s", b->name, coil_dtype_name(b->dtype),
                 old->name, coil_dtype_name(old->dtype));
  bool same = b->rank == old->rank;
  for (int d = 0; same && d < b->rank; d++)
    same = coil_sym_cmp(b->sizes[d], old->sizes[d]) == 0 &&
           coil_sym_cmp(b->strides[d], old->strides[d]) == 0;
  /* another layout: compare the storage spans (the only place the verifier builds expressions,
   * in the program's arena) */
  const coil_sym *span = same ? NULL : storage(p, b), *old_span = same ? NULL : storage(p, old);
  char t1[256], t2[256];
  if (!same && coil_sym_cmp(span, old_span) != 0)
    return LFAIL("%s spans %s elements, the storage of %s %s", b->name,
                 sym_text(v, span, t1, sizeof t1), old->name, sym_text(v, old_span, t2, sizeof t2));
  v->taken_by[b->base] = l->buffer;
  return 0;
}

static int
check_view(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (l->buffer < 0 || l->buffer >= p->nbuffers)
    return LFAIL("buffer %d does not exist", l->buffer);
  const coil_buffer *b = &p->buffers[l->buffer];
  if (b->kind == COIL_BUF_VIEW && check_use(v, where, b->base, "the viewed buffer"))
    return -1;
  if (check_define(v, where, i, l->buffer, COIL_BUF_VIEW))
    return -1;
  if (b->dtype != p->buffers[b->base].dtype)
    return LFAIL("%s is %s, the buffer it views (%s) is %s", b->name, coil_dtype_name(b->dtype),
                 bufname(p, b->base), coil_dtype_name(p->buffers[b->base].dtype));
  return 0;
}

static int
check_free(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  int b = l->buffer;
  if (b >= 0 && b < p->nbuffers && v->free_line[b] >= 0)
    return LFAIL("%s is freed twice (first on line %d)", bufname(p, b), v->free_line[b] + 1);
  if (check_use(v, where, b, "buffer"))
    return -1;
  if (p->buffers[b].kind == COIL_BUF_INPUT)
    return LFAIL("%s is an input, which is never freed", bufname(p, b));
  if (p->buffers[b].kind == COIL_BUF_VIEW)
    return LFAIL("%s is a view, which has no storage to free", bufname(p, b));
  v->free_line[b] = i;
  return 0;
}

static int
check_kernel_call(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (l->kernel < 0 || l->kernel >= p->nkernels)
    return LFAIL("kernel %d does not exist", l->kernel);
  const coil_kernel *k = &p->kernels[l->kernel];
  if (l->nargs != k->nparams)
    return LFAIL("%d arguments, the kernel has %d params", l->nargs, k->nparams);
  for (int a = 0; a < l->nargs; a++) {
    char role[32];
    snprintf(role, sizeof role, "argument %d", a + 1);
    if (check_use(v, where, l->args[a], role))
      return -1;
    const coil_buffer *b = &p->buffers[l->args[a]];
    if (b->dtype != k->params[a].dtype)
      return LFAIL("argument %d is %s, the kernel's param %s is %s", a + 1,
                   coil_dtype_name(b->dtype), k->params[a].name,
                   coil_dtype_name(k->params[a].dtype));
    if (k->params[a].is_output && p->buffers[root_of(p, l->args[a])].kind == COIL_BUF_INPUT)
      return LFAIL("argument %d (%s) is the kernel's output %s but is an input of the graph (write "
                   "a copy and copy_back)",
                   a + 1, b->name, k->params[a].name);
  }
  for (int s = 0; s < k->nsyms; s++) {
    int var = k->syms[s]->var;
    if (v->sym_line[var] < 0 || v->sym_line[var] >= i)
      return LFAIL("the kernel's size symbol %s is not defined by a symbol line above",
                   varname(v, var));
  }
  return 0;
}

/* The library ops coil defines itself (docs/wrapper-ir.md, "Library ops defined by coil"): their
 * operands and parameters, which a plugin may then take as given. */
static int
check_coil_op(verifier *v, const char *where, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (strncmp(l->op, "coil.", 5) != 0)
    return 0;
  if (strcmp(l->op, "coil.attention") != 0)
    return LFAIL("unknown op %s: coil defines only coil.attention", l->op);
  if (l->nargs < 3 || l->nargs > 4 || l->nouts != 1)
    return LFAIL("coil.attention takes q, k, v and an optional mask to one output, not %d to %d", l->nargs,
                 l->nouts);
  const coil_buffer *o = &p->buffers[l->outs[0]];
  static const char *const role[] = {"q", "k", "v", "the mask"};
  for (int a = 0; a < l->nargs; a++) {
    const coil_buffer *b = &p->buffers[l->args[a]];
    if (b->rank != o->rank || b->dtype != o->dtype)
      return LFAIL("coil.attention: %s is %s of rank %d, the output %s of rank %d", role[a], coil_dtype_name(b->dtype),
                   b->rank, coil_dtype_name(o->dtype), o->rank);
  }
  if (o->rank < 3 || !coil_dtype_is_float(o->dtype))
    return LFAIL("coil.attention: the output is %s of rank %d, expected a floating dtype and rank 3 or more",
                 coil_dtype_name(o->dtype), o->rank);
  bool scale = false, rows = false;
  for (int x = 0; x < l->nxparams; x++) {
    const coil_xparam *xp = &l->xparams[x];
    if (strcmp(xp->name, "scale") == 0 && xp->kind == COIL_XP_FLOAT)
      scale = true;
    else if (strcmp(xp->name, "masked_rows") == 0 && xp->kind == COIL_XP_STR &&
             (strcmp(xp->s, "zero") == 0 || strcmp(xp->s, "nan") == 0))
      rows = true;
    else
      return LFAIL("coil.attention: unexpected parameter %s (it takes scale=FLOAT and masked_rows='zero'|'nan')",
                   xp->name);
  }
  if (!scale || !rows)
    return LFAIL("coil.attention: parameter %s is missing", scale ? "masked_rows" : "scale");
  return 0;
}

static int
check_extern_call(verifier *v, const char *where, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (!l->op || !*l->op)
    return LFAIL("%s", "no op name");
  if (!is_opname(l->op, strlen(l->op)))
    return LFAIL("op name '%s' is not a dotted name such as aten.mm.default", l->op);
  for (int a = 0; a < l->nargs + l->nouts; a++) {
    bool out = a >= l->nargs;
    int b = out ? l->outs[a - l->nargs] : l->args[a];
    char role[32];
    snprintf(role, sizeof role, "%s %d", out ? "output" : "argument", (out ? a - l->nargs : a) + 1);
    if (check_use(v, where, b, role))
      return -1;
    if (out && p->buffers[b].kind != COIL_BUF_ALLOC && p->buffers[b].kind != COIL_BUF_REUSE)
      return LFAIL("output %d (%s) is a%s %s, expected an allocated buffer", a - l->nargs + 1,
                   bufname(p, b), p->buffers[b].kind == COIL_BUF_INPUT ? "n" : "",
                   buf_kind_name[p->buffers[b].kind]);
  }
  const char **names = coil_xmalloc(sizeof(char *) * (size_t)(l->nxparams + 1));
  int rc = 0;
  for (int x = 0; x < l->nxparams && rc == 0; x++) {
    const coil_xparam *xp = &l->xparams[x];
    names[x] = xp->name;
    if (!is_ident(xp->name))
      rc = LFAIL("parameter %d's name is not an identifier", x + 1);
    else if ((unsigned)xp->kind > COIL_XP_INTS)
      rc = LFAIL("parameter %s has kind %d", xp->name, (int)xp->kind);
    else if (xp->kind == COIL_XP_STR && !xp->s)
      rc = LFAIL("parameter %s is a string without text", xp->name);
    else if (xp->kind == COIL_XP_INTS && (xp->n < 0 || (xp->n > 0 && !xp->ints)))
      rc = LFAIL("parameter %s is a list without its integers", xp->name);
  }
  const char *dup = rc ? NULL : duplicate(names, l->nxparams);
  if (dup)
    rc = LFAIL("parameter %s is given twice", dup);
  coil_xfree(names);
  return rc ? rc : check_coil_op(v, where, l);
}

static int
check_multi_output(verifier *v, const char *where, int i, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  int j = i - 1;
  while (j >= 0 &&
         (p->lines[j].kind == COIL_LINE_COMMENT || p->lines[j].kind == COIL_LINE_MULTI_OUTPUT))
    j--;
  if (j < 0 || p->lines[j].kind != COIL_LINE_EXTERN_CALL)
    return LFAIL("%s", "does not follow an extern_call");
  const coil_line *call = &p->lines[j];
  if (call->nouts < 1 || call->outs[0] != l->source)
    return LFAIL("names %s, which is not the first output of the extern_call on line %d",
                 bufname(p, l->source), j + 1);
  if (l->element < 1 || l->element >= call->nouts)
    return LFAIL("element %d, expected 1 to %d (the extern_call on line %d has %d outputs)",
                 l->element, call->nouts - 1, j + 1, call->nouts);
  if (call->outs[l->element] != l->buffer)
    return LFAIL("output %d of the extern_call on line %d is %s, not %s", l->element, j + 1,
                 bufname(p, call->outs[l->element]), bufname(p, l->buffer));
  return 0;
}

/* An output is handed back in the caller's tensor, which is dense in row-major order: the
 * buffer named (a view, since 1.2, of a computed buffer or an input) must be laid out so. A
 * dimension of size 1 may have any stride. */
static int
check_dense(verifier *v, const char *where, int b, const char *role)
{
  const coil_wir_program *p = v->p;
  const coil_buffer *w = &p->buffers[b];
  const coil_sym *stride = coil_sym_const(p->sym, 1);
  for (int d = w->rank - 1; d >= 0; d--) {
    int64_t n;
    bool unit = coil_sym_is_const(w->sizes[d], &n) && n == 1;
    if (!unit && coil_sym_cmp(w->strides[d], stride) != 0)
      return LFAIL("%s %s is not dense in row-major order (stride %d), as outputs must be", role,
                   w->name, d);
    stride = coil_sym_mul(p->sym, stride, w->sizes[d]);
  }
  return 0;
}

static int
check_copy_back(verifier *v, const char *where, const coil_line *l)
{
  const coil_wir_program *p = v->p;
  if (check_use(v, where, l->buffer, "the input") || check_use(v, where, l->source, "the source"))
    return -1;
  const coil_buffer *dst = &p->buffers[l->buffer], *src = &p->buffers[l->source];
  if (dst->kind != COIL_BUF_INPUT)
    return LFAIL("%s is not an input", dst->name);
  bool same = dst->dtype == src->dtype && dst->rank == src->rank;
  for (int d = 0; same && d < dst->rank; d++)
    same = coil_sym_cmp(dst->sizes[d], src->sizes[d]) == 0;
  return same ? 0 : LFAIL("%s and %s differ in dtype or sizes", src->name, dst->name);
}

static int
check_line(verifier *v, int i)
{
  const coil_wir_program *p = v->p;
  const coil_line *l = &p->lines[i];
  char where[320];
  line_desc(v, i, where, sizeof where);
  if (v->output_line >= 0 && l->kind != COIL_LINE_COMMENT)
    return LFAIL("%s", "after the output line, which is the last");
  switch (l->kind) {
  case COIL_LINE_COMMENT:
    if (!l->text)
      return LFAIL("%s", "no text");
    for (const char *c = l->text; *c; c++)
      if ((unsigned char)*c < 0x20 ? *c != '\t' : *c == 0x7f)
        return LFAIL("control byte 0x%02x in the text", (unsigned char)*c);
    return 0;
  case COIL_LINE_SYMBOL: return check_symbol(v, where, i, l);
  case COIL_LINE_ASSERT: return check_assert(v, where, i, l);
  case COIL_LINE_ALLOC: return check_define(v, where, i, l->buffer, COIL_BUF_ALLOC);
  case COIL_LINE_FREE: return check_free(v, where, i, l);
  case COIL_LINE_REUSE:
    if (l->buffer < 0 || l->buffer >= p->nbuffers || p->buffers[l->buffer].kind != COIL_BUF_REUSE)
      return LFAIL("%s is not a reuse buffer", bufname(p, l->buffer));
    return check_reuse(v, where, i, l);
  case COIL_LINE_VIEW: return check_view(v, where, i, l);
  case COIL_LINE_KERNEL_CALL: return check_kernel_call(v, where, i, l);
  case COIL_LINE_EXTERN_CALL: return check_extern_call(v, where, l);
  case COIL_LINE_MULTI_OUTPUT:
    return check_use(v, where, l->buffer, "the element") ||
                   check_use(v, where, l->source, "the call's first output")
               ? -1
               : check_multi_output(v, where, i, l);
  case COIL_LINE_COPY_BACK: return check_copy_back(v, where, l);
  case COIL_LINE_OUTPUT:
    v->output_line = i;
    for (int a = 0; a < l->nargs; a++) {
      char role[32];
      snprintf(role, sizeof role, "output %d", a + 1);
      if (check_use(v, where, l->args[a], role) || check_dense(v, where, l->args[a], role))
        return -1;
    }
    return 0;
  }
  return LFAIL("kind %d is not a line kind", (int)l->kind);
}

/* Symbols first: which line defines each (inputs may use any), and no symbol twice. */
static int
find_symbols(verifier *v)
{
  const coil_wir_program *p = v->p;
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    if (l->kind != COIL_LINE_SYMBOL || !l->sym || l->sym->kind != COIL_SYM_VAR || l->sym->var < 0 ||
        l->sym->var >= v->nvars || v->sym_line[l->sym->var] >= 0)
      continue;
    v->sym_line[l->sym->var] = i;
  }
  return 0;
}

int
coil_wir_verify(const coil_wir_program *p, coil_diag *d)
{
  coil_diag local = {{0}};
  verifier v = {.p = p, .d = &local, .output_line = -1};
  if (p->version_major != COIL_WIR_VERSION_MAJOR)
    return coil_diag_set(d, "version %d.%d, expected %d.x", p->version_major, p->version_minor,
                         COIL_WIR_VERSION_MAJOR);
  if (!is_ident(p->name))
    return coil_diag_set(d, "the program's name '%s' is not an identifier",
                         p->name ? p->name : "(null)");
  if (p->peak_bytes < -1)
    return coil_diag_set(d, "peak bytes %lld, expected -1 (unknown) or more",
                         (long long)p->peak_bytes);
  v.nvars = coil_sym_nvars(p->sym);
  size_t nv = (size_t)v.nvars + 1, nb = (size_t)p->nbuffers + 1;
  v.used = coil_xcalloc(nv, sizeof(bool));
  v.allowed = coil_xcalloc(nv, sizeof(bool));
  v.sym_line = coil_xmalloc(nv * sizeof(int));
  v.def_line = coil_xmalloc(nb * sizeof(int));
  v.free_line = coil_xmalloc(nb * sizeof(int));
  v.taken_by = coil_xmalloc(nb * sizeof(int));
  for (size_t i = 0; i < nv; i++)
    v.sym_line[i] = -1;
  for (size_t i = 0; i < nb; i++) {
    v.def_line[i] = DEF_NONE;
    v.free_line[i] = v.taken_by[i] = -1;
  }
  int rc = find_symbols(&v) || check_buffers(&v) || check_inputs(&v) || check_kernels(&v);
  for (int i = 0; i < p->nlines && !rc; i++)
    rc = check_line(&v, i);
  if (!rc && v.output_line < 0)
    rc = fail(&v, "%s", "the program has no output line");
  coil_xfree(v.used);
  coil_xfree(v.allowed);
  coil_xfree(v.sym_line);
  coil_xfree(v.def_line);
  coil_xfree(v.free_line);
  coil_xfree(v.taken_by);
  if (rc) {
    coil_diag_set(d, "%s", local.msg);
    return -1;
  }
  return 0;
}
