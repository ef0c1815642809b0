/* test_interp_exec.c — the interp engine on small Wrapper IR programs built with the builder,
 * checked against hand-computed values: pointwise and broadcast kernels, persistent reductions
 * (softmax over a symbolic number of rows, a layer norm), argmax, dtype rounding (bf16, f16,
 * integer wrap and floor division), views, extern calls (mm, addmm, topk, convolution, pooling,
 * gather, embedding, index), buffer reuse and frees, copy_back, and the error messages of
 * failed asserts, missing symbols, bad lifetimes and out-of-bounds accesses. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "interp.h"

static coil_wir_program *P;
static interp_tensor *outs;
static int nouts;
static coil_diag diag;

static void
setup(void)
{
  P = coil_wir_new("test");
  outs = NULL;
  nouts = 0;
  memset(&diag, 0, sizeof diag);
}

static void
teardown(void)
{
  interp_free_outputs(outs, nouts);
  coil_wir_free(P);
}

TestSuite(interp, .init = setup, .fini = teardown);

/* ---- building programs ---- */

static const coil_sym *
K(int64_t v)
{
  return coil_sym_const(P->sym, v);
}

static const coil_sym *
V(const char *name)
{
  return coil_sym_var(P->sym, name);
}

static const coil_sym *
ADD(const coil_sym *a, const coil_sym *b)
{
  return coil_sym_add(P->sym, a, b);
}

static const coil_sym *
MUL(const coil_sym *a, const coil_sym *b)
{
  return coil_sym_mul(P->sym, a, b);
}

/* A buffer with contiguous strides. */
static int
buffer(const char *name, coil_buf_kind kind, coil_dtype dt, int rank, const coil_sym *const *sizes)
{
  coil_buffer b = {.name = name, .kind = kind, .dtype = dt, .rank = rank, .base = -1};
  for (int i = 0; i < rank; i++)
    b.sizes[i] = sizes[i];
  coil_wir_contiguous(P, rank, sizes, b.strides);
  return coil_wir_add_buffer(P, &b);
}

static int
input(const char *name, const char *label, coil_dtype dt, int rank, const coil_sym *const *sizes)
{
  int b = buffer(name, COIL_BUF_INPUT, dt, rank, sizes);
  coil_wir_add_input(P, b, label, false);
  return b;
}

static void
line(coil_line l)
{
  coil_wir_add_line(P, &l);
}

static int
alloc(const char *name, coil_dtype dt, int rank, const coil_sym *const *sizes)
{
  int b = buffer(name, COIL_BUF_ALLOC, dt, rank, sizes);
  line((coil_line){.kind = COIL_LINE_ALLOC, .buffer = b});
  return b;
}

static void
symbol(const coil_sym *s, int buf, int dim)
{
  line((coil_line){.kind = COIL_LINE_SYMBOL, .sym = s, .buffer = buf, .dim = dim});
}

static void
output(int n, int *bufs)
{
  line((coil_line){.kind = COIL_LINE_OUTPUT, .nargs = n, .args = bufs});
}

static void
free_line(int buf)
{
  line((coil_line){.kind = COIL_LINE_FREE, .buffer = buf});
}

/* A kernel under construction. */
typedef struct kb {
  coil_kernel k;
  coil_kinst insts[64];
  coil_kparam params[8];
} kb;

static void
kb_init(kb *b, const char *name, coil_kernel_kind kind)
{
  memset(b, 0, sizeof *b);
  b->k.name = name;
  b->k.kind = kind;
  b->k.insts = b->insts;
  b->k.params = b->params;
}

static const coil_sym *
kb_x(kb *b, const coil_sym *size)
{
  char name[8];
  snprintf(name, sizeof name, "x%d", b->k.nx);
  b->k.xsize[b->k.nx] = size;
  return b->k.xvars[b->k.nx++] = V(name);
}

static const coil_sym *
kb_r(kb *b, const coil_sym *size)
{
  char name[8];
  snprintf(name, sizeof name, "r%d", b->k.nr);
  b->k.rsize[b->k.nr] = size;
  return b->k.rvars[b->k.nr++] = V(name);
}

static int
kb_param(kb *b, const char *name, coil_dtype dt, bool out)
{
  b->params[b->k.nparams] = (coil_kparam){name, dt, out};
  return b->k.nparams++;
}

static int
I(kb *b, coil_kinst in)
{
  b->insts[b->k.ninsts] = in;
  return b->k.ninsts++;
}

static int
LOAD(kb *b, int param, const coil_sym *idx)
{
  return I(b, (coil_kinst){.op = COIL_KOP_LOAD, .dtype = b->params[param].dtype, .param = param, .index = idx});
}

static int
STORE(kb *b, int param, const coil_sym *idx, int v)
{
  return I(b, (coil_kinst){.op = COIL_KOP_STORE, .dtype = b->insts[v].dtype, .param = param,
                           .index = idx, .args = {v}});
}

static int
CF(kb *b, coil_dtype dt, double f)
{
  return I(b, (coil_kinst){.op = COIL_KOP_CONST, .dtype = dt, .f = f});
}

static int
OP1(kb *b, coil_kop op, int a)
{
  return I(b, (coil_kinst){.op = op, .dtype = op == COIL_KOP_NOT ? COIL_BOOL : b->insts[a].dtype, .args = {a}});
}

static int
OP2(kb *b, coil_kop op, int a, int c)
{
  coil_dtype dt = coil_kop_class_of(op) == COIL_KCLASS_CMP ? COIL_BOOL : b->insts[a].dtype;
  return I(b, (coil_kinst){.op = op, .dtype = dt, .args = {a, c}});
}

static int
CAST(kb *b, coil_dtype dt, int a)
{
  return I(b, (coil_kinst){.op = COIL_KOP_CAST, .dtype = dt, .args = {a}});
}

static int
RED(kb *b, coil_reduction red, int a)
{
  coil_dtype dt = red == COIL_REDUCE_ARGMAX || red == COIL_REDUCE_ARGMIN ? COIL_I64
                  : red == COIL_REDUCE_ANY                             ? COIL_BOOL
                                                                       : b->insts[a].dtype;
  return I(b, (coil_kinst){.op = COIL_KOP_REDUCE, .dtype = dt, .red = red, .args = {a}});
}

static void
call(kb *b, int n, int *bufs)
{
  int k = coil_wir_add_kernel(P, &b->k);
  line((coil_line){.kind = COIL_LINE_KERNEL_CALL, .kernel = k, .nargs = n, .args = bufs});
}

static void
extern_call(const char *op, int nargs, int *args, int nout, int *out, int nxp, coil_xparam *xp)
{
  line((coil_line){.kind = COIL_LINE_EXTERN_CALL, .op = op, .nargs = nargs, .args = args,
                   .nouts = nout, .outs = out, .nxparams = nxp, .xparams = xp});
}

/* ---- running ---- */

