/* fx_triton.c — kernels.py: each Wrapper IR kernel as a @triton.jit function.
 *
 * A kernel's x space is flattened and cut into blocks of _XBLOCK points, one program each
 * (tl.program_id(0)); the loop variables x0, x1, ... are recovered from the flat index by
 * division and remainder. Reductions hold a block as a 2-D tile, _XBLOCK rows by _RBLOCK points
 * of the (flattened) r space: per-x values are [_XBLOCK, 1], per-r values [_XBLOCK, _RBLOCK]
 * (coil_c_per_r tells which is which), so a body reads as the Wrapper IR's "program over whole
 * rows". A persistent kernel holds its whole row (_RBLOCK >= the r size, one pass, the body in
 * order). A looped (reduction) kernel walks r in chunks of _RBLOCK: each reduce gets a loop of
 * its own that recomputes the per-r values it needs from the loads and folds them into a lane-
 * wise accumulator, reduced across lanes after the loop; a last loop recomputes the per-r values
 * that are stored, with a carry for each scan. Values are computed in float for f16 and bf16 and
 * rounded to their type after every op, as the cpu and cuda plugins do; min and max propagate
 * NaN; integer division and remainder follow PyTorch (floor) where Triton's operators truncate.
 * Out-of-range indirect indices are checked with tl.device_assert (Triton compiles it only in
 * debug mode: TRITON_DEBUG=1) and clamped, so nothing is read with them.
 *
 * The kernels call Triton's builtins only (tl.full, tl.reduce with the helpers here), none of
 * triton.language's own @triton.jit functions (tl.zeros, tl.sum, tl.max): graph.py runs the
 * kernels on CPU tensors by loading this file again under Triton's interpreter, in a process
 * whose triton.language was not, and a compiled function cannot be called from an interpreted
 * one.
 *
 * Every name from the program goes into the source as it is (fx_name_ok refuses the ones Python
 * would read otherwise); everything this file names itself starts with '_'. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_sdk.h"
#include "fx.h"

/* ---- names ---- */

static const char *const reserved[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "match", "case", "type",
    /* the modules' own names */
    "tl", "triton", "libdevice", "torch", "operator", "math", "os", "importlib", "wrap_triton", "K", "build", "g",
    "PROGRAM", "INPUTS", "KERNELS", "device"};

bool
fx_name_ok(const char *name)
{
  if (!name || !*name || name[0] == '_')
    return false;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return false;
  if (name[0] >= '0' && name[0] <= '9')
    return false;
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (strcmp(name, reserved[i]) == 0)
      return false;
  return true;
}

const char *
fx_tl_dtype(coil_dtype t)
{
  switch (t) {
  case COIL_F64: return "tl.float64";
  case COIL_F32: return "tl.float32";
  case COIL_F16: return "tl.float16";
  case COIL_BF16: return "tl.bfloat16";
  case COIL_I64: return "tl.int64";
  case COIL_I32: return "tl.int32";
  case COIL_I16: return "tl.int16";
  case COIL_I8: return "tl.int8";
  case COIL_U8: return "tl.uint8";
  default: return "tl.int1";
  }
}

const char *
fx_tl_compute(coil_dtype t)
{
  return t == COIL_F16 || t == COIL_BF16 ? "tl.float32" : fx_tl_dtype(t);
}

/* Triton's signature string of a pointer to t */
static const char *
sig_ptr(coil_dtype t)
{
  switch (t) {
  case COIL_F64: return "*fp64";
  case COIL_F32: return "*fp32";
  case COIL_F16: return "*fp16";
  case COIL_BF16: return "*bf16";
  case COIL_I64: return "*i64";
  case COIL_I32: return "*i32";
  case COIL_I16: return "*i16";
  case COIL_I8: return "*i8";
  case COIL_U8: return "*u8";
  default: return "*i1";
  }
}

/* ---- index expressions ---- */

typedef struct {
  const coil_wir_program *p;
  const char *(*var_name)(const coil_wir_program *, int);
  coil_strbuf *out;
} symprinter;

static void sym_put(const symprinter *s, const coil_sym *e);
static bool whole_row(const coil_kernel *k);

/* a call f(a, f(b, c)) of two arguments at a time */
static void
sym_call(const symprinter *s, const char *f, const coil_sym *const *args, int n)
{
  coil_strbuf_printf(s->out, "%s(", f);
  sym_put(s, args[0]);
  coil_strbuf_puts(s->out, ", ");
  if (n > 2)
    sym_call(s, f, args + 1, n - 1);
  else
    sym_put(s, args[1]);
  coil_strbuf_puts(s->out, ")");
}

/* Every compound part in parentheses: the text is read by a compiler, not a person. */
static void
sym_put(const symprinter *s, const coil_sym *e)
{
  switch (e->kind) {
  case COIL_SYM_CONST:
    coil_strbuf_printf(s->out, e->value < 0 ? "(%lld)" : "%lld", (long long)e->value);
    return;
  case COIL_SYM_VAR:
    coil_strbuf_puts(s->out, s->var_name ? s->var_name(s->p, e->var) : coil_sym_var_name(s->p->sym, e->var));
    return;
  case COIL_SYM_ADD:
  case COIL_SYM_MUL:
    coil_strbuf_puts(s->out, "(");
    for (int i = 0; i < e->nargs; i++) {
      if (i)
        coil_strbuf_puts(s->out, e->kind == COIL_SYM_ADD ? " + " : " * ");
      sym_put(s, e->args[i]);
    }
    coil_strbuf_puts(s->out, ")");
    return;
  case COIL_SYM_FLOORDIV:
  case COIL_SYM_MOD: {
    /* Triton's '//' and '%' truncate, and its axis analysis (contiguity, constancy) assumes a
     * dividend >= 0: a negative one gives wrong loads on the GPU, not only a wrong rounding (a
     * depthwise convolution_backward of the op tier, on the H200). A dividend a >= lo, lo < 0,
     * over a divisor b >= 1 is shifted: a // b = (a + m*b) // b - m and a % b = (a + m*b) % b,
     * m = -lo, with a + m*b >= 0. The helpers are left for what has no such bounds. */
    int64_t alo, ahi, blo, bhi;
    coil_sym_bounds(s->p->sym, e->args[0], &alo, &ahi);
    coil_sym_bounds(s->p->sym, e->args[1], &blo, &bhi);
    if (alo >= 0 && blo >= 0) {
      coil_strbuf_puts(s->out, "(");
      sym_put(s, e->args[0]);
      coil_strbuf_puts(s->out, e->kind == COIL_SYM_MOD ? " % " : " // ");
      sym_put(s, e->args[1]);
      coil_strbuf_puts(s->out, ")");
    } else if (blo >= 1 && alo > INT64_MIN / 4 && (bhi == INT64_MAX || bhi <= INT64_MAX / 4 / -alo)) {
      long long m = -(long long)alo;
      coil_strbuf_puts(s->out, "((");
      sym_put(s, e->args[0]);
      coil_strbuf_printf(s->out, " + %lld * ", m);
      sym_put(s, e->args[1]);
      coil_strbuf_puts(s->out, e->kind == COIL_SYM_MOD ? ") % " : ") // ");
      sym_put(s, e->args[1]);
      if (e->kind == COIL_SYM_FLOORDIV)
        coil_strbuf_printf(s->out, " - %lld", m);
      coil_strbuf_puts(s->out, ")");
    } else {
      sym_call(s, e->kind == COIL_SYM_MOD ? "_coil_mod" : "_coil_floordiv", e->args, 2);
    }
    return;
  }
  case COIL_SYM_MIN:
  case COIL_SYM_MAX:
    sym_call(s, e->kind == COIL_SYM_MIN ? "_coil_min" : "_coil_max", e->args, e->nargs);
    return;
  }
}

