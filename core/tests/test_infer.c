/* test_infer.c — type inference: PyTorch's type promotion (coil_dtype_promote over the whole
 * table, and result_type over tensors, zero-dim tensors and Python numbers), broadcasting,
 * and the shape rule of every op family, each checked on a small graph parsed from text with
 * the printed type inline. Slicing and pooling are also checked against reference formulas
 * (Python's slice length, ATen's pooling_output_shape) over a grid of sizes, symbolic sizes
 * included by evaluating the inferred expression. Finally every schema in the op table parses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

/* ---------------------------------------------------------------- helpers ---- */

/* A graph with these inputs and body statements (one per line, indentation optional). */
static coil_graph *
build(const char *inputs, const char *body, coil_diag *d)
{
  size_t cap = strlen(inputs) + strlen(body) + 64;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  snprintf(text, cap, "coil 1\ngraph t(%s) {\n%s\n  return ()\n}\n", inputs, body);
  coil_graph *g = coil_graph_parse("t.coil", text, strlen(text), d);
  free(text);
  return g;
}

static const coil_value *
find(const coil_graph *g, const char *name)
{
  for (int i = 0; i < g->nnodes; i++)
    if (strcmp(g->nodes[i].out->name, name) == 0)
      return g->nodes[i].out;
  cr_assert_fail("no statement %%%s", name);
  return NULL;
}

/* The printed type of %r. The print of the whole graph must parse back with the same type. */
static void
ty(const char *inputs, const char *body, const char *want)
{
  coil_diag d = {{0}};
  coil_graph *g = build(inputs, body, &d);
  cr_assert_not_null(g, "(%s) %s: rejected: %s", inputs, body, d.msg);
  const coil_value *r = find(g, "r");
  coil_strbuf b = {0};
  coil_type_print(g, &r->type, &b);
  cr_assert_str_eq(b.s ? b.s : "", want, "(%s) %s", inputs, body);
  char *p = coil_graph_print(g);
  coil_graph *g2 = coil_graph_parse("printed.coil", p, strlen(p), &d);
  cr_assert_not_null(g2, "the print does not parse back: %s\n%s", d.msg, p);
  cr_assert(coil_type_equal(&find(g2, "r")->type, &r->type), "%s", p);
  coil_graph_free(g2);
  free(p);
  coil_strbuf_free(&b);
  coil_graph_free(g);
}

/* The statement is rejected with a message containing want. */
static void
bad(const char *inputs, const char *body, const char *want)
{
  coil_diag d = {{0}};
  coil_graph *g = build(inputs, body, &d);
  cr_assert_null(g, "(%s) %s: accepted, expected '%s'", inputs, body, want);
  cr_assert(strstr(d.msg, want), "(%s) %s: expected '%s' in: %s", inputs, body, want, d.msg);
}

/* Python's len(range(n)[start:end:step]) for step > 0. */
static int64_t
py_slice_len(int64_t n, const int64_t *start, const int64_t *end, int64_t step)
{
  int64_t s = start ? *start : 0, e = end ? *end : n;
  if (s < 0)
    s = s + n < 0 ? 0 : s + n;
  if (e < 0)
    e = e + n < 0 ? 0 : e + n;
  s = s > n ? n : s;
  e = e > n ? n : e;
  return e > s ? (e - s + step - 1) / step : 0;
}

static int64_t
floor_div(int64_t a, int64_t b)
{
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ATen's pooling_output_shape (aten/src/ATen/native/Pool.h). */
static int64_t
aten_pool_out(int64_t n, int64_t k, int64_t pad, int64_t s, int64_t dil, bool ceil_mode)
{
  int64_t out = floor_div(n + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= n + pad)
    out--;
  return out;
}

/* ---------------------------------------------------------------- dtypes ---- */

Test(infer, dtype_promote_table)
{
  enum { F64 = COIL_F64, F32 = COIL_F32, F16 = COIL_F16, BF = COIL_BF16, I64 = COIL_I64,
         I32 = COIL_I32, I16 = COIL_I16, I8 = COIL_I8, U8 = COIL_U8, B = COIL_BOOL };
  static const int order[10] = {F64, F32, F16, BF, I64, I32, I16, I8, U8, B};
  /* torch.promote_types(row, column), same order */
  static const int want[10][10] = {
      /*         f64  f32  f16  bf16 i64  i32  i16  i8   u8   bool */
      /* f64 */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
      /* f32 */ {F64, F32, F32, F32, F32, F32, F32, F32, F32, F32},
      /* f16 */ {F64, F32, F16, F32, F16, F16, F16, F16, F16, F16},
      /* bf16*/ {F64, F32, F32, BF,  BF,  BF,  BF,  BF,  BF,  BF},
      /* i64 */ {F64, F32, F16, BF,  I64, I64, I64, I64, I64, I64},
      /* i32 */ {F64, F32, F16, BF,  I64, I32, I32, I32, I32, I32},
      /* i16 */ {F64, F32, F16, BF,  I64, I32, I16, I16, I16, I16},
      /* i8  */ {F64, F32, F16, BF,  I64, I32, I16, I8,  I16, I8},
      /* u8  */ {F64, F32, F16, BF,  I64, I32, I16, I16, U8,  U8},
      /* bool*/ {F64, F32, F16, BF,  I64, I32, I16, I8,  U8,  B},
  };
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 10; j++) {
      coil_dtype a = (coil_dtype)order[i], b = (coil_dtype)order[j];
      cr_assert_eq(coil_dtype_promote(a, b), (coil_dtype)want[i][j], "promote(%s, %s) = %s",
                   coil_dtype_name(a), coil_dtype_name(b),
                   coil_dtype_name(coil_dtype_promote(a, b)));
    }
  cr_assert_eq(COIL_DTYPE_COUNT, 10, "a new dtype needs a row and a column here");
}

Test(infer, dtype_properties)
{
  static const struct {
    coil_dtype t;
    const char *name, *st;
    size_t size;
    bool is_float, is_int;
  } cases[] = {
      {COIL_F64, "f64", "F64", 8, true, false},   {COIL_F32, "f32", "F32", 4, true, false},
      {COIL_F16, "f16", "F16", 2, true, false},   {COIL_BF16, "bf16", "BF16", 2, true, false},
      {COIL_I64, "i64", "I64", 8, false, true},   {COIL_I32, "i32", "I32", 4, false, true},
      {COIL_I16, "i16", "I16", 2, false, true},   {COIL_I8, "i8", "I8", 1, false, true},
      {COIL_U8, "u8", "U8", 1, false, true},      {COIL_BOOL, "bool", "BOOL", 1, false, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cr_assert_str_eq(coil_dtype_name(cases[i].t), cases[i].name);
    cr_assert_str_eq(coil_dtype_st_name(cases[i].t), cases[i].st);
    cr_assert_eq(coil_dtype_from_name(cases[i].name, strlen(cases[i].name)), (int)cases[i].t);
    cr_assert_eq(coil_dtype_from_st_name(cases[i].st), (int)cases[i].t);
    cr_assert_eq(coil_dtype_size(cases[i].t), cases[i].size);
    cr_assert_eq(coil_dtype_is_float(cases[i].t), cases[i].is_float, "%s", cases[i].name);
    cr_assert_eq(coil_dtype_is_int(cases[i].t), cases[i].is_int, "%s", cases[i].name);
  }
  cr_assert_eq(coil_dtype_from_name("f3", 2), -1);
  cr_assert_eq(coil_dtype_from_name("f32x", 4), -1);
  cr_assert_eq(coil_dtype_from_name("f32x", 3), COIL_F32, "only the first n bytes count");
  cr_assert_eq(coil_dtype_from_st_name("f32"), -1);
}

/* coil_infer_common_dtype: three priority classes, a lower one only raises the category. */
Test(infer, common_dtype)
{
  coil_value v[4] = {{0}};
  const coil_dtype dts[4] = {COIL_I32, COIL_F64, COIL_BOOL, COIL_F16};
  const int ranks[4] = {2, 0, 1, 0};
  for (int i = 0; i < 4; i++) {
    v[i].type.kind = COIL_TYPE_TENSOR;
    v[i].type.dtype = dts[i];
    v[i].type.rank = ranks[i];
  }
  coil_lit i32_2d = {.kind = COIL_LIT_VALUE, .v = &v[0]}, f64_0d = {.kind = COIL_LIT_VALUE, .v = &v[1]};
  coil_lit bool_1d = {.kind = COIL_LIT_VALUE, .v = &v[2]}, f16_0d = {.kind = COIL_LIT_VALUE, .v = &v[3]};
  coil_lit one = {.kind = COIL_LIT_INT, .i = 1}, half = {.kind = COIL_LIT_FLOAT, .f = 0.5};
  coil_lit yes = {.kind = COIL_LIT_BOOL, .i = 1}, none = {.kind = COIL_LIT_NONE};
  static const struct {
    int n;
    int idx[3];
    coil_dtype want;
  } cases[] = {
      {2, {0, 4}, COIL_I32},  /* i32[..] + 1 */
      {2, {0, 5}, COIL_F32},  /* i32[..] + 0.5: the default dtype */
      {2, {0, 1}, COIL_F64},  /* i32[..] + f64[]: a 0-d tensor of a higher category keeps its dtype */
      {2, {2, 4}, COIL_I64},  /* bool[..] + 1 */
      {2, {2, 6}, COIL_BOOL}, /* bool[..] + True */
      {3, {2, 3, 4}, COIL_F16}, /* bool[..] + f16[] + 1 */
      {2, {3, 5}, COIL_F16},  /* f16[] + 0.5 */
      {2, {1, 3}, COIL_F64},  /* f64[] + f16[]: same class, promote */
      {1, {4}, COIL_I64},     /* 1 */
      {2, {4, 5}, COIL_F32},  /* 1 + 0.5 */
      {2, {0, 7}, COIL_I32},  /* None is skipped */
      {1, {7}, COIL_F32},     /* nothing at all: the default dtype */
  };
  const coil_lit *all[8] = {&i32_2d, &f64_0d, &bool_1d, &f16_0d, &one, &half, &yes, &none};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const coil_lit *lits[3];
    for (int k = 0; k < cases[i].n; k++)
      lits[k] = all[cases[i].idx[k]];
    coil_dtype got = coil_infer_common_dtype(lits, cases[i].n);
    cr_assert_eq(got, cases[i].want, "case %zu: got %s, want %s", i, coil_dtype_name(got),
                 coil_dtype_name(cases[i].want));
  }
}

/* ---------------------------------------------------------------- type promotion in ops ---- */

