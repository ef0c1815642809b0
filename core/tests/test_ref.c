/* test_ref.c — the reference interpreter, op by op, against expected values worked out by hand
 * (the arithmetic is in the comments), never against its own output. Each test parses a small
 * graph, feeds it tensors made from C arrays, runs coil_ref_run and compares every output
 * element. Where PyTorch's behaviour is not obvious (NaN handling, rounding of Python numbers,
 * floor division of infinities) the expectation is what PyTorch 2.11 gives, on CPU and CUDA
 * alike unless a comment says otherwise.
 *
 * Comparisons: integers and bools exactly; floats exactly (NaN matching NaN, zeros matching in
 * sign) wherever the result is exactly representable, and otherwise within TOL relative. TOL is
 * 1e-6: the expected values are the exact results to 16 digits, and an f32 output carries only
 * its final rounding (half an ulp, 6e-8 relative), so 1e-6 passes a correct result while any
 * error in the formula (a wrong constant, gelu's tanh form for its erf form, a missing eps)
 * shows as 1e-4 or more. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coil/coil.h"

#define EXACT 0.0
#define TOL 1e-6

/* Shapes and element arrays as compound literals: S(2, 3) expands to "rank, shape". */
#define S(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define SCALAR 0, NULL
#define F(...) (const double[]){__VA_ARGS__}
#define I(...) (const int64_t[]){__VA_ARGS__}

static coil_graph *graph;
static coil_tensor_list ins, outs;
static coil_diag diag;

static void
setup(void)
{
  graph = NULL;
  memset(&ins, 0, sizeof ins);
  memset(&outs, 0, sizeof outs);
  memset(&diag, 0, sizeof diag);
}

static void
teardown(void)
{
  coil_graph_free(graph);
  coil_tensor_list_free(&ins);
  coil_tensor_list_free(&outs);
}

/* ---- inputs ---- */

static coil_tensor
make(coil_dtype dt, int rank, const int64_t *shape)
{
  coil_tensor t;
  coil_diag d = {0};
  cr_assert_eq(coil_tensor_init(&t, dt, rank, shape, &d), 0, "%s", d.msg);
  return t;
}

/* Input `name` with elements v (floats; f16 and bf16 values must be representable). */
static void
input_f(const char *name, coil_dtype dt, int rank, const int64_t *shape, const double *v)
{
  coil_tensor t = make(dt, rank, shape);
  for (int64_t i = 0; i < coil_tensor_numel(&t); i++)
    coil_tensor_set_f64(&t, i, v[i]);
  coil_tensor_list_add(&ins, name, &t);
}

static void
input_i(const char *name, coil_dtype dt, int rank, const int64_t *shape, const int64_t *v)
{
  coil_tensor t = make(dt, rank, shape);
  for (int64_t i = 0; i < coil_tensor_numel(&t); i++)
    coil_tensor_set_i64(&t, i, v[i]);
  coil_tensor_list_add(&ins, name, &t);
}

/* Input `name` holding first, first + 1, first + 2, ... in row-major order. */
static void
input_iota(const char *name, coil_dtype dt, int rank, const int64_t *shape, int64_t first)
{
  coil_tensor t = make(dt, rank, shape);
  for (int64_t i = 0; i < coil_tensor_numel(&t); i++)
    coil_tensor_set_i64(&t, i, first + i);
  coil_tensor_list_add(&ins, name, &t);
}

static void
clear_inputs(void)
{
  coil_tensor_list_free(&ins);
}

/* ---- running ---- */

/* Parses "graph t(PARAMS) { BODY }", BODY's statements separated by ';', and runs it on the
 * inputs given so far. Returns coil_ref_run's status; a parse error fails the test. */
static int
try_run(const char *params, const char *body)
{
  coil_graph_free(graph);
  graph = NULL;
  coil_tensor_list_free(&outs);
  memset(&diag, 0, sizeof diag);
  char text[8192];
  size_t n = (size_t)snprintf(text, sizeof text, "coil 1\ngraph t(%s) {\n  ", params);
  for (const char *c = body; *c && n + 16 < sizeof text; c++) {
    if (*c == ';') {
      memcpy(text + n, "\n ", 2);
      n += 2;
    } else {
      text[n++] = *c;
    }
  }
  cr_assert_lt(n + 16, sizeof text, "graph text too long");
  memcpy(text + n, "\n}\n", 4);
  graph = coil_graph_parse("test.coil", text, strlen(text), &diag);
  cr_assert(graph, "parse failed: %s\n%s", diag.msg, text);
  return coil_ref_run(graph, &ins, &outs, &diag);
}

static void
run(const char *params, const char *body)
{
  cr_assert_eq(try_run(params, body), 0, "run failed: %s", diag.msg);
}

/* A graph of one statement "%y = EXPR" that returns %y. */
static void
run1(const char *params, const char *expr)
{
  char body[1024];
  snprintf(body, sizeof body, "%%y = %s; return (%%y)", expr);
  run(params, body);
}

/* The graph parses but running it fails with a message containing msg. */
static void
run_fails(const char *params, const char *body, const char *msg)
{
  cr_assert_neq(try_run(params, body), 0, "ran, but expected an error containing \"%s\"", msg);
  cr_assert(strstr(diag.msg, msg), "message \"%s\" does not contain \"%s\"", diag.msg, msg);
}

/* ---- checking outputs ---- */

static const coil_tensor *
output(int k, coil_dtype dt, int rank, const int64_t *shape)
{
  cr_assert_lt(k, outs.n, "no out%d (the graph returned %d values)", k, outs.n);
  const coil_tensor *t = &outs.tensors[k];
  cr_assert_eq(t->dtype, dt, "out%d is %s, expected %s", k, coil_dtype_name(t->dtype),
               coil_dtype_name(dt));
  cr_assert_eq(t->rank, rank, "out%d has rank %d, expected %d", k, t->rank, rank);
  for (int i = 0; i < rank; i++)
    cr_assert_eq(t->shape[i], shape[i], "out%d has size %lld in dimension %d, expected %lld", k,
                 (long long)t->shape[i], i, (long long)shape[i]);
  return t;
}

/* Float output k: with rtol EXACT every element equals want (want is first rounded to f32
 * when the output is f32, so decimal literals can be written); else within rtol relative.
 * NaN matches NaN; infinities and zeros must match exactly, zeros in sign too. */
static void
expect_f(int k, coil_dtype dt, int rank, const int64_t *shape, const double *want, double rtol)
{
  const coil_tensor *t = output(k, dt, rank, shape);
  for (int64_t i = 0; i < coil_tensor_numel(t); i++) {
    double got = coil_tensor_get_f64(t, i);
    double w = dt == COIL_F32 && rtol == EXACT ? (double)(float)want[i] : want[i];
    bool ok;
    if (isnan(w))
      ok = isnan(got);
    else if (rtol == EXACT || isinf(w) || w == 0)
      ok = got == w && !signbit(got) == !signbit(w);
    else
      ok = fabs(got - w) <= rtol * fabs(w);
    cr_assert(ok, "out%d[%lld] = %.17g, expected %.17g", k, (long long)i, got, w);
  }
}

/* Integer or bool output k: exactly want. */
static void
expect_i(int k, coil_dtype dt, int rank, const int64_t *shape, const int64_t *want)
{
  const coil_tensor *t = output(k, dt, rank, shape);
  for (int64_t i = 0; i < coil_tensor_numel(t); i++)
    cr_assert_eq(coil_tensor_get_i64(t, i), want[i], "out%d[%lld] = %lld, expected %lld", k,
                 (long long)i, (long long)coil_tensor_get_i64(t, i), (long long)want[i]);
}

TestSuite(unary, .init = setup, .fini = teardown);
TestSuite(binary, .init = setup, .fini = teardown);
TestSuite(halves, .init = setup, .fini = teardown);
TestSuite(where_clamp, .init = setup, .fini = teardown);
TestSuite(creation, .init = setup, .fini = teardown);
TestSuite(reduce, .init = setup, .fini = teardown);
TestSuite(norm, .init = setup, .fini = teardown);
TestSuite(view, .init = setup, .fini = teardown);
TestSuite(move, .init = setup, .fini = teardown);
TestSuite(index, .init = setup, .fini = teardown);
TestSuite(matmul, .init = setup, .fini = teardown);
TestSuite(conv, .init = setup, .fini = teardown);
TestSuite(pool, .init = setup, .fini = teardown);
TestSuite(topk, .init = setup, .fini = teardown);
TestSuite(graph, .init = setup, .fini = teardown);
TestSuite(math, .init = setup, .fini = teardown);

/* ---- unary ---- */

Test(unary, abs_neg)
{
  input_f("x", COIL_F32, S(6), F(-2.5, -0.0, 0.0, 3, NAN, -INFINITY));
  run("%x: f32[6]", "%a = aten.abs.default(%x); %n = aten.neg.default(%x); return (%a, %n)");
  expect_f(0, COIL_F32, S(6), F(2.5, 0.0, 0.0, 3, NAN, INFINITY), EXACT);
  expect_f(1, COIL_F32, S(6), F(2.5, 0.0, -0.0, -3, NAN, INFINITY), EXACT);

  /* integers stay integers; |INT32_MIN| wraps to itself as in two's complement */
  clear_inputs();
  input_i("x", COIL_I32, S(4), I(-5, 0, 7, INT32_MIN));
  run("%x: i32[4]", "%a = aten.abs.default(%x); %n = aten.neg.default(%x); return (%a, %n)");
  expect_i(0, COIL_I32, S(4), I(5, 0, 7, INT32_MIN));
  expect_i(1, COIL_I32, S(4), I(5, 0, -7, INT32_MIN));
}

Test(unary, relu_leaky_relu)
{
  input_f("x", COIL_F32, S(5), F(-2, 0, 3, NAN, -INFINITY));
  run("%x: f32[5]",
      "%r = aten.relu.default(%x); %l = aten.leaky_relu.default(%x);"
      "%m = aten.leaky_relu.default(%x, 0.2); return (%r, %l, %m)");
  expect_f(0, COIL_F32, S(5), F(0, 0, 3, NAN, 0), EXACT);
  /* the slope is f32(0.01); -2 * f32(0.01) is exact in f64 and rounds to f32(-0.02) */
  expect_f(1, COIL_F32, S(5), F(-0.02, 0, 3, NAN, -INFINITY), EXACT);
  expect_f(2, COIL_F32, S(5), F(-0.4, 0, 3, NAN, -INFINITY), EXACT);

  clear_inputs();
  input_i("x", COIL_I64, S(2), I(-3, 4));
  run1("%x: i64[2]", "aten.relu.default(%x)");
  expect_i(0, COIL_I64, S(2), I(0, 4));
}

Test(unary, floor_ceil_round_trunc)
{
  input_f("x", COIL_F32, S(10), F(-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7, INFINITY, NAN));
  run("%x: f32[10]",
      "%f = aten.floor.default(%x); %c = aten.ceil.default(%x); %r = aten.round.default(%x);"
      "%t = aten.trunc.default(%x); return (%f, %c, %r, %t)");
  expect_f(0, COIL_F32, S(10), F(-3, -2, -1, 0, 1, 2, 2, -3, INFINITY, NAN), EXACT);
  expect_f(1, COIL_F32, S(10), F(-2, -1, -0.0, 1, 2, 3, 3, -2, INFINITY, NAN), EXACT);
  /* ties to even: -2.5 -> -2, -1.5 -> -2, -0.5 -> -0, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 */
  expect_f(2, COIL_F32, S(10), F(-2, -2, -0.0, 0, 2, 2, 3, -3, INFINITY, NAN), EXACT);
  expect_f(3, COIL_F32, S(10), F(-2, -1, -0.0, 0, 1, 2, 2, -2, INFINITY, NAN), EXACT);

  /* of an integer tensor: the same integers, same dtype */
  clear_inputs();
  input_i("x", COIL_I64, S(2), I(-3, 5));
  run("%x: i64[2]", "%f = aten.floor.default(%x); %r = aten.round.default(%x); return (%f, %r)");
  expect_i(0, COIL_I64, S(2), I(-3, 5));
  expect_i(1, COIL_I64, S(2), I(-3, 5));
}

Test(unary, bitwise_not)
{
  input_i("a", COIL_I32, S(3), I(0, 5, -1));
  input_i("b", COIL_U8, S(2), I(0, 200));
  input_i("c", COIL_BOOL, S(2), I(1, 0));
  run("%a: i32[3], %b: u8[2], %c: bool[2]",
      "%x = aten.bitwise_not.default(%a); %y = aten.bitwise_not.default(%b);"
      "%z = aten.bitwise_not.default(%c); return (%x, %y, %z)");
  expect_i(0, COIL_I32, S(3), I(-1, -6, 0)); /* ~5 = -6 */
  expect_i(1, COIL_U8, S(2), I(255, 55));    /* 255 - 200 */
  expect_i(2, COIL_BOOL, S(2), I(0, 1));     /* ~True is False, not ~1 = -2 stored as True */
}

Test(unary, exp_log_log1p)
{
  input_f("a", COIL_F32, S(5), F(0, 1, -INFINITY, INFINITY, NAN));
  input_f("b", COIL_F32, S(5), F(1, 2, 0, -1, INFINITY));
  input_f("c", COIL_F32, S(4), F(0, 1, -1, -2));
  run("%a: f32[5], %b: f32[5], %c: f32[4]",
      "%e = aten.exp.default(%a); %l = aten.log.default(%b); %p = aten.log1p.default(%c);"
      "return (%e, %l, %p)");
  expect_f(0, COIL_F32, S(5), F(1, 2.718281828459045, 0, INFINITY, NAN), TOL);
  expect_f(1, COIL_F32, S(5), F(0, 0.6931471805599453, -INFINITY, NAN, INFINITY), TOL);
  expect_f(2, COIL_F32, S(4), F(0, 0.6931471805599453, -INFINITY, NAN), TOL);

  /* integer input: the result is f32 */
  clear_inputs();
  input_i("x", COIL_I64, S(2), I(0, 1));
  run1("%x: i64[2]", "aten.exp.default(%x)");
  expect_f(0, COIL_F32, S(2), F(1, 2.718281828459045), TOL);
}

Test(unary, sqrt_rsqrt_reciprocal)
{
  input_f("a", COIL_F32, S(6), F(4, 2, 0, -1, INFINITY, -0.0));
  input_f("b", COIL_F32, S(5), F(4, 0, -1, INFINITY, -0.0));
  input_f("c", COIL_F32, S(5), F(2, -4, 0, -0.0, INFINITY));
  run("%a: f32[6], %b: f32[5], %c: f32[5]",
      "%s = aten.sqrt.default(%a); %r = aten.rsqrt.default(%b); %q = aten.reciprocal.default(%c);"
      "return (%s, %r, %q)");
  expect_f(0, COIL_F32, S(6), F(2, 1.4142135623730951, 0, NAN, INFINITY, -0.0), TOL);
  /* rsqrt(-0) = 1 / -0 = -inf */
  expect_f(1, COIL_F32, S(5), F(0.5, INFINITY, NAN, 0, -INFINITY), EXACT);
  expect_f(2, COIL_F32, S(5), F(0.5, -0.25, INFINITY, -INFINITY, 0), EXACT);
}

