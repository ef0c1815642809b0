/* cuda_codegen.c — CUDA C++ for the kernels of a Wrapper IR program, compiled by NVRTC.
 *
 * Each kernel is `extern "C" __global__` under its Wrapper IR name (a profiler shows the names of
 * the dumped source), with the SDK's C-family emitter (coil/coil_sdk.h) printing indices and
 * instructions, so CPU and CUDA read the same loop IR the same way. The structure:
 *
 *   pointwise (no r ranges): the x space flattened; each thread takes elements xindex, striding
 *     by the whole grid (the mask is the loop bound), unravels them into x0, x1, ... and runs the
 *     body;
 *   reduction: one block per x point (striding by the grid); per reduce, every thread folds the
 *     r elements rindex = tid, tid + blockDim, ... of its cone into a private accumulator, then
 *     the block combines them (warp shuffles, one partial per warp in shared memory) and every
 *     thread holds the result; per-r stores run in a last strided r loop; stores of per-x
 *     values are done by thread 0. Welford reductions keep (mean, m2, n) per thread and combine
 *     with Chan's formula; argmax/argmin keep (value, first index).
 *
 * Kernels take their params (pointers) then their size symbols (int64). The launch (cuda_run.c)
 * picks the grid and a block of 32..256 threads (a multiple of 32: the shuffles use full warps). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* The SDK's C helpers, made device functions, plus what NVRTC lacks without system headers, and
 * the block-level reductions. */