Test(infer, promotion_binary)
{
  ty("%x: f32[3]", "%r = aten.add.Tensor(%x, 2)", "f32[3]");
  ty("%x: i32[3]", "%r = aten.add.Tensor(%x, 2.5)", "f32[3]");
  ty("%x: i64[3], %b: bool[3]", "%r = aten.add.Tensor(%x, %b)", "i64[3]");
  ty("%x: u8[3], %y: i8[3]", "%r = aten.add.Tensor(%x, %y)", "i16[3]");
  ty("%x: f16[3], %y: bf16[3]", "%r = aten.add.Tensor(%x, %y)", "f32[3]");
  ty("%b: bool[3]", "%r = aten.add.Tensor(%b, 1)", "i64[3]");
  ty("%s: f64[], %x: f32[3]", "%r = aten.add.Tensor(%s, %x)", "f32[3]");
  ty("%x: i32[3], %s: i64[]", "%r = aten.mul.Tensor(%x, %s)", "i32[3]");
  ty("%x: i32[3], %s: f64[]", "%r = aten.mul.Tensor(%x, %s)", "f64[3]");
  ty("%x: f16[3], %s: f32[]", "%r = aten.sub.Tensor(%x, %s)", "f16[3]");
  ty("%x: f16[3]", "%r = aten.mul.Scalar(%x, 2.5)", "f16[3]");
  ty("%x: bf16[3]", "%r = aten.add.Scalar(%x, 7)", "bf16[3]");
  ty("%x: u8[3]", "%r = aten.add.Tensor(%x, 300)", "u8[3]");
  ty("%b: bool[3]", "%r = aten.add.Tensor(%b, True)", "bool[3]");
  ty("%b: bool[3]", "%r = aten.mul.Tensor(%b, 1.5)", "f32[3]");
  ty("%a: i8[], %b: u8[]", "%r = aten.add.Tensor(%a, %b)", "i16[]");
  ty("%a: i32[]", "%r = aten.add.Tensor(%a, 5)", "i32[]");
  ty("%a: bool[]", "%r = aten.add.Tensor(%a, 5)", "i64[]");
  ty("%a: bool[4], %z: i16[], %h: f16[]", "%r = aten.add.Tensor(%a, %z)\n%q = aten.mul.Tensor(%r, %h)",
     "i16[4]");
  ty("%x: i64[3]", "%r = aten.rsub.Scalar(%x, 1)", "i64[3]");
  ty("%x: i32[3], %y: f16[3]", "%r = aten.maximum.default(%x, %y)", "f16[3]");
  ty("%x: i8[3], %y: i64[3]", "%r = aten.bitwise_and.Tensor(%x, %y)", "i64[3]");
  ty("%x: bool[3], %y: bool[3]", "%r = aten.bitwise_or.Tensor(%x, %y)", "bool[3]");
  ty("%x: f32[3]", "%r = aten.add.Tensor(%x, %x, alpha=0.5)", "f32[3]");
  bad("%x: i64[3]", "%r = aten.add.Tensor(%x, %x, alpha=0.5)",
      "t.coil:3:36: error: aten.add.Tensor: a float alpha needs a floating-point result, not i64");
  bad("%x: bool[3]", "%r = aten.sub.Tensor(%x, %x)",
      "aten.sub.Tensor: subtraction is not defined for bool tensors");
  bad("%x: f32[3]", "%r = aten.bitwise_and.Tensor(%x, 1)", "needs integer or bool tensors, not f32");
  bad("", "%r = aten.add.Tensor(1, 2)", "aten.add.Tensor: at least one argument must be a tensor");
  bad("%x: f32[3]", "%r = aten.add.Tensor(%x, 'a')", "argument 'other' must be a tensor");
}

Test(infer, promotion_division_and_pow)
{
  ty("%x: i32[3], %y: i32[3]", "%r = aten.div.Tensor(%x, %y)", "f32[3]");
  ty("%x: i64[3]", "%r = aten.div.Scalar(%x, 2)", "f32[3]");
  ty("%x: bool[3]", "%r = aten.div.Tensor(%x, %x)", "f32[3]");
  ty("%x: f64[3]", "%r = aten.div.Tensor(%x, 2)", "f64[3]");
  ty("%x: f16[3]", "%r = aten.div.Tensor(%x, 2)", "f16[3]");
  ty("%x: i64[3], %y: i64[3]", "%r = aten.div.Tensor_mode(%x, %y, rounding_mode='floor')", "i64[3]");
  ty("%x: i32[3]", "%r = aten.div.Tensor_mode(%x, 2, rounding_mode='trunc')", "i32[3]");
  ty("%x: i64[3], %y: i64[3]", "%r = aten.div.Tensor_mode(%x, %y, rounding_mode=None)", "f32[3]");
  bad("%x: i64[3]", "%r = aten.div.Tensor_mode(%x, 2, rounding_mode='round')",
      "rounding_mode must be 'trunc', 'floor' or None, not 'round'");
  ty("%x: i64[3]", "%r = aten.pow.Tensor_Scalar(%x, 2)", "i64[3]");
  ty("%x: i64[3]", "%r = aten.pow.Tensor_Scalar(%x, 0.5)", "f32[3]");
  ty("%x: i32[3]", "%r = aten.pow.Scalar(2, %x)", "i32[3]");
  ty("%x: i32[3]", "%r = aten.pow.Scalar(2.0, %x)", "f32[3]");
  ty("%x: f16[3], %e: i64[3]", "%r = aten.pow.Tensor_Tensor(%x, %e)", "f16[3]");
}

Test(infer, promotion_unary_compare_where_clamp)
{
  ty("%x: i64[2, 3]", "%r = aten.exp.default(%x)", "f32[2, 3]");
  ty("%x: bool[2]", "%r = aten.sigmoid.default(%x)", "f32[2]");
  ty("%x: f16[2]", "%r = aten.rsqrt.default(%x)", "f16[2]");
  ty("%x: f64[2]", "%r = aten.gelu.default(%x)", "f64[2]");
  ty("%x: i8[2]", "%r = aten.abs.default(%x)", "i8[2]");
  ty("%x: u8[2]", "%r = aten.bitwise_not.default(%x)", "u8[2]");
  ty("%x: f32[2]", "%r = aten.logical_not.default(%x)", "bool[2]");
  bad("%x: bool[2]", "%r = aten.neg.default(%x)", "aten.neg.default: not defined for bool tensors");
  bad("%x: f32[2]", "%r = aten.bitwise_not.default(%x)",
      "bitwise_not needs an integer or bool tensor, not f32");
  bad("%x: f32[2]", "%r = aten.gelu.default(%x, approximate='fast')",
      "approximate must be 'none' or 'tanh', not 'fast'");
  bad("", "%r = aten.relu.default(1.5)", "argument 'self' must be a tensor, not a number");

  ty("%x: f32[3], %y: i64[3]", "%r = aten.lt.Tensor(%x, %y)", "bool[3]");
  ty("%x: i32[2, 3]", "%r = aten.eq.Scalar(%x, 1.5)", "bool[2, 3]");
  ty("%x: f16[2, 3], %y: f16[3]", "%r = aten.ge.Tensor(%x, %y)", "bool[2, 3]");
  ty("%x: f32[3], %y: i64[3]", "%r = aten.logical_and.default(%x, %y)", "bool[3]");
  ty("%x: u8[3]", "%r = aten.ne.Scalar(%x, True)", "bool[3]");
  bad("%x: f32[3]", "%r = aten.eq.Tensor(1, %x)", "aten.eq.Tensor: argument 'self' must be a tensor");

  ty("%c: bool[3], %h: f16[3]", "%r = aten.where.self(%c, %h, 0.0)", "f16[3]");
  ty("%c: bool[3]", "%r = aten.where.self(%c, 1, 0)", "i64[3]");
  ty("%c: bool[3], %i: i32[3]", "%r = aten.where.self(%c, %i, 2.5)", "f32[3]");
  ty("%c: bool[3], %i: i32[3], %l: i64[3]", "%r = aten.where.self(%c, %i, %l)", "i64[3]");
  bad("%c: i32[3], %x: f32[3]", "%r = aten.where.self(%c, %x, %x)",
      "t.coil:3:22: error: aten.where.self: condition must be a bool tensor");

  ty("%x: i32[3]", "%r = aten.clamp.default(%x, 0, 5)", "i32[3]");
  ty("%x: i32[3]", "%r = aten.clamp.default(%x, 0.5)", "f32[3]");
  ty("%x: f16[3]", "%r = aten.clamp.default(%x, max=1)", "f16[3]");
  ty("%x: f32[2, 3], %lo: f32[3]", "%r = aten.clamp.Tensor(%x, %lo)", "f32[2, 3]");
  bad("%x: f32[3]", "%r = aten.clamp.default(%x)", "at least one of min and max must be given");
}

/* The pointwise math section of ops.def: PyTorch's result dtypes and refusals. */
Test(infer, pointwise_math)
{
  ty("%x: i64[2, 3]", "%r = aten.tan.default(%x)", "f32[2, 3]");
  ty("%x: bool[2]", "%r = aten.acosh.default(%x)", "f32[2]");
  ty("%x: f16[2]", "%r = aten.expm1.default(%x)", "f16[2]");
  ty("%x: f64[2]", "%r = aten.log10.default(%x)", "f64[2]");
  ty("%x: i32[2]", "%r = aten.sign.default(%x)", "i32[2]");
  ty("%x: bool[2]", "%r = aten.sign.default(%x)", "bool[2]");
  ty("%x: bf16[2]", "%r = aten.isnan.default(%x)", "bool[2]");
  ty("%x: i64[2]", "%r = aten.isinf.default(%x)", "bool[2]");
  ty("%x: bf16[2]", "%r = aten.elu.default(%x, 0.5)", "bf16[2]");
  ty("%x: i64[2]", "%r = aten.hardtanh.default(%x, -2.5, 2.5)", "i64[2]"); /* no promotion */
  bad("%x: i64[2]", "%r = aten.elu.default(%x)", "aten.elu.default: needs a floating-point tensor, not i64");
  bad("%x: bool[2]", "%r = aten.hardtanh.default(%x)", "aten.hardtanh.default: not defined for bool tensors");

  ty("%x: i64[2, 3], %y: i32[3]", "%r = aten.atan2.default(%x, %y)", "f32[2, 3]");
  ty("%x: f16[3], %y: f32[]", "%r = aten.atan2.default(%x, %y)", "f16[3]");
  ty("%x: i32[3], %y: i64[3]", "%r = aten.remainder.Tensor(%x, %y)", "i64[3]");
  ty("%x: i32[3]", "%r = aten.fmod.Scalar(%x, 2)", "i32[3]");
  ty("%x: i64[3]", "%r = aten.remainder.Scalar(%x, 2.5)", "f32[3]");
  ty("%x: bool[3]", "%r = aten.fmod.Scalar(%x, 2)", "i64[3]");
  ty("%x: i64[3]", "%r = aten.div.Scalar_mode(%x, 2, rounding_mode='floor')", "i64[3]");
  ty("%x: i64[3]", "%r = aten.div.Scalar_mode(%x, 2)", "f32[3]");
  ty("%x: bool[3]", "%r = aten.bitwise_and.Scalar(%x, 6)", "i64[3]");
  ty("%x: bool[3]", "%r = aten.bitwise_or.Scalar(%x, True)", "bool[3]");
  ty("%x: u8[3], %y: u8[3]", "%r = aten.bitwise_xor.Tensor(%x, %y)", "u8[3]");
  ty("%x: f32[3], %y: i64[3]", "%r = aten.logical_xor.default(%x, %y)", "bool[3]");
  bad("%x: bool[3], %y: bool[3]", "%r = aten.remainder.Tensor(%x, %y)",
      "aten.remainder.Tensor: not defined for bool tensors");
  bad("%x: i64[3]", "%r = aten.bitwise_xor.Scalar(%x, 1.5)", "aten.bitwise_xor.Scalar: needs integer or bool tensors, not f32");
  bad("%x: f32[3]", "%r = aten.div.Scalar_mode(%x, 2, rounding_mode='round')",
      "rounding_mode must be 'trunc', 'floor' or None, not 'round'");

  ty("%x: f32[s0, 3], %o: f32[s0, 3]", "%r = aten.atan2.out(%x, 1, out=%o)", "f32[s0, 3]");
  bad("%x: f32[2, 3], %o: f32[3]", "%r = aten.atan2.out(%x, %x, out=%o)",
      "aten.atan2.out: out is f32[3], expected the result's type f32[2, 3] (coil does not resize or cast out)");
  bad("%x: i64[3], %o: i64[3]", "%r = aten.atan2.out(%x, %x, out=%o)", "out is i64[3], expected the result's type f32[3]");
  bad("%x: f32[3]", "%r = aten.atan2.out(%x, %x, out=2.0)", "argument 'out' must be a tensor");
  bad("%x: f32[3]", "%r = aten.atan2.out(%x, %x)", "out");

  ty("%x: i32[2, 3]", "%r = aten.fill.Scalar(%x, 2.5)", "i32[2, 3]");
  ty("%x: bool[2]", "%r = aten.fill.Scalar(%x, 3)", "bool[2]");
}