Test(unary, sin_cos_tanh_sigmoid_erf)
{
  input_f("x", COIL_F32, S(6), F(0, 0.5, -2, INFINITY, -INFINITY, NAN));
  run("%x: f32[6]",
      "%s = aten.sin.default(%x); %c = aten.cos.default(%x); %t = aten.tanh.default(%x);"
      "%g = aten.sigmoid.default(%x); %e = aten.erf.default(%x); return (%s, %c, %t, %g, %e)");
  expect_f(0, COIL_F32, S(6), F(0, 0.479425538604203, -0.9092974268256817, NAN, NAN, NAN), TOL);
  expect_f(1, COIL_F32, S(6), F(1, 0.8775825618903728, -0.4161468365471424, NAN, NAN, NAN), TOL);
  expect_f(2, COIL_F32, S(6), F(0, 0.46211715726000974, -0.9640275800758169, 1, -1, NAN), TOL);
  /* sigmoid(-2) = 1 / (1 + e^2) */
  expect_f(3, COIL_F32, S(6), F(0.5, 0.6224593312018546, 0.11920292202211755, 1, 0, NAN), TOL);
  expect_f(4, COIL_F32, S(6), F(0, 0.5204998778130465, -0.9953222650189527, 1, -1, NAN), TOL);
}

Test(unary, gelu_silu)
{
  input_f("x", COIL_F32, S(5), F(0, 1, -1, 2, NAN));
  run("%x: f32[5]",
      "%g = aten.gelu.default(%x); %h = aten.gelu.default(%x, approximate='tanh');"
      "%s = aten.silu.default(%x); return (%g, %h, %s)");
  /* 0.5 x (1 + erf(x / sqrt 2)): gelu(1) = 0.5 (1 + 0.6826894921370859) */
  expect_f(0, COIL_F32, S(5),
           F(0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416, NAN), TOL);
  /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): differs from the erf form by 1e-4 */
  expect_f(1, COIL_F32, S(5),
           F(0, 0.8411919906082768, -0.15880800939172324, 1.954597694087775, NAN), TOL);
  /* x / (1 + e^-x) */
  expect_f(2, COIL_F32, S(5),
           F(0, 0.7310585786300049, -0.2689414213699951, 1.7615941559557646, NAN), TOL);
}

Test(unary, logical_not)
{
  input_f("a", COIL_F32, S(4), F(0, -0.0, 2, NAN));
  input_i("b", COIL_I64, S(2), I(0, 3));
  input_i("c", COIL_BOOL, S(2), I(1, 0));
  run("%a: f32[4], %b: i64[2], %c: bool[2]",
      "%x = aten.logical_not.default(%a); %y = aten.logical_not.default(%b);"
      "%z = aten.logical_not.default(%c); return (%x, %y, %z)");
  expect_i(0, COIL_BOOL, S(4), I(1, 1, 0, 0)); /* NaN is not zero */
  expect_i(1, COIL_BOOL, S(2), I(1, 0));
  expect_i(2, COIL_BOOL, S(2), I(0, 1));
}

/* ---- binary ---- */

Test(binary, add_broadcast_alpha)
{
  input_iota("x", COIL_F32, S(2, 3), 1);
  input_f("r", COIL_F32, S(3), F(10, 20, 30));
  input_f("c", COIL_F32, S(2, 1), F(100, 200));
  run("%x: f32[2, 3], %r: f32[3], %c: f32[2, 1]",
      "%a = aten.add.Tensor(%x, %r, alpha=2); %b = aten.add.Tensor(%x, %c);"
      "%o = aten.add.Tensor(%r, %c); return (%a, %b, %o)");
  expect_f(0, COIL_F32, S(2, 3), F(21, 42, 63, 24, 45, 66), EXACT); /* x + 2 r */
  expect_f(1, COIL_F32, S(2, 3), F(101, 102, 103, 204, 205, 206), EXACT);
  expect_f(2, COIL_F32, S(2, 3), F(110, 120, 130, 210, 220, 230), EXACT); /* [3] + [2, 1] */
}

Test(binary, python_numbers)
{
  input_i("x", COIL_I64, S(3), I(1, 2, 3));
  run("%x: i64[3]",
      "%a = aten.add.Tensor(%x, 1); %b = aten.add.Tensor(%x, 1.5); %c = aten.add.Scalar(%x, 2, 3);"
      "%d = aten.sub.Tensor(%x, 1); %e = aten.rsub.Scalar(%x, 10); %f = aten.mul.Tensor(%x, 2.5);"
      "return (%a, %b, %c, %d, %e, %f)");
  expect_i(0, COIL_I64, S(3), I(2, 3, 4));
  expect_f(1, COIL_F32, S(3), F(2.5, 3.5, 4.5), EXACT); /* a float number makes the result f32 */
  expect_i(2, COIL_I64, S(3), I(7, 8, 9));              /* x + 3 * 2 */
  expect_i(3, COIL_I64, S(3), I(0, 1, 2));
  expect_i(4, COIL_I64, S(3), I(9, 8, 7));              /* 10 - x */
  expect_f(5, COIL_F32, S(3), F(2.5, 5, 7.5), EXACT);

  clear_inputs();
  input_f("f", COIL_F32, S(2), F(1, 2));
  input_f("g", COIL_F32, S(2), F(4, 8));
  run("%f: f32[2], %g: f32[2]",
      "%s = aten.sub.Tensor(%f, %g, alpha=0.5); %r = aten.rsub.Tensor(%f, %g, alpha=2);"
      "return (%s, %r)");
  expect_f(0, COIL_F32, S(2), F(-1, -2), EXACT); /* f - 0.5 g */
  expect_f(1, COIL_F32, S(2), F(2, 4), EXACT);   /* g - 2 f */
}

Test(binary, mul_div)
{
  input_f("a", COIL_F32, S(4), F(1, -1, 0, 6));
  input_f("b", COIL_F32, S(4), F(0, 0, 0, 4));
  input_i("i", COIL_I64, S(2), I(7, -7));
  input_i("j", COIL_I64, S(2), I(2, 2));
  run("%a: f32[4], %b: f32[4], %i: i64[2], %j: i64[2]",
      "%m = aten.mul.Tensor(%a, %b); %d = aten.div.Tensor(%a, %b); %s = aten.div.Scalar(%a, 4);"
      "%q = aten.div.Tensor(%i, %j); return (%m, %d, %s, %q)");
  expect_f(0, COIL_F32, S(4), F(0, -0.0, 0, 24), EXACT);
  expect_f(1, COIL_F32, S(4), F(INFINITY, -INFINITY, NAN, 1.5), EXACT);
  expect_f(2, COIL_F32, S(4), F(0.25, -0.25, 0, 1.5), EXACT);
  expect_f(3, COIL_F32, S(2), F(3.5, -3.5), EXACT); /* true division of integers gives f32 */
}

Test(binary, div_rounding_modes_integers)
{
  input_i("a", COIL_I64, S(5), I(7, -7, 7, -7, 0));
  input_i("b", COIL_I64, S(5), I(2, 2, -2, -2, 3));
  run("%a: i64[5], %b: i64[5]",
      "%f = aten.div.Tensor_mode(%a, %b, rounding_mode='floor');"
      "%t = aten.div.Tensor_mode(%a, %b, rounding_mode='trunc');"
      "%n = aten.div.Tensor_mode(%a, %b, rounding_mode=None); return (%f, %t, %n)");
  expect_i(0, COIL_I64, S(5), I(3, -4, -4, 3, 0)); /* -7 / 2 = -3.5: floor -4, trunc -3 */
  expect_i(1, COIL_I64, S(5), I(3, -3, -3, 3, 0));
  expect_f(2, COIL_F32, S(5), F(3.5, -3.5, -3.5, 3.5, 0), EXACT);
}

Test(binary, div_rounding_modes_floats)
{
  input_f("a", COIL_F32, S(9), F(7.5, -7.5, 7.5, -7.5, INFINITY, -1, 1, 5, -0.0));
  input_f("b", COIL_F32, S(9), F(2, 2, -2, -2, 2, INFINITY, -INFINITY, 0, 3));
  run("%a: f32[9], %b: f32[9]",
      "%f = aten.div.Tensor_mode(%a, %b, rounding_mode='floor');"
      "%t = aten.div.Tensor_mode(%a, %b, rounding_mode='trunc'); return (%f, %t)");
  /* floor as torch (and Python's //): through fmod, so inf // 2 = nan, -1 // inf = -1,
   * 1 // -inf = -1; x // 0 is x / 0; -0 // 3 keeps the sign of the quotient */
  expect_f(0, COIL_F32, S(9), F(3, -4, -4, 3, NAN, -1, -1, INFINITY, -0.0), EXACT);
  expect_f(1, COIL_F32, S(9), F(3, -3, -3, 3, INFINITY, -0.0, -0.0, INFINITY, -0.0), EXACT);
}

Test(binary, integer_division_by_zero_is_an_error)
{
  input_i("a", COIL_I64, S(2), I(1, 2));
  input_i("b", COIL_I64, S(2), I(1, 0));
  run_fails("%a: i64[2], %b: i64[2]",
            "%f = aten.div.Tensor_mode(%a, %b, rounding_mode='floor'); return (%f)",
            "test.coil:3:3: error: aten.div.Tensor_mode (%f): integer division by zero");
  run_fails("%a: i64[2], %b: i64[2]",
            "%t = aten.div.Tensor_mode(%a, %b, rounding_mode='trunc'); return (%t)",
            "integer division by zero");
}

Test(binary, pow)
{
  input_f("a", COIL_F32, S(4), F(2, -2, 0.5, NAN));
  input_f("b", COIL_F32, S(2), F(4, 9));
  input_i("i", COIL_I64, S(3), I(2, 3, -2));
  input_i("w", COIL_I64, S(3), I(2, -2, 1));
  run("%a: f32[4], %b: f32[2], %i: i64[3], %w: i64[3]",
      "%p = aten.pow.Tensor_Scalar(%a, 2); %q = aten.pow.Tensor_Scalar(%b, 0.5);"
      "%r = aten.pow.Tensor_Scalar(%i, 3); %s = aten.pow.Tensor_Scalar(%i, 0.5);"
      "%t = aten.pow.Tensor_Scalar(%w, 64); return (%p, %q, %r, %s, %t)");
  expect_f(0, COIL_F32, S(4), F(4, 4, 0.25, NAN), EXACT);
  expect_f(1, COIL_F32, S(2), F(2, 3), EXACT);
  expect_i(2, COIL_I64, S(3), I(8, 27, -8));
  /* an integer tensor to a float power is f32; sqrt(-2) is nan */
  expect_f(3, COIL_F32, S(3), F(1.4142135623730951, 1.7320508075688772, NAN), TOL);
  expect_i(4, COIL_I64, S(3), I(0, 0, 1)); /* 2^64 and (-2)^64 wrap to 0 */
}

Test(binary, pow_tensor_exponents)
{
  input_f("a", COIL_F32, S(4), F(2, 3, 0, NAN));
  input_f("b", COIL_F32, S(4), F(3, 2, 0, 0));
  input_i("i", COIL_I64, S(5), I(2, 1, -1, -1, 0));
  input_i("j", COIL_I64, S(5), I(-1, -3, -3, -2, -1));
  input_i("k", COIL_I64, S(3), I(0, 1, 10));
  input_f("e", COIL_F32, S(3), F(3, -1, NAN));
  run("%a: f32[4], %b: f32[4], %i: i64[5], %j: i64[5], %k: i64[3], %e: f32[3]",
      "%p = aten.pow.Tensor_Tensor(%a, %b); %q = aten.pow.Tensor_Tensor(%i, %j);"
      "%r = aten.pow.Scalar(2, %k); %s = aten.pow.Scalar(2.0, %e); %t = aten.pow.Scalar(1.0, %e);"
      "return (%p, %q, %r, %s, %t)");
  expect_f(0, COIL_F32, S(4), F(8, 9, 1, 1), EXACT); /* 0^0 = nan^0 = 1 */
  /* integer powers with negative tensor exponents follow C: 1 and -1 stay +-1, others 0 */
  expect_i(1, COIL_I64, S(5), I(0, 1, -1, 1, 0));
  expect_i(2, COIL_I64, S(3), I(1, 2, 1024));
  expect_f(3, COIL_F32, S(3), F(8, 0.5, NAN), EXACT);
  expect_f(4, COIL_F32, S(3), F(1, 1, 1), EXACT); /* 1^nan = 1 */
}

Test(binary, integer_to_negative_number_is_an_error)
{
  input_i("i", COIL_I64, S(1), I(2));
  run_fails("%i: i64[1]", "%p = aten.pow.Tensor_Scalar(%i, -1); return (%p)",
            "integers to negative integer powers are not allowed");
}

Test(binary, maximum_minimum)
{
  input_f("a", COIL_F32, S(4), F(1, NAN, 3, -INFINITY));
  input_f("b", COIL_F32, S(4), F(2, 2, NAN, 5));
  input_i("x", COIL_I32, S(2, 1), I(0, 10));
  input_i("y", COIL_I32, S(3), I(-5, 5, 15));
  run("%a: f32[4], %b: f32[4], %x: i32[2, 1], %y: i32[3]",
      "%M = aten.maximum.default(%a, %b); %m = aten.minimum.default(%a, %b);"
      "%I = aten.maximum.default(%x, %y); %i = aten.minimum.default(%x, %y);"
      "return (%M, %m, %I, %i)");
  expect_f(0, COIL_F32, S(4), F(2, NAN, NAN, 5), EXACT); /* NaN on either side wins */
  expect_f(1, COIL_F32, S(4), F(1, NAN, NAN, -INFINITY), EXACT);
  expect_i(2, COIL_I32, S(2, 3), I(0, 5, 15, 10, 10, 15));
  expect_i(3, COIL_I32, S(2, 3), I(-5, 0, 0, -5, 5, 10));
}

Test(binary, bitwise_and_or)
{
  input_i("a", COIL_I32, S(3), I(12, -1, 0));
  input_i("b", COIL_I32, S(3), I(10, 7, 5));
  input_i("p", COIL_BOOL, S(4), I(1, 1, 0, 0));
  input_i("q", COIL_BOOL, S(4), I(1, 0, 1, 0));
  run("%a: i32[3], %b: i32[3], %p: bool[4], %q: bool[4]",
      "%x = aten.bitwise_and.Tensor(%a, %b); %y = aten.bitwise_or.Tensor(%a, %b);"
      "%z = aten.bitwise_and.Tensor(%p, %q); %w = aten.bitwise_or.Tensor(%p, %q);"
      "return (%x, %y, %z, %w)");
  expect_i(0, COIL_I32, S(3), I(8, 7, 0));   /* 1100 & 1010 = 1000 */
  expect_i(1, COIL_I32, S(3), I(14, -1, 5)); /* 1100 | 1010 = 1110 */
  expect_i(2, COIL_BOOL, S(4), I(1, 0, 0, 0));
  expect_i(3, COIL_BOOL, S(4), I(1, 1, 1, 0));
}

Test(binary, logical_and_or)
{
  input_f("a", COIL_F32, S(4), F(0, 1, NAN, 0));
  input_i("b", COIL_I64, S(4), I(0, 0, 1, 5));
  run("%a: f32[4], %b: i64[4]",
      "%x = aten.logical_and.default(%a, %b); %y = aten.logical_or.default(%a, %b);"
      "return (%x, %y)");
  expect_i(0, COIL_BOOL, S(4), I(0, 0, 1, 0)); /* NaN counts as true */
  expect_i(1, COIL_BOOL, S(4), I(0, 1, 1, 1));
}

