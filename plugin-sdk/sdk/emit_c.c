/* emit_c.c — the C-family emitter of coil-sdk (see coil/coil_sdk.h). Semantics follow
 * docs/wrapper-ir.md, which follows PyTorch: integer arithmetic wraps, max/min propagate NaN,
 * floor division rounds toward negative infinity, float-to-integer casts truncate (NaN -> 0,
 * saturating), f16 and bf16 values are held in float registers rounded to their type. */
#include "coil/coil_sdk.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *
coil_c_compute_type(coil_dtype t)
{
  switch (t) {
  case COIL_F64: return "double";
  case COIL_F32: case COIL_F16: case COIL_BF16: return "float";
  case COIL_I64: return "int64_t";
  case COIL_I32: return "int32_t";
  case COIL_I16: return "int16_t";
  case COIL_I8: return "int8_t";
  case COIL_U8: return "uint8_t";
  case COIL_BOOL: return "bool";
  default: return "?";
  }
}

const char *
coil_c_storage_type(coil_dtype t)
{
  switch (t) {
  case COIL_F16: case COIL_BF16: return "uint16_t";
  case COIL_BOOL: return "uint8_t";
  default: return coil_c_compute_type(t);
  }
}

void
coil_c_literal(coil_strbuf *b, coil_dtype t, double f, int64_t i)
{
  if (t == COIL_BOOL) {
    coil_strbuf_puts(b, i ? "true" : "false");
    return;
  }
  if (!coil_dtype_is_float(t)) {
    if (i == INT64_MIN)
      coil_strbuf_puts(b, "INT64_MIN");
    else
      coil_strbuf_printf(b, "(%s)%lldLL", coil_c_compute_type(t), (long long)i);
    return;
  }
  bool dbl = t == COIL_F64;
  if (isnan(f))
    coil_strbuf_printf(b, "%s(NAN)", dbl ? "(double)" : "(float)");
  else if (isinf(f))
    coil_strbuf_printf(b, "%s(%sINFINITY)", dbl ? "(double)" : "(float)", f < 0 ? "-" : "");
  else if (dbl)
    coil_strbuf_printf(b, "%a", f);
  else
    coil_strbuf_printf(b, "%af", (double)(float)f);
}

void
coil_c_set_loop_ranges(const coil_wir_program *p, const coil_kernel *k)
{
  for (int i = 0; i < k->nx + k->nr; i++) {
    const coil_sym *v = i < k->nx ? k->xvars[i] : k->rvars[i - k->nx];
    const coil_sym *n = i < k->nx ? k->xsize[i] : k->rsize[i - k->nx];
    int64_t c;
    coil_sym_set_range(p->sym, v, 0, coil_sym_is_const(n, &c) ? (c > 0 ? c - 1 : 0) : INT64_MAX);
  }
}

void
coil_c_index(const coil_wir_program *p, const coil_sym *e, coil_strbuf *b)
{
  coil_sym_print(p->sym, e, COIL_SYM_C_SYNTAX, b);
}

void
coil_c_load(coil_strbuf *b, coil_dtype t, const char *ptr, const char *index)
{
  if (t == COIL_F16 || t == COIL_BF16)
    coil_strbuf_printf(b, "coil_%c2f(%s[%s])", t == COIL_F16 ? 'h' : 'b', ptr, index);
  else if (t == COIL_BOOL)
    coil_strbuf_printf(b, "(%s[%s] != 0)", ptr, index);
  else
    coil_strbuf_printf(b, "%s[%s]", ptr, index);
}

void
coil_c_store(coil_strbuf *b, coil_dtype t, const char *ptr, const char *index, const char *v)
{
  if (t == COIL_F16 || t == COIL_BF16)
    coil_strbuf_printf(b, "%s[%s] = coil_f2%c(%s);", ptr, index, t == COIL_F16 ? 'h' : 'b', v);
  else if (t == COIL_BOOL)
    coil_strbuf_printf(b, "%s[%s] = (uint8_t)(%s);", ptr, index, v);
  else
    coil_strbuf_printf(b, "%s[%s] = %s;", ptr, index, v);
}