Test(infer, promotion_creation_and_casts)
{
  ty("%x: f32[2, 3]", "%r = aten._to_copy.default(%x, dtype=bf16)", "bf16[2, 3]");
  ty("%x: f32[2, 3]", "%r = aten._to_copy.default(%x)", "f32[2, 3]");
  ty("", "%r = aten.full.default([2], 1)", "i64[2]");
  ty("", "%r = aten.full.default([2], True)", "bool[2]");
  ty("", "%r = aten.full.default([2, 0], 1.0)", "f32[2, 0]");
  ty("", "%r = aten.full.default([], 0, dtype=f16)", "f16[]");
  bad("", "%r = aten.full.default([2, -1], 0)", "aten.full.default: size -1 is negative");
  ty("", "%r = aten.scalar_tensor.default(3)", "f32[]");
  ty("", "%r = aten.scalar_tensor.default(3, dtype=i64)", "i64[]");
  ty("%x: i32[4]", "%r = aten.full_like.default(%x, 0.5)", "i32[4]");
  ty("%x: i32[4]", "%r = aten.zeros_like.default(%x, dtype=f64)", "f64[4]");
  ty("%x: f16[s0]", "%r = aten.ones_like.default(%x)", "f16[s0]");
  ty("", "%r = aten.arange.default(5)", "i64[5]");
  ty("", "%r = aten.arange.default(5.0)", "f32[5]");
  ty("", "%r = aten.arange.start(0.5, 3)", "f32[3]");
  ty("", "%r = aten.arange.start_step(0, 10, 3)", "i64[4]");
  ty("", "%r = aten.arange.start_step(10, 0, -3)", "i64[4]");
  ty("", "%r = aten.arange.start_step(0, 1, 0.1)", "f32[10]");
  ty("", "%r = aten.arange.start_step(3, 3)", "i64[0]");
  ty("", "%r = aten.arange.default(4, dtype=f16)", "f16[4]");
  bad("", "%r = aten.arange.start_step(0, 10, 0)", "arange needs a non-zero step");
  /* an integer arange truncates its arguments first: 0, 1, 2, 3, 4 */
  ty("", "%r = aten.arange.start_step(0, 5, 1.5, dtype=i64)", "i64[5]");
  bad("", "%r = aten.arange.start_step(0, 5, 0.5, dtype=i64)", "arange needs a non-zero step");
  bad("", "%r = aten.arange.start_step(0, 10, -1)", "the step goes away from the end");
  bad("", "%r = aten.arange.default(inf)", "arange needs finite bounds");
}

/* ---------------------------------------------------------------- broadcasting ---- */

Test(infer, broadcasting)
{
  ty("%x: f32[2, 3], %y: f32[3]", "%r = aten.add.Tensor(%x, %y)", "f32[2, 3]");
  ty("%x: f32[4, 1, 3], %y: f32[5, 1]", "%r = aten.add.Tensor(%x, %y)", "f32[4, 5, 3]");
  ty("%x: f32[1], %y: f32[]", "%r = aten.add.Tensor(%x, %y)", "f32[1]");
  ty("%x: f32[], %y: f32[]", "%r = aten.add.Tensor(%x, %y)", "f32[]");
  ty("%x: f32[0, 3], %y: f32[1, 3]", "%r = aten.add.Tensor(%x, %y)", "f32[0, 3]");
  ty("%x: f32[2, 1, 1, 1, 1, 1, 1, 1], %y: f32[7]", "%r = aten.mul.Tensor(%x, %y)",
     "f32[2, 1, 1, 1, 1, 1, 1, 7]");
  ty("%x: f32[s0, 1], %y: f32[1, s1]", "%r = aten.add.Tensor(%x, %y)", "f32[s0, s1]");
  ty("%x: f32[s0, 3], %y: f32[s0, 3]", "%r = aten.add.Tensor(%x, %y)", "f32[s0, 3]");
  ty("%x: f32[s0, 3], %y: f32[3]", "%r = aten.add.Tensor(%y, %x)", "f32[s0, 3]");
  ty("%x: f32[s0], %y: f32[1]", "%r = aten.add.Tensor(%x, %y)", "f32[s0]");
  /* equal after simplification: the view's 2*s0 meets a size written 2*s0 the other way */
  ty("%x: f32[s0, 2], %y: f32[s0*2]", "%v = aten.view.default(%x, [-1])\n%r = aten.add.Tensor(%v, %y)",
     "f32[2*s0]");
  ty("%c: bool[3, 1], %a: f32[1, 4], %b: f32[]", "%r = aten.where.self(%c, %a, %b)", "f32[3, 4]");
  ty("%x: f32[4, 1], %y: i64[5]", "%r = aten.lt.Tensor(%x, %y)", "bool[4, 5]");
  bad("%x: f32[2, 3], %y: f32[4]", "%r = aten.add.Tensor(%x, %y)",
      "t.coil:3:1: error: aten.add.Tensor: sizes 3 and 4 cannot be broadcast together (dimension 1 "
      "of the result)");
  bad("%x: f32[s0], %y: f32[s1]", "%r = aten.add.Tensor(%x, %y)",
      "sizes s0 and s1 cannot be broadcast together (dimension 0 of the result)");
  bad("%x: f32[s0], %y: f32[3]", "%r = aten.add.Tensor(%x, %y)",
      "sizes s0 and 3 cannot be broadcast together");
  bad("%c: bool[2], %a: f32[3]", "%r = aten.where.self(%c, %a, 0)", "sizes 2 and 3 cannot be broadcast");
  /* copy broadcasts src into self's shape, never the other way */
  ty("%x: f32[2, 3], %y: f32[3]", "%r = aten.copy.default(%x, %y)", "f32[2, 3]");
  bad("%x: f32[3], %y: f32[2, 3]", "%r = aten.copy.default(%x, %y)", "src of rank 2 cannot be copied");
  bad("%x: f32[1, 3], %y: f32[2, 3]", "%r = aten.copy.default(%x, %y)",
      "src does not broadcast to the shape of self");
}

/* ---------------------------------------------------------------- reductions ---- */

Test(infer, reductions)
{
  const char *x = "%x: f32[2, 3, 4]";
  ty(x, "%r = aten.sum.dim_IntList(%x, [0, -1])", "f32[3]");
  ty(x, "%r = aten.sum.dim_IntList(%x, [0, -1], True)", "f32[1, 3, 1]");
  ty(x, "%r = aten.sum.dim_IntList(%x, [])", "f32[]");
  ty(x, "%r = aten.sum.dim_IntList(%x, [], keepdim=True)", "f32[1, 1, 1]");
  ty(x, "%r = aten.sum.dim_IntList(%x, None)", "f32[]");
  ty(x, "%r = aten.sum.dim_IntList(%x, 1)", "f32[2, 4]");
  ty(x, "%r = aten.sum.default(%x)", "f32[]");
  ty(x, "%r = aten.amax.default(%x)", "f32[]");
  ty(x, "%r = aten.amax.default(%x, 1)", "f32[2, 4]");
  ty(x, "%r = aten.amin.default(%x, [-2], True)", "f32[2, 1, 4]");
  ty(x, "%r = aten.prod.dim_int(%x, -1)", "f32[2, 3]");
  ty(x, "%r = aten.mean.dim(%x, [-3, 2])", "f32[3]");
  ty(x, "%r = aten.var.correction(%x, [1], correction=1, keepdim=True)", "f32[2, 1, 4]");
  ty(x, "%r = aten.var_mean.correction(%x, [0, 1])", "(f32[4], f32[4])");
  ty(x, "%r = aten.argmax.default(%x)", "i64[]");
  ty(x, "%r = aten.argmax.default(%x, -1, True)", "i64[2, 3, 1]");
  ty(x, "%r = aten.argmin.default(%x, keepdim=True)", "i64[1, 1, 1]");
  ty(x, "%r = aten.max.dim(%x, 1)", "(f32[2, 4], i64[2, 4])");
  ty(x, "%r = aten.min.dim(%x, -1, True)", "(f32[2, 3, 1], i64[2, 3, 1])");
  ty("%b: bool[4, 5]", "%r = aten.any.dim(%b, 0)", "bool[5]");
  ty("%b: bool[4, 5]", "%r = aten.any.dims(%b, [0, 1])", "bool[]");
  ty("%b: f32[4, 5]", "%r = aten.any.default(%b)", "bool[]");
  ty("%x: f32[s0, 4]", "%r = aten.sum.dim_IntList(%x, [1])", "f32[s0]");
  ty("%x: f32[s0, 4]", "%r = aten.amax.default(%x, [0], True)", "f32[1, 4]");
  /* a 0-d tensor reduces over dimension 0 or -1 */
  ty("%x: f32[]", "%r = aten.sum.dim_IntList(%x, [0])", "f32[]");
  ty("%x: f32[]", "%r = aten.argmax.default(%x, -1, True)", "i64[]");
  bad("%x: f32[]", "%r = aten.sum.dim_IntList(%x, [1])",
      "dimension 1 is out of range for a tensor of rank 0");
  bad(x, "%r = aten.sum.dim_IntList(%x, [0, -3])", "t.coil:3:35: error: aten.sum.dim_IntList: "
                                                   "dimension -3 appears twice");
  bad(x, "%r = aten.sum.dim_IntList(%x, [3])", "dimension 3 is out of range for a tensor of rank 3");
  bad(x, "%r = aten.max.dim(%x, -4)", "dimension -4 is out of range for a tensor of rank 3");
  bad(x, "%r = aten.max.dim(%x)", "missing argument 'dim'");
}