static interp_tensor
T(void *data, coil_dtype dt, int rank, const int64_t *sizes)
{
  interp_tensor t = {.data = data, .dtype = dt, .rank = rank};
  int64_t st = 1;
  for (int d = rank - 1; d >= 0; d--) {
    t.sizes[d] = sizes[d];
    t.strides[d] = st;
    st *= sizes[d];
  }
  return t;
}

static int
run(interp_tensor *ins, int n)
{
  interp_free_outputs(outs, nouts);
  outs = NULL;
  nouts = 0;
  memset(&diag, 0, sizeof diag);
  return interp_run(P, ins, n, &outs, &nouts, &diag);
}

static void
run_ok(interp_tensor *ins, int n)
{
  int rc = run(ins, n);
  cr_assert_eq(rc, 0, "interp_run failed: %s", diag.msg);
}

static void
run_fails(interp_tensor *ins, int n, const char *want)
{
  int rc = run(ins, n);
  cr_assert_neq(rc, 0, "interp_run succeeded, expected an error containing \"%s\"", want);
  cr_assert(strstr(diag.msg, want), "message \"%s\" does not contain \"%s\"", diag.msg, want);
  cr_assert_null(outs);
  cr_assert_eq(nouts, 0);
}

static void
expect_f32(int out, int n, const float *want, float tol)
{
  cr_assert_eq(outs[out].dtype, COIL_F32);
  const float *got = outs[out].data;
  for (int i = 0; i < n; i++) {
    if (isnan(want[i]))
      cr_assert(isnan(got[i]), "out%d[%d] = %g, expected nan", out, i, got[i]);
    else
      cr_assert(fabsf(got[i] - want[i]) <= tol, "out%d[%d] = %.9g, expected %.9g", out, i,
                got[i], want[i]);
  }
}

static void
expect_i64(int out, int n, const int64_t *want)
{
  cr_assert_eq(outs[out].dtype, COIL_I64);
  const int64_t *got = outs[out].data;
  for (int i = 0; i < n; i++)
    cr_assert_eq(got[i], want[i], "out%d[%d] = %lld, expected %lld", out, i, (long long)got[i],
                 (long long)want[i]);
}

/* A pointwise kernel out0[x] = op(in0[x]) over n elements, for the dtype tests. */
static int
flat_unary_program(coil_dtype in_dt, int n, kb *b)
{
  const coil_sym *sz[] = {K(n)};
  int a = input("arg0", "a", in_dt, 1, sz);
  kb_init(b, "coil_poi_0", COIL_KERNEL_POINTWISE);
  kb_x(b, K(n));
  kb_param(b, "in0", in_dt, false);
  return a;
}

/* ---- pointwise ---- */

Test(interp, pointwise_add_relu_2d)
{
  const coil_sym *sz[] = {K(2), K(3)};
  int a = input("arg0", "a", COIL_F32, 2, sz), b = input("arg1", "b", COIL_F32, 2, sz);
  int o = alloc("buf0", COIL_F32, 2, sz);
  kb k;
  kb_init(&k, "coil_poi_fused_add_relu_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x0 = kb_x(&k, K(2)), *x1 = kb_x(&k, K(3));
  const coil_sym *idx = ADD(MUL(K(3), x0), x1);
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "in1", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  int s = OP2(&k, COIL_KOP_ADD, LOAD(&k, 0, idx), LOAD(&k, 1, idx));
  STORE(&k, 2, idx, OP1(&k, COIL_KOP_RELU, s));
  call(&k, 3, (int[]){a, b, o});
  output(1, (int[]){o});

  float av[] = {1, -2, 3, -4, 5, -6}, bv[] = {0.5f, 1, -4, 3, -6, 7};
  interp_tensor in[] = {T(av, COIL_F32, 2, (int64_t[]){2, 3}), T(bv, COIL_F32, 2, (int64_t[]){2, 3})};
  run_ok(in, 2);
  cr_assert_eq(nouts, 1);
  cr_assert_eq(outs[0].rank, 2);
  cr_assert_eq(outs[0].sizes[0], 2);
  cr_assert_eq(outs[0].sizes[1], 3);
  cr_assert_eq(outs[0].strides[0], 3);
  expect_f32(0, 6, (float[]){1.5f, 0, 0, 0, 0, 1}, 0);
}

Test(interp, broadcast_load_ignores_a_dimension)
{
  const coil_sym *sz[] = {K(2), K(3)}, *bsz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 2, sz), b = input("arg1", "bias", COIL_F32, 1, bsz);
  int o = alloc("buf0", COIL_F32, 2, sz);
  kb k;
  kb_init(&k, "coil_poi_fused_add_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x0 = kb_x(&k, K(2)), *x1 = kb_x(&k, K(3));
  const coil_sym *idx = ADD(MUL(K(3), x0), x1);
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "in1", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  STORE(&k, 2, idx, OP2(&k, COIL_KOP_ADD, LOAD(&k, 0, idx), LOAD(&k, 1, x1)));
  call(&k, 3, (int[]){a, b, o});
  output(1, (int[]){o});

  float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {10, 20, 30};
  interp_tensor in[] = {T(av, COIL_F32, 2, (int64_t[]){2, 3}), T(bv, COIL_F32, 1, (int64_t[]){3})};
  run_ok(in, 2);
  expect_f32(0, 6, (float[]){11, 22, 33, 14, 25, 36}, 0);
}

Test(interp, where_compare_and_nan_propagating_max)
{
  const coil_sym *sz[] = {K(4)};
  int a = input("arg0", "x", COIL_F32, 1, sz);
  int o1 = alloc("buf0", COIL_F32, 1, sz), o2 = alloc("buf1", COIL_F32, 1, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(4));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  kb_param(&k, "out1", COIL_F32, true);
  int v = LOAD(&k, 0, x), zero = CF(&k, COIL_F32, 0), one = CF(&k, COIL_F32, 1);
  int leaky = OP2(&k, COIL_KOP_MUL, v, CF(&k, COIL_F32, 0.1));
  int w = I(&k, (coil_kinst){.op = COIL_KOP_WHERE, .dtype = COIL_F32,
                             .args = {OP2(&k, COIL_KOP_GT, v, zero), v, leaky}});
  STORE(&k, 1, x, w);
  STORE(&k, 2, x, OP2(&k, COIL_KOP_MAX, v, one));
  call(&k, 3, (int[]){a, o1, o2});
  output(2, (int[]){o1, o2});

  float xv[] = {2, -3, NAN, 0.5f};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){4})};
  run_ok(in, 1);
  expect_f32(0, 4, (float[]){2, (float)(-3 * (double)0.1f), NAN, 0.5f}, 0);
  expect_f32(1, 4, (float[]){2, 1, NAN, 1}, 0);
}