void
fx_sym_print(const coil_wir_program *p, const coil_sym *e, const char *(*var_name)(const coil_wir_program *, int),
             coil_strbuf *out)
{
  symprinter s = {p, var_name, out};
  sym_put(&s, e);
}

/* ---- what Triton cannot do ---- */

bool
fx_kernel_unsupported(const coil_wir_program *p, const coil_kernel *k, char *why, size_t n)
{
  (void)p;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_POW && !coil_dtype_is_float(in->dtype)) {
      snprintf(why, n, "kernel %s, %%%d: pow of %s (Triton has no integer power)", k->name, i,
               coil_dtype_name(in->dtype));
      return true;
    }
    if (in->op == COIL_KOP_STORE && in->mode != COIL_STORE_PLAIN) {
      coil_dtype t = k->params[in->param].dtype;
      bool atomic_ok = in->mode == COIL_STORE_ADD
                           ? (t == COIL_F32 || t == COIL_F64 || t == COIL_F16 || t == COIL_BF16 || t == COIL_I32 ||
                              t == COIL_I64)
                       : in->mode == COIL_STORE_MAX || in->mode == COIL_STORE_MIN
                           ? (t == COIL_I32 || t == COIL_I64 || t == COIL_F32 || t == COIL_F64)
                           : false;
      if (!atomic_ok) {
        snprintf(why, n, "kernel %s, %%%d: a combining store (%s) on %s, which Triton's atomics lack", k->name, i,
                 coil_store_mode_name(in->mode), coil_dtype_name(t));
        return true;
      }
    }
  }
  return false;
}

/* ---- one kernel ---- */

typedef struct {
  const coil_wir_program *p;
  const coil_kernel *k;
  bool *per_r;
  bool red;         /* has r ranges */
  bool looped;      /* a reduction kernel: r in chunks */
  coil_strbuf *b;
  const char *pad;  /* the current indentation */
} kemit;

static const char *
kvar(const coil_wir_program *p, int var)
{
  return coil_sym_var_name(p->sym, var); /* x0, r0, iN, size symbols: all checked names */
}

static void
index_expr(kemit *e, const coil_sym *idx)
{
  fx_sym_print(e->p, idx, kvar, e->b);
}

/* the block's shape for per-x values */
static const char *
xshape(const kemit *e)
{
  return e->red ? "[_XBLOCK, 1]" : "[_XBLOCK]";
}

static void
literal(coil_strbuf *b, coil_dtype t, double f, int64_t i)
{
  if (coil_dtype_is_float(t)) {
    if (isnan(f))
      coil_strbuf_puts(b, "float(\"nan\")");
    else if (isinf(f))
      coil_strbuf_puts(b, f > 0 ? "float(\"inf\")" : "float(\"-inf\")");
    else
      coil_strbuf_double(b, f);
  } else if (t == COIL_BOOL) {
    coil_strbuf_puts(b, i ? "1" : "0");
  } else {
    coil_strbuf_printf(b, "%lld", (long long)i);
  }
}

/* the identity of a reduction or scan kind on t: what masked points contribute */
static void
identity(coil_strbuf *b, coil_reduction red, coil_dtype t)
{
  bool low = red == COIL_REDUCE_MAX || red == COIL_REDUCE_ARGMAX; /* the lowest value */
  if (red == COIL_REDUCE_PROD) {
    coil_strbuf_puts(b, "1");
    return;
  }
  if (red != COIL_REDUCE_MAX && red != COIL_REDUCE_MIN && red != COIL_REDUCE_ARGMAX && red != COIL_REDUCE_ARGMIN) {
    coil_strbuf_puts(b, "0");
    return;
  }
  switch (t) {
  case COIL_F64: case COIL_F32: case COIL_F16: case COIL_BF16:
    coil_strbuf_puts(b, low ? "float(\"-inf\")" : "float(\"inf\")");
    return;
  case COIL_I64: coil_strbuf_puts(b, low ? "-9223372036854775808" : "9223372036854775807"); return;
  case COIL_I32: coil_strbuf_puts(b, low ? "-2147483648" : "2147483647"); return;
  case COIL_I16: coil_strbuf_puts(b, low ? "-32768" : "32767"); return;
  case COIL_I8: coil_strbuf_puts(b, low ? "-128" : "127"); return;
  case COIL_U8: coil_strbuf_puts(b, low ? "0" : "255"); return;
  default: coil_strbuf_puts(b, low ? "0" : "1"); return;
  }
}

/* the combine function of a reduction or scan kind on t (elementwise, and for tl.reduce) */
static const char *
combine_fn(coil_reduction red, coil_dtype t)
{
  bool f = coil_dtype_is_float(t);
  switch (red) {
  case COIL_REDUCE_PROD: return "_coil_mul";
  case COIL_REDUCE_MAX: return f ? "_coil_fmax" : t == COIL_BOOL ? "_coil_or" : "_coil_imax";
  case COIL_REDUCE_MIN: return f ? "_coil_fmin" : t == COIL_BOOL ? "_coil_and" : "_coil_imin";
  case COIL_REDUCE_ARGMAX: return "_coil_argmax";
  case COIL_REDUCE_ARGMIN: return "_coil_argmin";
  default: return "_coil_add";
  }
}

/* The expression written since b's offset start, rounded to f16 or bf16 (and back to float, the
 * compute type). bf16 goes through _coil_bf16, which the interpreted twin of the kernels
 * replaces: Triton's interpreter truncates f32 to bf16 where the GPU rounds to nearest even. */