void
coil_c_store_inst(const coil_wir_program *p, const coil_kernel *k, int i, const char *const *names, coil_strbuf *b)
{
  const coil_kinst *in = &k->insts[i];
  coil_strbuf idx = {0};
  coil_c_index(p, in->index, &idx);
  if (in->mode != COIL_STORE_PLAIN)
    coil_strbuf_printf(b, "coil_store_%s_%s(%s + (%s), %s);", coil_store_mode_name(in->mode),
                       coil_dtype_name(k->params[in->param].dtype), k->params[in->param].name, idx.s,
                       names[in->args[0]]);
  else
    coil_c_store(b, k->params[in->param].dtype, k->params[in->param].name, idx.s, names[in->args[0]]);
  coil_strbuf_free(&idx);
}

bool
coil_kernel_has_combining_store(const coil_kernel *k)
{
  for (int i = 0; i < k->ninsts; i++)
    if (k->insts[i].op == COIL_KOP_STORE && k->insts[i].mode != COIL_STORE_PLAIN)
      return true;
  return false;
}

/* The combination of element value `a` with stored value `v` (C compute types), as text. */
static void
combine_expr(coil_strbuf *b, coil_store_mode m, coil_dtype t)
{
  bool f = coil_dtype_is_float(t);
  const char *T = coil_c_compute_type(t);
  const char *fx = t == COIL_F64 ? "coil_fmax" : "coil_fmaxf", *fn = t == COIL_F64 ? "coil_fmin" : "coil_fminf";
  switch (m) {
  case COIL_STORE_ADD:
    if (f)
      coil_strbuf_puts(b, "a + v");
    else /* integers wrap, as PyTorch's: unsigned arithmetic, no undefined overflow */
      coil_strbuf_printf(b, "(%s)((uint64_t)a + (uint64_t)v)", T);
    break;
  case COIL_STORE_MUL:
    if (f)
      coil_strbuf_puts(b, "a * v");
    else
      coil_strbuf_printf(b, "(%s)((uint64_t)a * (uint64_t)v)", T);
    break;
  case COIL_STORE_MAX: coil_strbuf_printf(b, f ? "%s(a, v)" : "(a > v ? a : v)", fx); break;
  case COIL_STORE_MIN: coil_strbuf_printf(b, f ? "%s(a, v)" : "(a < v ? a : v)", fn); break;
  default: coil_strbuf_puts(b, "v"); break;
  }
}