Test(binary, comparisons)
{
  input_f("a", COIL_F32, S(4), F(1, 2, 3, NAN));
  input_f("b", COIL_F32, S(4), F(2, 2, 2, NAN));
  run("%a: f32[4], %b: f32[4]",
      "%eq = aten.eq.Tensor(%a, %b); %ne = aten.ne.Tensor(%a, %b); %lt = aten.lt.Tensor(%a, %b);"
      "%le = aten.le.Tensor(%a, %b); %gt = aten.gt.Tensor(%a, %b); %ge = aten.ge.Tensor(%a, %b);"
      "return (%eq, %ne, %lt, %le, %gt, %ge)");
  expect_i(0, COIL_BOOL, S(4), I(0, 1, 0, 0)); /* NaN == NaN is false */
  expect_i(1, COIL_BOOL, S(4), I(1, 0, 1, 1)); /* NaN != NaN is true */
  expect_i(2, COIL_BOOL, S(4), I(1, 0, 0, 0));
  expect_i(3, COIL_BOOL, S(4), I(1, 1, 0, 0));
  expect_i(4, COIL_BOOL, S(4), I(0, 0, 1, 0));
  expect_i(5, COIL_BOOL, S(4), I(0, 1, 1, 0));

  run("%a: f32[4]",
      "%eq = aten.eq.Scalar(%a, 2); %ne = aten.ne.Scalar(%a, 3); %lt = aten.lt.Scalar(%a, 2.5);"
      "%le = aten.le.Scalar(%a, 1); %gt = aten.gt.Scalar(%a, 1); %ge = aten.ge.Scalar(%a, 2);"
      "return (%eq, %ne, %lt, %le, %gt, %ge)");
  expect_i(0, COIL_BOOL, S(4), I(0, 1, 0, 0));
  expect_i(1, COIL_BOOL, S(4), I(1, 1, 0, 1));
  expect_i(2, COIL_BOOL, S(4), I(1, 1, 0, 0));
  expect_i(3, COIL_BOOL, S(4), I(1, 0, 0, 0));
  expect_i(4, COIL_BOOL, S(4), I(0, 1, 1, 0));
  expect_i(5, COIL_BOOL, S(4), I(0, 1, 1, 0));
}

Test(binary, numbers_are_rounded_to_the_computation_dtype)
{
  /* f32(0.1) = 0.100000001490116...; the Python number 0.1 meets an f32 tensor as f32(0.1) */
  input_f("x", COIL_F32, S(1), F(0.1));
  input_f("y", COIL_F64, S(1), F(0.1));
  input_f("z", COIL_F64, SCALAR, F(0.1));
  run("%x: f32[1], %y: f64[1], %z: f64[]",
      "%a = aten.eq.Scalar(%x, 0.1); %b = aten.lt.Scalar(%x, 0.1); %c = aten.gt.Scalar(%x, 0.1);"
      "%d = aten.eq.Tensor(%x, %y); %e = aten.eq.Tensor(%x, %z); return (%a, %b, %c, %d, %e)");
  expect_i(0, COIL_BOOL, S(1), I(1));
  expect_i(1, COIL_BOOL, S(1), I(0));
  expect_i(2, COIL_BOOL, S(1), I(0));
  expect_i(3, COIL_BOOL, S(1), I(0)); /* an f64 tensor with dimensions: compared in f64 */
  expect_i(4, COIL_BOOL, S(1), I(1)); /* a 0-d f64 tensor does not promote: compared in f32 */

  /* an integer tensor against a float number compares in f32 (not 2.5 truncated to 2); a u8
   * tensor against -1 compares in u8, where -1 is 255 */
  clear_inputs();
  input_i("i", COIL_I64, S(2), I(2, 3));
  input_i("u", COIL_U8, S(1), I(1));
  run("%i: i64[2], %u: u8[1]",
      "%a = aten.ge.Scalar(%i, 2.5); %b = aten.lt.Scalar(%u, -1); return (%a, %b)");
  expect_i(0, COIL_BOOL, S(2), I(0, 1));
  expect_i(1, COIL_BOOL, S(1), I(1));
}

Test(binary, integer_overflow_wraps)
{
  input_i("a", COIL_I32, S(2), I(INT32_MAX, INT32_MIN));
  input_i("b", COIL_I32, S(1), I(65536));
  input_i("u", COIL_U8, S(1), I(250));
  input_i("l", COIL_I64, S(1), I(INT64_MAX));
  run("%a: i32[2], %b: i32[1], %u: u8[1], %l: i64[1]",
      "%x = aten.add.Tensor(%a, 1); %y = aten.mul.Tensor(%b, %b); %z = aten.add.Tensor(%u, 10);"
      "%w = aten.add.Tensor(%l, 1); return (%x, %y, %z, %w)");
  expect_i(0, COIL_I32, S(2), I(INT32_MIN, INT32_MIN + 1));
  expect_i(1, COIL_I32, S(1), I(0)); /* 2^32 */
  expect_i(2, COIL_U8, S(1), I(4));  /* 260 - 256 */
  expect_i(3, COIL_I64, S(1), I(INT64_MIN));
}

/* ---- f16 and bf16 ---- */

Test(halves, bf16_mul_rounds_to_nearest_even)
{
  /* bf16 has 8 significant bits: in [1, 2) its values are k/128.
   * 1.5 * 1.0234375 = 1.53515625 lies halfway between 1.53125 (196/128, even) and
   *   1.5390625 (197/128): ties to even gives 1.53125 (rounding half up would give 1.5390625);
   * 1.5 * 1.0078125 = 1.51171875 lies halfway between 193/128 and 194/128: 1.515625;
   * 1.0078125^2 = 1.01568603515625 is nearest 130/128 = 1.015625. */
  input_f("a", COIL_BF16, S(3), F(1.5, 1.5, 1.0078125));
  input_f("b", COIL_BF16, S(3), F(1.0234375, 1.0078125, 1.0078125));
  run1("%a: bf16[3], %b: bf16[3]", "aten.mul.Tensor(%a, %b)");
  expect_f(0, COIL_BF16, S(3), F(1.53125, 1.515625, 1.015625), EXACT);
}

Test(halves, add_ties_and_overflow)
{
  /* bf16 steps by 2 in [256, 512): 257 ties to 256 (even), 259 ties to 260 (even);
   * f16 steps by 2 in [2048, 4096): likewise 2048 and 2052; 256 * 256 = 65536 overflows f16 */
  input_f("a", COIL_BF16, S(2), F(256, 256));
  input_f("b", COIL_BF16, S(2), F(1, 3));
  input_f("c", COIL_F16, S(2), F(2048, 2048));
  input_f("d", COIL_F16, S(2), F(1, 3));
  input_f("e", COIL_F16, S(1), F(256));
  run("%a: bf16[2], %b: bf16[2], %c: f16[2], %d: f16[2], %e: f16[1]",
      "%x = aten.add.Tensor(%a, %b); %y = aten.add.Tensor(%c, %d); %z = aten.mul.Tensor(%e, %e);"
      "return (%x, %y, %z)");
  expect_f(0, COIL_BF16, S(2), F(256, 260), EXACT);
  expect_f(1, COIL_F16, S(2), F(2048, 2052), EXACT);
  expect_f(2, COIL_F16, S(1), F(INFINITY), EXACT);
}

Test(halves, python_numbers_with_half_tensors)
{
  /* 1.00390625 = 1 + 2^-8 is not a bf16 value (it ties to 1.0). torch multiplies, divides and
   * takes leaky_relu slopes with the number kept in f32: 3 * 1.00390625 = 3.01171875, nearest
   * bf16 3.015625 (bf16 steps by 1/64 in [2, 4)). Adding rounds the number to bf16 first on
   * CPU: 256 + 1 ties to 256 (CUDA keeps it and gives 258); comparing rounds it too. */
  input_f("x", COIL_BF16, S(1), F(3));
  input_f("y", COIL_BF16, S(1), F(256));
  input_f("o", COIL_BF16, S(1), F(1));
  input_f("n", COIL_BF16, S(1), F(-3));
  run("%x: bf16[1], %y: bf16[1], %o: bf16[1], %n: bf16[1]",
      "%a = aten.mul.Tensor(%x, 1.00390625); %b = aten.mul.Scalar(%x, 1.00390625);"
      "%c = aten.div.Tensor(%x, 0.998); %d = aten.add.Tensor(%y, 1.00390625);"
      "%e = aten.eq.Scalar(%o, 1.00390625); %f = aten.leaky_relu.default(%n, 1.00390625);"
      "return (%a, %b, %c, %d, %e, %f)");
  expect_f(0, COIL_BF16, S(1), F(3.015625), EXACT);
  expect_f(1, COIL_BF16, S(1), F(3.015625), EXACT);
  /* 3 / f32(0.998) = 3.00601..., nearest bf16 3.0 (0.998 rounded to bf16 first, 255/256,
   * would give 3.0117... and 3.015625) */
  expect_f(2, COIL_BF16, S(1), F(3), EXACT);
  expect_f(3, COIL_BF16, S(1), F(256), EXACT);
  expect_i(4, COIL_BOOL, S(1), I(1));
  expect_f(5, COIL_BF16, S(1), F(-3.015625), EXACT);
}

Test(halves, to_copy_f32_to_f16)
{
  /* f16: largest finite 65504, next step 32, so 65520 is the halfway point and rounds (to
   * even) up to 65536 = inf; 65519 rounds down. Subnormals step by 2^-24: 2^-25 ties to 0,
   * 3 * 2^-25 ties to 2 * 2^-24. f32(0.1) rounds to 1638/16384 = 0.0999755859375. */
  input_f("x", COIL_F32, S(8),
          F(65519, 65520, -65520, 0.1, 0x1p-24, 0x1p-25, 0x3p-25, 2049));
  run1("%x: f32[8]", "aten._to_copy.default(%x, dtype=f16)");
  expect_f(0, COIL_F16, S(8),
           F(65504, INFINITY, -INFINITY, 0.0999755859375, 0x1p-24, 0, 0x2p-24, 2048), EXACT);
}

Test(halves, to_copy_f32_to_bf16)
{
  /* 1 + 2^-8 ties to 1 (even), 1 + 3 * 2^-8 ties to 1 + 2^-6; FLT_MAX is above the last
   * halfway point (2 - 2^-8) * 2^127 and becomes inf */
  input_f("x", COIL_F32, S(5), F(1 + 0x1p-8, 1 + 0x3p-8, NAN, 3.4028234663852886e38, -1.5));
  run1("%x: f32[5]", "aten._to_copy.default(%x, dtype=bf16)");
  expect_f(0, COIL_BF16, S(5), F(1, 1.015625, NAN, INFINITY, -1.5), EXACT);
}

Test(halves, to_copy_integers_and_bools)
{
  input_f("f", COIL_F32, S(4), F(2.9, -2.9, -0.5, 0));
  input_f("g", COIL_F32, S(4), F(0, -0.0, 0.5, NAN));
  input_i("i", COIL_I64, S(3), I(0, 2, -1));
  input_i("j", COIL_I64, S(2), I(16777217, 300));
  input_i("b", COIL_BOOL, S(2), I(1, 0));
  run("%f: f32[4], %g: f32[4], %i: i64[3], %j: i64[2], %b: bool[2]",
      "%a = aten._to_copy.default(%f, dtype=i32); %c = aten._to_copy.default(%g, dtype=bool);"
      "%d = aten._to_copy.default(%i, dtype=bool); %e = aten._to_copy.default(%j, dtype=f32);"
      "%h = aten._to_copy.default(%j, dtype=u8); %k = aten._to_copy.default(%b, dtype=f32);"
      "%l = aten._to_copy.default(%f); return (%a, %c, %d, %e, %h, %k, %l)");
  expect_i(0, COIL_I32, S(4), I(2, -2, 0, 0)); /* truncation toward zero */
  expect_i(1, COIL_BOOL, S(4), I(0, 0, 1, 1)); /* -0 is false, NaN is true */
  expect_i(2, COIL_BOOL, S(3), I(0, 1, 1));
  expect_f(3, COIL_F32, S(2), F(16777216, 300), EXACT); /* 2^24 + 1 ties to 2^24 */
  expect_i(4, COIL_U8, S(2), I(1, 44));                 /* 16777217 and 300 modulo 256 */
  expect_f(5, COIL_F32, S(2), F(1, 0), EXACT);
  expect_f(6, COIL_F32, S(4), F(2.9, -2.9, -0.5, 0), EXACT); /* no dtype: a plain copy */
}

/* ---- where, clamp ---- */

Test(where_clamp, where)
{
  input_i("c", COIL_BOOL, S(2, 1), I(1, 0));
  input_i("x", COIL_I64, S(3), I(1, 2, 3));
  input_f("y", COIL_F32, SCALAR, F(0.5));
  input_f("h", COIL_F16, S(3), F(1, 2, 3));
  run("%c: bool[2, 1], %x: i64[3], %y: f32[], %h: f16[3]",
      "%a = aten.where.self(%c, %x, %y); %b = aten.where.self(%c, %x, 7);"
      "%d = aten.where.self(%c, %h, 0.1); return (%a, %b, %d)");
  /* i64 with a 0-d f32: the float category wins, the result is f32 */
  expect_f(0, COIL_F32, S(2, 3), F(1, 2, 3, 0.5, 0.5, 0.5), EXACT);
  expect_i(1, COIL_I64, S(2, 3), I(1, 2, 3, 7, 7, 7));
  /* f16 with a float number stays f16: 0.1 becomes 0.0999755859375 */
  expect_f(2, COIL_F16, S(2, 3), F(1, 2, 3, 0.0999755859375, 0.0999755859375, 0.0999755859375),
           EXACT);
}

Test(where_clamp, clamp_numbers)
{
  input_f("x", COIL_F32, S(4), F(-2, 0.5, 2, NAN));
  run("%x: f32[4]",
      "%a = aten.clamp.default(%x, -1, 1); %b = aten.clamp.default(%x, 0);"
      "%c = aten.clamp.default(%x, None, 0); %d = aten.clamp.default(%x, 1, 0);"
      "return (%a, %b, %c, %d)");
  expect_f(0, COIL_F32, S(4), F(-1, 0.5, 1, NAN), EXACT);
  expect_f(1, COIL_F32, S(4), F(0, 0.5, 2, NAN), EXACT);
  expect_f(2, COIL_F32, S(4), F(-2, 0, 0, NAN), EXACT);
  expect_f(3, COIL_F32, S(4), F(0, 0, 0, NAN), EXACT); /* min > max: everything is max */

  clear_inputs();
  input_i("i", COIL_I64, S(3), I(-5, 5, 10));
  run("%i: i64[3]",
      "%a = aten.clamp.default(%i, 0, 7); %b = aten.clamp.default(%i, 1.5); return (%a, %b)");
  expect_i(0, COIL_I64, S(3), I(0, 5, 7));
  expect_f(1, COIL_F32, S(3), F(1.5, 5, 10), EXACT); /* a float bound promotes to f32 */

  /* an integer bound is cast to the tensor's dtype first: -1 is 255 for u8 */
  clear_inputs();
  input_i("u", COIL_U8, S(2), I(5, 0));
  run1("%u: u8[2]", "aten.clamp.default(%u, -1)");
  expect_i(0, COIL_U8, S(2), I(255, 255));
}