static void
prelude(coil_strbuf *b)
{
  coil_strbuf_puts(b,
                   "#ifdef __CUDACC_RTC__ /* NVRTC: no system headers */\n"
                   "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
                   "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
                   "typedef unsigned long long uint64_t;\n"
                   "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n"
                   "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
                   "#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n#define INT8_MIN (-128)\n#define INT8_MAX 127\n"
                   "#define UINT8_MAX 255\n"
                   "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
                   "#else /* nvcc, for reading the dumped kernels.cu */\n#include <stdint.h>\n#include <math.h>\n#endif\n");
  /* the SDK prelude without its #includes, each static inline made a device function */
  const char *s = coil_c_prelude();
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    if (strncmp(s, "#include", 8) != 0) {
      if (strncmp(s, "static inline ", 14) == 0) {
        coil_strbuf_puts(b, "static __device__ __forceinline__ ");
        coil_strbuf_printf(b, "%.*s", (int)(n - 14), s + 14);
      } else {
        coil_strbuf_printf(b, "%.*s", (int)n, s);
      }
    }
    s += n;
  }
  coil_strbuf_puts(
      b,
      "\n/* block reductions: a full-warp shuffle tree, one partial per warp in shared memory, thread 0\n"
      " * folds the partials; every thread returns the result */\n"
      "template <typename T> __device__ __forceinline__ T coil_shfl(T v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }\n"
      "template <> __device__ __forceinline__ bool coil_shfl(bool v, int o) { return __shfl_down_sync(0xffffffffu, (int)v, o) != 0; }\n"
      "template <> __device__ __forceinline__ int8_t coil_shfl(int8_t v, int o) { return (int8_t)__shfl_down_sync(0xffffffffu, (int)v, o); }\n"
      "template <> __device__ __forceinline__ int16_t coil_shfl(int16_t v, int o) { return (int16_t)__shfl_down_sync(0xffffffffu, (int)v, o); }\n"
      "template <> __device__ __forceinline__ uint8_t coil_shfl(uint8_t v, int o) { return (uint8_t)__shfl_down_sync(0xffffffffu, (int)v, o); }\n"
      "template <typename T, typename Op> __device__ __forceinline__ T coil_block_reduce(T v, Op op, void *smem) {\n"
      "  T *s = (T *)smem;\n"
      "  for (int o = 16; o > 0; o >>= 1) v = op(v, coil_shfl(v, o));\n"
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n"
      "  __syncthreads();\n"
      "  if (lane == 0) s[warp] = v;\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) { T a = s[0]; for (int w = 1; w < nw; w++) a = op(a, s[w]); s[0] = a; }\n"
      "  __syncthreads();\n"
      "  return s[0];\n"
      "}\n"
      "struct coil_op_sum { template <typename T> __device__ T operator()(T a, T b) const { return (T)(a + b); } };\n"
      "struct coil_op_prod { template <typename T> __device__ T operator()(T a, T b) const { return (T)(a * b); } };\n"
      "struct coil_op_any { __device__ bool operator()(bool a, bool b) const { return a || b; } };\n"
      "template <typename T> __device__ __forceinline__ T coil_maxv(T a, T b) { return a > b ? a : b; }\n"
      "template <typename T> __device__ __forceinline__ T coil_minv(T a, T b) { return a < b ? a : b; }\n"
      "template <> __device__ __forceinline__ float coil_maxv(float a, float b) { return coil_fmaxf(a, b); }\n"
      "template <> __device__ __forceinline__ float coil_minv(float a, float b) { return coil_fminf(a, b); }\n"
      "template <> __device__ __forceinline__ double coil_maxv(double a, double b) { return coil_fmax(a, b); }\n"
      "template <> __device__ __forceinline__ double coil_minv(double a, double b) { return coil_fmin(a, b); }\n"
      "struct coil_op_max { template <typename T> __device__ T operator()(T a, T b) const { return coil_maxv(a, b); } };\n"
      "struct coil_op_min { template <typename T> __device__ T operator()(T a, T b) const { return coil_minv(a, b); } };\n"
      "/* argmax / argmin: (value, first index); i < 0 means no element yet; NaN wins (torch) */\n"
      "template <typename T> struct coil_arg { T v; long long i; };\n"
      "template <typename T> __device__ __forceinline__ bool coil_isnan(T v) { return v != v; }\n"
      "template <typename T, bool MAX> __device__ __forceinline__ bool coil_arg_better(T a, long long ai, T b, long long bi) {\n"
      "  if (bi < 0) return true; if (ai < 0) return false;\n"
      "  if (coil_isnan(a) || coil_isnan(b)) return coil_isnan(a) && (!coil_isnan(b) || ai < bi);\n"
      "  if (a == b) return ai < bi;\n"
      "  return MAX ? a > b : a < b;\n"
      "}\n"
      "template <typename T, bool MAX> struct coil_op_arg { __device__ coil_arg<T> operator()(coil_arg<T> a, coil_arg<T> b) const {\n"
      "  return coil_arg_better<T, MAX>(a.v, a.i, b.v, b.i) ? a : b; } };\n"
      "template <typename T> __device__ __forceinline__ coil_arg<T> coil_shfl(coil_arg<T> v, int o) {\n"
      "  coil_arg<T> r; r.v = coil_shfl(v.v, o); r.i = __shfl_down_sync(0xffffffffu, v.i, o); return r; }\n"
      "/* Welford: (mean, m2, n), combined by Chan's formula */\n"
      "template <typename T> struct coil_wf { T m, q; long long n; };\n"
      "template <typename T> __device__ __forceinline__ coil_wf<T> coil_shfl(coil_wf<T> v, int o) {\n"
      "  coil_wf<T> r; r.m = coil_shfl(v.m, o); r.q = coil_shfl(v.q, o); r.n = __shfl_down_sync(0xffffffffu, v.n, o); return r; }\n"
      "struct coil_op_wf { template <typename T> __device__ coil_wf<T> operator()(coil_wf<T> a, coil_wf<T> b) const {\n"
      "  if (b.n == 0) return a; if (a.n == 0) return b;\n"
      "  long long t = a.n + b.n; T d = b.m - a.m, f = (T)b.n / (T)t;\n"
      "  coil_wf<T> r; r.m = a.m + d * f; r.q = a.q + b.q + d * d * (T)a.n * f; r.n = t; return r; } };\n\n");
}