/* Integer sums and products accumulate in i64; mean needs a float; dtype= overrides. */
Test(infer, reduction_dtypes)
{
  ty("%x: i32[4, 3]", "%r = aten.sum.dim_IntList(%x, [1])", "i64[4]");
  ty("%x: bool[4, 3]", "%r = aten.sum.default(%x)", "i64[]");
  ty("%x: u8[4, 3]", "%r = aten.prod.default(%x)", "i64[]");
  ty("%x: i8[4, 3]", "%r = aten.prod.dim_int(%x, 0)", "i64[3]");
  ty("%x: f16[4, 3]", "%r = aten.sum.default(%x)", "f16[]");
  ty("%x: i32[4, 3]", "%r = aten.sum.dim_IntList(%x, [1], dtype=f64)", "f64[4]");
  ty("%x: i32[4, 3]", "%r = aten.amax.default(%x, [1])", "i32[4]");
  ty("%x: i64[4, 3]", "%r = aten.mean.dim(%x, [1], dtype=f32)", "f32[4]");
  ty("%x: bf16[4, 3]", "%r = aten.mean.default(%x)", "bf16[]");
  bad("%x: i64[4, 3]", "%r = aten.mean.dim(%x, [1])",
      "aten.mean.dim: mean needs a floating-point tensor or dtype, not i64");
  bad("%x: i32[4]", "%r = aten.mean.default(%x)", "mean needs a floating-point tensor or dtype, not i32");
  bad("%x: i32[4]", "%r = aten.var.correction(%x)", "var needs a floating-point tensor, not i32");
  bad("%x: i32[4]", "%r = aten.var_mean.correction(%x)", "var needs a floating-point tensor, not i32");
}

Test(infer, softmax_and_norms)
{
  ty("%x: f32[2, 5]", "%r = aten._softmax.default(%x, -1, False)", "f32[2, 5]");
  ty("%x: f16[2, 5]", "%r = aten._log_softmax.default(%x, 0, True)", "f32[2, 5]");
  bad("%x: f32[2, 5]", "%r = aten._softmax.default(%x, 1, True)",
      "half_to_float=True needs an f16 or bf16 input");
  bad("%x: i64[2, 5]", "%r = aten._softmax.default(%x, 1, False)", "needs a floating-point tensor, not i64");
  ty("%x: f32[2, 7, 32], %w: f32[32], %b: f32[32]",
     "%r = aten.native_layer_norm.default(%x, [32], %w, %b, 1e-05)",
     "(f32[2, 7, 32], f32[2, 7, 1], f32[2, 7, 1])");
  ty("%x: f32[2, 7, 32]", "%r = aten.native_layer_norm.default(%x, [7, 32], None, None, 1e-05)",
     "(f32[2, 7, 32], f32[2, 1, 1], f32[2, 1, 1])");
  ty("%x: f64[s0, 8]", "%r = aten.native_layer_norm.default(%x, [8], None, None, 1)",
     "(f64[s0, 8], f64[s0, 1], f64[s0, 1])");
  /* mean and rstd in the input's dtype, as PyTorch's CPU kernels give them */
  ty("%x: f16[3, 8]", "%r = aten.native_layer_norm.default(%x, [8], None, None, 1e-05)",
     "(f16[3, 8], f16[3, 1], f16[3, 1])");
  bad("%x: f32[2, 7, 32], %w: f32[7]", "%r = aten.native_layer_norm.default(%x, [32], %w, None, 1e-05)",
      "'weight' must be a 1-D tensor of size 32");
  bad("%x: f32[2, 7, 32]", "%r = aten.native_layer_norm.default(%x, [7], None, None, 1e-05)",
      "normalized_shape does not match the input's trailing sizes");
  ty("%x: f32[4, 3, 5, 5], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]",
     "%r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %m, %v, 0.1, 1e-05)",
     "(f32[4, 3, 5, 5], f32[0], f32[0])");
  bad("%x: f32[4, 3, 5, 5], %m: f32[4], %v: f32[3]",
      "%r = aten._native_batch_norm_legit_no_training.default(%x, None, None, %m, %v, 0.1, 1e-05)",
      "'running_mean' must be a 1-D tensor of size 3");
  /* traced on CUDA, the saved statistics are per channel: the annotation may say either */
  ty("%x: f32[4, 3, 5, 5], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]",
     "%r: (f32[4, 3, 5, 5], f32[3], f32[3]) = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %m, %v, "
     "0.1, 1e-05)",
     "(f32[4, 3, 5, 5], f32[3], f32[3])");
  bad("%x: f32[4, 3, 5, 5], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]",
      "%r: (f32[4, 3, 5, 5], f32[4], f32[3]) = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %m, "
      "%v, 0.1, 1e-05)",
      "does not match the inferred type (f32[4, 3, 5, 5], f32[0], f32[3])");
}

/* ---------------------------------------------------------------- views ---- */

Test(infer, view_and_reshape)
{
  ty("%x: f32[s0, 48]", "%r = aten.view.default(%x, [-1, 8])", "f32[6*s0, 8]");
  ty("%x: f32[s0, 6]", "%r = aten.reshape.default(%x, [-1, 3])", "f32[2*s0, 3]");
  ty("%x: f32[s0, 4]", "%r = aten._unsafe_view.default(%x, [-1])", "f32[4*s0]");
  ty("%x: f32[s0, 4]", "%r = aten.view.default(%x, [-1, 2, 2])", "f32[s0, 2, 2]");
  ty("%x: f32[2, 3, 4]", "%r = aten.view.default(%x, [6, -1])", "f32[6, 4]");
  ty("%x: f32[2, 3, 4]", "%r = aten.view.default(%x, [24])", "f32[24]");
  ty("%x: f32[1, 1]", "%r = aten.view.default(%x, [])", "f32[]");
  ty("%x: f32[]", "%r = aten.view.default(%x, [-1])", "f32[1]");
  ty("%x: f32[0, 5]", "%r = aten.view.default(%x, [-1])", "f32[0]");
  bad("%x: f32[0, 5]", "%r = aten.view.default(%x, [5, 0, -1])",
      "cannot infer the -1 size of a shape with a zero size"); /* PyTorch: ambiguous */
  bad("%x: f32[0, 5]", "%r = aten.view.default(%x, [-1, 0])",
      "cannot infer the -1 size of a shape with a zero size");
  bad("%x: f32[2, 3]", "%r = aten.view.default(%x, [-1, -1])", "only one size may be -1");
  bad("%x: f32[2, 3]", "%r = aten.view.default(%x, [-2, 3])", "size -2 is invalid");
  bad("%x: f32[2, 3]", "%r = aten.view.default(%x, [4, 2])",
      "t.coil:3:28: error: aten.view.default: shape of 8 elements cannot view a tensor of 6 elements");
  bad("%x: f32[s0, 6]", "%r = aten.view.default(%x, [-1, 4])",
      "shape of 4*(3*s0 // 2) elements cannot view a tensor of 6*s0 elements");
  bad("%x: f32[s0, 4]", "%r = aten.view.default(%x, [8, 2])",
      "shape of 16 elements cannot view a tensor of 4*s0 elements");
}

/* The -1 of a symbolic view evaluates right at every size. */
Test(infer, view_symbolic_evaluates)
{
  coil_diag d = {{0}};
  coil_graph *g = build("%x: f32[s0, 3, 8]", "%r = aten.view.default(%x, [-1, 4, 2])", &d);
  cr_assert_not_null(g, "%s", d.msg);
  const coil_type *t = &find(g, "r")->type;
  for (int64_t n = 0; n < 20; n++) {
    int64_t v;
    cr_assert_eq(coil_sym_eval(g->sym, t->dims[0], &n, 1, &v, &d), 0, "%s", d.msg);
    cr_assert_eq(v, 3 * n, "s0 = %lld", (long long)n);
  }
  coil_graph_free(g);
}

Test(infer, permute_transpose_expand)
{
  const char *x = "%x: f32[2, 3, 4]";
  ty(x, "%r = aten.permute.default(%x, [2, 0, 1])", "f32[4, 2, 3]");
  ty(x, "%r = aten.permute.default(%x, [-1, -3, -2])", "f32[4, 2, 3]");
  ty("%x: f32[]", "%r = aten.permute.default(%x, [])", "f32[]");
  ty("%x: f32[s0, 5]", "%r = aten.permute.default(%x, [1, 0])", "f32[5, s0]");
  bad(x, "%r = aten.permute.default(%x, [0, 1])", "permutation has 2 entries for a tensor of rank 3");
  bad(x, "%r = aten.permute.default(%x, [0, 0, 1])", "dimension 0 appears twice in the permutation");
  bad(x, "%r = aten.permute.default(%x, [0, 1, 3])", "dimension 3 is out of range for a tensor of rank 3");

  ty(x, "%r = aten.transpose.int(%x, 0, -1)", "f32[4, 3, 2]");
  ty(x, "%r = aten.transpose.int(%x, 1, 1)", "f32[2, 3, 4]");
  ty("%x: f32[2, 3]", "%r = aten.t.default(%x)", "f32[3, 2]");
  ty("%x: f32[5]", "%r = aten.t.default(%x)", "f32[5]");
  ty("%x: f32[]", "%r = aten.t.default(%x)", "f32[]");
  ty("%x: f32[]", "%r = aten.transpose.int(%x, 0, -1)", "f32[]");
  bad(x, "%r = aten.t.default(%x)", "t() needs a tensor of rank <= 2, not 3");
  bad(x, "%r = aten.transpose.int(%x, 0, 3)", "dimension 3 is out of range");

  ty("%x: f32[3, 1]", "%r = aten.expand.default(%x, [2, 3, 4])", "f32[2, 3, 4]");
  ty("%x: f32[3, 1]", "%r = aten.expand.default(%x, [-1, 5])", "f32[3, 5]");
  ty("%x: f32[3, 1]", "%r = aten.expand.default(%x, [2, -1, -1])", "f32[2, 3, 1]");
  ty("%x: f32[s0, 1]", "%r = aten.expand.default(%x, [-1, 7])", "f32[s0, 7]");
  ty("%x: f32[]", "%r = aten.expand.default(%x, [2, 2])", "f32[2, 2]");
  ty("%x: f32[3, 1]", "%r = aten.expand.default(%x, [3, 0])", "f32[3, 0]");
  bad("%x: f32[3, 1]", "%r = aten.expand.default(%x, [4, 4])",
      "t.coil:3:30: error: aten.expand.default: cannot expand size 3 to 4 in dimension 0");
  bad("%x: f32[3, 1]", "%r = aten.expand.default(%x, [-1, 3, 1])",
      "-1 is not allowed for a new leading dimension");
  bad("%x: f32[3, 1]", "%r = aten.expand.default(%x, [3])",
      "expand to 1 dimensions from 2: the number of sizes must not shrink");
  bad("%x: f32[s0]", "%r = aten.expand.default(%x, [5])", "cannot expand size s0 to 5");
}

Test(infer, slice)
{
  const char *x = "%x: f32[10, 8]";
  ty(x, "%r = aten.slice.Tensor(%x, 0, -3, 9223372036854775807)", "f32[3, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, 1, 1, 9223372036854775807, 2)", "f32[10, 4]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, 2, 7, 2)", "f32[3, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, None, None, 3)", "f32[4, 8]");
  ty(x, "%r = aten.slice.Tensor(%x)", "f32[10, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, 5, 2)", "f32[0, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, -100, 100)", "f32[10, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, -1, 0, 8, 3)", "f32[10, 3]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, -9223372036854775808, 9223372036854775807, 4)", "f32[3, 8]");
  ty(x, "%r = aten.slice.Tensor(%x, 0, 9, 9223372036854775807, 9223372036854775807)", "f32[1, 8]");
  ty("%x: f32[s0, 4]", "%r = aten.slice.Tensor(%x, 0, 0, 9223372036854775807)", "f32[s0, 4]");
  bad(x, "%r = aten.slice.Tensor(%x, 0, 0, 10, 0)",
      "t.coil:3:38: error: aten.slice.Tensor: slice step must be positive");
  bad(x, "%r = aten.slice.Tensor(%x, 2)", "dimension 2 is out of range for a tensor of rank 2");
  bad("%x: f32[]", "%r = aten.slice.Tensor(%x)", "cannot slice a 0-d tensor");
}