static void
round16(coil_strbuf *b, size_t start, coil_dtype t)
{
  if (t == COIL_F16) {
    coil_strbuf_puts(b, ".to(tl.float16).to(tl.float32)");
  } else if (t == COIL_BF16) {
    size_t n = b->len - start;
    char *x = malloc(n + 1);
    if (x) {
      memcpy(x, b->s + start, n), x[n] = '\0';
      b->len = start, b->s[start] = '\0';
    }
    coil_strbuf_printf(b, "_coil_bf16(%s)", x ? x : "?");
    free(x);
  }
}

static const char *
libdevice_name(coil_kop op)
{
  switch (op) {
  case COIL_KOP_EXP: return "exp";
  case COIL_KOP_LOG: return "log";
  case COIL_KOP_LOG1P: return "log1p";
  case COIL_KOP_SQRT: return "sqrt";
  case COIL_KOP_RSQRT: return "rsqrt";
  case COIL_KOP_SIN: return "sin";
  case COIL_KOP_COS: return "cos";
  case COIL_KOP_TANH: return "tanh";
  case COIL_KOP_ERF: return "erf";
  case COIL_KOP_TAN: return "tan";
  case COIL_KOP_SINH: return "sinh";
  case COIL_KOP_COSH: return "cosh";
  case COIL_KOP_ASIN: return "asin";
  case COIL_KOP_ACOS: return "acos";
  case COIL_KOP_ATAN: return "atan";
  case COIL_KOP_ASINH: return "asinh";
  case COIL_KOP_ACOSH: return "acosh";
  case COIL_KOP_ATANH: return "atanh";
  case COIL_KOP_EXPM1: return "expm1";
  case COIL_KOP_LOG2: return "log2";
  case COIL_KOP_LOG10: return "log10";
  case COIL_KOP_FLOOR: return "floor";
  case COIL_KOP_CEIL: return "ceil";
  case COIL_KOP_ROUND: return "nearbyint"; /* ties to even */
  case COIL_KOP_TRUNC: return "trunc";
  default: return NULL;
  }
}

/* the mask of instruction i's loads and stores */
static const char *
mask_of(const kemit *e, int i)
{
  return e->per_r[i] ? "_xmask & _rmask" : "_xmask";
}

/* Where triton.language has the function itself (what Inductor calls too; Triton's interpreter
 * runs only these): exp (ex2-based on NVIDIA f32), log, sqrt rounded to nearest, rsqrt, sin, cos,
 * erf, floor, ceil, log2. NULL: libdevice's. */
static const char *
tl_math_name(coil_kop op)
{
  switch (op) {
  case COIL_KOP_EXP: return "tl.exp";
  case COIL_KOP_LOG: return "tl.log";
  case COIL_KOP_SQRT: return "tl.sqrt_rn";
  case COIL_KOP_RSQRT: return "tl.rsqrt";
  case COIL_KOP_SIN: return "tl.sin";
  case COIL_KOP_COS: return "tl.cos";
  case COIL_KOP_ERF: return "tl.erf";
  case COIL_KOP_FLOOR: return "tl.floor";
  case COIL_KOP_CEIL: return "tl.ceil";
  case COIL_KOP_LOG2: return "tl.log2";
  default: return NULL;
  }
}