Test(where_clamp, clamp_tensors)
{
  input_f("x", COIL_F32, S(2, 3), F(1, 2, NAN, 4, 5, 6));
  input_f("lo", COIL_F32, S(3), F(NAN, 3, 0));
  input_f("hi", COIL_F32, S(2, 1), F(10, 4.5));
  run("%x: f32[2, 3], %lo: f32[3], %hi: f32[2, 1]",
      "%a = aten.clamp.Tensor(%x, %lo, %hi); %b = aten.clamp.Tensor(%x, %lo);"
      "%c = aten.clamp.Tensor(%x, None, %hi); return (%a, %b, %c)");
  /* a NaN bound gives NaN, like a NaN input */
  expect_f(0, COIL_F32, S(2, 3), F(NAN, 3, NAN, NAN, 4.5, 4.5), EXACT);
  expect_f(1, COIL_F32, S(2, 3), F(NAN, 3, NAN, NAN, 5, 6), EXACT);
  expect_f(2, COIL_F32, S(2, 3), F(1, 2, NAN, 4, 4.5, 4.5), EXACT);
}

/* ---- pointwise math (core/ref_math.c) ---- */

#define PI 3.14159265358979323846

Test(math, libm_functions_at_known_points)
{
  input_f("x", COIL_F32, S(4), F(0, 1, -1, 2));
  run("%x: f32[4]",
      "%t = aten.tan.default(%x); %s = aten.sinh.default(%x); %c = aten.cosh.default(%x);"
      "%as = aten.asin.default(%x); %ac = aten.acos.default(%x); %at = aten.atan.default(%x);"
      "%ash = aten.asinh.default(%x); %ach = aten.acosh.default(%x); %ath = aten.atanh.default(%x);"
      "%e = aten.expm1.default(%x); return (%t, %s, %c, %as, %ac, %at, %ash, %ach, %ath, %e)");
  expect_f(0, COIL_F32, S(4), F(0, 1.5574077246549023, -1.5574077246549023, -2.1850398632615189), TOL);
  expect_f(1, COIL_F32, S(4), F(0, 1.1752011936438014, -1.1752011936438014, 3.6268604078470186), TOL);
  expect_f(2, COIL_F32, S(4), F(1, 1.5430806348152437, 1.5430806348152437, 3.7621956910836314), TOL);
  expect_f(3, COIL_F32, S(4), F(0, PI / 2, -PI / 2, NAN), TOL); /* outside [-1, 1]: NaN */
  expect_f(4, COIL_F32, S(4), F(PI / 2, 0, PI, NAN), TOL);
  expect_f(5, COIL_F32, S(4), F(0, PI / 4, -PI / 4, 1.1071487177940904), TOL);
  expect_f(6, COIL_F32, S(4), F(0, 0.88137358701954303, -0.88137358701954303, 1.4436354751788103), TOL);
  expect_f(7, COIL_F32, S(4), F(NAN, 0, NAN, 1.3169578969248166), TOL); /* below 1: NaN */
  expect_f(8, COIL_F32, S(4), F(0, INFINITY, -INFINITY, NAN), TOL);
  expect_f(9, COIL_F32, S(4), F(0, 1.7182818284590452, -0.63212055882855767, 6.3890560989306502), TOL);

  /* near 0 expm1 and sinh keep every digit: x + x^2/2, x + x^3/6 */
  clear_inputs();
  input_f("x", COIL_F64, S(2), F(1e-10, -3e-12));
  run("%x: f64[2]", "%e = aten.expm1.default(%x); %s = aten.sinh.default(%x); return (%e, %s)");
  expect_f(0, COIL_F64, S(2), F(1.00000000005e-10, -2.9999999999955e-12), 1e-14);
  expect_f(1, COIL_F64, S(2), F(1e-10, -3e-12), 1e-14);

  /* logarithms; an integer tensor computes in the default dtype f32 */
  clear_inputs();
  input_i("x", COIL_I64, S(4), I(8, 1000, 0, -1));
  run("%x: i64[4]", "%a = aten.log2.default(%x); %b = aten.log10.default(%x); %c = aten.tan.default(%x); return (%a, %b, %c)");
  expect_f(0, COIL_F32, S(4), F(3, 9.965784284662087, -INFINITY, NAN), TOL);
  expect_f(1, COIL_F32, S(4), F(0.90308998699194354, 3, -INFINITY, NAN), TOL);
  /* tan(1000) from f32(1000) = 1000 exactly */
  expect_f(2, COIL_F32, S(4), F(-6.7997114552203786, 1.4703241557027185, 0, -1.5574077246549023), TOL);
}

Test(math, sign_isnan_isinf)
{
  input_f("x", COIL_F32, S(7), F(-2, -0.0, 0, 3, NAN, -INFINITY, INFINITY));
  run("%x: f32[7]", "%s = aten.sign.default(%x); %n = aten.isnan.default(%x); %i = aten.isinf.default(%x);"
                    "return (%s, %n, %i)");
  expect_f(0, COIL_F32, S(7), F(-1, 0, 0, 1, 0, -1, 1), EXACT); /* torch.sign: NaN -> 0, -0 -> +0 */
  expect_i(1, COIL_BOOL, S(7), I(0, 0, 0, 0, 1, 0, 0));
  expect_i(2, COIL_BOOL, S(7), I(0, 0, 0, 0, 0, 1, 1));

  clear_inputs();
  input_i("x", COIL_I64, S(3), I(-5, 0, 7));
  input_i("b", COIL_BOOL, S(2), I(1, 0));
  run("%x: i64[3], %b: bool[2]", "%s = aten.sign.default(%x); %n = aten.isnan.default(%x);"
                                 "%i = aten.isinf.default(%x); %sb = aten.sign.default(%b); return (%s, %n, %i, %sb)");
  expect_i(0, COIL_I64, S(3), I(-1, 0, 1));
  expect_i(1, COIL_BOOL, S(3), I(0, 0, 0));
  expect_i(2, COIL_BOOL, S(3), I(0, 0, 0));
  expect_i(3, COIL_BOOL, S(2), I(1, 0));
}

Test(math, elu_hardtanh)
{
  input_f("x", COIL_F32, S(5), F(-1, 0, 2, NAN, -INFINITY));
  run("%x: f32[5]", "%e = aten.elu.default(%x); %s = aten.elu.default(%x, 0.5, 2, 1.5);"
                    "%h = aten.hardtanh.default(%x); %g = aten.hardtanh.default(%x, -0.5, 0.25); return (%e, %s, %h, %g)");
  expect_f(0, COIL_F32, S(5), F(-0.63212055882855767, 0, 2, NAN, -1), TOL);
  /* scale * alpha * expm1(input_scale * x) = expm1(1.5 x) below 0, 2x above */
  expect_f(1, COIL_F32, S(5), F(-0.77686983985157021, 0, 4, NAN, -1), TOL);
  expect_f(2, COIL_F32, S(5), F(-1, 0, 1, NAN, -1), EXACT);
  expect_f(3, COIL_F32, S(5), F(-0.5, 0, 0.25, NAN, -0.5), EXACT);

  /* integers keep their dtype and take the bounds truncated: -2.5 -> -2, 2.5 -> 2 */
  clear_inputs();
  input_i("x", COIL_I64, S(5), I(-5, -2, 0, 1, 4));
  run1("%x: i64[5]", "aten.hardtanh.default(%x, -2.5, 2.5)");
  expect_i(0, COIL_I64, S(5), I(-2, -2, 0, 1, 2));
}

Test(math, atan2_and_its_out_form)
{
  input_f("y", COIL_F32, S(5), F(1, 1, -1, 0, -0.0));
  input_f("x", COIL_F32, S(5), F(1, -1, -1, -1, -1));
  input_f("o", COIL_F32, S(5), F(7, 7, 7, 7, 7));
  run("%y: f32[5], %x: f32[5], %o: f32[5]",
      "%a = aten.atan2.default(%y, %x); %b = aten.atan2.out(%y, %x, out=%o); return (%a, %b, %o)");
  expect_f(0, COIL_F32, S(5), F(PI / 4, 3 * PI / 4, -3 * PI / 4, PI, -PI), TOL);
  expect_f(1, COIL_F32, S(5), F(PI / 4, 3 * PI / 4, -3 * PI / 4, PI, -PI), TOL);
  expect_f(2, COIL_F32, S(5), F(7, 7, 7, 7, 7), EXACT); /* functional: out is not written */

  clear_inputs();
  input_i("a", COIL_I64, S(2), I(0, 3));
  run1("%a: i64[2]", "aten.atan2.default(%a, 0)");
  expect_f(0, COIL_F32, S(2), F(0, PI / 2), TOL);
}

Test(math, fmod_remainder)
{
  /* fmod has the dividend's sign, remainder the divisor's; INT64_MIN by -1 is 0 */
  input_i("a", COIL_I64, S(6), I(-7, 7, -7, 7, 0, INT64_MIN));
  input_i("b", COIL_I64, S(6), I(2, 2, -2, -2, 3, -1));
  run("%a: i64[6], %b: i64[6]", "%f = aten.fmod.Tensor(%a, %b); %r = aten.remainder.Tensor(%a, %b);"
                                "%fs = aten.fmod.Scalar(%a, -3); %rs = aten.remainder.Scalar(%a, -3); return (%f, %r, %fs, %rs)");
  expect_i(0, COIL_I64, S(6), I(-1, 1, -1, 1, 0, 0));
  expect_i(1, COIL_I64, S(6), I(1, 1, -1, -1, 0, 0));
  /* INT64_MIN = -3 * 3074457345618258602 - 2 */
  expect_i(2, COIL_I64, S(6), I(-1, 1, -1, 1, 0, -2));
  expect_i(3, COIL_I64, S(6), I(-1, -2, -1, -2, 0, -2));

  /* floats: fmod(a, 0) is NaN; remainder(-1, inf) = -1 + inf (the signs differ), as Python */
  clear_inputs();
  input_f("a", COIL_F32, S(7), F(-7.5, 7.5, -7.5, 7.5, 1, 1, -1));
  input_f("b", COIL_F32, S(7), F(2, 2, -2, -2, 0, INFINITY, INFINITY));
  run("%a: f32[7], %b: f32[7]", "%f = aten.fmod.Tensor(%a, %b); %r = aten.remainder.Tensor(%a, %b); return (%f, %r)");
  expect_f(0, COIL_F32, S(7), F(-1.5, 1.5, -1.5, 1.5, NAN, 1, -1), EXACT);
  expect_f(1, COIL_F32, S(7), F(0.5, 1.5, -1.5, -0.5, NAN, 1, INFINITY), EXACT);

  /* an integer tensor with a float scalar computes in f32 */
  clear_inputs();
  input_i("a", COIL_I64, S(2), I(-7, 7));
  run1("%a: i64[2]", "aten.remainder.Scalar(%a, 2.5)");
  expect_f(0, COIL_F32, S(2), F(0.5, 2), EXACT);

  /* integer division by zero: torch raises ZeroDivisionError */
  clear_inputs();
  input_i("a", COIL_I64, S(2), I(1, 2));
  input_i("b", COIL_I64, S(2), I(1, 0));
  run_fails("%a: i64[2], %b: i64[2]", "%r = aten.remainder.Tensor(%a, %b); return (%r)", "ZeroDivisionError");
  run_fails("%a: i64[2], %b: i64[2]", "%r = aten.fmod.Scalar(%a, 0); return (%r)", "ZeroDivisionError");
}

Test(math, xor_bitwise_scalars_div_scalar_mode_fill)
{
  input_i("a", COIL_I64, S(2), I(5, -1));
  input_i("b", COIL_I64, S(2), I(3, 1));
  input_i("p", COIL_BOOL, S(2), I(1, 0));
  input_i("q", COIL_BOOL, S(2), I(1, 1));
  run("%a: i64[2], %b: i64[2], %p: bool[2], %q: bool[2]",
      "%x = aten.bitwise_xor.Tensor(%a, %b); %xs = aten.bitwise_xor.Scalar(%a, -3);"
      "%xb = aten.bitwise_xor.Tensor(%p, %q); %and = aten.bitwise_and.Scalar(%p, 7);"
      "%or = aten.bitwise_or.Scalar(%a, 8); %lx = aten.logical_xor.default(%a, %p);"
      "return (%x, %xs, %xb, %and, %or, %lx)");
  expect_i(0, COIL_I64, S(2), I(6, -2));
  expect_i(1, COIL_I64, S(2), I(5 ^ -3, 2));
  expect_i(2, COIL_BOOL, S(2), I(0, 1));
  expect_i(3, COIL_I64, S(2), I(1, 0)); /* bool & int: computed in i64 */
  expect_i(4, COIL_I64, S(2), I(13, -1));
  expect_i(5, COIL_BOOL, S(2), I(0, 1)); /* both nonzero; -1 nonzero, False */

  clear_inputs();
  input_f("f", COIL_F32, S(4), F(0, 1, NAN, 0));
  input_i("i", COIL_I64, S(4), I(0, 0, 1, 3));
  run1("%f: f32[4], %i: i64[4]", "aten.logical_xor.default(%f, %i)");
  expect_i(0, COIL_BOOL, S(4), I(0, 1, 0, 1)); /* NaN counts as true */

  clear_inputs();
  input_i("a", COIL_I64, S(2), I(-7, 7));
  input_f("f", COIL_F32, S(2), F(-7, 7));
  run("%a: i64[2], %f: f32[2]",
      "%fl = aten.div.Scalar_mode(%a, -2, rounding_mode='floor'); %tr = aten.div.Scalar_mode(%a, -2, rounding_mode='trunc');"
      "%tdv = aten.div.Scalar_mode(%a, -2); %z = aten.div.Scalar_mode(%f, 0, rounding_mode='floor');"
      "return (%fl, %tr, %tdv, %z)");
  expect_i(0, COIL_I64, S(2), I(3, -4));
  expect_i(1, COIL_I64, S(2), I(3, -3));
  expect_f(2, COIL_F32, S(2), F(3.5, -3.5), EXACT);
  expect_f(3, COIL_F32, S(2), F(-INFINITY, INFINITY), EXACT);

  /* fill: the value converted to self's dtype (truncated for integers, nonzero for bool) */
  clear_inputs();
  input_i("i", COIL_I32, S(2), I(4, 5));
  input_i("b", COIL_BOOL, S(1), I(0));
  input_f("h", COIL_F16, S(1), F(3));
  run("%i: i32[2], %b: bool[1], %h: f16[1]",
      "%fi = aten.fill.Scalar(%i, 2.7); %fb = aten.fill.Scalar(%b, 0.5); %fh = aten.fill.Scalar(%h, -1.5);"
      "return (%fi, %fb, %fh)");
  expect_i(0, COIL_I32, S(2), I(2, 2));
  expect_i(1, COIL_BOOL, S(1), I(1));
  expect_f(2, COIL_F16, S(1), F(-1.5), EXACT);
}

/* ---- creation ---- */

Test(creation, full)
{
  run("",
      "%a = aten.full.default([2, 3], 1.5); %b = aten.full.default([2], 7);"
      "%c = aten.full.default([2], True); %d = aten.full.default([2], 2.7, dtype=i32);"
      "%e = aten.full.default([], -1.0); return (%a, %b, %c, %d, %e)");
  expect_f(0, COIL_F32, S(2, 3), F(1.5, 1.5, 1.5, 1.5, 1.5, 1.5), EXACT);
  expect_i(1, COIL_I64, S(2), I(7, 7)); /* an int fill gives i64, a bool fill bool */
  expect_i(2, COIL_BOOL, S(2), I(1, 1));
  expect_i(3, COIL_I32, S(2), I(2, 2)); /* 2.7 truncated */
  expect_f(4, COIL_F32, SCALAR, F(-1), EXACT);
}