typedef struct {
  const coil_wir_program *p;
  const coil_kernel *k;
  coil_strbuf *b;
  bool *per_r;
  bool *done; /* reduces computed with an earlier one (welford pairs) */
  char **names; /* per value: its C name, vN */
} kgen;

static const coil_c_dialect dialect = {NULL};

static void
indent(coil_strbuf *b, int n)
{
  for (int i = 0; i < n; i++)
    coil_strbuf_puts(b, "  ");
}

static const char *
var(const kgen *g, const coil_sym *s)
{
  return coil_sym_var_name(g->p->sym, s->var);
}

/* `const T vI = expr;` or a store, for instruction i (not a reduce). */
static void
emit_inst(kgen *g, int i, int depth)
{
  const coil_kinst *in = &g->k->insts[i];
  coil_strbuf *b = g->b;
  indent(b, depth);
  if (in->op == COIL_KOP_STORE) {
    coil_strbuf idx = {0};
    coil_c_index(g->p, in->index, &idx);
    char v[16];
    snprintf(v, sizeof v, "v%d", in->args[0]);
    coil_c_store(b, g->k->params[in->param].dtype, g->k->params[in->param].name, idx.s, v);
    coil_strbuf_puts(b, "\n");
    coil_strbuf_free(&idx);
    return;
  }
  coil_strbuf_printf(b, "const %s v%d = ", coil_c_compute_type(in->dtype), i);
  coil_c_value(&dialect, g->p, g->k, i, (const char *const *)g->names, b);
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
}