/* The expression of instruction i (not STORE, REDUCE, SCAN or INDIRECT), operands _tN. */
static void
value_expr(kemit *e, int i)
{
  const coil_kinst *in = &e->k->insts[i];
  coil_strbuf *b = e->b;
  size_t start = b->len;
  coil_dtype t = in->dtype;
  char a[24] = "", c[24] = "", d[24] = "";
  int ar = coil_kop_arity(in->op);
  if (ar > 0)
    snprintf(a, sizeof a, "_t%d", in->args[0]);
  if (ar > 1)
    snprintf(c, sizeof c, "_t%d", in->args[1]);
  if (ar > 2)
    snprintf(d, sizeof d, "_t%d", in->args[2]);
  coil_dtype at = ar > 0 ? e->k->insts[in->args[0]].dtype : t;
  bool f = coil_dtype_is_float(at);
  switch (in->op) {
  case COIL_KOP_LOAD: {
    const coil_kparam *pm = &e->k->params[in->param];
    coil_strbuf_printf(b, "tl.load(%s + (", pm->name);
    index_expr(e, in->index);
    coil_strbuf_printf(b, " + _xz), %s, other=0)", mask_of(e, i));
    if (pm->dtype == COIL_F16 || pm->dtype == COIL_BF16)
      coil_strbuf_puts(b, ".to(tl.float32)");
    return;
  }
  case COIL_KOP_CONST:
    coil_strbuf_printf(b, "tl.full(%s, ", xshape(e));
    literal(b, t, in->f, in->i);
    coil_strbuf_printf(b, ", %s)", fx_tl_compute(t));
    return;
  case COIL_KOP_INDEX:
    coil_strbuf_puts(b, "(");
    index_expr(e, in->index);
    coil_strbuf_puts(b, " + _xz)");
    return;
  case COIL_KOP_CAST:
    if (t == COIL_BOOL)
      coil_strbuf_printf(b, "(%s != 0)", a);
    else if (t == COIL_F16 || t == COIL_BF16)
      coil_strbuf_puts(b, a), round16(b, start, t);
    else
      coil_strbuf_printf(b, "%s.to(%s)", a, fx_tl_dtype(t));
    return;
  case COIL_KOP_WHERE:
    coil_strbuf_printf(b, "tl.where(%s, %s, %s)", a, c, d);
    return;
  case COIL_KOP_NEG: coil_strbuf_printf(b, "(-%s)", a); break;
  case COIL_KOP_ABS: coil_strbuf_printf(b, "tl.abs(%s)", a); break;
  case COIL_KOP_RELU:
    if (f)
      coil_strbuf_printf(b, "tl.where(%s != %s, %s, tl.where(%s > 0, %s, 0.0))", a, a, a, a, a);
    else
      coil_strbuf_printf(b, "tl.where(%s > 0, %s, 0)", a, a);
    break;
  case COIL_KOP_FLOOR: case COIL_KOP_CEIL: case COIL_KOP_ROUND: case COIL_KOP_TRUNC:
    if (f && tl_math_name(in->op))
      coil_strbuf_printf(b, "%s(%s)", tl_math_name(in->op), a);
    else if (f)
      coil_strbuf_printf(b, "libdevice.%s(%s)", libdevice_name(in->op), a);
    else
      coil_strbuf_puts(b, a);
    break;
  case COIL_KOP_BITNOT: coil_strbuf_printf(b, "(~%s)", a); break;
  case COIL_KOP_NOT: coil_strbuf_printf(b, "(%s == 0)", a); break;
  case COIL_KOP_RECIP: coil_strbuf_printf(b, "(1.0 / %s)", a); break;
  case COIL_KOP_SIGMOID: coil_strbuf_printf(b, "(1.0 / (1.0 + tl.exp(-%s)))", a); break;
  case COIL_KOP_ADD: coil_strbuf_printf(b, "(%s + %s)", a, c); break;
  case COIL_KOP_SUB: coil_strbuf_printf(b, "(%s - %s)", a, c); break;
  case COIL_KOP_MUL: coil_strbuf_printf(b, "(%s * %s)", a, c); break;
  case COIL_KOP_DIV: /* Triton's '/' on f32 is div.full (2 ulp): truncdiv of 6 / 3 could give 1 */
    if (f && at != COIL_F64)
      coil_strbuf_printf(b, "tl.div_rn(%s, %s)", a, c);
    else
      coil_strbuf_printf(b, "(%s / %s)", a, c);
    break;
  case COIL_KOP_FLOORDIV: coil_strbuf_printf(b, "%s(%s, %s)", f ? "_coil_floordiv_f" : "_coil_floordiv_v", a, c); break;
  case COIL_KOP_TRUNCDIV:
    if (f && at != COIL_F64)
      coil_strbuf_printf(b, "libdevice.trunc(tl.div_rn(%s, %s))", a, c);
    else if (f)
      coil_strbuf_printf(b, "libdevice.trunc(%s / %s)", a, c);
    else
      coil_strbuf_printf(b, "_coil_truncdiv_v(%s, %s)", a, c);
    break;
  case COIL_KOP_POW: coil_strbuf_printf(b, "libdevice.pow(%s, %s)", a, c); break;
  case COIL_KOP_MAX:
    coil_strbuf_printf(b, "%s(%s, %s)", f ? "_coil_fmax" : at == COIL_BOOL ? "_coil_or" : "_coil_imax", a, c);
    break;
  case COIL_KOP_MIN:
    coil_strbuf_printf(b, "%s(%s, %s)", f ? "_coil_fmin" : at == COIL_BOOL ? "_coil_and" : "_coil_imin", a, c);
    break;
  case COIL_KOP_BITAND: case COIL_KOP_AND: coil_strbuf_printf(b, "(%s & %s)", a, c); break;
  case COIL_KOP_BITOR: case COIL_KOP_OR: coil_strbuf_printf(b, "(%s | %s)", a, c); break;
  case COIL_KOP_BITXOR: coil_strbuf_printf(b, "(%s ^ %s)", a, c); break;
  case COIL_KOP_ATAN2: coil_strbuf_printf(b, "libdevice.atan2(%s, %s)", a, c); break;
  case COIL_KOP_FMOD:
    if (f)
      coil_strbuf_printf(b, "libdevice.fmod(%s, %s)", a, c);
    else
      coil_strbuf_printf(b, "_coil_fmod_v(%s, %s)", a, c);
    break;
  case COIL_KOP_EQ: coil_strbuf_printf(b, "(%s == %s)", a, c); return;
  case COIL_KOP_NE: coil_strbuf_printf(b, "(%s != %s)", a, c); return;
  case COIL_KOP_LT: coil_strbuf_printf(b, "(%s < %s)", a, c); return;
  case COIL_KOP_LE: coil_strbuf_printf(b, "(%s <= %s)", a, c); return;
  case COIL_KOP_GT: coil_strbuf_printf(b, "(%s > %s)", a, c); return;
  case COIL_KOP_GE: coil_strbuf_printf(b, "(%s >= %s)", a, c); return;
  default: {
    const char *ld = libdevice_name(in->op);
    if (tl_math_name(in->op))
      coil_strbuf_printf(b, "%s(%s)", tl_math_name(in->op), a);
    else
      coil_strbuf_printf(b, "libdevice.%s(%s)", ld ? ld : "?", a);
    break;
  }
  }
  round16(b, start, t);
}

/* the statements of instruction i that is not a REDUCE (computed at e->pad) */
static void
emit_inst(kemit *e, int i, int *carry_scans)
{
  const coil_kinst *in = &e->k->insts[i];
  coil_strbuf *b = e->b;
  const char *pad = e->pad;
  if (in->op == COIL_KOP_STORE) {
    const coil_kparam *pm = &e->k->params[in->param];
    const char *fn = in->mode == COIL_STORE_ADD ? "tl.atomic_add"
                     : in->mode == COIL_STORE_MAX ? "tl.atomic_max"
                     : in->mode == COIL_STORE_MIN ? "tl.atomic_min"
                                                  : "tl.store";
    coil_strbuf_printf(b, "%s%s(%s + (", pad, fn, pm->name);
    index_expr(e, in->index);
    coil_strbuf_printf(b, " + _xz), _t%d.to(%s), %s%s)\n", in->args[0], fx_tl_dtype(pm->dtype),
                       in->mode == COIL_STORE_PLAIN ? "" : "mask=", mask_of(e, i));
    return;
  }
  if (in->op == COIL_KOP_INDIRECT) {
    coil_strbuf_printf(b, "%s_v%d = _t%d.to(tl.int64)\n", pad, i, in->args[0]);
    coil_strbuf_printf(b, "%s_ok%d = (_v%d >= 0) & (_v%d < ", pad, i, i, i);
    index_expr(e, in->index);
    coil_strbuf_puts(b, ")\n");
    coil_strbuf_printf(b, "%stl.device_assert(_ok%d | ~(%s), \"index out of range in %s\")\n", pad, i, mask_of(e, i),
                       e->k->name);
    coil_strbuf_printf(b, "%si%d = tl.where(_ok%d, _v%d, 0)\n", pad, i, i, i);
    coil_strbuf_printf(b, "%s_t%d = i%d\n", pad, i, i);
    return;
  }
  if (in->op == COIL_KOP_SCAN) {
    const coil_kinst *op = &e->k->insts[in->args[0]];
    const char *cf = combine_fn(in->red, in->dtype);
    coil_strbuf_printf(b, "%s_s%d = tl.where(_rmask, tl.broadcast_to(_t%d, [_XBLOCK, _RBLOCK]), ", pad, i, in->args[0]);
    identity(b, in->red, op->dtype);
    coil_strbuf_puts(b, ")\n");
    if (e->looped) { /* the chunks before, in the carry */
      coil_strbuf_printf(b, "%s_t%d = %s(_c%d, tl.associative_scan(_s%d, 1, %s))\n", pad, i, cf, i, i, cf);
      coil_strbuf_printf(b, "%s_c%d = %s(_c%d, tl.reduce(_s%d, 1, %s)[:, None])\n", pad, i, cf, i, i, cf);
      if (carry_scans)
        carry_scans[i] = 1;
    } else {
      coil_strbuf_printf(b, "%s_t%d = tl.associative_scan(_s%d, 1, %s)\n", pad, i, i, cf);
    }
    return;
  }
  coil_strbuf_printf(b, "%s_t%d = ", pad, i);
  value_expr(e, i);
  coil_strbuf_puts(b, "\n");
}