Test(creation, like)
{
  input_f("x", COIL_F16, S(2, 2), F(1, 2, 3, 4));
  run("%x: f16[2, 2]",
      "%a = aten.full_like.default(%x, 0.1); %b = aten.zeros_like.default(%x);"
      "%c = aten.ones_like.default(%x, dtype=i32); %d = aten.full_like.default(%x, 3, dtype=bool);"
      "return (%a, %b, %c, %d)");
  expect_f(0, COIL_F16, S(2, 2), F(0.0999755859375, 0.0999755859375, 0.0999755859375,
                                   0.0999755859375), EXACT);
  expect_f(1, COIL_F16, S(2, 2), F(0, 0, 0, 0), EXACT);
  expect_i(2, COIL_I32, S(2, 2), I(1, 1, 1, 1));
  expect_i(3, COIL_BOOL, S(2, 2), I(1, 1, 1, 1));
}

Test(creation, scalar_tensor)
{
  run("",
      "%a = aten.scalar_tensor.default(3); %b = aten.scalar_tensor.default(2.5, dtype=f64);"
      "%c = aten.scalar_tensor.default(-inf); return (%a, %b, %c)");
  expect_f(0, COIL_F32, SCALAR, F(3), EXACT);
  expect_f(1, COIL_F64, SCALAR, F(2.5), EXACT);
  expect_f(2, COIL_F32, SCALAR, F(-INFINITY), EXACT);
}

Test(creation, arange)
{
  run("",
      "%a = aten.arange.default(5); %b = aten.arange.default(4, dtype=f32);"
      "%c = aten.arange.start(2, 6); %d = aten.arange.start_step(1, 2.5, 0.5);"
      "%e = aten.arange.start_step(0, -3, -1); %f = aten.arange.start_step(1.0, 2.0, 0.3);"
      "%g = aten.arange.start_step(0, 1, 0.25, dtype=f64); return (%a, %b, %c, %d, %e, %f, %g)");
  expect_i(0, COIL_I64, S(5), I(0, 1, 2, 3, 4));
  expect_f(1, COIL_F32, S(4), F(0, 1, 2, 3), EXACT);
  expect_i(2, COIL_I64, S(4), I(2, 3, 4, 5));
  expect_f(3, COIL_F32, S(3), F(1, 1.5, 2), EXACT); /* ceil((2.5 - 1) / 0.5) = 3 elements */
  expect_i(4, COIL_I64, S(3), I(0, -1, -2));
  /* ceil(1 / 0.3) = 4 elements, 1 + i * 0.3 computed in f64 then rounded to f32 */
  expect_f(5, COIL_F32, S(4), F(1, 1.3, 1.6, 1.9), EXACT);
  expect_f(6, COIL_F64, S(4), F(0, 0.25, 0.5, 0.75), EXACT);
}

/* An integer arange truncates start, end and step first: arange(0, 5, 1.5) in i64 is
 * arange(0, 5, 1) = 0..4, as PyTorch gives it. */
Test(creation, arange_integer_truncates)
{
  run("", "%a = aten.arange.start_step(0, 5, 1.5, dtype=i64); return (%a)");
  expect_i(0, COIL_I64, S(5), I(0, 1, 2, 3, 4));
}

/* ---- reductions ---- */

Test(reduce, sum)
{
  input_iota("x", COIL_F32, S(2, 3), 1); /* [[1, 2, 3], [4, 5, 6]] */
  run("%x: f32[2, 3]",
      "%a = aten.sum.dim_IntList(%x, [0]); %b = aten.sum.dim_IntList(%x, [1], True);"
      "%c = aten.sum.dim_IntList(%x, []); %d = aten.sum.dim_IntList(%x, [-1]);"
      "%e = aten.sum.default(%x); %f = aten.sum.dim_IntList(%x, [0, 1], True);"
      "return (%a, %b, %c, %d, %e, %f)");
  expect_f(0, COIL_F32, S(3), F(5, 7, 9), EXACT);
  expect_f(1, COIL_F32, S(2, 1), F(6, 15), EXACT);
  expect_f(2, COIL_F32, SCALAR, F(21), EXACT); /* [] means every dimension */
  expect_f(3, COIL_F32, S(2), F(6, 15), EXACT);
  expect_f(4, COIL_F32, SCALAR, F(21), EXACT);
  expect_f(5, COIL_F32, S(1, 1), F(21), EXACT);
}

Test(reduce, mean_prod)
{
  input_iota("x", COIL_F32, S(2, 3), 1);
  run("%x: f32[2, 3]",
      "%a = aten.mean.dim(%x, [1]); %b = aten.mean.default(%x); %c = aten.mean.dim(%x, [0, 1], True);"
      "%d = aten.prod.dim_int(%x, 1); %e = aten.prod.default(%x); %f = aten.prod.dim_int(%x, 0, True);"
      "return (%a, %b, %c, %d, %e, %f)");
  expect_f(0, COIL_F32, S(2), F(2, 5), EXACT);
  expect_f(1, COIL_F32, SCALAR, F(3.5), EXACT);
  expect_f(2, COIL_F32, S(1, 1), F(3.5), EXACT);
  expect_f(3, COIL_F32, S(2), F(6, 120), EXACT);
  expect_f(4, COIL_F32, SCALAR, F(720), EXACT);
  expect_f(5, COIL_F32, S(1, 3), F(4, 10, 18), EXACT);
}

Test(reduce, outer_and_inner_dims)
{
  /* x[i, j, k] = 6i + 2j + k; over i and k: 4 * 2j + 2 * 6 + 2 * 1 = 8j + 14 */
  input_iota("x", COIL_F32, S(2, 3, 2), 0);
  run("%x: f32[2, 3, 2]",
      "%a = aten.sum.dim_IntList(%x, [0, 2]); %b = aten.sum.dim_IntList(%x, [0, -1], True);"
      "%c = aten.amax.default(%x, [0, 2]); %d = aten.amin.default(%x, [2, 0]);"
      "return (%a, %b, %c, %d)");
  expect_f(0, COIL_F32, S(3), F(14, 22, 30), EXACT);
  expect_f(1, COIL_F32, S(1, 3, 1), F(14, 22, 30), EXACT);
  expect_f(2, COIL_F32, S(3), F(7, 9, 11), EXACT); /* 6 + 2j + 1 */
  expect_f(3, COIL_F32, S(3), F(0, 2, 4), EXACT);
}

Test(reduce, amax_amin_propagate_nan)
{
  input_f("x", COIL_F32, S(2, 3), F(1, NAN, 3, 4, 5, 6));
  input_f("y", COIL_F32, S(4), F(NAN, 1, 2, 3));
  input_f("z", COIL_F32, S(3), F(1, -INFINITY, 5));
  run("%x: f32[2, 3], %y: f32[4], %z: f32[3]",
      "%a = aten.amax.default(%x, [1]); %b = aten.amin.default(%x, [0]);"
      "%c = aten.amax.default(%x); %d = aten.amin.default(%x, [1], True);"
      "%e = aten.amax.default(%y); %f = aten.amin.default(%z); %g = aten.amax.default(%z);"
      "return (%a, %b, %c, %d, %e, %f, %g)");
  expect_f(0, COIL_F32, S(2), F(NAN, 6), EXACT);
  expect_f(1, COIL_F32, S(3), F(1, NAN, 3), EXACT);
  expect_f(2, COIL_F32, SCALAR, F(NAN), EXACT);
  expect_f(3, COIL_F32, S(2, 1), F(NAN, 4), EXACT);
  expect_f(4, COIL_F32, SCALAR, F(NAN), EXACT); /* a leading NaN sticks */
  expect_f(5, COIL_F32, SCALAR, F(-INFINITY), EXACT);
  expect_f(6, COIL_F32, SCALAR, F(5), EXACT);
}

Test(reduce, any)
{
  input_i("b", COIL_BOOL, S(2, 3), I(0, 0, 1, 0, 0, 0));
  input_f("f", COIL_F32, S(3, 2), F(0, NAN, 0, 0, 0.25, 0));
  run("%b: bool[2, 3], %f: f32[3, 2]",
      "%a = aten.any.dim(%b, 1); %c = aten.any.dims(%b, [0, 1]); %d = aten.any.default(%b);"
      "%e = aten.any.dim(%b, 0, True); %g = aten.any.dim(%f, 1); %h = aten.any.dims(%b);"
      "return (%a, %c, %d, %e, %g, %h)");
  expect_i(0, COIL_BOOL, S(2), I(1, 0));
  expect_i(1, COIL_BOOL, SCALAR, I(1));
  expect_i(2, COIL_BOOL, SCALAR, I(1));
  expect_i(3, COIL_BOOL, S(1, 3), I(0, 0, 1));
  expect_i(4, COIL_BOOL, S(3), I(1, 0, 1)); /* NaN and 0.25 are nonzero */
  expect_i(5, COIL_BOOL, SCALAR, I(1));  /* dim=None: all dimensions */
}

Test(reduce, integer_sums_are_i64)
{
  input_i("a", COIL_I32, S(2), I(INT32_MAX, 1));
  input_i("b", COIL_BOOL, S(3), I(1, 1, 0));
  input_i("c", COIL_I32, S(3), I(1, 2, 3));
  run("%a: i32[2], %b: bool[3], %c: i32[3]",
      "%x = aten.sum.default(%a); %y = aten.sum.default(%b);"
      "%z = aten.sum.dim_IntList(%c, [0], dtype=f64); %w = aten.prod.default(%c);"
      "%m = aten.mean.dim(%c, [0], dtype=f32); return (%x, %y, %z, %w, %m)");
  expect_i(0, COIL_I64, SCALAR, I(2147483648)); /* no i32 wrap: accumulated in i64 */
  expect_i(1, COIL_I64, SCALAR, I(2));
  expect_f(2, COIL_F64, SCALAR, F(6), EXACT);
  expect_i(3, COIL_I64, SCALAR, I(6));
  expect_f(4, COIL_F32, SCALAR, F(2), EXACT); /* mean of integers needs a float dtype */
}

Test(reduce, empty_dimensions)
{
  input_f("x", COIL_F32, S(0, 2), NULL);
  run("%x: f32[0, 2]",
      "%a = aten.sum.dim_IntList(%x, [0]); %b = aten.prod.dim_int(%x, 0);"
      "%c = aten.mean.dim(%x, [0]); %d = aten.sum.dim_IntList(%x, [1]); return (%a, %b, %c, %d)");
  expect_f(0, COIL_F32, S(2), F(0, 0), EXACT); /* the identities of + and * */
  expect_f(1, COIL_F32, S(2), F(1, 1), EXACT);
  expect_f(2, COIL_F32, S(2), F(NAN, NAN), EXACT); /* 0 / 0 */
  output(3, COIL_F32, S(0));
  /* max has no identity: torch refuses too */
  run_fails("%x: f32[0, 2]", "%a = aten.amax.default(%x, [0]); return (%a)",
            "max/min of an empty dimension has no identity");
}

Test(reduce, var)
{
  /* row 0: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5;
   * row 1: mean 5, 9 + 1 + 1 + 9 = 20; all 8: mean 3.75, sum of squares 37.5 */
  input_f("x", COIL_F32, S(2, 4), F(1, 2, 3, 4, 2, 4, 6, 8));
  input_f("one", COIL_F32, S(1), F(3));
  run("%x: f32[2, 4], %one: f32[1]",
      "%a = aten.var.correction(%x, [1], correction=0); %b = aten.var.correction(%x, [1], correction=1);"
      "%c = aten.var.correction(%x, [1]); %d = aten.var.correction(%x, None, correction=0);"
      "%e = aten.var.correction(%x, [-1], correction=0, keepdim=True);"
      "%f = aten.var.correction(%one, None, correction=1); return (%a, %b, %c, %d, %e, %f)");
  expect_f(0, COIL_F32, S(2), F(1.25, 5), EXACT);
  expect_f(1, COIL_F32, S(2), F(1.6666666666666667, 6.666666666666667), TOL); /* 5/3, 20/3 */
  expect_f(2, COIL_F32, S(2), F(1.6666666666666667, 6.666666666666667), TOL); /* default 1 */
  expect_f(3, COIL_F32, SCALAR, F(4.6875), EXACT);                            /* 37.5 / 8 */
  expect_f(4, COIL_F32, S(2, 1), F(1.25, 5), EXACT);
  expect_f(5, COIL_F32, SCALAR, F(NAN), EXACT); /* 0 / (1 - 1) */
}

Test(reduce, var_mean)
{
  input_f("x", COIL_F32, S(2, 4), F(1, 2, 3, 4, 2, 4, 6, 8));
  run("%x: f32[2, 4]",
      "%r = aten.var_mean.correction(%x, [1], correction=0, keepdim=True);"
      "%v = getitem(%r, 0); %m = getitem(%r, 1); return (%v, %m)");
  expect_f(0, COIL_F32, S(2, 1), F(1.25, 5), EXACT);
  expect_f(1, COIL_F32, S(2, 1), F(2.5, 5), EXACT);
}

Test(reduce, argmax_argmin)
{
  input_f("x", COIL_F32, S(4), F(3, 7, 7, 1));
  input_f("n", COIL_F32, S(4), F(1, NAN, 5, NAN));
  input_f("z", COIL_F32, S(2, 3), F(1, 5, 5, 9, 2, 9));
  run("%x: f32[4], %n: f32[4], %z: f32[2, 3]",
      "%a = aten.argmax.default(%x); %b = aten.argmin.default(%x); %c = aten.argmax.default(%n);"
      "%d = aten.argmin.default(%n); %e = aten.argmax.default(%z, 1);"
      "%f = aten.argmin.default(%z, 0); %g = aten.argmax.default(%z, 1, True);"
      "%h = aten.argmax.default(%z); return (%a, %b, %c, %d, %e, %f, %g, %h)");
  expect_i(0, COIL_I64, SCALAR, I(1)); /* the first of the two 7s */
  expect_i(1, COIL_I64, SCALAR, I(3));
  expect_i(2, COIL_I64, SCALAR, I(1)); /* the first NaN, for argmax and argmin alike */
  expect_i(3, COIL_I64, SCALAR, I(1));
  expect_i(4, COIL_I64, S(2), I(1, 0));
  expect_i(5, COIL_I64, S(3), I(0, 1, 0));
  expect_i(6, COIL_I64, S(2, 1), I(1, 0));
  expect_i(7, COIL_I64, SCALAR, I(3)); /* no dim: the flat index of the first 9 */
}

Test(reduce, max_min_dim)
{
  input_f("z", COIL_F32, S(2, 3), F(1, 5, 5, 9, 2, 9));
  input_f("n", COIL_F32, S(1, 4), F(1, NAN, 5, NAN));
  run("%z: f32[2, 3], %n: f32[1, 4]",
      "%a = aten.max.dim(%z, 1); %b = aten.min.dim(%z, 0, True); %c = aten.max.dim(%n, -1);"
      "%a0 = getitem(%a, 0); %a1 = getitem(%a, 1); %b0 = getitem(%b, 0); %b1 = getitem(%b, 1);"
      "%c0 = getitem(%c, 0); %c1 = getitem(%c, 1); return (%a0, %a1, %b0, %b1, %c0, %c1)");
  expect_f(0, COIL_F32, S(2), F(5, 9), EXACT);
  expect_i(1, COIL_I64, S(2), I(1, 0));
  expect_f(2, COIL_F32, S(1, 3), F(1, 2, 5), EXACT);
  expect_i(3, COIL_I64, S(1, 3), I(0, 1, 0));
  expect_f(4, COIL_F32, S(1), F(NAN), EXACT);
  expect_i(5, COIL_I64, S(1), I(1));
}