/* Every slice length equals Python's len(range(n)[start:end:step]), for constant sizes and for
 * a symbolic size evaluated at each n. */
Test(infer, slice_matches_python)
{
  static const int64_t starts[] = {0, 1, 3, 9, -1, -3, -12, 100, INT64_MIN + 1};
  static const int64_t ends[] = {0, 2, 5, 12, -1, -4, -100, INT64_MAX};
  static const int64_t steps[] = {1, 2, 3, 7};
  for (size_t si = 0; si <= sizeof starts / sizeof *starts; si++)
    for (size_t ei = 0; ei <= sizeof ends / sizeof *ends; ei++)
      for (size_t ti = 0; ti < sizeof steps / sizeof *steps; ti++) {
        /* index one past the end stands for None */
        const int64_t *st = si < sizeof starts / sizeof *starts ? &starts[si] : NULL;
        const int64_t *en = ei < sizeof ends / sizeof *ends ? &ends[ei] : NULL;
        char body[200], sbuf[32] = "None", ebuf[32] = "None";
        if (st)
          snprintf(sbuf, sizeof sbuf, "%lld", (long long)*st);
        if (en)
          snprintf(ebuf, sizeof ebuf, "%lld", (long long)*en);
        snprintf(body, sizeof body, "%%r = aten.slice.Tensor(%%x, 0, %s, %s, %lld)", sbuf, ebuf,
                 (long long)steps[ti]);
        coil_diag d = {{0}};
        coil_graph *g = build("%x: f32[s0]", body, &d);
        cr_assert_not_null(g, "%s: %s", body, d.msg);
        const coil_sym *len = find(g, "r")->type.dims[0];
        for (int64_t n = 0; n <= 12; n++) {
          int64_t want = py_slice_len(n, st, en, steps[ti]), got;
          cr_assert_eq(coil_sym_eval(g->sym, len, &n, 1, &got, &d), 0, "%s: %s", body, d.msg);
          cr_assert_eq(got, want, "%s with s0 = %lld: %lld, Python says %lld", body, (long long)n,
                       (long long)got, (long long)want);
          if (n % 4 == 1) { /* a few constant sizes too */
            char in[32];
            snprintf(in, sizeof in, "%%x: f32[%lld]", (long long)n);
            coil_graph *gc = build(in, body, &d);
            cr_assert_not_null(gc, "%s: %s", body, d.msg);
            int64_t v;
            cr_assert(coil_sym_is_const(find(gc, "r")->type.dims[0], &v), "%s: not constant", body);
            cr_assert_eq(v, want, "%s on f32[%lld]", body, (long long)n);
            coil_graph_free(gc);
          }
        }
        coil_graph_free(g);
      }
}

Test(infer, select_squeeze_unsqueeze)
{
  ty("%x: f32[4, 5]", "%r = aten.select.int(%x, 1, -1)", "f32[4]");
  ty("%x: f32[4, 5]", "%r = aten.select.int(%x, 0, 3)", "f32[5]");
  ty("%x: f32[4]", "%r = aten.select.int(%x, -1, -4)", "f32[]");
  ty("%x: f32[s0, 5]", "%r = aten.select.int(%x, 0, 100)", "f32[5]");
  bad("%x: f32[4, 5]", "%r = aten.select.int(%x, 1, 5)",
      "t.coil:3:29: error: aten.select.int: index 5 is out of range for size 5");
  bad("%x: f32[4, 5]", "%r = aten.select.int(%x, 1, -6)", "index -6 is out of range for size 5");
  bad("%x: f32[]", "%r = aten.select.int(%x, 0, 0)", "cannot select from a 0-d tensor");

  ty("%x: f32[1, 3, 1]", "%r = aten.squeeze.default(%x)", "f32[3]");
  ty("%x: f32[1, 3, 1]", "%r = aten.squeeze.dim(%x, 0)", "f32[3, 1]");
  ty("%x: f32[1, 3, 1]", "%r = aten.squeeze.dim(%x, 1)", "f32[1, 3, 1]");
  ty("%x: f32[1, 3, 1]", "%r = aten.squeeze.dim(%x, -1)", "f32[1, 3]");
  ty("%x: f32[1, 3, 1]", "%r = aten.squeeze.dims(%x, [0, -1])", "f32[3]");
  ty("%x: f32[1, 1]", "%r = aten.squeeze.default(%x)", "f32[]");
  ty("%x: f32[]", "%r = aten.squeeze.dim(%x, 0)", "f32[]");
  ty("%x: f32[s0, 1]", "%r = aten.squeeze.default(%x)", "f32[s0]");
  bad("%x: f32[1, 3, 1]", "%r = aten.squeeze.dim(%x, 3)", "dimension 3 is out of range");
  bad("%x: f32[1, 3, 1]", "%r = aten.squeeze.dims(%x, [0, -3])", "dimension -3 appears twice");

  ty("%x: f32[3]", "%r = aten.unsqueeze.default(%x, 0)", "f32[1, 3]");
  ty("%x: f32[3]", "%r = aten.unsqueeze.default(%x, 1)", "f32[3, 1]");
  ty("%x: f32[3]", "%r = aten.unsqueeze.default(%x, -1)", "f32[3, 1]");
  ty("%x: f32[3]", "%r = aten.unsqueeze.default(%x, -2)", "f32[1, 3]");
  ty("%x: f32[]", "%r = aten.unsqueeze.default(%x, 0)", "f32[1]");
  ty("%x: f32[s0, 2]", "%r = aten.unsqueeze.default(%x, 1)", "f32[s0, 1, 2]");
  bad("%x: f32[3]", "%r = aten.unsqueeze.default(%x, 2)", "dimension 2 is out of range for a tensor of rank 2");
  bad("%x: f32[1, 1, 1, 1, 1, 1, 1, 1]", "%r = aten.unsqueeze.default(%x, 0)",
      "result would have more than 8 dimensions");
}

/* ---------------------------------------------------------------- data movement ---- */

Test(infer, cat)
{
  ty("%x: f32[2, 3], %y: f32[4, 3]", "%r = aten.cat.default([%x, %y])", "f32[6, 3]");
  ty("%x: f32[2, 3], %y: f32[2, 5]", "%r = aten.cat.default([%x, %y], -1)", "f32[2, 8]");
  ty("%x: f32[s0, 3], %y: f32[2, 3]", "%r = aten.cat.default([%x, %y, %x])", "f32[2*s0 + 2, 3]");
  ty("%x: f16[2], %y: f32[3]", "%r = aten.cat.default([%x, %y])", "f32[5]");
  ty("%x: i32[2], %y: i64[3], %b: bool[1]", "%r = aten.cat.default([%x, %y, %b])", "i64[6]");
  ty("%x: f32[2, 3], %e: f32[0]", "%r = aten.cat.default([%e, %x, %e], 1)", "f32[2, 3]");
  ty("%x: f32[2, 3]", "%r = aten.cat.default([%x])", "f32[2, 3]");
  bad("%x: f32[2, 3], %y: f32[3]", "%r = aten.cat.default([%x, %y])",
      "t.coil:3:28: error: aten.cat.default: tensor 1 has rank 1, expected 2");
  bad("%x: f32[2, 3], %y: f32[2, 4]", "%r = aten.cat.default([%x, %y])",
      "tensor 1 has size 4 in dimension 1, expected 3");
  bad("%x: f32[s0, 3], %y: f32[s1, 3]", "%r = aten.cat.default([%x, %y], 1)",
      "tensor 1 has size s1 in dimension 0, expected s0");
  bad("", "%r = aten.cat.default([])", "needs at least one tensor");
  bad("%x: f32[]", "%r = aten.cat.default([%x, %x])", "cannot concatenate 0-d tensors");
  bad("%x: f32[2]", "%r = aten.cat.default([%x, 1])", "argument 'tensors' must be a list of tensors");
}

Test(infer, split)
{
  const char *x = "%x: f32[10, 2]";
  ty(x, "%r = aten.split.Tensor(%x, 3)", "(f32[3, 2], f32[3, 2], f32[3, 2], f32[1, 2])");
  ty(x, "%r = aten.split.Tensor(%x, 5)", "(f32[5, 2], f32[5, 2])");
  ty(x, "%r = aten.split.Tensor(%x, 20)", "(f32[10, 2])");
  ty(x, "%r = aten.split.Tensor(%x, 1, -1)", "(f32[10, 1], f32[10, 1])");
  ty("%x: f32[0, 2]", "%r = aten.split.Tensor(%x, 4)", "(f32[0, 2])");
  ty(x, "%r = aten.split_with_sizes.default(%x, [3, 7])", "(f32[3, 2], f32[7, 2])");
  ty(x, "%r = aten.split_with_sizes.default(%x, [0, 10])", "(f32[0, 2], f32[10, 2])");
  ty(x, "%r = aten.split_with_sizes.default(%x, [1, 1], -1)", "(f32[10, 1], f32[10, 1])");
  ty(x, "%s = aten.split.Tensor(%x, 4)\n%r = getitem(%s, 2)", "f32[2, 2]");
  bad(x, "%r = aten.split_with_sizes.default(%x, [3, 6])",
      "split sizes add up to 9, but the dimension has size 10");
  bad(x, "%r = aten.split_with_sizes.default(%x, [11, -1])", "split size -1 is negative");
  bad(x, "%r = aten.split.Tensor(%x, 0)", "split_size must be positive");
  bad("%x: f32[s0]", "%r = aten.split.Tensor(%x, 2)", "split of a symbolic size is not supported");
  bad("%x: f32[]", "%r = aten.split.Tensor(%x, 2)", "argument 'self' must be a tensor of rank >= 1");
  bad("%x: f32[300]", "%r = aten.split.Tensor(%x, 1)", "at most 256 pieces");
  /* lists are not capped at the rank: twenty pieces */
  ty("%x: f32[20]", "%r = aten.split_with_sizes.default(%x, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
     "1, 1, 1, 1, 1, 1, 1, 1, 1, 1])", "(f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], "
     "f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], "
     "f32[1], f32[1])");
}

Test(infer, constant_pad_nd)
{
  ty("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [1, 2])", "f32[2, 6]");
  ty("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [1, 1, 2, 0])", "f32[4, 5]");
  ty("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [-1, 0])", "f32[2, 2]");
  ty("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [0, 0], value=1.5)", "f32[2, 3]");
  ty("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [])", "f32[2, 3]");
  ty("%x: f32[s0, 3]", "%r = aten.constant_pad_nd.default(%x, [0, 0, 2, 2])", "f32[s0 + 4, 3]");
  bad("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [1])",
      "pad needs an even number of entries, at most 2 per dimension");
  bad("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [0, 0, 0, 0, 0, 0])",
      "pad needs an even number of entries");
  bad("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [-4, 0])",
      "padding makes dimension 1 negative");
  bad("%x: f32[2, 3]", "%r = aten.constant_pad_nd.default(%x, [-9223372036854775808, -1])",
      "padding of dimension 1 overflows");
}