Test(interp, non_affine_index_is_evaluated_per_point)
{
  /* out[x] = in[(x % 2)*3 + x // 2]: a [2, 3] tensor read in transposed order */
  const coil_sym *sz[] = {K(6)};
  int a = input("arg0", "x", COIL_F32, 1, sz), o = alloc("buf0", COIL_F32, 1, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(6));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  const coil_sym *idx = ADD(MUL(K(3), coil_sym_mod(P->sym, x, K(2))), coil_sym_floordiv(P->sym, x, K(2)));
  STORE(&k, 1, x, LOAD(&k, 0, idx));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});

  float xv[] = {0, 1, 2, 3, 4, 5};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){6})};
  run_ok(in, 1);
  expect_f32(0, 6, (float[]){0, 3, 1, 4, 2, 5}, 0);
}

/* ---- reductions ---- */

/* softmax over the last dim of an f32[s0, 4] input, as one persistent kernel */
static void
build_softmax(void)
{
  const coil_sym *s0 = V("s0"), *sz[] = {s0, K(4)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  symbol(s0, a, 0);
  int o = alloc("buf0", COIL_F32, 2, sz);
  kb k;
  kb_init(&k, "coil_per_fused_softmax_0", COIL_KERNEL_PERSISTENT);
  const coil_sym *x = kb_x(&k, s0), *r = kb_r(&k, K(4));
  const coil_sym *idx = ADD(MUL(K(4), x), r);
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  int v = LOAD(&k, 0, idx);
  int e = OP1(&k, COIL_KOP_EXP, OP2(&k, COIL_KOP_SUB, v, RED(&k, COIL_REDUCE_MAX, v)));
  STORE(&k, 1, idx, OP2(&k, COIL_KOP_DIV, e, RED(&k, COIL_REDUCE_SUM, e)));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});
}

Test(interp, persistent_softmax_over_symbolic_rows)
{
  build_softmax();
  const float row[] = {0.0320586f, 0.0871443f, 0.2368828f, 0.6439142f};
  float x2[] = {1, 2, 3, 4, 11, 12, 13, 14};
  interp_tensor in2[] = {T(x2, COIL_F32, 2, (int64_t[]){2, 4})};
  run_ok(in2, 1);
  cr_assert_eq(outs[0].sizes[0], 2);
  expect_f32(0, 4, row, 1e-6f);
  cr_assert_float_eq(((float *)outs[0].data)[7], row[3], 1e-6f);

  float x3[] = {1, 2, 3, 4, 0, 0, 0, 0, -INFINITY, 0, -INFINITY, 0};
  interp_tensor in3[] = {T(x3, COIL_F32, 2, (int64_t[]){3, 4})};
  run_ok(in3, 1);
  cr_assert_eq(outs[0].sizes[0], 3);
  expect_f32(0, 12, (float[]){row[0], row[1], row[2], row[3], 0.25f, 0.25f, 0.25f, 0.25f,
                              0, 0.5f, 0, 0.5f}, 1e-6f);
}

Test(interp, layer_norm_two_reductions_and_epilogue)
{
  const coil_sym *sz[] = {K(2), K(4)}, *rows[] = {K(2)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  int o = alloc("buf0", COIL_F32, 2, sz), m = alloc("buf1", COIL_F32, 1, rows);
  kb k;
  kb_init(&k, "coil_per_fused_layer_norm_0", COIL_KERNEL_PERSISTENT);
  const coil_sym *x = kb_x(&k, K(2)), *r = kb_r(&k, K(4));
  const coil_sym *idx = ADD(MUL(K(4), x), r);
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  kb_param(&k, "out1", COIL_F32, true);
  int v = LOAD(&k, 0, idx), n = CF(&k, COIL_F32, 4);
  int mean = OP2(&k, COIL_KOP_DIV, RED(&k, COIL_REDUCE_SUM, v), n);
  int dev = OP2(&k, COIL_KOP_SUB, v, mean);
  int var = OP2(&k, COIL_KOP_DIV, RED(&k, COIL_REDUCE_SUM, OP2(&k, COIL_KOP_MUL, dev, dev)), n);
  int rstd = OP1(&k, COIL_KOP_RSQRT, OP2(&k, COIL_KOP_ADD, var, CF(&k, COIL_F32, 1e-5)));
  STORE(&k, 1, idx, OP2(&k, COIL_KOP_MUL, dev, rstd));
  STORE(&k, 2, x, mean);
  call(&k, 3, (int[]){a, o, m});
  output(2, (int[]){o, m});

  float xv[] = {1, 2, 3, 4, 2, 2, 2, 2};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 4})};
  run_ok(in, 1);
  float s = (float)(1 / sqrt(1.25 + 1e-5));
  expect_f32(0, 8, (float[]){-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s, 0, 0, 0, 0}, 1e-6f);
  expect_f32(1, 2, (float[]){2.5f, 2}, 0);
}

Test(interp, welford_mean_and_m2)
{
  const coil_sym *sz[] = {K(3), K(4)}, *rows[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  int m = alloc("buf0", COIL_F32, 1, rows), q = alloc("buf1", COIL_F32, 1, rows);
  kb k;
  kb_init(&k, "coil_per_fused_var_mean_0", COIL_KERNEL_PERSISTENT);
  const coil_sym *x = kb_x(&k, K(3)), *r = kb_r(&k, K(4));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  kb_param(&k, "out1", COIL_F32, true);
  int v = LOAD(&k, 0, ADD(MUL(K(4), x), r));
  STORE(&k, 1, x, RED(&k, COIL_REDUCE_WELFORD_MEAN, v));
  STORE(&k, 2, x, RED(&k, COIL_REDUCE_WELFORD_M2, v));
  call(&k, 3, (int[]){a, m, q});
  output(2, (int[]){m, q});

  /* a row far from 0: 1e8 + {1, 2, 3, 4} is exact in f32 only as multiples of 8, so use
   * 4096 + {0.5, 1.5, 2.5, 3.5}: mean 4098, m2 = 2.25 + 0.25 + 0.25 + 2.25 = 5 */
  float xv[] = {1, 2, 3, 4, 4096.5f, 4097.5f, 4098.5f, 4099.5f, -1, -1, -1, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){3, 4})};
  run_ok(in, 1);
  expect_f32(0, 3, (float[]){2.5f, 4098, -1}, 0);
  expect_f32(1, 3, (float[]){5, 5, 0}, 0);
}

Test(interp, argmax_argmin_first_occurrence_and_nan)
{
  const coil_sym *sz[] = {K(2), K(5)}, *rows[] = {K(2)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  int o1 = alloc("buf0", COIL_I64, 1, rows), o2 = alloc("buf1", COIL_I64, 1, rows);
  int o3 = alloc("buf2", COIL_F32, 1, rows);
  kb k;
  kb_init(&k, "coil_red_fused_argmax_0", COIL_KERNEL_REDUCTION);
  const coil_sym *x = kb_x(&k, K(2)), *r = kb_r(&k, K(5));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_I64, true);
  kb_param(&k, "out1", COIL_I64, true);
  kb_param(&k, "out2", COIL_F32, true);
  int v = LOAD(&k, 0, ADD(MUL(K(5), x), r));
  STORE(&k, 1, x, RED(&k, COIL_REDUCE_ARGMAX, v));
  STORE(&k, 2, x, RED(&k, COIL_REDUCE_ARGMIN, v));
  STORE(&k, 3, x, RED(&k, COIL_REDUCE_MAX, v));
  call(&k, 4, (int[]){a, o1, o2, o3});
  output(3, (int[]){o1, o2, o3});

  float xv[] = {1, 5, 0, 5, 0, 0, NAN, 7, NAN, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 5})};
  run_ok(in, 1);
  expect_i64(0, 2, (int64_t[]){1, 1});
  expect_i64(1, 2, (int64_t[]){2, 1});
  expect_f32(2, 2, (float[]){5, NAN}, 0);
}