void
coil_c_combining_stores(coil_strbuf *b, bool cuda)
{
  const char *fn = cuda ? "static __device__ __forceinline__ " : "static inline ";
  /* the bits of a value and back: f16/bf16 through the prelude's conversions */
  if (cuda)
    coil_strbuf_printf(b,
                       "%sfloat coil_bits_f32(uint32_t u) { return __uint_as_float(u); }\n"
                       "%suint32_t coil_f32_bits(float f) { return __float_as_uint(f); }\n"
                       "%sdouble coil_bits_f64(uint64_t u) { return __longlong_as_double((long long)u); }\n"
                       "%suint64_t coil_f64_bits(double f) { return (uint64_t)__double_as_longlong(f); }\n",
                       fn, fn, fn, fn);
  else
    coil_strbuf_printf(b,
                       "%sfloat coil_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
                       "%suint32_t coil_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
                       "%sdouble coil_bits_f64(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }\n"
                       "%suint64_t coil_f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }\n",
                       fn, fn, fn, fn);
  static const coil_dtype types[] = {COIL_F64, COIL_F32, COIL_F16, COIL_BF16, COIL_I64,
                                     COIL_I32, COIL_I16,  COIL_I8,  COIL_U8};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    coil_dtype t = types[ti];
    size_t w = coil_dtype_size(t);
    const char *U = w == 8 ? "uint64_t" : w == 4 ? "uint32_t" : w == 2 ? "uint16_t" : "uint8_t";
    const char *T = coil_c_compute_type(t), *S = coil_c_storage_type(t);
    char from[64], to[64]; /* element bits `e` -> value, value `r` -> bits */
    if (t == COIL_F32 || t == COIL_F64) {
      snprintf(from, sizeof from, "coil_bits_%s(e)", coil_dtype_name(t));
      snprintf(to, sizeof to, "coil_%s_bits(r)", coil_dtype_name(t));
    } else if (t == COIL_F16 || t == COIL_BF16) {
      snprintf(from, sizeof from, "coil_%c2f(e)", t == COIL_F16 ? 'h' : 'b');
      snprintf(to, sizeof to, "coil_f2%c(r)", t == COIL_F16 ? 'h' : 'b');
    } else {
      snprintf(from, sizeof from, "(%s)e", T);
      snprintf(to, sizeof to, "(%s)r", U);
    }
    for (int m = COIL_STORE_ADD; m < COIL_STORE_MODE_COUNT; m++) {
      coil_strbuf_printf(b, "%svoid coil_store_%s_%s(%s *p, %s v) {", fn, coil_store_mode_name((coil_store_mode)m),
                         coil_dtype_name(t), S, T);
      if (!cuda) { /* GCC/Clang atomics: a compare-and-swap loop on the element */
        coil_strbuf_printf(b, " %s *q = (%s *)p; %s e = __atomic_load_n(q, __ATOMIC_RELAXED), n;"
                              " do { %s a = %s; %s r = ", U, U, U, T, from, T);
        combine_expr(b, (coil_store_mode)m, t);
        coil_strbuf_printf(b, "; n = %s; } while (!__atomic_compare_exchange_n(q, &e, n, 1, __ATOMIC_RELAXED,"
                              " __ATOMIC_RELAXED)); }\n", to);
        continue;
      }
      if (m == COIL_STORE_ADD && (t == COIL_F32 || t == COIL_F64)) { /* native atomics */
        coil_strbuf_printf(b, " atomicAdd(p, v); }\n");
        continue;
      }
      if (m == COIL_STORE_ADD && t == COIL_I64) {
        coil_strbuf_puts(b, " atomicAdd((unsigned long long *)p, (unsigned long long)v); }\n");
        continue;
      }
      if (m == COIL_STORE_ADD && t == COIL_I32) {
        coil_strbuf_puts(b, " atomicAdd((int *)p, (int)v); }\n");
        continue;
      }
      if ((m == COIL_STORE_MAX || m == COIL_STORE_MIN) && (t == COIL_I32 || t == COIL_I64)) {
        coil_strbuf_printf(b, " atomic%s((%s *)p, (%s)v); }\n", m == COIL_STORE_MAX ? "Max" : "Min",
                           t == COIL_I32 ? "int" : "long long", t == COIL_I32 ? "int" : "long long");
        continue;
      }
      if (w >= 2) { /* atomicCAS on the element: 16-bit needs sm_70 */
        const char *W = w == 8 ? "unsigned long long" : w == 4 ? "unsigned int" : "unsigned short";
        coil_strbuf_printf(b, " %s *q = (%s *)p; %s old = *q, was;"
                              " do { was = old; %s e = (%s)was; %s a = %s; %s r = ", W, W, W, U, U, T, from, T);
        combine_expr(b, (coil_store_mode)m, t);
        coil_strbuf_printf(b, "; old = atomicCAS(q, was, (%s)%s); } while (old != was); }\n", W, to);
        continue;
      }
      /* one byte: compare-and-swap the aligned word that holds it */
      coil_strbuf_printf(b, " unsigned int *q = (unsigned int *)((unsigned long long)p & ~3ull);"
                            " unsigned int sh = (unsigned int)((unsigned long long)p & 3ull) * 8u, old = *q, was;"
                            " do { was = old; uint8_t e = (uint8_t)(was >> sh); %s a = %s; %s r = ", T, from, T);
      combine_expr(b, (coil_store_mode)m, t);
      coil_strbuf_printf(b, "; uint8_t n = %s; old = atomicCAS(q, was, (was & ~(0xffu << sh)) | ((unsigned int)n << sh));"
                            " } while (old != was); }\n", to);
    }
  }
}