Test(infer, index_gather_embedding)
{
  const char *in = "%x: f32[5, 6, 7], %i: i64[4], %j: i64[4], %k: i64[2, 1], %m: i32[3]";
  ty(in, "%r = aten.index.Tensor(%x, [%i])", "f32[4, 6, 7]");
  ty(in, "%r = aten.index.Tensor(%x, [None, %i])", "f32[5, 4, 7]");
  ty(in, "%r = aten.index.Tensor(%x, [None, None, %m])", "f32[5, 6, 3]");
  /* adjacent index tensors: their broadcast shape replaces the indexed dimensions in place */
  ty(in, "%r = aten.index.Tensor(%x, [None, %i, %j])", "f32[5, 4]");
  ty(in, "%r = aten.index.Tensor(%x, [None, %k, %m])", "f32[5, 2, 3]");
  ty(in, "%r = aten.index.Tensor(%x, [%i, %j, %j])", "f32[4]");
  /* separated by None: the broadcast shape goes first */
  ty(in, "%r = aten.index.Tensor(%x, [%i, None, %j])", "f32[4, 6]");
  ty(in, "%r = aten.index.Tensor(%x, [%k, None, %m])", "f32[2, 3, 6]");
  ty("%x: f32[s0, 6], %i: i64[s1]", "%r = aten.index.Tensor(%x, [%i])", "f32[s1, 6]");
  bad(in, "%r = aten.index.Tensor(%x, [None, None, None])", "needs at least one index tensor");
  bad(in, "%r = aten.index.Tensor(%x, [%i, %i, %i, %i])", "too many indices (4) for a tensor of rank 3");
  bad(in, "%r = aten.index.Tensor(%x, [%i, %m])", "sizes 4 and 3 cannot be broadcast together");
  bad("%x: f32[4], %b: bool[4]", "%r = aten.index.Tensor(%x, [%b])",
      "index tensors must be i64 or i32 (boolean masks are not supported)");
  /* the rank limit counts every dimension the result keeps */
  bad("%x: f32[1, 1, 1, 1, 1, 1, 1, 1], %i: i64[2, 2, 2, 2, 2, 2, 2, 2]",
      "%r = aten.index.Tensor(%x, [%i, None, None, None, None, None, None, %i])",
      "result would have more than 8 dimensions");
  ty("%x: f32[1, 1, 1, 1, 1, 1, 1, 1], %i: i64[2, 2]",
     "%r = aten.index.Tensor(%x, [%i, None, None, None, None, None, None, %i])",
     "f32[2, 2, 1, 1, 1, 1, 1, 1]");

  ty("%x: f32[3, 4], %i: i64[3, 2]", "%r = aten.gather.default(%x, 1, %i)", "f32[3, 2]");
  ty("%x: f32[3, 4], %i: i64[5, 4]", "%r = aten.gather.default(%x, 0, %i)", "f32[5, 4]");
  ty("%x: f16[3, 4], %i: i64[3, 2]", "%r = aten.gather.default(%x, -1, %i, sparse_grad=False)", "f16[3, 2]");
  bad("%x: f32[3, 4], %i: i32[3, 2]", "%r = aten.gather.default(%x, 1, %i)", "index must be an i64 tensor");
  bad("%x: f32[3, 4], %i: i64[3]", "%r = aten.gather.default(%x, 1, %i)", "index must have the rank of self (2)");
  bad("%x: f32[3, 4], %i: i64[3, 2]", "%r = aten.gather.default(%x, 2, %i)", "dimension 2 is out of range");

  ty("%w: f32[10, 16], %i: i64[2, 5]", "%r = aten.embedding.default(%w, %i)", "f32[2, 5, 16]");
  ty("%w: bf16[10, 16], %i: i32[7]", "%r = aten.embedding.default(%w, %i, 0)", "bf16[7, 16]");
  ty("%w: f32[10, 16], %i: i64[]", "%r = aten.embedding.default(%w, %i)", "f32[16]");
  ty("%w: f32[s0, 16], %i: i64[s1]", "%r = aten.embedding.default(%w, %i)", "f32[s1, 16]");
  bad("%w: f32[10, 16], %i: f32[2]", "%r = aten.embedding.default(%w, %i)", "indices must be an integer tensor");
  bad("%w: f32[10], %i: i64[2]", "%r = aten.embedding.default(%w, %i)", "weight must be a 2-D tensor");
}

/* ---------------------------------------------------------------- library calls ---- */

Test(infer, matmul)
{
  ty("%a: f32[2, 3], %b: f32[3, 4]", "%r = aten.mm.default(%a, %b)", "f32[2, 4]");
  ty("%a: f32[s0, 3], %b: f32[3, s1]", "%r = aten.mm.default(%a, %b)", "f32[s0, s1]");
  ty("%a: f32[2, s0], %b: f32[s0, 4]", "%r = aten.mm.default(%a, %b)", "f32[2, 4]");
  ty("%a: f16[5, 2, 3], %b: f16[5, 3, 4]", "%r = aten.bmm.default(%a, %b)", "f16[5, 2, 4]");
  ty("%c: f32[4], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b)", "f32[2, 4]");
  ty("%c: f32[2, 4], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b, beta=0.5, alpha=2)",
     "f32[2, 4]");
  ty("%c: f32[1, 4], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b)", "f32[2, 4]");
  bad("%a: f32[2, 3], %b: f32[4, 5]", "%r = aten.mm.default(%a, %b)",
      "t.coil:3:1: error: aten.mm.default: inner sizes differ: 3 and 4");
  bad("%a: f32[2, 3], %b: f16[3, 4]", "%r = aten.mm.default(%a, %b)",
      "operands have different dtypes (f32 and f16)");
  bad("%a: f32[2, 3], %b: f32[3]", "%r = aten.mm.default(%a, %b)", "needs two 2-D tensors");
  bad("%a: f32[5, 2, 3], %b: f32[6, 3, 4]", "%r = aten.bmm.default(%a, %b)", "batch sizes differ: 5 and 6");
  bad("%a: f32[2, 3], %b: f32[3, 4]", "%r = aten.bmm.default(%a, %b)", "needs two 3-D tensors");
  bad("%c: f32[3], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b)",
      "sizes 4 and 3 cannot be broadcast together");
  bad("%c: f32[3, 2, 4], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b)",
      "bias does not broadcast to the product's shape");
  bad("%c: f16[4], %a: f32[2, 3], %b: f32[3, 4]", "%r = aten.addmm.default(%c, %a, %b)",
      "bias must be a tensor of dtype f32");
}

Test(infer, convolution)
{
  /* e11: stride 2, padding 1, groups 2 */
  ty("%x: f32[1, 4, 12, 12], %w: f32[8, 2, 3, 3], %b: f32[8]",
     "%r = aten.convolution.default(%x, %w, %b, [2, 2], [1, 1], [1, 1], False, [0, 0], 2)",
     "f32[1, 8, 6, 6]");
  /* dilation 2: effective kernel 5 */
  ty("%x: f32[2, 3, 10, 10], %w: f32[4, 3, 3, 3]",
     "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [2, 2], False, [0, 0], 1)",
     "f32[2, 4, 6, 6]");
  /* per-dimension stride and padding */
  ty("%x: f32[1, 3, 8, 9], %w: f32[6, 3, 3, 2]",
     "%r = aten.convolution.default(%x, %w, None, [1, 2], [1, 0], [1, 1], False, [0, 0], 1)",
     "f32[1, 6, 8, 4]");
  /* 1-d, 3-d, depthwise */
  ty("%x: f32[2, 3, 10], %w: f32[6, 3, 5]",
     "%r = aten.convolution.default(%x, %w, None, [1], [0], [1], False, [0], 1)", "f32[2, 6, 6]");
  ty("%x: f32[1, 2, 4, 5, 6], %w: f32[4, 2, 3, 3, 3]",
     "%r = aten.convolution.default(%x, %w, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)",
     "f32[1, 4, 4, 5, 6]");
  ty("%x: f32[1, 8, 5, 5], %w: f32[8, 1, 3, 3]",
     "%r = aten.convolution.default(%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 8)",
     "f32[1, 8, 5, 5]");
  /* symbolic batch and length */
  ty("%x: f32[s0, 3, s1], %w: f32[4, 3, 3]",
     "%r = aten.convolution.default(%x, %w, None, [2], [1], [1], False, [0], 1)",
     "f32[s0, 4, (s1 + 1) // 2]");
  /* transposed: (in - 1)*s - 2p + d*(k - 1) + output_padding + 1; weight is (in, out/groups, k) */
  ty("%x: f32[1, 4, 5, 5], %w: f32[4, 2, 3, 3]",
     "%r = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)",
     "f32[1, 2, 10, 10]");
  ty("%x: f32[1, 4, 5, 5], %w: f32[4, 3, 3, 3], %b: f32[6]",
     "%r = aten.convolution.default(%x, %w, %b, [2, 2], [1, 1], [1, 1], True, [1, 1], 2)",
     "f32[1, 6, 10, 10]");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 3, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)",
      "weight has 3 input channels per group; input has 4 channels in 2 groups");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 4, 3, 3], %b: f32[4]",
      "%r = aten.convolution.default(%x, %w, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)",
      "'bias' must be a 1-D tensor of size 8");
  bad("%x: f32[1, 4, 2, 2], %w: f32[8, 4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)",
      "the output would be empty (size 0)");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1], [0, 0], [1, 1], False, [0, 0], 1)",
      "stride, padding and dilation need 2 entries each");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [0, 1], [0, 0], [1, 1], False, [0, 0], 1)",
      "kernel, stride and dilation must be positive and padding non-negative");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 0)",
      "groups must be positive");
  bad("%x: f32[1, 4, 8, 8], %w: f32[8, 4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 9223372036854775807)",
      "input has 4 channels in 9223372036854775807 groups");
  bad("%x: f32[1, 4, 5, 5], %w: f32[4, 2, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], True, [4294967296, 1], 1)",
      "transposed: stride, dilation and kernel must be positive and padding non-negative, all below 2^31");
  bad("%x: f32[s0, s1, 8], %w: f32[4, 3, 3]",
      "%r = aten.convolution.default(%x, %w, None, [1], [0], [1], False, [0], 1)",
      "channel counts must be constant");
}