/* ---- softmax and normalisations ---- */

Test(norm, softmax_last_dim)
{
  /* row 0: e^(x - 3) / (1 + e^-1 + e^-2), logsumexp = 3 + log(1 + e^-1 + e^-2) = 3.40760596...;
   * row 1: a -inf gets 0 (log: -inf), the rest share; row 2: all -inf gives NaN */
  input_f("x", COIL_F32, S(3, 3), F(1, 2, 3, 1, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY));
  run("%x: f32[3, 3]",
      "%s = aten._softmax.default(%x, -1, False); %l = aten._log_softmax.default(%x, 1, False);"
      "return (%s, %l)");
  expect_f(0, COIL_F32, S(3, 3),
           F(0.09003057317038046, 0.24472847105479764, 0.6652409557748218, 0.5, 0.5, 0, NAN, NAN,
             NAN), TOL);
  expect_f(1, COIL_F32, S(3, 3),
           F(-2.4076059644443806, -1.4076059644443804, -0.4076059644443804, -0.6931471805599453,
             -0.6931471805599453, -INFINITY, NAN, NAN, NAN), TOL);
}

Test(norm, softmax_dim0)
{
  /* column 0: [1, 1] -> 1/2 each; column 1: [0, 2] -> 1 / (1 + e^2), e^2 / (1 + e^2) */
  input_f("x", COIL_F32, S(2, 2), F(1, 0, 1, 2));
  input_f("h", COIL_F16, S(2), F(0, 0));
  run("%x: f32[2, 2], %h: f16[2]",
      "%s = aten._softmax.default(%x, 0, False); %l = aten._log_softmax.default(%x, 0, False);"
      "%f = aten._softmax.default(%h, 0, True); return (%s, %l, %f)");
  expect_f(0, COIL_F32, S(2, 2), F(0.5, 0.11920292202211755, 0.5, 0.8807970779778824), TOL);
  expect_f(1, COIL_F32, S(2, 2),
           F(-0.6931471805599453, -2.1269280110429727, -0.6931471805599453, -0.1269280110429727),
           TOL);
  expect_f(2, COIL_F32, S(2), F(0.5, 0.5), EXACT); /* half_to_float: f16 in, f32 out */
}

Test(norm, layer_norm_affine)
{
  /* row 0: mean 2.5, biased var 1.25, rstd = 1 / sqrt(1.25 + 1e-5) = 0.894423613312618;
   *   (x - 2.5) * rstd * w + b; row 1: var 0, rstd = 1 / sqrt(1e-5) = 316.2277660168379,
   *   every (x - mean) is 0 so out = b */
  input_f("x", COIL_F32, S(2, 4), F(1, 2, 3, 4, 2, 2, 2, 2));
  input_f("w", COIL_F32, S(4), F(1, 1, 2, 2));
  input_f("b", COIL_F32, S(4), F(0, 0, 0, 1));
  run("%x: f32[2, 4], %w: f32[4], %b: f32[4]",
      "%r = aten.native_layer_norm.default(%x, [4], %w, %b, 1e-05);"
      "%o = getitem(%r, 0); %m = getitem(%r, 1); %s = getitem(%r, 2); return (%o, %m, %s)");
  expect_f(0, COIL_F32, S(2, 4),
           F(-1.3416354199689269, -0.447211806656309, 0.894423613312618, 3.6832708399378538, 0,
             0, 0, 1), TOL);
  expect_f(1, COIL_F32, S(2, 1), F(2.5, 2), EXACT);
  expect_f(2, COIL_F32, S(2, 1), F(0.894423613312618, 316.2277660168379), TOL);
}

Test(norm, layer_norm_two_dims_no_affine)
{
  /* over the last two dims: mean 3, var (9 + 1 + 1 + 9) / 4 = 5, eps 0: (x - 3) / sqrt 5 */
  input_f("x", COIL_F32, S(1, 2, 2), F(0, 2, 4, 6));
  run("%x: f32[1, 2, 2]",
      "%r = aten.native_layer_norm.default(%x, [2, 2], None, None, 0.0);"
      "%o = getitem(%r, 0); %m = getitem(%r, 1); %s = getitem(%r, 2); return (%o, %m, %s)");
  expect_f(0, COIL_F32, S(1, 2, 2),
           F(-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738),
           TOL);
  expect_f(1, COIL_F32, S(1, 1, 1), F(3), EXACT);
  expect_f(2, COIL_F32, S(1, 1, 1), F(0.4472135954999579), TOL);
}

Test(norm, batch_norm_no_training)
{
  /* (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c], channel c = dim 1; eps 1:
   *   channel 0 (mean 1, var 3 -> /2, w 2, b 0): x = 1, 3 -> 0, 2
   *   channel 1 (mean -1, var 0 -> /1, w 1, b 1): x = 0, 1 -> 2, 3 */
  input_f("x", COIL_F32, S(1, 2, 2), F(1, 3, 0, 1));
  input_f("w", COIL_F32, S(2), F(2, 1));
  input_f("b", COIL_F32, S(2), F(0, 1));
  input_f("rm", COIL_F32, S(2), F(1, -1));
  input_f("rv", COIL_F32, S(2), F(3, 0));
  run("%x: f32[1, 2, 2], %w: f32[2], %b: f32[2], %rm: f32[2] buffer, %rv: f32[2] buffer",
      "%r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %rm, %rv, 0.1, 1.0);"
      "%n = aten._native_batch_norm_legit_no_training.default(%x, None, None, %rm, %rv, 0.1, 1.0);"
      "%o = getitem(%r, 0); %p = getitem(%r, 1); %q = getitem(%n, 0); return (%o, %p, %q)");
  expect_f(0, COIL_F32, S(1, 2, 2), F(0, 2, 2, 3), EXACT);
  output(1, COIL_F32, S(0)); /* the saved statistics are empty in inference */
  expect_f(2, COIL_F32, S(1, 2, 2), F(0, 1, 1, 2), EXACT);
}

/* ---- views ---- */

Test(view, reshape_permute_transpose)
{
  input_iota("x", COIL_F32, S(2, 3), 0);
  input_iota("y", COIL_F32, S(2, 1, 3), 0);
  input_f("v", COIL_F32, S(3), F(1, 2, 3));
  run("%x: f32[2, 3], %y: f32[2, 1, 3], %v: f32[3]",
      "%a = aten.view.default(%x, [3, -1]); %b = aten.reshape.default(%x, [-1]);"
      "%c = aten.t.default(%x); %d = aten.transpose.int(%x, 0, -1);"
      "%e = aten.permute.default(%y, [2, 0, 1]); %f = aten.permute.default(%y, [-1, 0, 1]);"
      "%g = aten.t.default(%v); %h = aten._unsafe_view.default(%y, [6, 1]);"
      "return (%a, %b, %c, %d, %e, %f, %g, %h)");
  expect_f(0, COIL_F32, S(3, 2), F(0, 1, 2, 3, 4, 5), EXACT);
  expect_f(1, COIL_F32, S(6), F(0, 1, 2, 3, 4, 5), EXACT);
  expect_f(2, COIL_F32, S(3, 2), F(0, 3, 1, 4, 2, 5), EXACT);
  expect_f(3, COIL_F32, S(3, 2), F(0, 3, 1, 4, 2, 5), EXACT);
  /* out[k, i, 0] = y[i, 0, k] = 3i + k */
  expect_f(4, COIL_F32, S(3, 2, 1), F(0, 3, 1, 4, 2, 5), EXACT);
  expect_f(5, COIL_F32, S(3, 2, 1), F(0, 3, 1, 4, 2, 5), EXACT);
  expect_f(6, COIL_F32, S(3), F(1, 2, 3), EXACT); /* t of a vector is the vector */
  expect_f(7, COIL_F32, S(6, 1), F(0, 1, 2, 3, 4, 5), EXACT);
}

Test(view, expand)
{
  input_f("x", COIL_F32, S(3, 1), F(10, 20, 30));
  input_f("s", COIL_F32, SCALAR, F(4));
  run("%x: f32[3, 1], %s: f32[]",
      "%a = aten.expand.default(%x, [2, 3, 2]); %b = aten.expand.default(%x, [2, -1, 2]);"
      "%c = aten.expand.default(%s, [2]); return (%a, %b, %c)");
  expect_f(0, COIL_F32, S(2, 3, 2), F(10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30), EXACT);
  expect_f(1, COIL_F32, S(2, 3, 2), F(10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30), EXACT);
  expect_f(2, COIL_F32, S(2), F(4, 4), EXACT);
}

Test(view, slice)
{
  input_iota("x", COIL_F32, S(10), 0);
  input_iota("y", COIL_F32, S(2, 5), 0);
  run("%x: f32[10], %y: f32[2, 5]",
      "%a = aten.slice.Tensor(%x, 0, 1, 8, 3); %b = aten.slice.Tensor(%x, 0, -4);"
      "%c = aten.slice.Tensor(%x, 0, -100, 2); %d = aten.slice.Tensor(%x, 0, 8, 100);"
      "%e = aten.slice.Tensor(%x, 0, 5, 2); %f = aten.slice.Tensor(%y, 1, 1, None, 2);"
      "%g = aten.slice.Tensor(%y, -1, -2); %h = aten.slice.Tensor(%y, 0, 1, 2);"
      "return (%a, %b, %c, %d, %e, %f, %g, %h)");
  expect_f(0, COIL_F32, S(3), F(1, 4, 7), EXACT);
  expect_f(1, COIL_F32, S(4), F(6, 7, 8, 9), EXACT);  /* start -4 is 6 */
  expect_f(2, COIL_F32, S(2), F(0, 1), EXACT);        /* start clamps to 0 */
  expect_f(3, COIL_F32, S(2), F(8, 9), EXACT);        /* end clamps to 10 */
  output(4, COIL_F32, S(0));                          /* start past end: empty */
  expect_f(5, COIL_F32, S(2, 2), F(1, 3, 6, 8), EXACT);
  expect_f(6, COIL_F32, S(2, 2), F(3, 4, 8, 9), EXACT);
  expect_f(7, COIL_F32, S(1, 5), F(5, 6, 7, 8, 9), EXACT);
}

Test(view, select)
{
  input_iota("y", COIL_F32, S(2, 3), 0);
  input_iota("z", COIL_F32, S(2, 2, 2), 0);
  run("%y: f32[2, 3], %z: f32[2, 2, 2]",
      "%a = aten.select.int(%y, 1, -1); %b = aten.select.int(%y, 0, 1);"
      "%c = aten.select.int(%z, 1, 0); return (%a, %b, %c)");
  expect_f(0, COIL_F32, S(2), F(2, 5), EXACT);
  expect_f(1, COIL_F32, S(3), F(3, 4, 5), EXACT);
  expect_f(2, COIL_F32, S(2, 2), F(0, 1, 4, 5), EXACT); /* z[i, 0, k] = 4i + k */

  /* with a symbolic size the range check happens at run time */
  clear_inputs();
  input_iota("s", COIL_F32, S(3), 0);
  run_fails("%s: f32[n]", "%a = aten.select.int(%s, 0, 5); return (%a)",
            "index 5 is out of range for size 3");
}

Test(view, squeeze_unsqueeze)
{
  input_f("x", COIL_F32, S(1, 2, 1), F(7, 8));
  run("%x: f32[1, 2, 1]",
      "%a = aten.squeeze.default(%x); %b = aten.squeeze.dim(%x, 0); %c = aten.squeeze.dims(%x, [0, -1]);"
      "%d = aten.squeeze.dim(%x, 1); %e = aten.unsqueeze.default(%x, -1);"
      "%f = aten.unsqueeze.default(%x, 0); %g = aten.alias.default(%x);"
      "return (%a, %b, %c, %d, %e, %f, %g)");
  expect_f(0, COIL_F32, S(2), F(7, 8), EXACT);
  expect_f(1, COIL_F32, S(2, 1), F(7, 8), EXACT);
  expect_f(2, COIL_F32, S(2), F(7, 8), EXACT);
  expect_f(3, COIL_F32, S(1, 2, 1), F(7, 8), EXACT); /* size 2 is not squeezed */
  expect_f(4, COIL_F32, S(1, 2, 1, 1), F(7, 8), EXACT);
  expect_f(5, COIL_F32, S(1, 1, 2, 1), F(7, 8), EXACT);
  expect_f(6, COIL_F32, S(1, 2, 1), F(7, 8), EXACT);
}

/* ---- data movement ---- */

Test(move, clone_copy)
{
  input_iota("x", COIL_F32, S(2, 3), 0);
  input_i("s", COIL_I64, S(3), I(1, 2, 3));
  input_i("d", COIL_I32, S(2), I(0, 0));
  input_f("f", COIL_F32, S(2), F(2.7, -2.7));
  input_i("m", COIL_BOOL, S(2), I(0, 0));
  input_f("g", COIL_F32, S(2), F(0, 0.5));
  run("%x: f32[2, 3], %s: i64[3], %d: i32[2], %f: f32[2], %m: bool[2], %g: f32[2]",
      "%a = aten.clone.default(%x); %b = aten.copy.default(%x, %s); %c = aten.copy.default(%d, %f);"
      "%e = aten.copy.default(%m, %g); return (%a, %b, %c, %e)");
  expect_f(0, COIL_F32, S(2, 3), F(0, 1, 2, 3, 4, 5), EXACT);
  expect_f(1, COIL_F32, S(2, 3), F(1, 2, 3, 1, 2, 3), EXACT); /* broadcast, converted */
  expect_i(2, COIL_I32, S(2), I(2, -2));
  expect_i(3, COIL_BOOL, S(2), I(0, 1));
}

Test(move, cat)
{
  input_f("a", COIL_F32, S(1, 2), F(1, 2));
  input_f("b", COIL_F32, S(2, 2), F(3, 4, 5, 6));
  input_f("c", COIL_F32, S(2, 1), F(7, 8));
  input_i("i", COIL_I64, S(2), I(1, 2));
  input_f("h", COIL_F32, S(1), F(0.5));
  run("%a: f32[1, 2], %b: f32[2, 2], %c: f32[2, 1], %i: i64[2], %h: f32[1]",
      "%x = aten.cat.default([%a, %b]); %y = aten.cat.default([%c, %b], 1);"
      "%z = aten.cat.default([%b, %c], -1); %w = aten.cat.default([%i, %h]);"
      "return (%x, %y, %z, %w)");
  expect_f(0, COIL_F32, S(3, 2), F(1, 2, 3, 4, 5, 6), EXACT);
  expect_f(1, COIL_F32, S(2, 3), F(7, 3, 4, 8, 5, 6), EXACT);
  expect_f(2, COIL_F32, S(2, 3), F(3, 4, 7, 5, 6, 8), EXACT);
  expect_f(3, COIL_F32, S(3), F(1, 2, 0.5), EXACT); /* i64 and f32 promote to f32 */
}