Test(interp, integer_sum_wraps_and_any)
{
  const coil_sym *sz[] = {K(3)}, *one[] = {K(1)};
  int a = input("arg0", "x", COIL_I32, 1, sz);
  int o1 = alloc("buf0", COIL_I32, 1, one), o2 = alloc("buf1", COIL_BOOL, 1, one);
  kb k;
  kb_init(&k, "coil_red_0", COIL_KERNEL_REDUCTION);
  const coil_sym *x = kb_x(&k, K(1)), *r = kb_r(&k, K(3));
  kb_param(&k, "in0", COIL_I32, false);
  kb_param(&k, "out0", COIL_I32, true);
  kb_param(&k, "out1", COIL_BOOL, true);
  int v = LOAD(&k, 0, r);
  STORE(&k, 1, x, RED(&k, COIL_REDUCE_SUM, v));
  STORE(&k, 2, x, RED(&k, COIL_REDUCE_ANY, OP2(&k, COIL_KOP_LT, v, I(&k, (coil_kinst){
                                                  .op = COIL_KOP_CONST, .dtype = COIL_I32, .i = 0}))));
  call(&k, 3, (int[]){a, o1, o2});
  output(2, (int[]){o1, o2});

  int32_t xv[] = {INT32_MAX, 1, 5};
  interp_tensor in[] = {T(xv, COIL_I32, 1, (int64_t[]){3})};
  run_ok(in, 1);
  cr_assert_eq(((int32_t *)outs[0].data)[0], INT32_MIN + 5);
  cr_assert_eq(((uint8_t *)outs[1].data)[0], 0);
}

/* ---- dtypes ---- */

Test(interp, cast_f32_to_bf16_and_back_rounds_to_nearest_even)
{
  kb k;
  int a = flat_unary_program(COIL_F32, 5, &k);
  const coil_sym *sz[] = {K(5)};
  int o = alloc("buf0", COIL_F32, 1, sz);
  kb_param(&k, "out0", COIL_F32, true);
  const coil_sym *x = k.k.xvars[0];
  STORE(&k, 1, x, CAST(&k, COIL_F32, CAST(&k, COIL_BF16, LOAD(&k, 0, x))));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});

  float xv[] = {1.00390625f, 1.01171875f, 1.0f / 3, -2.5f, NAN};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){5})};
  run_ok(in, 1);
  /* 1 + 2^-8 ties to 1; 1 + 3*2^-8 ties to 1 + 2^-6; 1/3 rounds up to 0.333984375 */
  expect_f32(0, 5, (float[]){1.0f, 1.015625f, 0.333984375f, -2.5f, NAN}, 0);
}

Test(interp, f16_ops_round_each_result)
{
  kb k;
  int a = flat_unary_program(COIL_F16, 3, &k);
  const coil_sym *sz[] = {K(3)};
  int o = alloc("buf0", COIL_F16, 1, sz);
  kb_param(&k, "out0", COIL_F16, true);
  const coil_sym *x = k.k.xvars[0];
  STORE(&k, 1, x, OP2(&k, COIL_KOP_ADD, LOAD(&k, 0, x), CF(&k, COIL_F16, 3)));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});

  /* 2048 + 3 = 2051 ties between 2050 and 2052: even gives 2052; 1 + 3 = 4; 65504 + 3 stays */
  uint16_t xv[] = {coil_f32_to_f16(2048), coil_f32_to_f16(1), coil_f32_to_f16(65504)};
  interp_tensor in[] = {T(xv, COIL_F16, 1, (int64_t[]){3})};
  run_ok(in, 1);
  const uint16_t *got = outs[0].data;
  cr_assert_eq(coil_f16_to_f32(got[0]), 2052.0f);
  cr_assert_eq(coil_f16_to_f32(got[1]), 4.0f);
  cr_assert_eq(coil_f16_to_f32(got[2]), 65504.0f);
}

Test(interp, integer_floordiv_truncdiv_and_wrap)
{
  const coil_sym *sz[] = {K(4)};
  int a = input("arg0", "a", COIL_I32, 1, sz), b = input("arg1", "b", COIL_I32, 1, sz);
  int a8 = input("arg2", "c", COIL_I8, 1, sz);
  int o1 = alloc("buf0", COIL_I32, 1, sz), o2 = alloc("buf1", COIL_I32, 1, sz);
  int o3 = alloc("buf2", COIL_I8, 1, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(4));
  kb_param(&k, "in0", COIL_I32, false);
  kb_param(&k, "in1", COIL_I32, false);
  kb_param(&k, "in2", COIL_I8, false);
  kb_param(&k, "out0", COIL_I32, true);
  kb_param(&k, "out1", COIL_I32, true);
  kb_param(&k, "out2", COIL_I8, true);
  int va = LOAD(&k, 0, x), vb = LOAD(&k, 1, x), vc = LOAD(&k, 2, x);
  STORE(&k, 3, x, OP2(&k, COIL_KOP_FLOORDIV, va, vb));
  STORE(&k, 4, x, OP2(&k, COIL_KOP_TRUNCDIV, va, vb));
  STORE(&k, 5, x, OP2(&k, COIL_KOP_ADD, vc, vc));
  call(&k, 6, (int[]){a, b, a8, o1, o2, o3});
  output(3, (int[]){o1, o2, o3});

  int32_t av[] = {-7, 7, -8, INT32_MIN}, bv[] = {2, -2, 2, -1};
  int8_t cv[] = {100, -100, 64, -1};
  interp_tensor in[] = {T(av, COIL_I32, 1, (int64_t[]){4}), T(bv, COIL_I32, 1, (int64_t[]){4}),
                        T(cv, COIL_I8, 1, (int64_t[]){4})};
  run_ok(in, 3);
  const int32_t *fl = outs[0].data, *tr = outs[1].data;
  const int8_t *w = outs[2].data;
  int32_t want_fl[] = {-4, -4, -4, INT32_MIN}, want_tr[] = {-3, -3, -4, INT32_MIN};
  int8_t want_w[] = {-56, 56, -128, -2};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(fl[i], want_fl[i], "floordiv[%d] = %d", i, fl[i]);
    cr_assert_eq(tr[i], want_tr[i], "truncdiv[%d] = %d", i, tr[i]);
    cr_assert_eq(w[i], want_w[i], "add[%d] = %d", i, w[i]);
  }

  bv[1] = 0;
  run_fails(in, 3, "integer division by zero at x = (1)");
}