static const char *
default_math(coil_kop op, coil_dtype t)
{
  bool f = t != COIL_F64;
  switch (op) {
  case COIL_KOP_EXP: return f ? "expf" : "exp";
  case COIL_KOP_LOG: return f ? "logf" : "log";
  case COIL_KOP_LOG1P: return f ? "log1pf" : "log1p";
  case COIL_KOP_SQRT: return f ? "sqrtf" : "sqrt";
  case COIL_KOP_SIN: return f ? "sinf" : "sin";
  case COIL_KOP_COS: return f ? "cosf" : "cos";
  case COIL_KOP_TANH: return f ? "tanhf" : "tanh";
  case COIL_KOP_ERF: return f ? "erff" : "erf";
  case COIL_KOP_FLOOR: return f ? "floorf" : "floor";
  case COIL_KOP_CEIL: return f ? "ceilf" : "ceil";
  case COIL_KOP_TRUNC: return f ? "truncf" : "trunc";
  case COIL_KOP_ROUND: return f ? "rintf" : "rint"; /* ties to even in the default mode */
  case COIL_KOP_ABS: return f ? "fabsf" : "fabs";
  case COIL_KOP_POW: return f ? "powf" : "pow";
  case COIL_KOP_SIGMOID: return f ? "coil_sigmoidf_ref" : "coil_sigmoid";
  case COIL_KOP_RSQRT: return f ? "coil_rsqrtf_ref" : "coil_rsqrt";
  case COIL_KOP_MAX: return f ? "coil_fmaxf" : "coil_fmax";
  case COIL_KOP_MIN: return f ? "coil_fminf" : "coil_fmin";
  case COIL_KOP_FLOORDIV: return f ? "coil_floordivf" : "coil_floordivd";
  case COIL_KOP_TAN: return f ? "tanf" : "tan";
  case COIL_KOP_SINH: return f ? "sinhf" : "sinh";
  case COIL_KOP_COSH: return f ? "coshf" : "cosh";
  case COIL_KOP_ASIN: return f ? "asinf" : "asin";
  case COIL_KOP_ACOS: return f ? "acosf" : "acos";
  case COIL_KOP_ATAN: return f ? "atanf" : "atan";
  case COIL_KOP_ASINH: return f ? "asinhf" : "asinh";
  case COIL_KOP_ACOSH: return f ? "acoshf" : "acosh";
  case COIL_KOP_ATANH: return f ? "atanhf" : "atanh";
  case COIL_KOP_EXPM1: return f ? "expm1f" : "expm1";
  case COIL_KOP_LOG2: return f ? "log2f" : "log2";
  case COIL_KOP_LOG10: return f ? "log10f" : "log10";
  case COIL_KOP_ATAN2: return f ? "atan2f" : "atan2";
  case COIL_KOP_FMOD: return f ? "fmodf" : "fmod";
  default: return NULL;
  }
}

static const char *
math(const coil_c_dialect *dl, coil_kop op, coil_dtype t)
{
  coil_dtype ct = t == COIL_F64 ? COIL_F64 : COIL_F32;
  const char *s = dl && dl->math_fn ? dl->math_fn(op, ct) : NULL;
  return s ? s : default_math(op, ct);
}

/* A float expression of dtype t, rounded to f16/bf16 when t is one of them. */
static void
rounded(coil_strbuf *b, coil_dtype t, const char *expr)
{
  if (t == COIL_F16 || t == COIL_BF16)
    coil_strbuf_printf(b, "coil_rnd_%c(%s)", t == COIL_F16 ? 'h' : 'b', expr);
  else
    coil_strbuf_puts(b, expr);
}

static void
cast_expr(coil_strbuf *b, coil_dtype to, coil_dtype from, const char *a)
{
  const char *T = coil_c_compute_type(to);
  if (to == COIL_BOOL) {
    coil_strbuf_printf(b, "((%s) != 0)", a);
  } else if (coil_dtype_is_float(to)) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "(%s)(%s)", T, a);
    rounded(b, to, tmp);
  } else if (coil_dtype_is_float(from)) {
    coil_strbuf_printf(b, "(%s)coil_f2i64((double)(%s))", T, a);
  } else {
    coil_strbuf_printf(b, "(%s)(%s)", T, a);
  }
}