/* the welford_mean of operand a before instruction i, or -1 */
static int
mean_of(const coil_kernel *k, int i, int a)
{
  for (int j = 0; j < i; j++)
    if (k->insts[j].op == COIL_KOP_REDUCE && k->insts[j].red == COIL_REDUCE_WELFORD_MEAN && k->insts[j].args[0] == a)
      return j;
  return -1;
}

/* The reduction of instruction i in one pass over a whole row (persistent), operand _tA. */
static void
reduce_whole(kemit *e, int i)
{
  const coil_kinst *in = &e->k->insts[i];
  coil_strbuf *b = e->b;
  const char *pad = e->pad;
  int a = in->args[0];
  coil_dtype ot = e->k->insts[a].dtype;
  coil_strbuf_printf(b, "%s_w%d = tl.broadcast_to(_t%d, [_XBLOCK, _RBLOCK])\n", pad, i, a);
  switch (in->red) {
  case COIL_REDUCE_SUM:
    coil_strbuf_printf(b, "%s_t%d = tl.reduce(tl.where(_rmask, _w%d, 0).to(%s), 1, _coil_add)[:, None]", pad, i, i,
                       fx_tl_compute(in->dtype));
    break;
  case COIL_REDUCE_ANY:
    coil_strbuf_printf(b, "%s_t%d = tl.reduce(tl.where(_rmask, _w%d != 0, 0).to(tl.int8), 1, _coil_imax)[:, None] != 0", pad, i, i);
    break;
  case COIL_REDUCE_ARGMAX:
  case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "%s_t%d = tl.reduce((tl.where(_rmask, _w%d, ", pad, i, i);
    identity(b, in->red, ot);
    coil_strbuf_printf(b, "), tl.broadcast_to(_rindex, [_XBLOCK, _RBLOCK])), 1, %s)[1][:, None]",
                       combine_fn(in->red, ot));
    break;
  case COIL_REDUCE_WELFORD_MEAN:
    coil_strbuf_printf(b, "%s_t%d = tl.reduce(tl.where(_rmask, _w%d, 0.0), 1, _coil_add)[:, None] / _rnumel", pad, i, i);
    break;
  case COIL_REDUCE_WELFORD_M2: {
    int m = mean_of(e->k, i, a);
    if (m >= 0)
      coil_strbuf_printf(b, "%s_m%d = _t%d\n", pad, i, m);
    else
      coil_strbuf_printf(b, "%s_m%d = tl.reduce(tl.where(_rmask, _w%d, 0.0), 1, _coil_add)[:, None] / _rnumel\n", pad, i, i);
    coil_strbuf_printf(b, "%s_d%d = tl.where(_rmask, _w%d - _m%d, 0.0)\n", pad, i, i, i);
    coil_strbuf_printf(b, "%s_t%d = tl.reduce(_d%d * _d%d, 1, _coil_add)[:, None]", pad, i, i, i);
    break;
  }
  default:
    coil_strbuf_printf(b, "%s_t%d = tl.reduce(tl.where(_rmask, _w%d, ", pad, i, i);
    identity(b, in->red, ot);
    coil_strbuf_printf(b, "), 1, %s)[:, None]", combine_fn(in->red, ot));
    break;
  }
  coil_strbuf_puts(b, "\n");
  if (in->dtype == COIL_F16 || in->dtype == COIL_BF16) {
    coil_strbuf_printf(b, "%s_t%d = ", pad, i);
    size_t start = b->len;
    coil_strbuf_printf(b, "_t%d", i);
    round16(b, start, in->dtype);
    coil_strbuf_puts(b, "\n");
  }
}

/* Marks in need[] the per-r instructions that instruction i's value depends on (i included when
 * it is per-r), through operands and the indirect variables its index uses. */
static void
need_per_r(const kemit *e, int i, bool *need)
{
  const coil_kinst *in = &e->k->insts[i];
  if (!e->per_r[i] || need[i] || in->op == COIL_KOP_REDUCE)
    return;
  need[i] = in->op != COIL_KOP_STORE;
  for (int a = 0; a < coil_kop_arity(in->op); a++)
    if (in->args[a] >= 0)
      need_per_r(e, in->args[a], need);
  int deps[8], nd = coil_kinst_indirect_deps(e->p, e->k, i, deps, 8);
  for (int d = 0; d < nd; d++)
    need_per_r(e, deps[d], need);
}

static void
chunk_header(kemit *e, const char *pad)
{
  coil_strbuf *b = e->b;
  coil_strbuf_printf(b, "%sfor _roffset in range(0, _rnumel, _RBLOCK):\n", pad);
  coil_strbuf_printf(b, "%s    _rindex = _roffset + tl.arange(0, _RBLOCK).to(tl.int64)[None, :]\n", pad);
  coil_strbuf_printf(b, "%s    _rmask = _rindex < _rnumel\n", pad);
}

static void decompose(kemit *e, bool r, const char *pad);

/* the per-r values marked in need[], in order, one level in */
static void
emit_needed(kemit *e, const bool *need, int *carry)
{
  for (int j = 0; j < e->k->ninsts; j++)
    if (need[j])
      emit_inst(e, j, carry);
}

/* A reduce of a looped kernel: a loop of its own folding its operand into lane-wise
 * accumulators, then one reduction across the lanes. */