/* fmod (1.3) keeps the dividend's sign, INT64_MIN fmod -1 is 0 (C's % traps there), a divisor
 * of 0 fails the run as for floordiv; bitxor; the float forms of fmod and atan2 */
Test(interp, integer_fmod_bitxor_and_float_fmod_atan2)
{
  const coil_sym *sz[] = {K(4)};
  int a = input("arg0", "a", COIL_I64, 1, sz), b = input("arg1", "b", COIL_I64, 1, sz);
  int fa = input("arg2", "fa", COIL_F32, 1, sz), fb = input("arg3", "fb", COIL_F32, 1, sz);
  int o1 = alloc("buf0", COIL_I64, 1, sz), o2 = alloc("buf1", COIL_I64, 1, sz);
  int o3 = alloc("buf2", COIL_F32, 1, sz), o4 = alloc("buf3", COIL_F32, 1, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(4));
  kb_param(&k, "in0", COIL_I64, false);
  kb_param(&k, "in1", COIL_I64, false);
  kb_param(&k, "in2", COIL_F32, false);
  kb_param(&k, "in3", COIL_F32, false);
  kb_param(&k, "out0", COIL_I64, true);
  kb_param(&k, "out1", COIL_I64, true);
  kb_param(&k, "out2", COIL_F32, true);
  kb_param(&k, "out3", COIL_F32, true);
  int va = LOAD(&k, 0, x), vb = LOAD(&k, 1, x), vfa = LOAD(&k, 2, x), vfb = LOAD(&k, 3, x);
  STORE(&k, 4, x, OP2(&k, COIL_KOP_FMOD, va, vb));
  STORE(&k, 5, x, OP2(&k, COIL_KOP_BITXOR, va, vb));
  STORE(&k, 6, x, OP2(&k, COIL_KOP_FMOD, vfa, vfb));
  STORE(&k, 7, x, OP2(&k, COIL_KOP_ATAN2, vfa, vfb));
  call(&k, 8, (int[]){a, b, fa, fb, o1, o2, o3, o4});
  output(4, (int[]){o1, o2, o3, o4});

  int64_t av[] = {-7, 7, -8, INT64_MIN}, bv[] = {2, -2, 3, -1};
  float fav[] = {-7.5f, 7.5f, 1, 0}, fbv[] = {2, -2, 0, -1};
  interp_tensor in[] = {T(av, COIL_I64, 1, (int64_t[]){4}), T(bv, COIL_I64, 1, (int64_t[]){4}),
                        T(fav, COIL_F32, 1, (int64_t[]){4}), T(fbv, COIL_F32, 1, (int64_t[]){4})};
  run_ok(in, 4);
  expect_i64(0, 4, (int64_t[]){-1, 1, -2, 0});
  expect_i64(1, 4, (int64_t[]){-7 ^ 2, 7 ^ -2, -8 ^ 3, INT64_MIN ^ -1});
  expect_f32(2, 4, (float[]){-1.5f, 1.5f, NAN, 0}, 0);
  expect_f32(3, 4, (float[]){atan2f(-7.5f, 2), atan2f(7.5f, -2), atan2f(1, 0), atan2f(0, -1)}, 1e-6f);

  bv[2] = 0;
  run_fails(in, 4, "integer division by zero at x = (2)");
}

/* ---- views and extern calls ---- */

Test(interp, view_then_mm)
{
  const coil_sym *sa[] = {K(4), K(3)}, *sb[] = {K(4), K(2)}, *so[] = {K(3), K(2)};
  int a = input("arg0", "a", COIL_F32, 2, sa), b = input("arg1", "b", COIL_F32, 2, sb);
  /* v0 = arg0.t(): sizes [3, 4], strides [1, 3] */
  coil_buffer vb = {.name = "v0", .kind = COIL_BUF_VIEW, .dtype = COIL_F32, .rank = 2,
                    .sizes = {K(3), K(4)}, .strides = {K(1), K(3)}, .offset = K(0), .base = a};
  int v = coil_wir_add_buffer(P, &vb);
  line((coil_line){.kind = COIL_LINE_VIEW, .buffer = v});
  int o = alloc("buf0", COIL_F32, 2, so);
  extern_call("aten.mm.default", 2, (int[]){v, b}, 1, (int[]){o}, 0, NULL);
  output(2, (int[]){o, v});

  float av[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; /* a.t() = [[1,4,7,10],[2,5,8,11],[3,6,9,12]] */
  float bv[] = {1, 0, 0, 1, 1, 1, 2, -1};
  interp_tensor in[] = {T(av, COIL_F32, 2, (int64_t[]){4, 3}), T(bv, COIL_F32, 2, (int64_t[]){4, 2})};
  run_ok(in, 2);
  expect_f32(0, 6, (float[]){1 + 7 + 20, 4 + 7 - 10, 2 + 8 + 22, 5 + 8 - 11, 3 + 9 + 24, 6 + 9 - 12}, 0);
  /* an output that is a view comes back as a contiguous copy */
  cr_assert_eq(outs[1].strides[0], 4);
  expect_f32(1, 4, (float[]){1, 4, 7, 10}, 0);
}

Test(interp, bmm_through_a_sliced_view)
{
  const coil_sym *sa[] = {K(2), K(2), K(4)}, *sb[] = {K(2), K(3), K(1)}, *so[] = {K(2), K(2), K(1)};
  int a = input("arg0", "a", COIL_F32, 3, sa), b = input("arg1", "b", COIL_F32, 3, sb);
  /* v0 = arg0[:, :, 1:4] */
  coil_buffer vb = {.name = "v0", .kind = COIL_BUF_VIEW, .dtype = COIL_F32, .rank = 3,
                    .sizes = {K(2), K(2), K(3)}, .strides = {K(8), K(4), K(1)}, .offset = K(1),
                    .base = a};
  int v = coil_wir_add_buffer(P, &vb);
  line((coil_line){.kind = COIL_LINE_VIEW, .buffer = v});
  int o = alloc("buf0", COIL_F32, 3, so);
  extern_call("aten.bmm.default", 2, (int[]){v, b}, 1, (int[]){o}, 0, NULL);
  output(1, (int[]){o});

  float av[16], bv[] = {1, 1, 1, 1, 0, -1};
  for (int i = 0; i < 16; i++)
    av[i] = (float)i;
  interp_tensor in[] = {T(av, COIL_F32, 3, (int64_t[]){2, 2, 4}), T(bv, COIL_F32, 3, (int64_t[]){2, 3, 1})};
  run_ok(in, 2);
  /* [1,2,3].[1,1,1], [5,6,7].[1,1,1]; [9,10,11].[1,0,-1], [13,14,15].[1,0,-1] */
  expect_f32(0, 4, (float[]){6, 18, -2, -2}, 0);
}

Test(interp, addmm_with_beta_and_alpha)
{
  const coil_sym *s2[] = {K(2), K(2)}, *s1[] = {K(2)};
  int bias = input("arg0", "bias", COIL_F32, 1, s1);
  int m1 = input("arg1", "m1", COIL_F32, 2, s2), m2 = input("arg2", "m2", COIL_F32, 2, s2);
  int o = alloc("buf0", COIL_F32, 2, s2);
  coil_xparam xp[] = {{.name = "beta", .kind = COIL_XP_FLOAT, .f = 0.5},
                      {.name = "alpha", .kind = COIL_XP_INT, .i = 2}};
  extern_call("aten.addmm.default", 3, (int[]){bias, m1, m2}, 1, (int[]){o}, 2, xp);
  output(1, (int[]){o});

  float bv[] = {10, 20}, av[] = {1, 2, 3, 4}, cv[] = {5, 6, 7, 8};
  interp_tensor in[] = {T(bv, COIL_F32, 1, (int64_t[]){2}), T(av, COIL_F32, 2, (int64_t[]){2, 2}),
                        T(cv, COIL_F32, 2, (int64_t[]){2, 2})};
  run_ok(in, 3);
  /* m1 @ m2 = [[19, 22], [43, 50]]; 2*mm + 0.5*bias */
  expect_f32(0, 4, (float[]){43, 54, 91, 110}, 0);
}

Test(interp, topk_with_multi_output)
{
  const coil_sym *sz[] = {K(2), K(4)}, *so[] = {K(2), K(2)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  int vals = alloc("buf0", COIL_F32, 2, so), idxs = alloc("buf1", COIL_I64, 2, so);
  coil_xparam xp[] = {{.name = "k", .kind = COIL_XP_INT, .i = 2},
                      {.name = "dim", .kind = COIL_XP_INT, .i = -1}};
  extern_call("aten.topk.default", 1, (int[]){a}, 1, (int[]){vals}, 2, xp);
  line((coil_line){.kind = COIL_LINE_MULTI_OUTPUT, .buffer = idxs, .source = vals, .element = 1});
  /* the smallest two as well, with both outputs on the line */
  int v2 = alloc("buf2", COIL_F32, 2, so), i2 = alloc("buf3", COIL_I64, 2, so);
  coil_xparam xs[] = {{.name = "k", .kind = COIL_XP_INT, .i = 2},
                      {.name = "largest", .kind = COIL_XP_BOOL, .i = 0}};
  extern_call("aten.topk.default", 1, (int[]){a}, 2, (int[]){v2, i2}, 2, xs);
  output(4, (int[]){vals, idxs, v2, i2});

  float xv[] = {3, 9, 1, 9, -1, 4, NAN, 2};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 4})};
  run_ok(in, 1);
  cr_assert_eq(nouts, 4);
  expect_f32(0, 4, (float[]){9, 9, NAN, 4}, 0);
  expect_i64(1, 4, (int64_t[]){1, 3, 2, 1});
  expect_f32(2, 4, (float[]){1, 3, -1, 2}, 0);
  expect_i64(3, 4, (int64_t[]){2, 0, 0, 3});
}