/* Unravels flat index `flat` over sizes into the variables vars (last fastest). */
static void
unravel(kgen *g, const char *flat, int n, const coil_sym *const *vars, const coil_sym *const *sizes, int depth)
{
  coil_strbuf *b = g->b;
  if (n == 0)
    return;
  indent(b, depth);
  coil_strbuf_printf(b, "int64_t %s_rem = %s;\n", flat, flat);
  for (int i = n - 1; i >= 0; i--) {
    indent(b, depth);
    if (i == 0) {
      coil_strbuf_printf(b, "const int64_t %s = %s_rem;\n", var(g, vars[i]), flat);
      break;
    }
    coil_strbuf_printf(b, "const int64_t %s = %s_rem %% (", var(g, vars[i]), flat);
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

/* for (rindex = tid; rindex < rnumel; rindex += blockDim.x) { r0 = ...; */
static void
open_r(kgen *g, int depth)
{
  indent(g->b, depth);
  coil_strbuf_puts(g->b, "for (int64_t rindex = threadIdx.x; rindex < rnumel; rindex += blockDim.x) {\n");
  unravel(g, "rindex", g->k->nr, g->k->rvars, g->k->rsize, depth + 1);
}

static void
emit_cone(kgen *g, const bool *cone, int depth)
{
  for (int j = 0; j < g->k->ninsts; j++)
    if (cone[j])
      emit_inst(g, j, depth);
}

static bool
is_welford(coil_reduction r)
{
  return r == COIL_REDUCE_WELFORD_MEAN || r == COIL_REDUCE_WELFORD_M2;
}

static void
emit_reduce(kgen *g, int i, int depth)
{
  const coil_kernel *k = g->k;
  const coil_kinst *in = &k->insts[i];
  coil_strbuf *b = g->b;
  int a = in->args[0];
  coil_reduction red = in->red;
  const char *T = coil_c_compute_type(k->insts[a].dtype), *R = coil_c_compute_type(in->dtype);
  bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
  mark_cone(g, a, cone);
  indent(b, depth);
  coil_strbuf_printf(b, "/* reduce %s of v%d */\n", coil_reduction_name(red), a);
  indent(b, depth);
  switch (red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "%s acc%d = 0;\n", R, i); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "%s acc%d = 1;\n", R, i); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "bool acc%d = false;\n", i); break;
  case COIL_REDUCE_MAX: case COIL_REDUCE_MIN: { /* from the identity: -inf / +inf, or the int extreme */
    static const char *const lo[] = {[COIL_I64] = "INT64_MIN", [COIL_I32] = "INT32_MIN", [COIL_I16] = "INT16_MIN",
                                     [COIL_I8] = "INT8_MIN", [COIL_U8] = "0", [COIL_BOOL] = "false"};
    static const char *const hi[] = {[COIL_I64] = "INT64_MAX", [COIL_I32] = "INT32_MAX", [COIL_I16] = "INT16_MAX",
                                     [COIL_I8] = "INT8_MAX", [COIL_U8] = "UINT8_MAX", [COIL_BOOL] = "true"};
    bool mx = red == COIL_REDUCE_MAX;
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
  open_r(g, depth);
  emit_cone(g, cone, depth + 1);
  indent(b, depth + 1);
  switch (red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "acc%d = (%s)(acc%d + v%d);\n", i, R, i, a); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "acc%d = (%s)(acc%d * v%d);\n", i, R, i, a); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "acc%d = acc%d || (v%d != 0);\n", i, i, a); break;
  case COIL_REDUCE_MAX: coil_strbuf_printf(b, "acc%d = coil_maxv(acc%d, (%s)v%d);\n", i, i, R, a); break;
  case COIL_REDUCE_MIN: coil_strbuf_printf(b, "acc%d = coil_minv(acc%d, (%s)v%d);\n", i, i, R, a); break;
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "if (coil_arg_better<%s, %s>(v%d, rindex, acc%d.v, acc%d.i)) { acc%d.v = v%d; acc%d.i = rindex; }\n", T,
                       red == COIL_REDUCE_ARGMAX ? "true" : "false", a, i, i, i, a, i);
    break;
  default:
    coil_strbuf_printf(b, "{ acc%d.n++; const %s d = v%d - acc%d.m; acc%d.m += d / (%s)acc%d.n; acc%d.q += d * (v%d - acc%d.m); }\n",
                       i, T, a, i, i, T, i, i, a, i);
    break;
  }
  indent(b, depth);
  coil_strbuf_puts(b, "}\n");
  indent(b, depth);
  switch (red) {
  case COIL_REDUCE_SUM: coil_strbuf_printf(b, "const %s v%d = coil_block_reduce(acc%d, coil_op_sum(), coil_smem);\n", R, i, i); break;
  case COIL_REDUCE_PROD: coil_strbuf_printf(b, "const %s v%d = coil_block_reduce(acc%d, coil_op_prod(), coil_smem);\n", R, i, i); break;
  case COIL_REDUCE_ANY: coil_strbuf_printf(b, "const bool v%d = coil_block_reduce(acc%d, coil_op_any(), coil_smem);\n", i, i); break;
  case COIL_REDUCE_MAX: coil_strbuf_printf(b, "const %s v%d = coil_block_reduce(acc%d, coil_op_max(), coil_smem);\n", R, i, i); break;
  case COIL_REDUCE_MIN: coil_strbuf_printf(b, "const %s v%d = coil_block_reduce(acc%d, coil_op_min(), coil_smem);\n", R, i, i); break;
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN:
    coil_strbuf_printf(b, "const int64_t v%d = coil_block_reduce(acc%d, coil_op_arg<%s, %s>(), coil_smem).i;\n", i, i, T,
                       red == COIL_REDUCE_ARGMAX ? "true" : "false");
    break;
  default:
    coil_strbuf_printf(b, "const coil_wf<%s> wf%d = coil_block_reduce(acc%d, coil_op_wf(), coil_smem);\n", T, i, i);
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
  free(cone);
}