static void
reduce_looped(kemit *e, int i)
{
  const coil_kinst *in = &e->k->insts[i];
  coil_strbuf *b = e->b;
  int a = in->args[0], n = e->k->ninsts;
  coil_dtype ot = e->k->insts[a].dtype;
  const char *ct = fx_tl_compute(ot);
  bool *need = calloc((size_t)n + 1, sizeof *need);
  if (!need)
    return;
  need_per_r(e, a, need);
  int m = in->red == COIL_REDUCE_WELFORD_M2 ? mean_of(e->k, i, a) : -1;
  if (in->red == COIL_REDUCE_WELFORD_M2 && m < 0) { /* its mean first, in a loop of its own */
    coil_strbuf_printf(b, "    _a%dm = tl.full([_XBLOCK, _RBLOCK], 0, tl.float32)\n", i);
    chunk_header(e, "    ");
    e->pad = "        ";
    decompose(e, true, "        ");
    emit_needed(e, need, NULL);
    coil_strbuf_printf(b, "        _a%dm = _a%dm + tl.where(_rmask, tl.broadcast_to(_t%d, [_XBLOCK, _RBLOCK]), 0.0)\n", i,
                       i, a);
    e->pad = "    ";
    coil_strbuf_printf(b, "    _m%d = tl.reduce(_a%dm, 1, _coil_add)[:, None] / _rnumel\n", i, i);
  } else if (m >= 0) {
    coil_strbuf_printf(b, "    _m%d = _t%d\n", i, m);
  }
  switch (in->red) {
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "    _a%d = tl.full([_XBLOCK, _RBLOCK], ", i);
    identity(b, in->red, ot);
    coil_strbuf_printf(b, ", %s)\n    _a%di = tl.full([_XBLOCK, _RBLOCK], 0, tl.int64)\n", ct, i);
    break;
  case COIL_REDUCE_ANY:
    coil_strbuf_printf(b, "    _a%d = tl.full([_XBLOCK, _RBLOCK], 0, tl.int8)\n", i);
    break;
  case COIL_REDUCE_WELFORD_MEAN: case COIL_REDUCE_WELFORD_M2:
    coil_strbuf_printf(b, "    _a%d = tl.full([_XBLOCK, _RBLOCK], 0, %s)\n", i, ot == COIL_F64 ? "tl.float64" : "tl.float32");
    break;
  default:
    coil_strbuf_printf(b, "    _a%d = tl.full([_XBLOCK, _RBLOCK], ", i);
    identity(b, in->red, ot);
    coil_strbuf_printf(b, ", %s)\n", ct);
  }
  chunk_header(e, "    ");
  e->pad = "        ";
  decompose(e, true, "        ");
  emit_needed(e, need, NULL);
  coil_strbuf_printf(b, "        _w%d = tl.broadcast_to(_t%d, [_XBLOCK, _RBLOCK])\n", i, a);
  const char *cf = combine_fn(in->red, ot);
  switch (in->red) {
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "        _a%d, _a%di = %s(_a%d, _a%di, tl.where(_rmask, _w%d, ", i, i, cf, i, i, i);
    identity(b, in->red, ot);
    coil_strbuf_puts(b, "), tl.broadcast_to(_rindex, [_XBLOCK, _RBLOCK]))\n");
    break;
  case COIL_REDUCE_ANY:
    coil_strbuf_printf(b, "        _a%d = _a%d | tl.where(_rmask, _w%d != 0, 0).to(tl.int8)\n", i, i, i);
    break;
  case COIL_REDUCE_WELFORD_MEAN:
    coil_strbuf_printf(b, "        _a%d = _a%d + tl.where(_rmask, _w%d, 0.0)\n", i, i, i);
    break;
  case COIL_REDUCE_WELFORD_M2:
    coil_strbuf_printf(b, "        _d%d = tl.where(_rmask, _w%d - _m%d, 0.0)\n", i, i, i);
    coil_strbuf_printf(b, "        _a%d = _a%d + _d%d * _d%d\n", i, i, i, i);
    break;
  default:
    coil_strbuf_printf(b, "        _a%d = %s(_a%d, tl.where(_rmask, _w%d, ", i, cf, i, i);
    identity(b, in->red, ot);
    coil_strbuf_puts(b, "))\n");
  }
  e->pad = "    ";
  switch (in->red) {
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "    _t%d = tl.reduce((_a%d, _a%di), 1, %s)[1][:, None]", i, i, i, cf);
    break;
  case COIL_REDUCE_ANY:
    coil_strbuf_printf(b, "    _t%d = tl.reduce(_a%d, 1, _coil_imax)[:, None] != 0", i, i);
    break;
  case COIL_REDUCE_SUM:
    coil_strbuf_printf(b, "    _t%d = tl.reduce(_a%d, 1, _coil_add)[:, None].to(%s)", i, i, fx_tl_compute(in->dtype));
    break;
  case COIL_REDUCE_WELFORD_MEAN:
    coil_strbuf_printf(b, "    _t%d = tl.reduce(_a%d, 1, _coil_add)[:, None] / _rnumel", i, i);
    break;
  case COIL_REDUCE_WELFORD_M2:
    coil_strbuf_printf(b, "    _t%d = tl.reduce(_a%d, 1, _coil_add)[:, None]", i, i);
    break;
  default:
    coil_strbuf_printf(b, "    _t%d = tl.reduce(_a%d, 1, %s)[:, None]", i, i, cf);
  }
  coil_strbuf_puts(b, "\n");
  if (in->dtype == COIL_F16 || in->dtype == COIL_BF16) {
    coil_strbuf_printf(b, "    _t%d = ", i);
    size_t start = b->len;
    coil_strbuf_printf(b, "_t%d", i);
    round16(b, start, in->dtype);
    coil_strbuf_puts(b, "\n");
  }
  free(need);
}

/* x0.. (or r0..) from the flat index of the block */
static void
decompose(kemit *e, bool r, const char *pad)
{
  coil_strbuf *b = e->b;
  int n = r ? e->k->nr : e->k->nx;
  const coil_sym *const *size = r ? e->k->rsize : e->k->xsize;
  const char *flat = r ? "_rindex" : "_xindex";
  for (int d = 0; d < n; d++) {
    coil_strbuf_printf(b, "%s%c%d = %s", pad, r ? 'r' : 'x', d, flat);
    if (d + 1 < n) { /* divided by the sizes after it */
      coil_strbuf_puts(b, " // (");
      for (int j = d + 1; j < n; j++) {
        if (j > d + 1)
          coil_strbuf_puts(b, " * ");
        fx_sym_print(e->p, size[j], kvar, b);
      }
      coil_strbuf_puts(b, ")");
    }
    if (d > 0) {
      coil_strbuf_puts(b, " % ");
      fx_sym_print(e->p, size[d], kvar, b);
    }
    coil_strbuf_puts(b, "\n");
  }
}