Test(interp, multi_output_must_agree_with_the_call)
{
  const coil_sym *sz[] = {K(4)}, *so[] = {K(2)};
  int a = input("arg0", "x", COIL_F32, 1, sz);
  int vals = alloc("buf0", COIL_F32, 1, so), idxs = alloc("buf1", COIL_I64, 1, so);
  coil_xparam xp[] = {{.name = "k", .kind = COIL_XP_INT, .i = 2}};
  extern_call("aten.topk.default", 1, (int[]){a}, 1, (int[]){vals}, 1, xp);
  output(2, (int[]){vals, idxs});
  float xv[] = {3, 9, 1, 9};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){4})};
  run_fails(in, 1, "output 1 of aten.topk.default is neither in the line's outs nor named by a "
                   "multi_output line");
}

Test(interp, convolution_2d_with_bias_and_padding)
{
  const coil_sym *sx[] = {K(1), K(1), K(3), K(3)}, *sw[] = {K(1), K(1), K(2), K(2)};
  const coil_sym *sb[] = {K(1)}, *so[] = {K(1), K(1), K(2), K(2)};
  int x = input("arg0", "x", COIL_F32, 4, sx), w = input("arg1", "w", COIL_F32, 4, sw);
  int b = input("arg2", "b", COIL_F32, 1, sb);
  int o = alloc("buf0", COIL_F32, 4, so), o2 = alloc("buf1", COIL_F32, 4, so);
  int64_t one[] = {1, 1}, zero[] = {0, 0};
  coil_xparam xp[] = {{.name = "stride", .kind = COIL_XP_INTS, .n = 2, .ints = one},
                      {.name = "padding", .kind = COIL_XP_INTS, .n = 2, .ints = zero},
                      {.name = "dilation", .kind = COIL_XP_INTS, .n = 2, .ints = one},
                      {.name = "transposed", .kind = COIL_XP_BOOL, .i = 0},
                      {.name = "groups", .kind = COIL_XP_INT, .i = 1}};
  extern_call("aten.convolution.default", 3, (int[]){x, w, b}, 1, (int[]){o}, 5, xp);
  /* stride 2, padding 1, no bias: out[i][j] = sum over the window at (2i-1, 2j-1); the output
   * is 2x2 too: (3 + 2 - 2) / 2 + 1 = 2 */
  int64_t two[] = {2, 2};
  coil_xparam xq[] = {{.name = "stride", .kind = COIL_XP_INTS, .n = 2, .ints = two},
                      {.name = "padding", .kind = COIL_XP_INT, .i = 1}};
  extern_call("aten.convolution.default", 2, (int[]){x, w}, 1, (int[]){o2}, 2, xq);
  output(2, (int[]){o, o2});

  float xv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wv[] = {1, 0, 0, -1}, bv[] = {0.5f};
  interp_tensor in[] = {T(xv, COIL_F32, 4, (int64_t[]){1, 1, 3, 3}),
                        T(wv, COIL_F32, 4, (int64_t[]){1, 1, 2, 2}), T(bv, COIL_F32, 1, (int64_t[]){1})};
  run_ok(in, 3);
  /* x[i][j] - x[i+1][j+1] = -4 everywhere, plus the bias */
  expect_f32(0, 4, (float[]){-3.5f, -3.5f, -3.5f, -3.5f}, 0);
  /* windows at (-1,-1), (-1,1), (1,-1), (1,1): w[0][0] at the top-left, w[1][1] at bottom-right */
  expect_f32(1, 4, (float[]){-1, -3, -7, 5 - 9}, 0);
}