Test(infer, pooling)
{
  ty("%x: f32[1, 1, 5, 5]", "%r = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2])",
     "(f32[1, 1, 2, 2], i64[1, 1, 2, 2])");
  ty("%x: f32[1, 1, 5, 5]",
     "%r = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2], [0, 0], [1, 1], True)",
     "(f32[1, 1, 3, 3], i64[1, 1, 3, 3])");
  /* ceil mode drops a last window that would start in the right padding: 5, k3, s3, p1 */
  ty("%x: f32[2, 5, 5]", "%r = aten.max_pool2d_with_indices.default(%x, 3, 3, 1, 1, True)",
     "(f32[2, 2, 2], i64[2, 2, 2])");
  ty("%x: f32[1, 1, 9, 7]", "%r = aten.max_pool2d_with_indices.default(%x, [3])",
     "(f32[1, 1, 3, 2], i64[1, 1, 3, 2])");
  ty("%x: f32[1, 1, 7, 7]", "%r = aten.max_pool2d_with_indices.default(%x, 2, 1, 0, 2)",
     "(f32[1, 1, 5, 5], i64[1, 1, 5, 5])");
  ty("%x: f32[s0, 3, s1, 8]", "%r = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2])",
     "(f32[s0, 3, s1 // 2, 4], i64[s0, 3, s1 // 2, 4])");
  ty("%x: f32[1, 8, 6, 6]", "%r = aten.avg_pool2d.default(%x, [2, 2], [2, 2])", "f32[1, 8, 3, 3]");
  ty("%x: f32[1, 3, 6, 6]", "%r = aten.avg_pool2d.default(%x, 3, 2)", "f32[1, 3, 2, 2]");
  ty("%x: f32[1, 3, 6, 6]", "%r = aten.avg_pool2d.default(%x, 3, 2, 0, True)", "f32[1, 3, 3, 3]");
  ty("%x: f32[1, 3, 6, 6]", "%r = aten.avg_pool2d.default(%x, 3, 2, 1, True, False, 4)", "f32[1, 3, 4, 4]");
  bad("%x: f32[1, 1, 5, 5]", "%r = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2], [2, 2])",
      "padding must be at most half the kernel size");
  bad("%x: f32[1, 1, 1, 1]", "%r = aten.max_pool2d_with_indices.default(%x, 3, 2, 0, 1, True)",
      "the output would be empty (size 0): input too small for the window");
  bad("%x: f32[1, 1, 5, 5]", "%r = aten.avg_pool2d.default(%x, 2, 2, 0, False, True, 0)",
      "divisor_override must not be zero");
  bad("%x: f32[5, 5]", "%r = aten.avg_pool2d.default(%x, 2)", "input must be a 3-D or 4-D tensor");
  bad("%x: f32[1, 1, s0, 5]", "%r = aten.avg_pool2d.default(%x, 2, 2, 0, True)",
      "ceil_mode with a symbolic size is not supported");
  bad("%x: f32[1, 1, 5, 5]", "%r = aten.avg_pool2d.default(%x, [2, 2, 2])", "list has 3 items, at most 2 allowed");
}

/* Pool output sizes equal ATen's pooling_output_shape over a grid, and where that is below 1
 * the graph is rejected, as PyTorch rejects it. */
Test(infer, pooling_matches_aten)
{
  for (int64_t n = 1; n <= 9; n++)
    for (int64_t k = 1; k <= 4; k++)
      for (int64_t s = 1; s <= 3; s++)
        for (int64_t p = 0; p <= k / 2; p++)
          for (int64_t dil = 1; dil <= 2; dil++)
            for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
              char in[64], body[200];
              snprintf(in, sizeof in, "%%x: f32[1, %lld, 4]", (long long)n);
              snprintf(body, sizeof body,
                       "%%r = aten.max_pool2d_with_indices.default(%%x, [%lld, 1], [%lld, 1], "
                       "[%lld, 0], [%lld, 1], %s)",
                       (long long)k, (long long)s, (long long)p, (long long)dil,
                       ceil_mode ? "True" : "False");
              int64_t want = aten_pool_out(n, k, p, s, dil, ceil_mode);
              coil_diag d = {{0}};
              coil_graph *g = build(in, body, &d);
              if (want < 1) {
                cr_assert_null(g, "%s on %s: accepted, ATen gives %lld", body, in, (long long)want);
                cr_assert(strstr(d.msg, "the output would be empty"), "%s", d.msg);
                continue;
              }
              cr_assert_not_null(g, "%s on %s: %s", body, in, d.msg);
              int64_t got;
              cr_assert(coil_sym_is_const(find(g, "r")->type.elems[0].dims[1], &got));
              cr_assert_eq(got, want, "%s on %s: %lld, ATen says %lld", body, in, (long long)got,
                           (long long)want);
              coil_graph_free(g);
            }
}

Test(infer, topk)
{
  ty("%x: f32[4, 10]", "%r = aten.topk.default(%x, 3)", "(f32[4, 3], i64[4, 3])");
  ty("%x: f32[4, 10]", "%r = aten.topk.default(%x, 2, 0)", "(f32[2, 10], i64[2, 10])");
  ty("%x: f32[4, 10]", "%r = aten.topk.default(%x, 0, largest=False)", "(f32[4, 0], i64[4, 0])");
  ty("%x: f16[s0, 10]", "%r = aten.topk.default(%x, 10, -1, True, False)", "(f16[s0, 10], i64[s0, 10])");
  ty("%x: f32[s0]", "%r = aten.topk.default(%x, 5)", "(f32[5], i64[5])");
  ty("%x: f32[]", "%r = aten.topk.default(%x, 1)", "(f32[], i64[])");
  bad("%x: f32[4, 10]", "%r = aten.topk.default(%x, 11)",
      "t.coil:3:28: error: aten.topk.default: k = 11 is out of range for the dimension");
  bad("%x: f32[4, 10]", "%r = aten.topk.default(%x, -1)", "k = -1 is out of range");
  bad("%x: f32[4, 10]", "%r = aten.topk.default(%x, 1, 2)", "dimension 2 is out of range");
}

/* ---------------------------------------------------------------- plumbing ---- */

Test(infer, getitem_clone_assert)
{
  ty("%x: f32[4, 10]", "%t = aten.topk.default(%x, 3)\n%r = getitem(%t, 1)", "i64[4, 3]");
  ty("%x: f32[4, 10]", "%t = aten.max.dim(%x, 1)\n%r = getitem(%t, 0)", "f32[4]");
  ty("%x: f32[4, 10]", "%r = aten.clone.default(%x, memory_format=contiguous_format)", "f32[4, 10]");
  ty("%x: f32[4, 10]", "%r = aten.alias.default(%x)", "f32[4, 10]");
  ty("%x: f32[4, s0]",
     "%a = aten._assert_tensor_metadata.default(%x, None, None, f32, device=cpu, layout=strided)\n"
     "%r = aten.relu.default(%x)",
     "f32[4, s0]");
  ty("%x: f32[4, 10]", "%a = aten._assert_tensor_metadata.default(%x, [4, 10])\n%r = aten.neg.default(%x)",
     "f32[4, 10]");
  bad("%x: f32[4, 10]", "%t = aten.topk.default(%x, 3)\n%r = getitem(%t, 2)",
      "t.coil:4:18: error: getitem: index 2 is out of range for a tuple of 2");
  bad("%x: f32[4, 10]", "%t = aten.topk.default(%x, 3)\n%r = getitem(%t, -1)",
      "index -1 is out of range for a tuple of 2");
  bad("%x: f32[4, 10]", "%r = getitem(%x, 0)", "getitem: %x is not a tuple");
  bad("%x: f32[4, 10]", "%t = aten.topk.default(%x, 3)\n%r = aten.neg.default(%t)",
      "argument 'self' must be a tensor");
  bad("%x: f32[4, 10]", "%a = aten._assert_tensor_metadata.default(%x, [4, 11])",
      "%x does not have the asserted size");
  bad("%x: f32[4, 10]", "%a = aten._assert_tensor_metadata.default(%x, dtype=i64)",
      "%x has dtype f32, the graph asserts i64");
  bad("%x: f32[4, 10]", "%r = getitem(3, 0)", "getitem: argument 'self' must be a value");
}

/* ---------------------------------------------------------------- the op table ---- */

/* Every schema of the table parses; names are unique and found by lookup; parameter names are
 * unique; positional parameters after one with a default have defaults too (ATen's rule). */
Test(infer, every_schema_parses)
{
  for (int i = 0; i < COIL_OP_COUNT; i++) {
    const coil_op *op = coil_op_get((coil_op_id)i);
    cr_assert_not_null(op);
    cr_assert_eq(op->id, (coil_op_id)i);
    cr_assert_eq(coil_op_lookup(op->name), op, "%s is not found by name (a duplicate?)", op->name);
    cr_assert_str_neq(coil_op_kind_name(op->kind), "?", "%s", op->name);
    cr_assert_str_neq(coil_rule_name(op->rule), "?", "%s", op->name);
    coil_schema s;
    coil_diag d = {{0}};
    cr_assert_eq(coil_schema_parse(op, &s, &d), 0, "%s: %s", op->name, d.msg);
    cr_assert_gt(s.nparams, 0, "%s", op->name);
    bool had_default = false;
    for (int k = 0; k < s.nparams; k++) {
      const coil_param *prm = &s.params[k];
      cr_assert_gt(strlen(prm->name), 0, "%s: parameter %d", op->name, k);
      cr_assert_eq(coil_schema_find(&s, prm->name), k, "%s: parameter %s twice", op->name, prm->name);
      if (!prm->kwonly) {
        cr_assert(!had_default || prm->has_default, "%s: %s has no default after one that has",
                  op->name, prm->name);
        had_default = had_default || prm->has_default;
      }
      if (prm->has_default && prm->def.kind == COIL_LIT_NONE)
        cr_assert(prm->optional, "%s: %s defaults to None but is not optional", op->name, prm->name);
    }
  }
  cr_assert_null(coil_op_get(COIL_OP_COUNT));
  cr_assert_null(coil_op_lookup("aten.nope.default"));
  cr_assert_null(coil_op_lookup("aten.add"));
}

/* A few schemas read field by field. */
Test(infer, schema_details)
{
  coil_schema s;
  coil_diag d = {{0}};
  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_ADD_T), &s, &d), 0, "%s", d.msg);
  cr_assert_eq(s.nparams, 3);
  cr_assert_str_eq(s.params[2].name, "alpha");
  cr_assert(s.params[2].kwonly);
  cr_assert(!s.params[1].kwonly);
  cr_assert_eq(s.params[2].type, COIL_P_SCALAR);
  cr_assert_eq(s.params[2].def.kind, COIL_LIT_INT);
  cr_assert_eq(s.params[2].def.i, 1);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_MAX_POOL2D), &s, &d), 0, "%s", d.msg);
  int k = coil_schema_find(&s, "kernel_size");
  cr_assert_eq(s.params[k].type, COIL_P_INT_LIST);
  cr_assert_eq(s.params[k].fixed_len, 2);
  cr_assert(!s.params[k].has_default);
  k = coil_schema_find(&s, "stride");
  cr_assert_eq(s.params[k].def.kind, COIL_LIT_LIST);
  cr_assert_eq(s.params[k].def.n, 0);
  k = coil_schema_find(&s, "dilation");
  cr_assert_eq(s.params[k].def.kind, COIL_LIT_INT);
  cr_assert_eq(s.params[k].def.i, 1);
  cr_assert_eq(s.params[coil_schema_find(&s, "ceil_mode")].type, COIL_P_BOOL);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_TO_COPY), &s, &d), 0, "%s", d.msg);
  k = coil_schema_find(&s, "dtype");
  cr_assert(s.params[k].optional && s.params[k].kwonly && s.params[k].has_default);
  cr_assert_eq(s.params[k].def.kind, COIL_LIT_NONE);
  cr_assert_eq(s.params[coil_schema_find(&s, "device")].type, COIL_P_DEVICE);
  cr_assert_eq(s.params[coil_schema_find(&s, "memory_format")].type, COIL_P_MEMFMT);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_INDEX), &s, &d), 0, "%s", d.msg);
  cr_assert_eq(s.params[1].type, COIL_P_OPT_TENSOR_LIST);
  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_CAT), &s, &d), 0, "%s", d.msg);
  cr_assert_eq(s.params[0].type, COIL_P_TENSOR_LIST);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_LAYER_NORM), &s, &d), 0, "%s", d.msg);
  k = coil_schema_find(&s, "weight");
  cr_assert(s.params[k].optional && !s.params[k].has_default, "positional optional: no default");
  cr_assert_eq(s.params[coil_schema_find(&s, "eps")].type, COIL_P_FLOAT);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_GELU), &s, &d), 0, "%s", d.msg);
  k = coil_schema_find(&s, "approximate");
  cr_assert_eq(s.params[k].def.kind, COIL_LIT_STR);
  cr_assert_eq(s.params[k].def.n, 4);
  cr_assert(strncmp(s.params[k].def.s, "none", 4) == 0);

  cr_assert_eq(coil_schema_parse(coil_op_get(COIL_OP_SLICE), &s, &d), 0, "%s", d.msg);
  cr_assert_eq(s.params[coil_schema_find(&s, "start")].def.kind, COIL_LIT_NONE);
  cr_assert_eq(s.params[coil_schema_find(&s, "step")].def.i, 1);
  cr_assert_eq(coil_schema_find(&s, "nope"), -1);
}