static void
emit_kernel(const coil_wir_program *p, const coil_kernel *k, coil_strbuf *b)
{
  coil_c_set_loop_ranges(p, k);
  kgen g = {p, k, b, calloc((size_t)k->ninsts + 1, sizeof(bool)), calloc((size_t)k->ninsts + 1, sizeof(bool)),
            calloc((size_t)k->ninsts + 1, sizeof(char *))};
  for (int i = 0; i < k->ninsts; i++) {
    g.names[i] = malloc(16);
    snprintf(g.names[i], 16, "v%d", i);
  }
  coil_c_per_r(p, k, g.per_r);
  if (k->source_ops)
    coil_strbuf_printf(b, "/* %s */\n", k->source_ops);
  coil_strbuf_printf(b, "extern \"C\" __global__ void __launch_bounds__(256)\n%s(", k->name);
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(b, "%s%s%s *__restrict__ %s", i ? ", " : "", k->params[i].is_output ? "" : "const ",
                       coil_c_storage_type(k->params[i].dtype), k->params[i].name);
  for (int i = 0; i < k->nsyms; i++)
    coil_strbuf_printf(b, "%sint64_t %s", k->nparams || i ? ", " : "", var(&g, k->syms[i]));
  coil_strbuf_puts(b, ")\n{\n  const int64_t xnumel = ");
  product(&g, k->nx, k->xsize);
  coil_strbuf_puts(b, ";\n");
  if (k->nr == 0) {
    coil_strbuf_puts(b, "  for (int64_t xindex = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; xindex < xnumel;\n"
                        "       xindex += (int64_t)gridDim.x * blockDim.x) {\n");
    unravel(&g, "xindex", k->nx, k->xvars, k->xsize, 2);
    for (int i = 0; i < k->ninsts; i++)
      emit_inst(&g, i, 2);
    coil_strbuf_puts(b, "  }\n}\n\n");
  } else {
    coil_strbuf_puts(b, "  __shared__ __align__(16) unsigned char coil_smem[32 * 32];\n  const int64_t rnumel = ");
    product(&g, k->nr, k->rsize);
    coil_strbuf_puts(b, ";\n  for (int64_t xindex = blockIdx.x; xindex < xnumel; xindex += gridDim.x) {\n");
    unravel(&g, "xindex", k->nx, k->xvars, k->xsize, 2);
    bool any_per_r_store = false;
    for (int i = 0; i < k->ninsts; i++) {
      const coil_kinst *in = &k->insts[i];
      if (in->op == COIL_KOP_REDUCE) {
        if (!g.done[i])
          emit_reduce(&g, i, 2);
      } else if (in->op == COIL_KOP_STORE && g.per_r[i]) {
        any_per_r_store = true;
      } else if (in->op == COIL_KOP_STORE) { /* a per-x value: one thread stores it */
        coil_strbuf_puts(b, "    if (threadIdx.x == 0)\n");
        emit_inst(&g, i, 3);
      } else if (!g.per_r[i]) {
        emit_inst(&g, i, 2);
      }
    }
    if (any_per_r_store) {
      bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
      for (int i = 0; i < k->ninsts; i++)
        if (k->insts[i].op == COIL_KOP_STORE && g.per_r[i])
          mark_cone(&g, k->insts[i].args[0], cone);
      open_r(&g, 2);
      for (int i = 0; i < k->ninsts; i++)
        if (cone[i] || (k->insts[i].op == COIL_KOP_STORE && g.per_r[i]))
          emit_inst(&g, i, 3);
      coil_strbuf_puts(b, "    }\n");
      free(cone);
    }
    coil_strbuf_puts(b, "    __syncthreads();\n  }\n}\n\n");
  }
  for (int i = 0; i < k->ninsts; i++)
    free(g.names[i]);
  free(g.names);
  free(g.per_r);
  free(g.done);
}

void
cuda_kernel_source(const coil_wir_program *p, int k, coil_strbuf *out)
{
  coil_strbuf_printf(out, "/* Generated by the coil cuda plugin from Wrapper IR program %s. */\n", p->name);
  prelude(out);
  emit_kernel(p, &p->kernels[k], out);
}

void
cuda_program_source(const coil_wir_program *p, coil_strbuf *out)
{
  coil_strbuf_printf(out, "/* Generated by the coil cuda plugin from Wrapper IR program %s: every kernel, each\n"
                          " * compiled by NVRTC on its own with the prelude. */\n", p->name);
  prelude(out);
  for (int k = 0; k < p->nkernels; k++)
    emit_kernel(p, &p->kernels[k], out);
}