Test(move, split)
{
  input_iota("x", COIL_F32, S(2, 3), 0);
  input_iota("y", COIL_F32, S(5), 0);
  run("%x: f32[2, 3], %y: f32[5]",
      "%s = aten.split_with_sizes.default(%x, [1, 2], 1); %t = aten.split.Tensor(%y, 2);"
      "%r = aten.split_with_sizes.default(%x, [1, 1]);"
      "%s0 = getitem(%s, 0); %s1 = getitem(%s, 1); %t0 = getitem(%t, 0); %t1 = getitem(%t, 1);"
      "%t2 = getitem(%t, 2); %r1 = getitem(%r, 1); return (%s0, %s1, %t0, %t1, %t2, %r1)");
  expect_f(0, COIL_F32, S(2, 1), F(0, 3), EXACT);
  expect_f(1, COIL_F32, S(2, 2), F(1, 2, 4, 5), EXACT);
  expect_f(2, COIL_F32, S(2), F(0, 1), EXACT);
  expect_f(3, COIL_F32, S(2), F(2, 3), EXACT);
  expect_f(4, COIL_F32, S(1), F(4), EXACT); /* the remainder */
  expect_f(5, COIL_F32, S(1, 3), F(3, 4, 5), EXACT);
}

Test(move, constant_pad_nd)
{
  /* pad lists (left, right) pairs from the last dimension backwards; negative pads crop */
  input_f("x", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_i("i", COIL_I64, S(2), I(5, 6));
  run("%x: f32[2, 2], %i: i64[2]",
      "%a = aten.constant_pad_nd.default(%x, [1, 0]);"
      "%b = aten.constant_pad_nd.default(%x, [1, 1, 0, 1], 9);"
      "%c = aten.constant_pad_nd.default(%x, [-1, 0]);"
      "%d = aten.constant_pad_nd.default(%x, [0, -1, 1, 0]);"
      "%e = aten.constant_pad_nd.default(%x, [-1, 1], 5.0);"
      "%f = aten.constant_pad_nd.default(%i, [2, 1], -1); return (%a, %b, %c, %d, %e, %f)");
  expect_f(0, COIL_F32, S(2, 3), F(0, 1, 2, 0, 3, 4), EXACT);
  expect_f(1, COIL_F32, S(3, 4), F(9, 1, 2, 9, 9, 3, 4, 9, 9, 9, 9, 9), EXACT);
  expect_f(2, COIL_F32, S(2, 1), F(2, 4), EXACT);
  expect_f(3, COIL_F32, S(3, 1), F(0, 1, 3), EXACT);
  expect_f(4, COIL_F32, S(2, 2), F(2, 5, 4, 5), EXACT);
  expect_i(5, COIL_I64, S(5), I(-1, -1, 5, 6, -1));
}

/* ---- indexing ---- */

Test(index, one_index_tensor)
{
  input_iota("x", COIL_F32, S(3, 4), 0);
  input_i("i", COIL_I64, S(3), I(2, 0, -1));
  input_i("j", COIL_I32, S(2), I(1, 3));
  run("%x: f32[3, 4], %i: i64[3], %j: i32[2]",
      "%a = aten.index.Tensor(%x, [%i]); %b = aten.index.Tensor(%x, [None, %j]); return (%a, %b)");
  /* rows 2, 0 and -1 = 2 */
  expect_f(0, COIL_F32, S(3, 4), F(8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11), EXACT);
  expect_f(1, COIL_F32, S(3, 2), F(1, 3, 5, 7, 9, 11), EXACT); /* x[:, [1, 3]] */
}

Test(index, broadcast_index_tensors)
{
  /* i [2, 1] and j [2] broadcast to [2, 2]: x[i[a], j[b]] = 4 i[a] + j[b] */
  input_iota("x", COIL_F32, S(3, 4), 0);
  input_i("i", COIL_I64, S(2, 1), I(0, 2));
  input_i("j", COIL_I64, S(2), I(1, 3));
  run1("%x: f32[3, 4], %i: i64[2, 1], %j: i64[2]", "aten.index.Tensor(%x, [%i, %j])");
  expect_f(0, COIL_F32, S(2, 2), F(1, 3, 9, 11), EXACT);
}

Test(index, separated_index_tensors_go_first)
{
  /* x[i, :, k] with i and k apart: the broadcast dim comes first, then the sliced dim:
   * out[b, m] = x[i[b], m, k[b]] = 12 i[b] + 4m + k[b] */
  input_iota("x", COIL_F32, S(2, 3, 4), 0);
  input_i("i", COIL_I64, S(2), I(1, 0));
  input_i("k", COIL_I64, S(2), I(3, 0));
  run1("%x: f32[2, 3, 4], %i: i64[2], %k: i64[2]", "aten.index.Tensor(%x, [%i, None, %k])");
  expect_f(0, COIL_F32, S(2, 3), F(15, 19, 23, 0, 4, 8), EXACT);
}

Test(index, out_of_range_is_an_error)
{
  input_iota("x", COIL_F32, S(3), 0);
  input_i("i", COIL_I64, S(2), I(0, 3));
  run_fails("%x: f32[3], %i: i64[2]", "%a = aten.index.Tensor(%x, [%i]); return (%a)",
            "index 3 is out of bounds for size 3");
  clear_inputs();
  input_iota("x", COIL_F32, S(3), 0);
  input_i("i", COIL_I64, S(1), I(-4));
  run_fails("%x: f32[3], %i: i64[1]", "%a = aten.index.Tensor(%x, [%i]); return (%a)",
            "index -4 is out of bounds for size 3");
}

Test(index, gather)
{
  input_f("x", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_i("a", COIL_I64, S(2, 2), I(0, 0, 1, 0));
  input_i("b", COIL_I64, S(1, 2), I(1, 0));
  run("%x: f32[2, 2], %a: i64[2, 2], %b: i64[1, 2]",
      "%p = aten.gather.default(%x, 1, %a); %q = aten.gather.default(%x, 0, %b); return (%p, %q)");
  expect_f(0, COIL_F32, S(2, 2), F(1, 1, 4, 3), EXACT); /* out[i][j] = x[i][a[i][j]] */
  expect_f(1, COIL_F32, S(1, 2), F(3, 2), EXACT);       /* out[i][j] = x[b[i][j]][j] */

  clear_inputs();
  input_f("x", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_i("a", COIL_I64, S(1, 1), I(2));
  run_fails("%x: f32[2, 2], %a: i64[1, 1]", "%p = aten.gather.default(%x, 1, %a); return (%p)",
            "index 2 is out of bounds for size 2");
  /* unlike index.Tensor, gather does not count negative indices from the end */
  clear_inputs();
  input_f("x", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_i("a", COIL_I64, S(1, 1), I(-1));
  run_fails("%x: f32[2, 2], %a: i64[1, 1]", "%p = aten.gather.default(%x, 1, %a); return (%p)",
            "index -1 is out of bounds for size 2");
}

Test(index, embedding)
{
  input_iota("w", COIL_F32, S(3, 2), 0);
  input_i("i", COIL_I64, S(1, 2), I(2, 0));
  run1("%w: f32[3, 2], %i: i64[1, 2]", "aten.embedding.default(%w, %i)");
  expect_f(0, COIL_F32, S(1, 2, 2), F(4, 5, 0, 1), EXACT);

  clear_inputs();
  input_iota("w", COIL_F32, S(3, 2), 0);
  input_i("i", COIL_I64, S(1), I(-1));
  run_fails("%w: f32[3, 2], %i: i64[1]", "%e = aten.embedding.default(%w, %i); return (%e)",
            "index -1 is out of range for 3 embeddings");
}

/* ---- matrix products ---- */

Test(matmul, mm_bmm)
{
  input_f("a", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_f("b", COIL_F32, S(2, 2), F(5, 6, 7, 8));
  input_f("c", COIL_F32, S(1, 3), F(1, 2, 3));
  input_f("d", COIL_F32, S(3, 2), F(1, 0, 0, 1, 1, 1));
  input_f("p", COIL_F32, S(2, 1, 2), F(1, 2, 3, 4));
  input_f("q", COIL_F32, S(2, 2, 1), F(5, 6, 7, 8));
  run("%a: f32[2, 2], %b: f32[2, 2], %c: f32[1, 3], %d: f32[3, 2], %p: f32[2, 1, 2], %q: f32[2, 2, 1]",
      "%x = aten.mm.default(%a, %b); %y = aten.mm.default(%c, %d); %z = aten.bmm.default(%p, %q);"
      "return (%x, %y, %z)");
  /* [1 2; 3 4] [5 6; 7 8] = [1*5 + 2*7, 1*6 + 2*8; 3*5 + 4*7, 3*6 + 4*8] */
  expect_f(0, COIL_F32, S(2, 2), F(19, 22, 43, 50), EXACT);
  expect_f(1, COIL_F32, S(1, 2), F(4, 5), EXACT);       /* [1 + 3, 2 + 3] */
  expect_f(2, COIL_F32, S(2, 1, 1), F(17, 53), EXACT); /* 1*5 + 2*6, 3*7 + 4*8 */
}

Test(matmul, addmm)
{
  input_f("r", COIL_F32, S(2), F(1, 2));
  input_f("n", COIL_F32, S(2), F(NAN, 1));
  input_f("c", COIL_F32, S(2, 1), F(10, 20));
  input_f("a", COIL_F32, S(2, 2), F(1, 2, 3, 4));
  input_f("b", COIL_F32, S(2, 2), F(5, 6, 7, 8));
  run("%r: f32[2], %n: f32[2], %c: f32[2, 1], %a: f32[2, 2], %b: f32[2, 2]",
      "%w = aten.addmm.default(%r, %a, %b); %x = aten.addmm.default(%r, %a, %b, beta=0.5, alpha=2);"
      "%y = aten.addmm.default(%n, %a, %b, beta=0, alpha=2); %z = aten.addmm.default(%c, %a, %b);"
      "return (%w, %x, %y, %z)");
  /* a b = [19 22; 43 50] */
  expect_f(0, COIL_F32, S(2, 2), F(20, 24, 44, 52), EXACT);
  expect_f(1, COIL_F32, S(2, 2), F(38.5, 45, 86.5, 101), EXACT); /* 0.5 r + 2 a b */
  expect_f(2, COIL_F32, S(2, 2), F(38, 44, 86, 100), EXACT);     /* beta 0 ignores a NaN bias */
  expect_f(3, COIL_F32, S(2, 2), F(29, 32, 63, 70), EXACT);
}

/* ---- convolution ---- */

/* x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], w = [[1, 2], [3, 4]] in all of the 2-D cases. */
#define CONV_PARAMS "%x: f32[1, 1, 3, 3], %w: f32[1, 1, 2, 2], %b: f32[1]"

Test(conv, conv2d)
{
  input_iota("x", COIL_F32, S(1, 1, 3, 3), 1);
  input_iota("w", COIL_F32, S(1, 1, 2, 2), 1);
  input_f("b", COIL_F32, S(1), F(1));
  run(CONV_PARAMS,
      "%p = aten.convolution.default(%x, %w, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1);"
      "%q = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1);"
      "%r = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [2, 2], False, [0, 0], 1);"
      "return (%p, %q, %r)");
  /* out[0][0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, then 47, 67, 77; plus bias 1 */
  expect_f(0, COIL_F32, S(1, 1, 2, 2), F(38, 48, 68, 78), EXACT);
  /* stride 2, padding 1: window (oh, ow) covers rows 2oh-1.., cols 2ow-1..:
   *   (0,0): x00*w11 = 4; (0,1): x01*w10 + x02*w11 = 6 + 12;
   *   (1,0): x10*w01 + x20*w11 = 8 + 28; (1,1): 5*1 + 6*2 + 8*3 + 9*4 = 77 */
  expect_f(1, COIL_F32, S(1, 1, 2, 2), F(4, 18, 36, 77), EXACT);
  /* dilation 2: the corners, 1*1 + 3*2 + 7*3 + 9*4 */
  expect_f(2, COIL_F32, S(1, 1, 1, 1), F(64), EXACT);
}

Test(conv, conv2d_channels_and_groups)
{
  input_iota("x", COIL_F32, S(1, 2, 2, 2), 1); /* channel 0: 1..4, channel 1: 5..8 */
  input_f("g", COIL_F32, S(2, 1, 1, 1), F(2, -1));
  input_f("m", COIL_F32, S(1, 2, 1, 1), F(1, 10));
  input_f("y", COIL_F32, S(1, 2, 1, 1), F(1, 2));
  input_f("v", COIL_F32, S(4, 1, 1, 1), F(1, 2, 3, 4));
  run("%x: f32[1, 2, 2, 2], %g: f32[2, 1, 1, 1], %m: f32[1, 2, 1, 1], %y: f32[1, 2, 1, 1],"
      "%v: f32[4, 1, 1, 1]",
      "%a = aten.convolution.default(%x, %g, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2);"
      "%b = aten.convolution.default(%x, %m, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1);"
      "%c = aten.convolution.default(%y, %v, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2);"
      "return (%a, %b, %c)");
  /* 2 groups of one channel: 2 * channel 0, -1 * channel 1 */
  expect_f(0, COIL_F32, S(1, 2, 2, 2), F(2, 4, 6, 8, -5, -6, -7, -8), EXACT);
  /* one group: channel 0 + 10 * channel 1 */
  expect_f(1, COIL_F32, S(1, 1, 2, 2), F(51, 62, 73, 84), EXACT);
  /* 2 groups, 2 outputs each: outputs 0, 1 read input 0 (1), outputs 2, 3 read input 1 (2) */
  expect_f(2, COIL_F32, S(1, 4, 1, 1), F(1, 2, 6, 8), EXACT);
}

Test(conv, conv1d)
{
  input_iota("x", COIL_F32, S(1, 1, 5), 1);
  input_f("w", COIL_F32, S(1, 1, 3), F(1, 0, -1));
  input_iota("n", COIL_F32, S(2, 1, 3), 1);
  input_f("u", COIL_F32, S(1, 1, 2), F(1, 1));
  run("%x: f32[1, 1, 5], %w: f32[1, 1, 3], %n: f32[2, 1, 3], %u: f32[1, 1, 2]",
      "%a = aten.convolution.default(%x, %w, None, [1], [1], [1], False, [0], 1);"
      "%b = aten.convolution.default(%x, %w, None, [2], [1], [1], False, [0], 1);"
      "%c = aten.convolution.default(%n, %u, None, [1], [0], [1], False, [0], 1);"
      "return (%a, %b, %c)");
  /* out[o] = x[o-1] - x[o+1] with zeros outside: 0-2, 1-3, 2-4, 3-5, 4-0 */
  expect_f(0, COIL_F32, S(1, 1, 5), F(-2, -2, -2, -2, 4), EXACT);
  expect_f(1, COIL_F32, S(1, 1, 3), F(-2, -2, 4), EXACT);
  expect_f(2, COIL_F32, S(2, 1, 2), F(3, 5, 9, 11), EXACT); /* pairwise sums, per batch */
}

Test(conv, transposed_1d)
{
  /* weight [in, out / groups, k]; input i scatters x[i] * w[k] to out[i * stride - pad + k] */
  input_f("x", COIL_F32, S(1, 1, 3), F(1, 2, 3));
  input_f("w", COIL_F32, S(1, 1, 2), F(1, 10));
  input_f("y", COIL_F32, S(1, 2, 2), F(1, 2, 3, 4));
  input_f("g", COIL_F32, S(2, 1, 1), F(10, 100));
  run("%x: f32[1, 1, 3], %w: f32[1, 1, 2], %y: f32[1, 2, 2], %g: f32[2, 1, 1]",
      "%a = aten.convolution.default(%x, %w, None, [2], [0], [1], True, [1], 1);"
      "%b = aten.convolution.default(%x, %w, None, [1], [0], [1], True, [0], 1);"
      "%c = aten.convolution.default(%x, %w, None, [1], [1], [1], True, [0], 1);"
      "%d = aten.convolution.default(%y, %g, None, [1], [0], [1], True, [0], 2);"
      "return (%a, %b, %c, %d)");
  /* stride 2: size (3-1)*2 + (2-1) + 1 + output_padding 1 = 7: 1, 10, 2, 20, 3, 30, 0 */
  expect_f(0, COIL_F32, S(1, 1, 7), F(1, 10, 2, 20, 3, 30, 0), EXACT);
  /* stride 1: 1, 10 + 2, 20 + 3, 30 */
  expect_f(1, COIL_F32, S(1, 1, 4), F(1, 12, 23, 30), EXACT);
  /* padding 1 drops the first and last: 12, 23 */
  expect_f(2, COIL_F32, S(1, 1, 2), F(12, 23), EXACT);
  /* 2 groups: channel 0 * 10, channel 1 * 100 */
  expect_f(3, COIL_F32, S(1, 2, 2), F(10, 20, 300, 400), EXACT);
}

Test(conv, transposed_2d)
{
  /* stride 2 spreads [[1, 2], [3, 4]] over a 3x3 grid; two output channels with w = 1 and -1,
   * bias 0.5 and 0 (the bias fills the gaps too) */
  input_iota("x", COIL_F32, S(1, 1, 2, 2), 1);
  input_f("w", COIL_F32, S(1, 2, 1, 1), F(1, -1));
  input_f("b", COIL_F32, S(2), F(0.5, 0));
  run1("%x: f32[1, 1, 2, 2], %w: f32[1, 2, 1, 1], %b: f32[2]",
       "aten.convolution.default(%x, %w, %b, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)");
  expect_f(0, COIL_F32, S(1, 2, 3, 3),
           F(1.5, 0.5, 2.5, 0.5, 0.5, 0.5, 3.5, 0.5, 4.5, -1, 0, -2, 0, 0, 0, -3, 0, -4), EXACT);
}

/* ---- pooling ---- */

Test(pool, max_pool2d)
{
  /* windows of 2x2 at stride 2 (the default stride is the kernel):
   *   {1 3 / 4 0} -> 4 at (1,0) = 4;  {2 0 / 1 7} -> 7 at (1,3) = 7;
   *   {0 9 / 3 1} -> 9 at (2,1) = 9;  {9 2 / 5 9} -> the first 9, at (2,2) = 10 */
  input_f("x", COIL_F32, S(1, 1, 4, 4), F(1, 3, 2, 0, 4, 0, 1, 7, 0, 9, 9, 2, 3, 1, 5, 9));
  run("%x: f32[1, 1, 4, 4]",
      "%r = aten.max_pool2d_with_indices.default(%x, [2, 2]); %v = getitem(%r, 0);"
      "%i = getitem(%r, 1); return (%v, %i)");
  expect_f(0, COIL_F32, S(1, 1, 2, 2), F(4, 7, 9, 9), EXACT);
  expect_i(1, COIL_I64, S(1, 1, 2, 2), I(4, 7, 9, 10));
}

Test(pool, max_pool2d_padding_is_minus_infinity)
{
  /* x = -1 .. -9; padding 1 adds -inf around, so the windows are {-1}, {-2 -3}, {-4 / -7},
   * {-5 -6 / -8 -9} */
  input_iota("x", COIL_F32, S(1, 1, 3, 3), 1);
  run("%x: f32[1, 1, 3, 3]",
      "%n = aten.neg.default(%x);"
      "%r = aten.max_pool2d_with_indices.default(%n, [2, 2], [2, 2], [1, 1]); %v = getitem(%r, 0);"
      "%i = getitem(%r, 1); return (%v, %i)");
  expect_f(0, COIL_F32, S(1, 1, 2, 2), F(-1, -2, -4, -5), EXACT);
  expect_i(1, COIL_I64, S(1, 1, 2, 2), I(0, 1, 3, 4));
}

Test(pool, max_pool2d_ceil_dilation_nan)
{
  input_iota("x", COIL_F32, S(1, 1, 3, 3), 1);
  input_f("d", COIL_F32, S(1, 1, 3, 3), F(5, 9, 1, 9, 9, 9, 2, 9, 3));
  input_f("n", COIL_F32, S(1, 1, 1, 5), F(1, NAN, 2, NAN, 0));
  input_f("c", COIL_F32, S(1, 2, 2), F(1, 4, 3, 2));
  run("%x: f32[1, 1, 3, 3], %d: f32[1, 1, 3, 3], %n: f32[1, 1, 1, 5], %c: f32[1, 2, 2]",
      "%a = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2], [0, 0], [1, 1], True);"
      "%b = aten.max_pool2d_with_indices.default(%d, [2, 2], [1, 1], [0, 0], [2, 2]);"
      "%e = aten.max_pool2d_with_indices.default(%n, [1, 5]);"
      "%f = aten.max_pool2d_with_indices.default(%c, 2);"
      "%a0 = getitem(%a, 0); %a1 = getitem(%a, 1); %b0 = getitem(%b, 0); %b1 = getitem(%b, 1);"
      "%e0 = getitem(%e, 0); %e1 = getitem(%e, 1); %f0 = getitem(%f, 0); %f1 = getitem(%f, 1);"
      "return (%a0, %a1, %b0, %b1, %e0, %e1, %f0, %f1)");
  /* ceil_mode: a 2x2 output, the last windows cut short: {1 2 / 4 5}, {3 / 6}, {7 8}, {9} */
  expect_f(0, COIL_F32, S(1, 1, 2, 2), F(5, 6, 8, 9), EXACT);
  expect_i(1, COIL_I64, S(1, 1, 2, 2), I(4, 5, 7, 8));
  /* dilation 2: only the corners 5, 1, 2, 3 are read, not the 9s */
  expect_f(2, COIL_F32, S(1, 1, 1, 1), F(5), EXACT);
  expect_i(3, COIL_I64, S(1, 1, 1, 1), I(0));
  /* a NaN always takes over, so the last NaN's index is reported (as torch's kernels) */
  expect_f(4, COIL_F32, S(1, 1, 1, 1), F(NAN), EXACT);
  expect_i(5, COIL_I64, S(1, 1, 1, 1), I(3));
  /* a 3-D input (C, H, W) and a kernel size given as one int */
  expect_f(6, COIL_F32, S(1, 1, 1), F(4), EXACT);
  expect_i(7, COIL_I64, S(1, 1, 1), I(1));
}

Test(pool, avg_pool2d)
{
  input_iota("x", COIL_F32, S(1, 1, 3, 3), 1);
  run("%x: f32[1, 1, 3, 3]",
      "%a = aten.avg_pool2d.default(%x, [2, 2], [1, 1]);"
      "%b = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [1, 1]);"
      "%c = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [1, 1], False, False);"
      "%d = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [0, 0], True);"
      "%e = aten.avg_pool2d.default(%x, [2, 2], [1, 1], [0, 0], False, True, 2);"
      "return (%a, %b, %c, %d, %e)");
  /* (1+2+4+5)/4, (2+3+5+6)/4, (4+5+7+8)/4, (5+6+8+9)/4 */
  expect_f(0, COIL_F32, S(1, 1, 2, 2), F(3, 4, 6, 7), EXACT);
  /* padding 1, counted: sums 1, 2+3, 4+7, 5+6+8+9 over 4 each */
  expect_f(1, COIL_F32, S(1, 1, 2, 2), F(0.25, 1.25, 2.75, 7), EXACT);
  /* padding not counted: over 1, 2, 2, 4 elements */
  expect_f(2, COIL_F32, S(1, 1, 2, 2), F(1, 2.5, 5.5, 7), EXACT);
  /* ceil_mode: windows past the input count only what they cover: 12/4, 9/2, 15/2, 9/1 */
  expect_f(3, COIL_F32, S(1, 1, 2, 2), F(3, 4.5, 7.5, 9), EXACT);
  /* divisor_override 2: the sums halved */
  expect_f(4, COIL_F32, S(1, 1, 2, 2), F(6, 8, 12, 14), EXACT);
}

Test(pool, avg_pool2d_ceil_mode_with_padding)
{
  /* x = 1..16 in 4x4, kernel 3, stride 2, padding 1, ceil_mode: a 3x3 output. Windows start at
   * -1, 1, 3 and end at min(start + 3, 4 + 1): with padding counted, the divisor is the window
   * clipped to the padded input (9, 9, 6 / 9, 9, 6 / 6, 6, 4); without, the real elements.
   *   sums: 1+2+5+6 = 14, 2+3+4+6+7+8 = 30, 4+8 = 12, 5+6+9+10+13+14 = 57,
   *         99 (6..16 inner 3x3), 8+12+16 = 36, 13+14 = 27, 14+15+16 = 45, 16 */
  input_iota("x", COIL_F32, S(1, 1, 4, 4), 1);
  run("%x: f32[1, 1, 4, 4]",
      "%a = aten.avg_pool2d.default(%x, [3, 3], [2, 2], [1, 1], True, True);"
      "%b = aten.avg_pool2d.default(%x, [3, 3], [2, 2], [1, 1], True, False); return (%a, %b)");
  expect_f(0, COIL_F32, S(1, 1, 3, 3),
           F(14.0 / 9, 30.0 / 9, 2, 57.0 / 9, 11, 6, 4.5, 7.5, 4), TOL);
  expect_f(1, COIL_F32, S(1, 1, 3, 3), F(3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16), EXACT);
}

/* ---- topk ---- */

Test(topk, largest_smallest_ties)
{
  /* ties keep the lower index first. (PyTorch leaves the order of ties unspecified: its CPU
   * and CUDA kernels give [4, 2, 1] here, so a comparison with torch must allow for ties.) */
  input_f("x", COIL_F32, S(5), F(1, 3, 3, 2, 5));
  input_f("y", COIL_F32, S(3, 2), F(1, 6, 5, 2, 3, 4));
  input_f("z", COIL_F32, S(3), F(1, NAN, 5));
  run("%x: f32[5], %y: f32[3, 2], %z: f32[3]",
      "%a = aten.topk.default(%x, 3); %b = aten.topk.default(%x, 3, -1, False);"
      "%c = aten.topk.default(%y, 2, 0); %d = aten.topk.default(%z, 2);"
      "%e = aten.topk.default(%z, 2, largest=False);"
      "%a0 = getitem(%a, 0); %a1 = getitem(%a, 1); %b0 = getitem(%b, 0); %b1 = getitem(%b, 1);"
      "%c0 = getitem(%c, 0); %c1 = getitem(%c, 1); %d0 = getitem(%d, 0); %d1 = getitem(%d, 1);"
      "%e0 = getitem(%e, 0); %e1 = getitem(%e, 1);"
      "return (%a0, %a1, %b0, %b1, %c0, %c1, %d0, %d1, %e0, %e1)");
  expect_f(0, COIL_F32, S(3), F(5, 3, 3), EXACT);
  expect_i(1, COIL_I64, S(3), I(4, 1, 2));
  expect_f(2, COIL_F32, S(3), F(1, 2, 3), EXACT);
  expect_i(3, COIL_I64, S(3), I(0, 3, 1));
  /* along dim 0: column 0 is [1, 5, 3], column 1 is [6, 2, 4] */
  expect_f(4, COIL_F32, S(2, 2), F(5, 6, 3, 4), EXACT);
  expect_i(5, COIL_I64, S(2, 2), I(1, 0, 2, 2));
  /* NaN is the largest value */
  expect_f(6, COIL_F32, S(2), F(NAN, 5), EXACT);
  expect_i(7, COIL_I64, S(2), I(1, 2));
  expect_f(8, COIL_F32, S(2), F(1, 5), EXACT);
  expect_i(9, COIL_I64, S(2), I(0, 2));
}

/* ---- whole graphs: tuples, symbolic sizes, input checks ---- */

Test(graph, getitem_feeds_later_ops)
{
  input_f("x", COIL_F32, S(2, 2), F(1, 4, 3, 2));
  run("%x: f32[2, 2]",
      "%m = aten.max.dim(%x, 1); %v = getitem(%m, 0); %i = getitem(%m, 1);"
      "%s = aten.add.Tensor(%v, %i); return (%s, %i)");
  expect_f(0, COIL_F32, S(2), F(5, 3), EXACT); /* max 4 at 1, max 3 at 0 */
  expect_i(1, COIL_I64, S(2), I(1, 0));
}

Test(graph, symbolic_size_at_three_sizes)
{
  const char *params = "%x: f32[s0, 2], %b: f32[2]";
  const char *body = "%y = aten.add.Tensor(%x, %b); %s = aten.sum.dim_IntList(%y, [1]);"
                     "%v = aten.view.default(%y, [-1]); return (%s, %v)";
  input_iota("x", COIL_F32, S(3, 2), 1);
  input_f("b", COIL_F32, S(2), F(10, 20));
  run(params, body);
  expect_f(0, COIL_F32, S(3), F(33, 37, 41), EXACT);
  expect_f(1, COIL_F32, S(6), F(11, 22, 13, 24, 15, 26), EXACT);

  clear_inputs();
  input_f("x", COIL_F32, S(1, 2), F(5, 6));
  input_f("b", COIL_F32, S(2), F(10, 20));
  run(params, body);
  expect_f(0, COIL_F32, S(1), F(41), EXACT);
  expect_f(1, COIL_F32, S(2), F(15, 26), EXACT);

  clear_inputs();
  input_f("x", COIL_F32, S(0, 2), NULL);
  input_f("b", COIL_F32, S(2), F(10, 20));
  run(params, body);
  output(0, COIL_F32, S(0));
  output(1, COIL_F32, S(0));
}

#define CHECKED_PARAMS "%x: f32[2], %w: f32[2] param"
#define CHECKED_BODY "%y = aten.add.Tensor(%x, %w); return (%y)"

Test(graph, missing_inputs)
{
  input_f("w", COIL_F32, S(2), F(1, 2));
  run_fails(CHECKED_PARAMS, CHECKED_BODY, "test.coil: error: no tensor given for input %x");
  clear_inputs();
  input_f("x", COIL_F32, S(2), F(1, 2));
  run_fails(CHECKED_PARAMS, CHECKED_BODY, "no tensor given for parameter %w");
}

Test(graph, wrong_dtype_rank_or_size)
{
  input_i("x", COIL_I64, S(2), I(1, 2));
  input_f("w", COIL_F32, S(2), F(1, 2));
  run_fails(CHECKED_PARAMS, CHECKED_BODY, "%x: expected f32 of rank 1, got i64 of rank 1");

  clear_inputs();
  input_f("x", COIL_F32, S(2, 1), F(1, 2));
  input_f("w", COIL_F32, S(2), F(1, 2));
  run_fails(CHECKED_PARAMS, CHECKED_BODY, "%x: expected f32 of rank 1, got f32 of rank 2");

  clear_inputs();
  input_f("x", COIL_F32, S(2), F(1, 2));
  input_f("w", COIL_F32, S(3), F(1, 2, 3));
  run_fails(CHECKED_PARAMS, CHECKED_BODY, "%w: size 3 in dimension 0 does not match 2");
}

Test(graph, inconsistent_symbolic_sizes)
{
  input_iota("x", COIL_F32, S(3), 0);
  input_iota("y", COIL_F32, S(4), 0);
  run_fails("%x: f32[s0], %y: f32[s0]", "%z = aten.add.Tensor(%x, %y); return (%z)",
            "%y: size 4 in dimension 0 does not match s0");
}