static void
kernel_source(const coil_wir_program *p, const coil_kernel *k, coil_strbuf *b)
{
  bool *per_r = calloc((size_t)k->ninsts + 1, sizeof *per_r);
  int *carry = calloc((size_t)k->ninsts + 1, sizeof *carry);
  if (!per_r || !carry) {
    free(per_r);
    free(carry);
    return;
  }
  coil_c_set_loop_ranges(p, k);
  coil_c_per_r(p, k, per_r);
  kemit e = {p, k, per_r, k->nr > 0, k->nr > 0 && !whole_row(k), b, "    "};
  coil_strbuf_printf(b, "\n@triton.jit\ndef %s(", k->name);
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(b, "%s, ", k->params[i].name);
  for (int i = 0; i < k->nsyms; i++)
    coil_strbuf_printf(b, "%s, ", coil_sym_var_name(p->sym, k->syms[i]->var));
  coil_strbuf_printf(b, "_xnumel, %s_XBLOCK: tl.constexpr%s):\n", e.red ? "_rnumel, " : "",
                     e.red ? ", _RBLOCK: tl.constexpr" : "");
  if (k->source_ops && *k->source_ops) {
    coil_strbuf_puts(b, "    # ");
    for (const char *s = k->source_ops; *s; s++) /* names, '.', ',' and spaces (the verifier) */
      coil_strbuf_putn(b, s, 1);
    coil_strbuf_puts(b, "\n");
  }
  if (e.red) {
    coil_strbuf_puts(b, "    _xindex = (tl.program_id(0).to(tl.int64) * _XBLOCK + tl.arange(0, _XBLOCK).to(tl.int64))[:, None]\n"
                        "    _xmask = _xindex < _xnumel\n"
                        "    _xz = tl.full([_XBLOCK, 1], 0, tl.int64)\n");
  } else {
    coil_strbuf_puts(b, "    _xindex = tl.program_id(0).to(tl.int64) * _XBLOCK + tl.arange(0, _XBLOCK).to(tl.int64)\n"
                        "    _xmask = _xindex < _xnumel\n"
                        "    _xz = tl.full([_XBLOCK], 0, tl.int64)\n");
  }
  decompose(&e, false, "    ");
  if (e.red && !e.looped) {
    coil_strbuf_puts(b, "    _rindex = tl.arange(0, _RBLOCK).to(tl.int64)[None, :]\n"
                        "    _rmask = _rindex < _rnumel\n");
    decompose(&e, true, "    ");
  }
  if (!e.looped) { /* the body in order */
    for (int i = 0; i < k->ninsts; i++)
      if (k->insts[i].op == COIL_KOP_REDUCE)
        reduce_whole(&e, i);
      else
        emit_inst(&e, i, NULL);
  } else { /* per-x values in order, a loop per reduce, the per-r stores in a last loop */
    bool *last = calloc((size_t)k->ninsts + 1, sizeof *last);
    bool any_last = false;
    for (int i = 0; last && i < k->ninsts; i++) {
      const coil_kinst *in = &k->insts[i];
      if (in->op == COIL_KOP_REDUCE)
        reduce_looped(&e, i);
      else if (!per_r[i])
        emit_inst(&e, i, NULL);
      else if (in->op == COIL_KOP_STORE) {
        need_per_r(&e, in->args[0], last);
        int deps[8], nd = coil_kinst_indirect_deps(p, k, i, deps, 8);
        for (int d = 0; d < nd; d++)
          need_per_r(&e, deps[d], last);
        any_last = true;
      }
    }
    if (last && any_last) {
      for (int i = 0; i < k->ninsts; i++) /* the scans' carries */
        if (last[i] && k->insts[i].op == COIL_KOP_SCAN) {
          coil_strbuf_printf(b, "    _c%d = tl.full([_XBLOCK, 1], ", i);
          identity(b, k->insts[i].red, k->insts[k->insts[i].args[0]].dtype);
          coil_strbuf_printf(b, ", %s)\n", fx_tl_compute(k->insts[i].dtype));
        }
      chunk_header(&e, "    ");
      e.pad = "        ";
      decompose(&e, true, "        ");
      for (int i = 0; i < k->ninsts; i++)
        if (last[i] || (k->insts[i].op == COIL_KOP_STORE && per_r[i]))
          emit_inst(&e, i, carry);
      e.pad = "    ";
    }
    free(last);
  }
  free(per_r);
  free(carry);
}

/* ---- the module ---- */

static const char helpers[] =
    "# Helpers (PyTorch's semantics where Triton's operators differ): integer floor division and\n"
    "# remainder (Triton's truncate), division by zero of integers giving 0 as in coil's other\n"
    "# generated code, NaN-propagating max and min, and the combine functions of reductions.\n"
    "@triton.jit\n"
    "def _coil_floordiv(a, b):\n"
    "    q = a // b\n"
    "    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)\n\n"
    "@triton.jit\n"
    "def _coil_mod(a, b):\n"
    "    r = a % b\n"
    "    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)\n\n"
    "@triton.jit\n"
    "def _coil_min(a, b):\n"
    "    return tl.minimum(a, b)\n\n"
    "@triton.jit\n"
    "def _coil_max(a, b):\n"
    "    return tl.maximum(a, b)\n\n"
    "@triton.jit\n"
    "def _coil_floordiv_v(a, b):\n"
    "    s = tl.where(b == 0, 1, b)\n"
    "    return tl.where(b == 0, 0, _coil_floordiv(a, s))\n\n"
    "@triton.jit\n"
    "def _coil_truncdiv_v(a, b):\n"
    "    s = tl.where(b == 0, 1, b)\n"
    "    return tl.where(b == 0, 0, a // s)\n\n"
    "@triton.jit\n"
    "def _coil_fmod_v(a, b):\n"
    "    s = tl.where(b == 0, 1, b)\n"
    "    return tl.where(b == 0, 0, a % s)\n\n"
    "@triton.jit\n"
    "def _coil_floordiv_f(a, b):\n"
    "    # PyTorch's div_floor for floats: from fmod, so that a == b * q + r holds where it can\n"
    "    m = libdevice.fmod(a, b)\n"
    "    d = (a - m) / b\n"
    "    d = tl.where((m != 0) & ((b < 0) != (m < 0)), d - 1.0, d)\n"
    "    q = tl.floor(d)\n"
    "    q = tl.where(d - q > 0.5, q + 1.0, q)\n"
    "    q = tl.where(d == 0, libdevice.copysign(0.0 * d, a / b), q)\n"
    "    return tl.where(b == 0, a / b, q)\n\n"
    "@triton.jit\n"
    "def _coil_fmax(a, b):\n"
    "    return tl.where((a > b) | (a != a), a, b)\n\n"
    "@triton.jit\n"
    "def _coil_fmin(a, b):\n"
    "    return tl.where((a < b) | (a != a), a, b)\n\n"
    "@triton.jit\n"
    "def _coil_imax(a, b):\n"
    "    return tl.maximum(a, b)\n\n"
    "@triton.jit\n"
    "def _coil_imin(a, b):\n"
    "    return tl.minimum(a, b)\n\n"
    "@triton.jit\n"
    "def _coil_or(a, b):\n"
    "    return a | b\n\n"
    "@triton.jit\n"
    "def _coil_and(a, b):\n"
    "    return a & b\n\n"
    "@triton.jit\n"
    "def _coil_add(a, b):\n"
    "    return a + b\n\n"
    "@triton.jit\n"
    "def _coil_mul(a, b):\n"
    "    return a * b\n\n"
    "@triton.jit\n"
    "def _coil_bf16(x):\n"
    "    # float rounded to bfloat16, to nearest even, and back\n"
    "    return x.to(tl.bfloat16).to(tl.float32)\n\n"
    "@triton.jit\n"
    "def _coil_argmax(av, ai, bv, bi):\n"
    "    # the first largest; NaN is larger than everything (torch.argmax)\n"
    "    an = av != av\n"
    "    bn = bv != bv\n"
    "    a = (av > bv) | (an & ~bn) | (((av == bv) | (an & bn)) & (ai < bi))\n"
    "    return tl.where(a, av, bv), tl.where(a, ai, bi)\n\n"
    "@triton.jit\n"
    "def _coil_argmin(av, ai, bv, bi):\n"
    "    # the first smallest; NaN is smaller than everything (torch.argmin)\n"
    "    an = av != av\n"
    "    bn = bv != bv\n"
    "    a = (av < bv) | (an & ~bn) | (((av == bv) | (an & bn)) & (ai < bi))\n"
    "    return tl.where(a, av, bv), tl.where(a, ai, bi)\n\n"
    "\n"
    "def _blocks(kind, xnumel, rnumel):\n"
    "    \"\"\"(_XBLOCK, _RBLOCK, num_warps) of a launch: 1024 points a program for pointwise kernels,\n"
    "    down to 128 while that gives fewer than 8 programs (a small kernel on one SM runs its chain of\n"
    "    math serially: 1,024 points of ten sin took 5x Inductor's time on the H200); a persistent\n"
    "    reduction holds its whole row (a power of two), with as many rows as make 4096 points; a\n"
    "    looped one walks r by up to 1024 points, 2048 points a chunk.\"\"\"\n"
    "    if kind == \"pointwise\":\n"
    "        xb = 1024\n"
    "        while xb > 128 and (int(xnumel) + xb - 1) // xb < 8:\n"
    "            xb //= 2\n"
    "        return xb, 1, 4\n"
    "    rb = 1 << (max(int(rnumel), 1) - 1).bit_length()  # the next power of two, in plain Python\n"
    "    if kind == \"persistent\":\n"
    "        return max(1, min(64, 4096 // rb)), rb, (8 if rb >= 2048 else 4)\n"
    "    rb = min(rb, 1024)\n"
    "    return max(1, min(64, 2048 // rb)), rb, 8\n";