void
coil_c_inst_expr(const coil_c_dialect *dl, const coil_kinst *in, const coil_kinst *insts,
                 const char *const *args, coil_strbuf *b)
{
  coil_dtype t = in->dtype;
  const char *T = coil_c_compute_type(t);
  bool fl = coil_dtype_is_float(t);
  coil_dtype at = in->args[0] >= 0 ? insts[in->args[0]].dtype : t;
  const char *a = args[0], *c = args[1];
  char tmp[1024];
  switch (coil_kop_class_of(in->op)) {
  case COIL_KCLASS_LEAF:
    coil_c_literal(b, t, in->f, in->i);
    return;
  case COIL_KCLASS_CAST:
    cast_expr(b, t, at, a);
    return;
  case COIL_KCLASS_SELECT:
    coil_strbuf_printf(b, "(%s ? %s : %s)", args[0], args[1], args[2]);
    return;
  case COIL_KCLASS_CMP: {
    static const char *const ops[] = {[COIL_KOP_EQ] = "==", [COIL_KOP_NE] = "!=", [COIL_KOP_LT] = "<",
                                      [COIL_KOP_LE] = "<=", [COIL_KOP_GT] = ">", [COIL_KOP_GE] = ">=",
                                      [COIL_KOP_AND] = "&&", [COIL_KOP_OR] = "||"};
    coil_strbuf_printf(b, "(%s %s %s)", a, ops[in->op], c);
    return;
  }
  case COIL_KCLASS_UNARY:
    if (fl) {
      switch (in->op) {
      case COIL_KOP_NEG: snprintf(tmp, sizeof tmp, "(-%s)", a); break;
      case COIL_KOP_RECIP: snprintf(tmp, sizeof tmp, "(%s)1 / %s", T, a); break;
      case COIL_KOP_RELU: snprintf(tmp, sizeof tmp, "(%s != %s ? %s : %s > 0 ? %s : (%s)0)", a, a, a, a, a, T); break;
      case COIL_KOP_NOT: snprintf(tmp, sizeof tmp, "(%s == 0)", a); break;
      default: snprintf(tmp, sizeof tmp, "%s(%s)", math(dl, in->op, t), a); break;
      }
      rounded(b, t, tmp);
      return;
    }
    switch (in->op) {
    case COIL_KOP_NEG: coil_strbuf_printf(b, "(%s)(0 - (uint64_t)%s)", T, a); return;
    case COIL_KOP_ABS: coil_strbuf_printf(b, "(%s)(%s < 0 ? 0 - (uint64_t)%s : (uint64_t)%s)", T, a, a, a); return;
    case COIL_KOP_RELU: coil_strbuf_printf(b, "(%s > 0 ? %s : (%s)0)", a, a, T); return;
    case COIL_KOP_BITNOT: coil_strbuf_printf(b, t == COIL_BOOL ? "(!%s)" : "(%s)(~%s)", t == COIL_BOOL ? a : T, a); return;
    case COIL_KOP_NOT: coil_strbuf_printf(b, "(!%s)", a); return;
    default: coil_strbuf_puts(b, a); return; /* floor, ceil, round, trunc of an integer */
    }
  case COIL_KCLASS_BINARY:
    if (fl) {
      switch (in->op) {
      case COIL_KOP_ADD: snprintf(tmp, sizeof tmp, "(%s + %s)", a, c); break;
      case COIL_KOP_SUB: snprintf(tmp, sizeof tmp, "(%s - %s)", a, c); break;
      case COIL_KOP_MUL: snprintf(tmp, sizeof tmp, "(%s * %s)", a, c); break;
      case COIL_KOP_DIV: snprintf(tmp, sizeof tmp, "(%s / %s)", a, c); break;
      case COIL_KOP_TRUNCDIV: snprintf(tmp, sizeof tmp, "%s(%s / %s)", math(dl, COIL_KOP_TRUNC, t), a, c); break;
      default: snprintf(tmp, sizeof tmp, "%s(%s, %s)", math(dl, in->op, t), a, c); break;
      }
      rounded(b, t, tmp);
      return;
    }
    switch (in->op) {
    case COIL_KOP_ADD: coil_strbuf_printf(b, "(%s)((uint64_t)%s + (uint64_t)%s)", T, a, c); return;
    case COIL_KOP_SUB: coil_strbuf_printf(b, "(%s)((uint64_t)%s - (uint64_t)%s)", T, a, c); return;
    case COIL_KOP_MUL: coil_strbuf_printf(b, "(%s)((uint64_t)%s * (uint64_t)%s)", T, a, c); return;
    case COIL_KOP_FLOORDIV: coil_strbuf_printf(b, "(%s)coil_floordiv_i64(%s, %s)", T, a, c); return;
    case COIL_KOP_DIV: case COIL_KOP_TRUNCDIV: coil_strbuf_printf(b, "(%s)coil_truncdiv_i64(%s, %s)", T, a, c); return;
    case COIL_KOP_POW: coil_strbuf_printf(b, "(%s)coil_ipow(%s, %s)", T, a, c); return;
    case COIL_KOP_MAX: coil_strbuf_printf(b, "(%s > %s ? %s : %s)", a, c, a, c); return;
    case COIL_KOP_MIN: coil_strbuf_printf(b, "(%s < %s ? %s : %s)", a, c, a, c); return;
    case COIL_KOP_BITAND: coil_strbuf_printf(b, "(%s)(%s & %s)", T, a, c); return;
    case COIL_KOP_BITOR: coil_strbuf_printf(b, "(%s)(%s | %s)", T, a, c); return;
    case COIL_KOP_BITXOR: coil_strbuf_printf(b, "(%s)(%s ^ %s)", T, a, c); return;
    case COIL_KOP_FMOD: coil_strbuf_printf(b, "(%s)coil_fmod_i64(%s, %s)", T, a, c); return;
    default: coil_strbuf_printf(b, "0 /* %s */", coil_kop_name(in->op)); return;
    }
  default:
    coil_strbuf_printf(b, "0 /* %s */", coil_kop_name(in->op));
    return;
  }
}