Test(interp, max_and_avg_pool2d)
{
  const coil_sym *sx[] = {K(1), K(4), K(4)}, *so[] = {K(1), K(2), K(2)};
  int x = input("arg0", "x", COIL_F32, 3, sx);
  int mv = alloc("buf0", COIL_F32, 3, so), mi = alloc("buf1", COIL_I64, 3, so);
  int av = alloc("buf2", COIL_F32, 3, so);
  int64_t two[] = {2, 2};
  coil_xparam xp[] = {{.name = "kernel_size", .kind = COIL_XP_INTS, .n = 2, .ints = two}};
  extern_call("aten.max_pool2d_with_indices.default", 1, (int[]){x}, 2, (int[]){mv, mi}, 1, xp);
  extern_call("aten.avg_pool2d.default", 1, (int[]){x}, 1, (int[]){av}, 1, xp);
  output(3, (int[]){mv, mi, av});

  float xv[] = {1, 2, 5, 6, 3, 4, 8, 7, 0, 0, 1, 1, -1, -2, 1, 1};
  interp_tensor in[] = {T(xv, COIL_F32, 3, (int64_t[]){1, 4, 4})};
  run_ok(in, 1);
  expect_f32(0, 4, (float[]){4, 8, 0, 1}, 0);
  expect_i64(1, 4, (int64_t[]){5, 6, 8, 10});
  expect_f32(2, 4, (float[]){2.5f, 6.5f, -0.75f, 1}, 0);
}

Test(interp, gather_embedding_and_index_with_none)
{
  const coil_sym *s23[] = {K(2), K(3)}, *s22[] = {K(2), K(2)}, *s2[] = {K(2)};
  int x = input("arg0", "x", COIL_F32, 2, s23), ix = input("arg1", "ix", COIL_I64, 2, s22);
  int rows = input("arg2", "rows", COIL_I64, 1, s2);
  int g = alloc("buf0", COIL_F32, 2, s22), e = alloc("buf1", COIL_F32, 2, s23);
  int t = alloc("buf2", COIL_F32, 2, s22), u = alloc("buf3", COIL_F32, 1, s2);
  coil_xparam gd[] = {{.name = "dim", .kind = COIL_XP_INT, .i = 1}};
  extern_call("aten.gather.default", 2, (int[]){x, ix}, 1, (int[]){g}, 1, gd);
  extern_call("aten.embedding.default", 2, (int[]){x, rows}, 1, (int[]){e}, 0, NULL);
  /* x[:, rows]: the first index is None */
  int64_t none0[] = {0};
  coil_xparam nm[] = {{.name = "none_mask", .kind = COIL_XP_INTS, .n = 1, .ints = none0}};
  extern_call("aten.index.Tensor", 2, (int[]){x, rows}, 1, (int[]){t}, 1, nm);
  /* x[rows, rows]: pairs (1, 1) and (0, 0) */
  extern_call("aten.index.Tensor", 3, (int[]){x, rows, rows}, 1, (int[]){u}, 0, NULL);
  output(4, (int[]){g, e, t, u});

  float xv[] = {1, 2, 3, 4, 5, 6};
  int64_t iv[] = {2, 0, 0, 1}, rv[] = {1, 0};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 3}), T(iv, COIL_I64, 2, (int64_t[]){2, 2}),
                        T(rv, COIL_I64, 1, (int64_t[]){2})};
  /* embedding of rows [1, 0] from a 2x3 table gives [[4,5,6],[1,2,3]] */
  run_ok(in, 3);
  expect_f32(0, 4, (float[]){3, 1, 4, 5}, 0);
  expect_f32(1, 6, (float[]){4, 5, 6, 1, 2, 3}, 0);
  expect_f32(2, 4, (float[]){2, 1, 5, 4}, 0);
  expect_f32(3, 2, (float[]){5, 1}, 0);

  iv[0] = 3;
  run_fails(in, 3, "index 3 is out of bounds for size 3");
}

Test(interp, unsupported_extern_is_named)
{
  const coil_sym *sz[] = {K(2)};
  int a = input("arg0", "x", COIL_F32, 1, sz), o = alloc("buf0", COIL_F32, 1, sz);
  extern_call("aten.sort.default", 1, (int[]){a}, 1, (int[]){o}, 0, NULL);
  output(1, (int[]){o});
  float xv[] = {1, 2};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){2})};
  run_fails(in, 1, "extern op aten.sort.default is not supported by interp");
}

/* ---- buffer lifetimes ---- */

/* buf0 = 2*x; buf1 = buf0 + 1; free buf0; buf2 reuses buf0; buf2 = buf1*buf1 */
static int
scale_kernel(coil_kop op, double c, int in, int out, int n)
{
  kb k;
  kb_init(&k, "coil_poi_k", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(n));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  int v = LOAD(&k, 0, x);
  STORE(&k, 1, x, OP2(&k, op, v, op == COIL_KOP_MUL && c == 0 ? v : CF(&k, COIL_F32, c)));
  call(&k, 2, (int[]){in, out});
  return 0;
}

Test(interp, reuse_after_free)
{
  const coil_sym *sz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 1, sz);
  int b0 = alloc("buf0", COIL_F32, 1, sz), b1 = alloc("buf1", COIL_F32, 1, sz);
  scale_kernel(COIL_KOP_MUL, 2, a, b0, 3);
  scale_kernel(COIL_KOP_ADD, 1, b0, b1, 3);
  free_line(b0);
  coil_buffer rb = P->buffers[b0];
  rb.name = "buf2";
  rb.kind = COIL_BUF_REUSE;
  rb.base = b0;
  int b2 = coil_wir_add_buffer(P, &rb);
  line((coil_line){.kind = COIL_LINE_REUSE, .buffer = b2});
  scale_kernel(COIL_KOP_MUL, 0, b1, b2, 3);
  free_line(b1);
  output(1, (int[]){b2});

  float xv[] = {1, 2, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){3})};
  run_ok(in, 1);
  expect_f32(0, 3, (float[]){9, 25, 1}, 0);
}

Test(interp, reuse_of_a_live_buffer_and_use_after_free)
{
  const coil_sym *sz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 1, sz);
  int b0 = alloc("buf0", COIL_F32, 1, sz), b1 = alloc("buf1", COIL_F32, 1, sz);
  scale_kernel(COIL_KOP_MUL, 2, a, b0, 3);
  free_line(b0);
  scale_kernel(COIL_KOP_ADD, 1, b0, b1, 3);
  output(1, (int[]){b1});
  float xv[] = {1, 2, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){3})};
  run_fails(in, 1, "buf0 is used after it was freed");

  coil_wir_free(P);
  setup();
  sz[0] = K(3);
  a = input("arg0", "x", COIL_F32, 1, sz);
  b0 = alloc("buf0", COIL_F32, 1, sz);
  coil_buffer rb = P->buffers[b0];
  rb.name = "buf1";
  rb.kind = COIL_BUF_REUSE;
  rb.base = b0;
  b1 = coil_wir_add_buffer(P, &rb);
  line((coil_line){.kind = COIL_LINE_REUSE, .buffer = b1});
  output(1, (int[]){b1});
  run_fails(in, 1, "buf1 reuses buf0, which is still live");
}