/* Arguments bind as PyTorch binds them: positionally up to '*', then by keyword; defaults fill
 * the rest; an int stands for int[N]; an int stands for a float. */
Test(infer, argument_binding)
{
  ty("%x: f32[3]", "%r = aten.leaky_relu.default(%x, negative_slope=1)", "f32[3]");
  ty("%x: f32[2, 7, 32]", "%r = aten.native_layer_norm.default(%x, [32], None, None, 1)",
     "(f32[2, 7, 32], f32[2, 7, 1], f32[2, 7, 1])");
  ty("%x: f32[1, 1, 4, 4]", "%r = aten.avg_pool2d.default(%x, kernel_size=2)", "f32[1, 1, 2, 2]");
  bad("%x: f32[3]", "%r = aten.add.Tensor(%x, %x, 2)", "too many positional arguments (at most 2)");
  bad("%x: f32[3]", "%r = aten.relu.default(%x, %x)", "too many positional arguments (at most 1)");
  bad("%x: f32[3]", "%r = aten.add.Tensor(other=%x, %x)", "positional argument after a keyword argument");
  bad("%x: f32[3]", "%r = aten.add.Tensor(%x, %x, self=%x)", "argument 'self' given twice");
  bad("%x: f32[3]", "%r = aten.relu.default(%x, inplace=True)",
      "t.coil:3:36: error: aten.relu.default: no parameter named 'inplace' (schema: Tensor self)");
  bad("%x: f32[3]", "%r = aten.add.Tensor(%x)", "missing argument 'other'");
  bad("%x: f32[2, 3]", "%r = aten.select.int(%x, 'zero', 0)", "argument 'dim' must be an integer");
  bad("%x: f32[2, 3]", "%r = aten.select.int(%x, 0.0, 0)", "argument 'dim' must be an integer");
  bad("%x: f32[2, 3]", "%r = aten.sum.dim_IntList(%x, [0], 1)", "argument 'keepdim' must be True or False");
  bad("%x: f32[2, 3]", "%r = aten.sum.dim_IntList(%x, [0.5])", "argument 'dim' must be a list of integers or None");
  bad("%x: f32[2, 3]", "%r = aten.view.default(%x, None)", "argument 'size' must be a list of integers");
  bad("%x: f32[2, 3]", "%r = aten._to_copy.default(%x, dtype='f16')", "argument 'dtype' must be a dtype or None");
  bad("%x: f32[2, 3]", "%r = aten._to_copy.default(%x, layout=cpu)", "argument 'layout' must be a layout (strided)");
  bad("%x: f32[2, 3]", "%r = aten.clone.default(%x, memory_format=strided)", "argument 'memory_format' must be a memory format");
  bad("%x: f32[2, 3]", "%r = aten.mul.Scalar(%x, %x)", "argument 'other' must be a number");
  bad("%x: f32[2, 3]", "%r = aten.native_layer_norm.default(%x, [3], None, None, 'eps')", "argument 'eps' must be a float");
  bad("%x: f32[2]", "%r = aten.view.default(%x, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2])",
      "list has 19 items, at most 8 allowed");
}

/* Backward ops, sort, distances, col2im, grid sampling, embedding bags: result types as
 * PyTorch's, and the errors that name what was expected. */
Test(infer, backward_and_pairwise_ops)
{
  ty("%g: f32[2, 3, 5, 4], %x: f32[2, 3, 9, 7], %i: i64[2, 3, 5, 4]",
     "%r = aten.max_pool2d_with_indices_backward.default(%g, %x, [3, 3], [2, 2], [1, 1], [1, 1], False, %i)",
     "f32[2, 3, 9, 7]");
  ty("%g: f16[3, 5, 4], %x: f16[3, 8, 7]", "%r = aten.avg_pool2d_backward.default(%g, %x, [3, 3], [2, 2], [1, 1], True, True, None)",
     "f16[3, 8, 7]");
  ty("%g: f32[2, 3, 1, 1], %x: f32[2, 3, 7, 9]", "%r = aten._adaptive_avg_pool2d_backward.default(%g, %x)", "f32[2, 3, 7, 9]");
  ty("%g: f32[4, 5], %x: f32[4, 5], %m: f32[4, 1], %s: f32[4, 1], %w: bf16[5]",
     "%r = aten.native_layer_norm_backward.default(%g, %x, [5], %m, %s, %w, None, [True, True, False])",
     "(f32[4, 5], bf16[5], bf16[5])");
  ty("%g: f32[2, 6, 5], %x: f32[2, 6, 5], %m: f32[2, 3], %s: f32[2, 3]",
     "%r = aten.native_group_norm_backward.default(%g, %x, %m, %s, None, 2, 6, 5, 3, [True, True, True])",
     "(f32[2, 6, 5], f32[6], f32[6])");
  ty("%g: f32[1, 6, 4, 7], %x: f32[1, 4, 9, 8], %w: f32[6, 2, 3, 2]",
     "%r = aten.convolution_backward.default(%g, %x, %w, [6], [2, 1], [1, 0], [2, 1], False, [0, 0], 2, [True, True, True])",
     "(f32[1, 4, 9, 8], f32[6, 2, 3, 2], f32[6])");
  ty("%x: i64[3, s0]", "%r = aten.sort.default(%x, 0, True)", "(i64[3, s0], i64[3, s0])");
  ty("%a: f32[2, 5, 3], %b: f32[1, 4, 3]", "%r = aten._cdist_forward.default(%a, %b, 2.0, None)", "f32[2, 5, 4]");
  ty("%a: f32[7, 3]", "%r = aten._pdist_forward.default(%a)", "f32[21]");
  ty("%x: f32[2, 12, 9]", "%r = aten.col2im.default(%x, [7, 8], [3, 2], [2, 1], [1, 1], [2, 3])", "f32[2, 2, 7, 8]");
  ty("%x: f32[1, 2, 5, 6], %g: f32[1, 3, 4, 2]", "%r = aten.grid_sampler_2d.default(%x, %g, 0, 2, True)", "f32[1, 2, 3, 4]");
  ty("%w: f32[5, 3], %i: i64[10], %o: i64[4]", "%r = aten._embedding_bag.default(%w, %i, %o)",
     "(f32[4, 3], i64[0], i64[4], i64[4])");
  ty("%w: bf16[5, 3], %i: i32[10], %o: i32[5]", "%r = aten._embedding_bag.default(%w, %i, %o, False, 2, False, None, True)",
     "(bf16[4, 3], i32[10], i32[4], i32[4, 3])");

  bad("%g: f32[2, 3, 4, 4], %x: f32[2, 3, 9, 7], %i: i64[2, 3, 5, 4]",
      "%r = aten.max_pool2d_with_indices_backward.default(%g, %x, [3, 3], [2, 2], [1, 1], [1, 1], False, %i)",
      "'grad_output' must be a tensor of size [2, 3, 5, 4]");
  bad("%g: f32[2, 3, 5, 4], %x: f32[2, 3, 9, 7], %i: i32[2, 3, 5, 4]",
      "%r = aten.max_pool2d_with_indices_backward.default(%g, %x, [3, 3], [2, 2], [1, 1], [1, 1], False, %i)",
      "'indices' must have dtype i64, not i32");
  bad("%g: i64[1, 1, 2, 2], %x: i64[1, 1, 4, 4]", "%r = aten._adaptive_avg_pool2d_backward.default(%g, %x)",
      "'self' must be a floating-point tensor, not i64");
  bad("%g: f32[4, 5], %x: f32[4, 5], %m: f32[4], %s: f32[4, 1]",
      "%r = aten.native_layer_norm_backward.default(%g, %x, [5], %m, %s, None, None, [True, True, True])",
      "'mean' must be a tensor of size [4, 1]");
  bad("%g: f32[4, 5], %x: f32[4, 5], %m: f32[4, 1], %s: f32[4, 1]",
      "%r = aten.native_layer_norm_backward.default(%g, %x, [5], %m, %s, None, None, [True])",
      "output_mask must be a list of 3 bools");
  bad("%g: f32[2, 6, 5], %x: f32[2, 6, 5], %m: f32[2, 4], %s: f32[2, 4]",
      "%r = aten.native_group_norm_backward.default(%g, %x, %m, %s, None, 2, 6, 5, 4, [True, True, True])",
      "group must be positive and divide C = 6");
  bad("%g: f32[1, 6, 4, 6], %x: f32[1, 4, 9, 8], %w: f32[6, 2, 3, 2]",
      "%r = aten.convolution_backward.default(%g, %x, %w, None, [2, 1], [1, 0], [2, 1], False, [0, 0], 2, [True, True, True])",
      "'grad_output' must be a tensor of size [1, 6, 4, 7]");
  bad("%a: f32[3, 4], %b: f32[3, 5]", "%r = aten._cdist_forward.default(%a, %b, 2.0, None)",
      "x1 and x2 must have the same number of features");
  bad("%a: f32[3, 4]", "%r = aten._pdist_forward.default(%a, -1.0)", "p must be non-negative");
  bad("%x: f32[2, 12, 21]", "%r = aten.col2im.default(%x, [5, 6], [2, 2], [1, 1], [0, 0], [1, 1])",
      "the input's last size (21) must be the number of sliding blocks (20)");
  bad("%x: f32[1, 2, 5, 6], %g: f32[1, 3, 4, 2]", "%r = aten.grid_sampler_2d.default(%x, %g, 2, 0, False)",
      "bicubic interpolation (mode 2) is not supported");
  bad("%x: f32[1, 2, 5, 6], %g: f32[1, 3, 4, 3]", "%r = aten.grid_sampler_2d.default(%x, %g, 0, 0, False)",
      "grid must be a tensor of size [1, Ho, Wo, 2]");
  bad("%w: f32[5, 3], %i: i64[4], %o: i64[2], %p: f32[4]",
      "%r = aten._embedding_bag.default(%w, %i, %o, False, 1, False, %p)",
      "per_sample_weights is only supported for mode 0 (sum)");
  bad("%w: f32[5, 3], %i: f32[4], %o: i64[2]", "%r = aten._embedding_bag.default(%w, %i, %o)",
      "indices must be a 1-D tensor of i64 or i32");
}