void
coil_c_value(const coil_c_dialect *dl, const coil_wir_program *p, const coil_kernel *k, int i,
             const char *const *names, coil_strbuf *b)
{
  const coil_kinst *in = &k->insts[i];
  if (in->op == COIL_KOP_LOAD) {
    coil_strbuf idx = {0};
    coil_c_index(p, in->index, &idx);
    coil_c_load(b, k->params[in->param].dtype, k->params[in->param].name, idx.s);
    coil_strbuf_free(&idx);
  } else if (in->op == COIL_KOP_INDEX) {
    coil_strbuf_puts(b, "(int64_t)(");
    coil_c_index(p, in->index, b);
    coil_strbuf_puts(b, ")");
  } else {
    const char *args[3] = {NULL, NULL, NULL};
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      args[a] = names[in->args[a]];
    coil_c_inst_expr(dl, in, k->insts, args, b);
  }
}

int
coil_kinst_indirect_deps(const coil_wir_program *p, const coil_kernel *k, int i, int *deps, int max)
{
  const coil_kinst *in = &k->insts[i];
  int nv = coil_sym_nvars(p->sym), n = 0;
  if (!in->index || in->op == COIL_KOP_INDIRECT || nv > 4096)
    return 0;
  bool used[4096];
  memset(used, 0, sizeof(bool) * (size_t)nv);
  coil_sym_vars_used(in->index, used, nv);
  for (int v = 0; v < nv && n < max; v++) {
    int m = used[v] ? coil_wir_indirect_of(p->sym, v) : -1;
    if (m >= 0 && m < i && k->insts[m].op == COIL_KOP_INDIRECT)
      deps[n++] = m;
  }
  return n;
}

static bool
has_op(const coil_kernel *k, coil_kop op)
{
  for (int i = 0; i < k->ninsts; i++)
    if (k->insts[i].op == op)
      return true;
  return false;
}

bool
coil_kernel_has_scan(const coil_kernel *k)
{
  return has_op(k, COIL_KOP_SCAN);
}

void
coil_c_scan_identity(coil_dtype t, coil_reduction red, coil_strbuf *b)
{
  static const char *const lo[] = {[COIL_I64] = "INT64_MIN", [COIL_I32] = "INT32_MIN", [COIL_I16] = "INT16_MIN",
                                   [COIL_I8] = "INT8_MIN", [COIL_U8] = "0"};
  static const char *const hi[] = {[COIL_I64] = "INT64_MAX", [COIL_I32] = "INT32_MAX", [COIL_I16] = "INT16_MAX",
                                   [COIL_I8] = "INT8_MAX", [COIL_U8] = "UINT8_MAX"};
  bool fl = coil_dtype_is_float(t), small = t >= COIL_I64 && t <= COIL_U8;
  const char *s = red == COIL_REDUCE_SUM ? "0" : red == COIL_REDUCE_PROD ? "1"
                  : fl ? (red == COIL_REDUCE_MAX ? "-INFINITY" : "INFINITY")
                  : !small ? "0" : red == COIL_REDUCE_MAX ? lo[t] : hi[t];
  coil_strbuf_printf(b, "(%s)(%s)", coil_c_compute_type(t), s);
}