Test(interp, a_view_dies_with_its_base)
{
  const coil_sym *sz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 1, sz), b0 = alloc("buf0", COIL_F32, 1, sz);
  scale_kernel(COIL_KOP_ADD, 1, a, b0, 3);
  coil_buffer vb = {.name = "v0", .kind = COIL_BUF_VIEW, .dtype = COIL_F32, .rank = 1,
                    .sizes = {K(2)}, .strides = {K(1)}, .offset = K(1), .base = b0};
  int v = coil_wir_add_buffer(P, &vb);
  line((coil_line){.kind = COIL_LINE_VIEW, .buffer = v});
  free_line(b0);
  coil_buffer rb = P->buffers[b0];
  rb.name = "buf1";
  rb.kind = COIL_BUF_REUSE;
  rb.base = b0;
  int b1 = coil_wir_add_buffer(P, &rb);
  line((coil_line){.kind = COIL_LINE_REUSE, .buffer = b1}); /* buf0's storage lives on in buf1 */
  output(1, (int[]){v});
  float xv[] = {1, 2, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){3})};
  run_fails(in, 1, "v0 is a view of buf0, which was freed");
}

Test(interp, view_outside_its_storage)
{
  const coil_sym *sz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 1, sz);
  coil_buffer vb = {.name = "v0", .kind = COIL_BUF_VIEW, .dtype = COIL_F32, .rank = 1,
                    .sizes = {K(3)}, .strides = {K(1)}, .offset = K(1), .base = a};
  int v = coil_wir_add_buffer(P, &vb);
  line((coil_line){.kind = COIL_LINE_VIEW, .buffer = v});
  output(1, (int[]){v});
  float xv[] = {1, 2, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){3})};
  run_fails(in, 1, "v0 (offset 1, elements 1..3) reaches outside the storage of arg0");
}

Test(interp, copy_back_writes_the_input)
{
  const coil_sym *sz[] = {K(3)};
  int a = input("arg0", "x", COIL_F32, 1, sz), b0 = alloc("buf0", COIL_F32, 1, sz);
  scale_kernel(COIL_KOP_ADD, 1, a, b0, 3);
  line((coil_line){.kind = COIL_LINE_COPY_BACK, .buffer = a, .source = b0});
  free_line(b0);
  output(0, NULL);
  float xv[] = {1, 2, -1};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){3})};
  run_ok(in, 1);
  cr_assert_eq(nouts, 0);
  cr_assert_eq(xv[0], 2);
  cr_assert_eq(xv[1], 3);
  cr_assert_eq(xv[2], 0);
}

/* ---- guards and errors ---- */

static int
guarded_program(coil_assert_kind kind, int64_t expect, int64_t align)
{
  const coil_sym *s0 = V("s0"), *sz[] = {s0, K(4)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  symbol(s0, a, 0);
  line((coil_line){.kind = COIL_LINE_ASSERT, .buffer = a, .assert_kind = kind,
                   .dim = kind == COIL_ASSERT_SIZE ? 1 : 0, .value = K(expect), .align = align});
  int o = alloc("buf0", COIL_F32, 2, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, MUL(s0, K(4)));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  STORE(&k, 1, x, LOAD(&k, 0, x));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});
  return a;
}

Test(interp, assert_wrong_size)
{
  guarded_program(COIL_ASSERT_SIZE, 4, 0);
  float xv[10] = {0};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 5})};
  run_fails(in, 1, "assert failed: arg0.size(1) == 4, but input 'x' (arg0) has size 5 in dimension 1");
  cr_assert(strstr(diag.msg, "interp: assert on arg0 (line 2)"), "%s", diag.msg);
  in[0] = T(xv, COIL_F32, 2, (int64_t[]){2, 4});
  run_ok(in, 1);
}

Test(interp, assert_wrong_stride)
{
  guarded_program(COIL_ASSERT_STRIDE, 4, 0);
  float xv[10] = {0};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 4})};
  in[0].strides[0] = 5; /* rows padded to 5 */
  run_fails(in, 1, "assert failed: arg0.stride(0) == 4, but input 'x' (arg0) has stride 5");
}

Test(interp, assert_misaligned_pointer)
{
  guarded_program(COIL_ASSERT_ALIGNED, 0, 16);
  alignas(16) float xv[12] = {0};
  interp_tensor in[] = {T(xv + 1, COIL_F32, 2, (int64_t[]){2, 4})};
  run_fails(in, 1, "assert failed: input 'x' (arg0) aligned 16, but its data pointer");
  cr_assert(strstr(diag.msg, "is 4 bytes past a multiple of 16"), "%s", diag.msg);
  in[0].data = xv;
  run_ok(in, 1);
}

Test(interp, missing_symbol_is_named)
{
  const coil_sym *s0 = V("s0"), *sz[] = {s0, K(4)};
  int a = input("arg0", "x", COIL_F32, 2, sz);
  int o = alloc("buf0", COIL_F32, 2, sz); /* no symbol line binds s0 */
  output(1, (int[]){o});
  (void)a;
  float xv[8] = {0};
  interp_tensor in[] = {T(xv, COIL_F32, 2, (int64_t[]){2, 4})};
  run_fails(in, 1, "size symbol 's0' (in size 0 of arg0) is not defined by any symbol line");
}

Test(interp, input_mismatches)
{
  const coil_sym *sz[] = {K(2), K(4)};
  int a = input("arg0", "x", COIL_F32, 2, sz), o = alloc("buf0", COIL_F32, 2, sz);
  (void)a;
  output(1, (int[]){o});
  float xv[8] = {0};
  interp_tensor in[] = {T(xv, COIL_F16, 2, (int64_t[]){2, 4})};
  run_fails(in, 1, "input 'x' (arg0): expected f32 of rank 2, got f16 of rank 2");
  in[0] = T(xv, COIL_F32, 2, (int64_t[]){2, 3});
  run_fails(in, 1, "input 'x' (arg0) has size 3 in dimension 1, the program expects 4");
  run_fails(in, 0, "the program takes 1 inputs, 0 were given");
}

Test(interp, out_of_bounds_load_is_caught)
{
  const coil_sym *sz[] = {K(4)};
  int a = input("arg0", "x", COIL_F32, 1, sz), o = alloc("buf0", COIL_F32, 1, sz);
  kb k;
  kb_init(&k, "coil_poi_0", COIL_KERNEL_POINTWISE);
  const coil_sym *x = kb_x(&k, K(4));
  kb_param(&k, "in0", COIL_F32, false);
  kb_param(&k, "out0", COIL_F32, true);
  STORE(&k, 1, x, LOAD(&k, 0, ADD(x, K(1))));
  call(&k, 2, (int[]){a, o});
  output(1, (int[]){o});
  float xv[4] = {0};
  interp_tensor in[] = {T(xv, COIL_F32, 1, (int64_t[]){4})};
  run_fails(in, 1, "%0 = load: element 4 of in0 (arg0[x0 + 1]) is outside its storage at x = (3)");
}