/* A reduction kernel whose row has a static size of at most FX_WHOLE_ROW points is written as
 * persistent: the whole row is read once, where the chunked loop reads it again for each reduce
 * and for the stores (softmax, layer norm, RMS norm of 4096-point rows were 16-31 % slower
 * than Inductor's one-pass kernels on the H200). */
enum { FX_WHOLE_ROW = 4096 };

static bool
whole_row(const coil_kernel *k)
{
  if (k->nr == 0 || k->kind != COIL_KERNEL_REDUCTION)
    return k->nr > 0;
  int64_t n = 1;
  for (int i = 0; i < k->nr; i++) {
    if (k->rsize[i]->kind != COIL_SYM_CONST || k->rsize[i]->value < 0)
      return false;
    n *= k->rsize[i]->value;
    if (n > FX_WHOLE_ROW)
      return false;
  }
  return true;
}

static const char *
kind_name(const coil_kernel *k)
{
  return k->nr == 0 ? "pointwise" : whole_row(k) ? "persistent" : "reduction";
}

void
fx_triton_module(const coil_wir_program *p, coil_strbuf *out)
{
  coil_strbuf_printf(out,
                     "# kernels.py: the Triton kernels of coil program %s (Wrapper IR %d.%d), written by coil's fx\n"
                     "# plugin %s. graph.py launches them; KERNELS lists each with its argument types.\n"
                     "import triton\n"
                     "import triton.language as tl\n"
                     "from triton.language.extra import libdevice\n\n",
                     p->name, p->version_major, p->version_minor, FX_VERSION);
  coil_strbuf_puts(out, helpers);
  for (int k = 0; k < p->nkernels; k++) {
    coil_strbuf_puts(out, "\n");
    kernel_source(p, &p->kernels[k], out);
  }
  /* KERNELS: name -> (function, kind, {argument: Triton type}) */
  coil_strbuf_puts(out, "\n\nKERNELS = {\n");
  for (int k = 0; k < p->nkernels; k++) {
    const coil_kernel *kk = &p->kernels[k];
    coil_strbuf_printf(out, "    \"%s\": (%s, \"%s\", {", kk->name, kk->name, kind_name(kk));
    for (int i = 0; i < kk->nparams; i++)
      coil_strbuf_printf(out, "\"%s\": \"%s\", ", kk->params[i].name, sig_ptr(kk->params[i].dtype));
    for (int i = 0; i < kk->nsyms; i++)
      coil_strbuf_printf(out, "\"%s\": \"i64\", ", coil_sym_var_name(p->sym, kk->syms[i]->var));
    coil_strbuf_printf(out, "\"_xnumel\": \"i64\"%s}),\n", kk->nr ? ", \"_rnumel\": \"i64\"" : "");
  }
  coil_strbuf_puts(out, "}\n");
}

/* The statements of a launcher's body (graph.py): the numbers of points from the size symbols
 * (Python ints at run time), nothing launched for an empty x space, the blocks from _blocks. */
void
fx_launch_source(const coil_wir_program *p, const coil_kernel *k, coil_strbuf *out)
{
  coil_strbuf_puts(out, "    _xnumel = 1"); /* Python's // and % are floor division already */
  for (int d = 0; d < k->nx; d++) {
    coil_strbuf_puts(out, " * (");
    coil_sym_print(p->sym, k->xsize[d], COIL_SYM_PY_SYNTAX, out);
    coil_strbuf_puts(out, ")");
  }
  coil_strbuf_puts(out, "\n    _rnumel = 1");
  for (int d = 0; d < k->nr; d++) {
    coil_strbuf_puts(out, " * (");
    coil_sym_print(p->sym, k->rsize[d], COIL_SYM_PY_SYNTAX, out);
    coil_strbuf_puts(out, ")");
  }
  coil_strbuf_printf(out, "\n    if _xnumel <= 0:\n        return\n"
                          "    _xb, _rb, _nw = K._blocks(\"%s\", _xnumel, _rnumel)\n", kind_name(k));
  coil_strbuf_printf(out, "    _launch(K.%s, ((_xnumel + _xb - 1) // _xb, 1, 1), ", k->name);
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(out, "%s, ", k->params[i].name);
  for (int i = 0; i < k->nsyms; i++)
    coil_strbuf_printf(out, "%s, ", coil_sym_var_name(p->sym, k->syms[i]->var));
  coil_strbuf_printf(out, "_xnumel, %s_XBLOCK=_xb%s, num_warps=_nw)\n", k->nr ? "_rnumel, " : "", k->nr ? ", _RBLOCK=_rb" : "");
}