void
coil_c_scan_combine(coil_dtype t, coil_reduction red, const char *acc, const char *v, coil_strbuf *b)
{
  const char *T = coil_c_compute_type(t);
  if (coil_dtype_is_float(t)) {
    const char *f = t == COIL_F64 ? "" : "f";
    switch (red) {
    case COIL_REDUCE_SUM: coil_strbuf_printf(b, "(%s + %s)", acc, v); return;
    case COIL_REDUCE_PROD: coil_strbuf_printf(b, "(%s * %s)", acc, v); return;
    default: coil_strbuf_printf(b, "coil_%s%s(%s, %s)", red == COIL_REDUCE_MAX ? "fmax" : "fmin", f, acc, v); return;
    }
  }
  switch (red) {
  case COIL_REDUCE_SUM: case COIL_REDUCE_PROD:
    coil_strbuf_printf(b, "(%s)((uint64_t)%s %c (uint64_t)%s)", T, acc, red == COIL_REDUCE_SUM ? '+' : '*', v);
    return;
  default:
    coil_strbuf_printf(b, "(%s %c %s ? %s : %s)", acc, red == COIL_REDUCE_MAX ? '>' : '<', v, acc, v);
    return;
  }
}

bool
coil_kernel_has_indirect(const coil_kernel *k)
{
  return has_op(k, COIL_KOP_INDIRECT);
}

void
coil_c_indirect_inst(const coil_wir_program *p, const coil_kernel *k, int i, const char *const *names,
                     const char *store_oob, const char *pad, coil_strbuf *b)
{
  const coil_kinst *in = &k->insts[i];
  coil_strbuf bound = {0};
  coil_c_index(p, in->index, &bound);
  coil_strbuf_printf(b, "%sconst int64_t %s = (int64_t)%s;\n", pad, names[i], names[in->args[0]]);
  coil_strbuf_printf(b, "%sif (%s < 0 || %s >= (int64_t)(%s)) { ", pad, names[i], names[i], bound.s);
  const char *at = strstr(store_oob, "%s"); /* the bad value goes where %s is */
  coil_strbuf_putn(b, store_oob, at ? (size_t)(at - store_oob) : strlen(store_oob));
  if (at) {
    coil_strbuf_puts(b, names[i]);
    coil_strbuf_puts(b, at + 2);
  }
  coil_strbuf_printf(b, " }\n%sconst int64_t i%d = %s < 0 || %s >= (int64_t)(%s) ? 0 : %s;\n", pad, i, names[i],
                     names[i], bound.s, names[i]);
  coil_strbuf_free(&bound);
}

void
coil_c_per_r(const coil_wir_program *p, const coil_kernel *k, bool *per_r)
{
  int nv = coil_sym_nvars(p->sym);
  bool used[1024];
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    per_r[i] = false;
    if (in->op == COIL_KOP_REDUCE)
      continue;
    per_r[i] = in->op == COIL_KOP_SCAN;
    if (in->index && nv <= 1024) {
      memset(used, 0, sizeof(bool) * (size_t)nv);
      coil_sym_vars_used(in->index, used, nv);
      for (int r = 0; r < k->nr; r++)
        per_r[i] = per_r[i] || used[k->rvars[r]->var];
    }
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      per_r[i] = per_r[i] || (in->args[a] >= 0 && per_r[in->args[a]]);
    int deps[8], nd = coil_kinst_indirect_deps(p, k, i, deps, 8);
    for (int d = 0; d < nd; d++)
      per_r[i] = per_r[i] || per_r[deps[d]];
  }
}

const char *
coil_c_prelude(void)
{
  return
      "#include <math.h>\n"
      "#include <stdbool.h>\n"
      "#include <stdint.h>\n"
      "#include <string.h>\n"
      "\n"
      "/* integer helpers for indices: Python floor semantics */\n"
      "static inline int64_t coil_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
      "static inline int64_t coil_mod(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
      "static inline int64_t coil_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
      "static inline int64_t coil_max(int64_t a, int64_t b) { return a > b ? a : b; }\n"
      "/* value helpers: PyTorch semantics; a division (or fmod) by zero of integers gives 0 here */\n"
      "static inline int64_t coil_floordiv_i64(int64_t a, int64_t b) { if (b == 0) return 0; if (a == INT64_MIN && b == -1) return INT64_MIN; return coil_floordiv(a, b); }\n"
      "static inline int64_t coil_truncdiv_i64(int64_t a, int64_t b) { if (b == 0) return 0; if (a == INT64_MIN && b == -1) return INT64_MIN; return a / b; }\n"
      "static inline int64_t coil_fmod_i64(int64_t a, int64_t b) { if (b == 0 || b == -1) return 0; return a % b; }\n"
      "static inline int64_t coil_ipow(int64_t a, int64_t e) { if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0; uint64_t r = 1, x = (uint64_t)a; while (e) { if (e & 1) r *= x; x *= x; e >>= 1; } return (int64_t)r; }\n"
      "static inline int64_t coil_f2i64(double x) { if (x != x) return 0; if (x >= 9.2233720368547758e18) return INT64_MAX; if (x <= -9.2233720368547758e18) return INT64_MIN; return (int64_t)x; }\n"
      "static inline float coil_fmaxf(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"
      "static inline float coil_fminf(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }\n"
      "static inline double coil_fmax(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"
      "static inline double coil_fmin(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }\n"
      "static inline double coil_floordivd(double a, double b) { if (b == 0) return a / b; double m = fmod(a, b), d = (a - m) / b; if (m != 0 && (b < 0) != (m < 0)) d -= 1; if (d == 0) return copysign(0.0, a / b); double f = floor(d); return d - f > 0.5 ? f + 1 : f; }\n"
      "static inline float coil_floordivf(float a, float b) { if (b == 0) return a / b; float m = fmodf(a, b), d = (a - m) / b; if (m != 0 && (b < 0) != (m < 0)) d -= 1; if (d == 0) return copysignf(0.0f, a / b); float f = floorf(d); return d - f > 0.5f ? f + 1 : f; }\n"
      "static inline float coil_sigmoidf_ref(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
      "static inline double coil_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
      "static inline double coil_rsqrt(double x) { return 1.0 / sqrt(x); }\n"
      "static inline float coil_rsqrtf_ref(float x) { return 1.0f / sqrtf(x); }\n"
      "/* f16 and bf16: round to nearest even */\n"
      "static inline float coil_b2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }\n"
      "static inline uint16_t coil_f2b(float f) { uint32_t u; memcpy(&u, &f, 4); if (f != f) return (uint16_t)((u >> 16) | 0x40); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }\n"
      "static inline float coil_h2f(uint16_t h) { uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff; float f; if (e == 0) { f = ldexpf((float)m, -24); return s ? -f : f; } uint32_t u = e == 31 ? (s | 0x7f800000 | (m << 13)) : (s | ((e + 112) << 23) | (m << 13)); memcpy(&f, &u, 4); return f; }\n"
      "static inline uint16_t coil_f2h(float f) { uint32_t u; memcpy(&u, &f, 4); uint32_t s = (u >> 16) & 0x8000, a = u & 0x7fffffff; if (a > 0x7f800000) return (uint16_t)(s | 0x7e00); if (a >= 0x477ff000) return (uint16_t)(s | 0x7c00); if (a < 0x38800000) { float af; memcpy(&af, &a, 4); return (uint16_t)(s | (uint32_t)nearbyintf(af * 16777216.0f)); } a += 0xfff + ((a >> 13) & 1); a -= (uint32_t)112 << 23; return (uint16_t)(s | (a >> 13)); }\n"
      "static inline float coil_rnd_h(float x) { return coil_h2f(coil_f2h(x)); }\n"
      "static inline float coil_rnd_b(float x) { return coil_b2f(coil_f2b(x)); }\n";
}
