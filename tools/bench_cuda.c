/* bench_cuda.c — `coil bench --backend cuda|hip`: the cuda plugin (or hip, on HIP's NVIDIA
 * platform: the same HIP kernels an AMD GPU runs, compiled by NVRTC) on the GPU benchmark graphs of
 * issue [F5], measured the way ../shared/anchors/inductor_baseline.py measures Inductor, so the
 * two print comparable rows in one run (tools/device/cuda_side_by_side.sh runs both):
 *
 *   kernel_ms  median GPU time of one call between two events on the legacy default stream,
 *              L2 flushed before each call by a 256 MiB memset (as triton's do_bench), and
 *              kernel_mean_ms, the mean of the same calls: do_bench returns the mean unless
 *              told otherwise (return_mode = "mean"), so the anchor's times are means. The
 *              plugin's stream is ordered with that stream, so the events bracket its work; the
 *              artifact is loaded with sync = false (a call returns once queued, as Inductor's
 *              do), so the interval holds GPU work only;
 *   GB/s       the graph's minimal traffic (inputs read once, outputs written once) over
 *              kernel_ms, and its share of a 1 GiB device-to-device copy measured here;
 *   call_us    wall time per call of 200 back-to-back calls (plugin option sync = false: a run
 *              returns once queued), then one synchronize: host time per call, or GPU time when
 *              that is larger (Inductor's wall_call_us is measured the same way);
 *   graph      the same two with coil.graph_capture (mode reduce-overhead, CUDA graphs);
 *   compile    core (graph to verified Wrapper IR), cold (the plugin through an empty compile
 *              cache: code generation and NVRTC) plus loading the cubins, and a cache hit
 *              (lookup, hash check, load); --autotune compiles with max-autotune (the cold
 *              time then includes the tuning). --compile-only times these alone, with no GPU (the
 *              plugin's emit-only table still runs NVRTC); CI runs it. Graphs compile as
 *              `coil run --backend cuda` compiles them: what the plugin claims (convolution
 *              through cuDNN where it loads) is a library call; --convolution generated|library
 *              overrides that as [coil] convolution does, --matmul as [coil] matmul does (generated:
 *              every product the core's own loop nest, not cuBLAS).
 *
 * Inputs are standard normal values (a fixed seed), as the anchor's torch.randn, so that both
 * sides compute on data of one distribution (a GEMM's power, and so its clock, depends on its
 * data), uploaded to the GPU once; outputs are
 * preallocated on the GPU, poisoned with NaN before the first run and checked finite after it
 * (every graph here yields finite values), which catches an output left unwritten.
 *
 * libcuda is dlopen'd here for the tool's own allocations and events, as the plugin does for
 * its own: coil itself never links a GPU driver. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <dlfcn.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coil/coil.h"
#include "bench.h"
#include "backend.h"
#include "cache.h"
#include "graph.h"
#include "runtime.h"

/* ---- the little of the driver API the tool needs ---- */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;

static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(int *, int);
  CUresult (*DeviceGetName)(char *, int, int);
  CUresult (*PrimaryCtxRetain)(CUcontext *, int);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)(void);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, void *);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, void *);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, void *);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
} cu;

static const char *
load_cuda(void)
{
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return "libcuda.so.1 not found: this machine has no NVIDIA GPU driver";
#define SYM(f, n)                                                                                  \
  if (!(*(void **)&cu.f = dlsym(h, n)))                                                            \
    return "libcuda.so.1 lacks " n;
  SYM(Init, "cuInit");
  SYM(DeviceGet, "cuDeviceGet");
  SYM(DeviceGetName, "cuDeviceGetName");
  SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(CtxSetCurrent, "cuCtxSetCurrent");
  SYM(CtxSynchronize, "cuCtxSynchronize");
  SYM(MemAlloc, "cuMemAlloc_v2");
  SYM(MemFree, "cuMemFree_v2");
  SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM(MemsetD8Async, "cuMemsetD8Async");
  SYM(EventCreate, "cuEventCreate");
  SYM(EventRecord, "cuEventRecord");
  SYM(EventSynchronize, "cuEventSynchronize");
  SYM(EventElapsedTime, "cuEventElapsedTime");
  SYM(EventDestroy, "cuEventDestroy_v2");
#undef SYM
  return NULL;
}

#define CK(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_) {                                                                                      \
      fprintf(stderr, "coil bench: %s failed (CUDA error %d)\n", #call, r_);                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* ---- the graphs (the sizes of inductor_baseline.py) ---- */

typedef struct {
  const char *name;
  char *text;
  double min_bytes, flops;
  int64_t index_range;       /* i64 inputs: uniform in [0, index_range) (0: 10) */
} gpu_graph;

static char *
fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static char *
fmt(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  size_t n = (size_t)vsnprintf(NULL, 0, f, ap) + 1;
  va_end(ap);
  char *s = malloc(n);
  va_start(ap, f);
  vsnprintf(s, n, f, ap);
  va_end(ap);
  return s;
}

/* Whether name is one of the comma-separated names of list (--only). */
static bool
listed(const char *list, const char *name)
{
  size_t n = strlen(name);
  for (const char *c = list; *c;) {
    size_t k = strcspn(c, ",");
    if (k == n && strncmp(c, name, n) == 0)
      return true;
    c += k + (c[k] == ',');
  }
  return false;
}

static int
make_graphs(gpu_graph *g)
{
  int n = 0;
  g[n++] = (gpu_graph){"pointwise_gelu_affine",
                       fmt("coil 1\ngraph g(%%x: f32[8192, 8192], %%w: f32[8192], %%b: f32[8192]) {\n"
                           "  %%m = aten.mul.Tensor(%%x, %%w)\n  %%a = aten.add.Tensor(%%m, %%b)\n"
                           "  %%y = aten.gelu.default(%%a)\n  return (%%y)\n}\n"),
                       2.0 * 8192 * 8192 * 4, 0, 0};
  g[n++] = (gpu_graph){"softmax_lastdim",
                       fmt("coil 1\ngraph g(%%x: f32[8192, 4096]) {\n  %%y = aten._softmax.default(%%x, -1, False)\n"
                           "  return (%%y)\n}\n"),
                       2.0 * 8192 * 4096 * 4, 0, 0};
  g[n++] = (gpu_graph){"layernorm",
                       fmt("coil 1\ngraph g(%%x: f32[8192, 4096], %%w: f32[4096], %%b: f32[4096]) {\n"
                           "  %%l = aten.native_layer_norm.default(%%x, [4096], %%w, %%b, 1e-05)\n"
                           "  %%y = getitem(%%l, 0)\n  return (%%y)\n}\n"),
                       2.0 * 8192 * 4096 * 4, 0, 0};
  g[n++] = (gpu_graph){"sum_dim1",
                       fmt("coil 1\ngraph g(%%x: f32[16384, 8192]) {\n  %%y = aten.sum.dim_IntList(%%x, [1])\n"
                           "  return (%%y)\n}\n"),
                       16384.0 * 8192 * 4, 0, 0};
  g[n++] = (gpu_graph){"rmsnorm_residual_fp16",
                       fmt("coil 1\ngraph g(%%x: f16[8192, 4096], %%r: f16[8192, 4096], %%w: f16[4096]) {\n"
                           "  %%h = aten.add.Tensor(%%x, %%r)\n  %%hf = aten._to_copy.default(%%h, dtype=f32)\n"
                           "  %%p = aten.pow.Tensor_Scalar(%%hf, 2)\n  %%m = aten.mean.dim(%%p, [-1], True)\n"
                           "  %%e = aten.add.Tensor(%%m, 1e-06)\n  %%s = aten.rsqrt.default(%%e)\n"
                           "  %%n = aten.mul.Tensor(%%h, %%s)\n  %%c = aten._to_copy.default(%%n, dtype=f16)\n"
                           "  %%y = aten.mul.Tensor(%%c, %%w)\n  return (%%y)\n}\n"),
                       3.0 * 8192 * 4096 * 2, 0, 0};
  g[n++] = (gpu_graph){"transpose_copy_f32", /* not in the anchor script: coil alone */
                       fmt("coil 1\ngraph g(%%x: f32[8192, 8192]) {\n  %%t = aten.t.default(%%x)\n"
                           "  %%y = aten.clone.default(%%t, memory_format=contiguous_format)\n  return (%%y)\n}\n"),
                       2.0 * 8192 * 8192 * 4, 0, 0};
  g[n++] = (gpu_graph){"mlp_fp16",
                       fmt("coil 1\ngraph g(%%x: f16[4096, 4096], %%w1: f16[4096, 4096], %%w2: f16[4096, 4096]) {\n"
                           "  %%h = aten.mm.default(%%x, %%w1)\n  %%g = aten.gelu.default(%%h)\n"
                           "  %%y = aten.mm.default(%%g, %%w2)\n  return (%%y)\n}\n"),
                       0, 2.0 * 2 * 4096.0 * 4096 * 4096, 0};
  /* G7 decompose-K: outputs of one or a few GEMM tiles with a long K (not in the anchor script:
   * tools/device/decompose_k.py times PyTorch's side) */
  g[n++] = (gpu_graph){"mm_skinny_k_fp16",
                       fmt("coil 1\ngraph g(%%a: f16[64, 65536], %%b: f16[65536, 64]) {\n"
                           "  %%y = aten.mm.default(%%a, %%b)\n  return (%%y)\n}\n"),
                       0, 2.0 * 64 * 64 * 65536, 0};
  g[n++] = (gpu_graph){"mm_tiny_out_fp16",
                       fmt("coil 1\ngraph g(%%a: f16[16, 262144], %%b: f16[262144, 16]) {\n"
                           "  %%y = aten.mm.default(%%a, %%b)\n  return (%%y)\n}\n"),
                       0, 2.0 * 16 * 16 * 262144, 0};
  g[n++] = (gpu_graph){"mm_skinny_k_f32",
                       fmt("coil 1\ngraph g(%%a: f32[128, 32768], %%b: f32[32768, 128]) {\n"
                           "  %%y = aten.mm.default(%%a, %%b)\n  return (%%y)\n}\n"),
                       0, 2.0 * 128 * 128 * 32768, 0};
  g[n++] = (gpu_graph){"attention_fp16",
                       fmt("coil 1\ngraph g(%%q: f16[8, 16, 1024, 64], %%k: f16[8, 16, 1024, 64], %%v: f16[8, 16, 1024, 64]) {\n"
                           "  %%kt = aten.transpose.int(%%k, -1, -2)\n"
                           "  %%q3 = aten.view.default(%%q, [128, 1024, 64])\n"
                           "  %%k3 = aten.view.default(%%kt, [128, 64, 1024])\n"
                           "  %%s3 = aten.bmm.default(%%q3, %%k3)\n"
                           "  %%s = aten.view.default(%%s3, [8, 16, 1024, 1024])\n"
                           "  %%m = aten.mul.Tensor(%%s, 0.125)\n"
                           "  %%p = aten._softmax.default(%%m, -1, False)\n"
                           "  %%p3 = aten.view.default(%%p, [128, 1024, 1024])\n"
                           "  %%v3 = aten.view.default(%%v, [128, 1024, 64])\n"
                           "  %%o3 = aten.bmm.default(%%p3, %%v3)\n"
                           "  %%o = aten.view.default(%%o3, [8, 16, 1024, 64])\n  return (%%o)\n}\n"),
                       0, 2.0 * 2 * 8 * 16 * 1024.0 * 1024 * 64, 0};
  /* G1: GPT-2's first block input (token + position embeddings, the residual and its layer
   * norm), and a ResNet block (convolution, batch norm, relu, max pool) */
  g[n++] = (gpu_graph){"embedding_layernorm",
                       fmt("coil 1\ngraph g(%%ids: i64[8, 1024], %%wte: f32[50257, 768], %%wpe: f32[1024, 768], "
                           "%%w: f32[768], %%b: f32[768]) {\n"
                           "  %%te = aten.embedding.default(%%wte, %%ids)\n  %%pos = aten.arange.start_step(0, 1024, 1)\n"
                           "  %%pe = aten.embedding.default(%%wpe, %%pos)\n  %%h = aten.add.Tensor(%%te, %%pe)\n"
                           "  %%l = aten.native_layer_norm.default(%%h, [768], %%w, %%b, 1e-05)\n  %%y = getitem(%%l, 0)\n"
                           "  return (%%h, %%y)\n}\n"),
                       8.0 * 1024 * 8 + 8.0 * 1024 * 768 * 4 + 1024.0 * 768 * 4 + 2 * 8.0 * 1024 * 768 * 4, 0, 50257};
  g[n++] = (gpu_graph){"conv_bn_relu_maxpool",
                       fmt("coil 1\ngraph g(%%x: f32[8, 64, 56, 56], %%w: f32[64, 64, 3, 3], %%g: f32[64], %%bb: f32[64], "
                           "%%rm: f32[64], %%rv: f32[64]) {\n"
                           "  %%c = aten.convolution.default(%%x, %%w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
                           "  %%va = aten.abs.default(%%rv)\n"
                           "  %%bn = aten._native_batch_norm_legit_no_training.default(%%c, %%g, %%bb, %%rm, %%va, 0.1, 1e-05)\n"
                           "  %%n = getitem(%%bn, 0)\n  %%r = aten.relu.default(%%n)\n"
                           "  %%mp = aten.max_pool2d_with_indices.default(%%r, [3, 3], [2, 2], [1, 1])\n"
                           "  %%y = getitem(%%mp, 0)\n  return (%%y)\n}\n"),
                       8.0 * 64 * 56 * 56 * 4 + 8.0 * 64 * 28 * 28 * 4, 2.0 * 8 * 64 * 56 * 56 * 64 * 9, 0};
  g[n++] = (gpu_graph){"cumsum_rows", fmt("coil 1\ngraph g(%%x: f32[4096, 4096]) {\n"
                                          "  %%c = aten.cumsum.default(%%x, 1)\n  return (%%c)\n}\n"),
                       2.0 * 4096 * 4096 * 4, 0, 0};
  {
    char body[2048] = "", *w = body;
    const char *x = "%x";
    char prev[16];
    for (int i = 0; i < 10; i++) {
      w += snprintf(w, sizeof body - (size_t)(w - body), "  %%s%d = aten.sin.default(%s)\n  %%m%d = aten.mul.Tensor(%%s%d, 1.01)\n"
                      "  %%a%d = aten.add.Tensor(%%m%d, 0.1)\n", i, x, i, i, i, i);
      snprintf(prev, sizeof prev, "%%a%d", i);
      x = prev;
    }
    g[n++] = (gpu_graph){"small_chain_10ops_1k", fmt("coil 1\ngraph g(%%x: f32[1024]) {\n%s  return (%%a9)\n}\n", body),
                         2.0 * 1024 * 4, 0, 0};
  }
  {
    char body[2048] = "", *w = body;
    for (int i = 0; i < 8; i++) /* x, then each relu, times w */
      w += snprintf(w, sizeof body - (size_t)(w - body), "  %%h%d = aten.mm.default(%%%s%d, %%w)\n  %%r%d = aten.relu.default(%%h%d)\n",
                    i, i ? "r" : "x", i ? i - 1 : 0, i, i);
    g[n++] = (gpu_graph){"small_8mm_64", fmt("coil 1\ngraph g(%%x0: f32[64, 64], %%w: f32[64, 64]) {\n%s  return (%%r7)\n}\n", body),
                         0, 8 * 2.0 * 64 * 64 * 64, 0};
  }
  return n;
}

/* ---- one graph ---- */

typedef struct {
  double core_ms, cold_ms, hit_ms;
  double kernel_ms, call_us, graph_ms, graph_call_us;
  double kernel_mean_ms, graph_mean_ms; /* the means of the calls kernel_ms and graph_ms take the median of */
} result;

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

typedef struct {
  int n;
  CUdeviceptr ptr[16];
  coil_plugin_tensor t[16];
  int64_t sizes[16][COIL_MAX_RANK], strides[16][COIL_MAX_RANK];
  size_t bytes[16];
  coil_dtype dtype[16];
  const coil_plugin_tensor *p[16];
} dev_tensors;

static void
alloc_buffer(dev_tensors *d, const coil_buffer *b, bool random, uint64_t *seed, int64_t index_range)
{
  int i = d->n++;
  int64_t numel = 1, s = 1;
  for (int k = b->rank - 1; k >= 0; k--) {
    coil_sym_is_const(b->sizes[k], &d->sizes[i][k]);
    d->strides[i][k] = s;
    s *= d->sizes[i][k];
  }
  numel = s;
  size_t es = coil_dtype_size(b->dtype), bytes = (size_t)numel * es;
  d->bytes[i] = bytes;
  d->dtype[i] = b->dtype;
  CK(cu.MemAlloc(&d->ptr[i], bytes ? bytes : 16));
  unsigned char *host = malloc(bytes ? bytes : 1);
  for (int64_t e = 0; e < numel; e++) {
    float v = NAN;
    if (random) { /* standard normal (Box-Muller), as the anchor's torch.randn */
      *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
      double u1 = ((double)(*seed >> 40) + 1.0) / 16777217.0;
      *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
      double u2 = (double)(*seed >> 40) / 16777216.0;
      v = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    if (b->dtype == COIL_I64)
      ((int64_t *)host)[e] = random ? (int64_t)(*seed >> 33) % (index_range > 0 ? index_range : 10) : -1;
    else if (b->dtype == COIL_F16)
      ((uint16_t *)host)[e] = coil_f32_to_f16(v);
    else if (b->dtype == COIL_BF16)
      ((uint16_t *)host)[e] = coil_f32_to_bf16(v);
    else
      ((float *)host)[e] = v;
  }
  CK(cu.MemcpyHtoD(d->ptr[i], host, bytes));
  free(host);
  d->t[i] = (coil_plugin_tensor){.struct_size = sizeof d->t[i], .data = (void *)(uintptr_t)d->ptr[i], .dtype = b->dtype,
                                 .rank = b->rank, .sizes = d->sizes[i], .strides = d->strides[i],
                                 .device_type = COIL_DEVICE_CUDA};
  d->p[i] = &d->t[i];
}

/* Whether every element of the device tensor is finite. */
static bool
all_finite(const dev_tensors *d, int i)
{
  unsigned char *h = malloc(d->bytes[i] ? d->bytes[i] : 1);
  CK(cu.MemcpyDtoH(h, d->ptr[i], d->bytes[i]));
  size_t es = coil_dtype_size(d->dtype[i]), n = d->bytes[i] / es;
  bool ok = true;
  for (size_t e = 0; e < n && ok; e++) {
    float v = d->dtype[i] == COIL_F16    ? coil_f16_to_f32(((uint16_t *)h)[e])
              : d->dtype[i] == COIL_BF16 ? coil_bf16_to_f32(((uint16_t *)h)[e])
                                         : ((float *)h)[e];
    ok = isfinite(v);
  }
  free(h);
  return ok;
}

typedef struct {
  const coil_loaded_plugin *lp;
  coil_artifact *art;
  dev_tensors *in, *out;
} runner;

/* A run queued on the legacy default stream, where kernel_ms records its events: as Inductor's
 * kernels run on PyTorch's current stream, and as coil's do when called from PyTorch. On the
 * plugin's own stream each run would wait for the events' stream and the closing event for it
 * (an implicit cross-stream dependency: 2-4 us a call on an H100, 2026-11-27, a 0.97x where
 * the kernels took the same time under Nsight Compute). */
static void
call(const runner *r)
{
  coil_diag d = {0};
  if (coil_plugin_run_stream(r->lp, r->art, r->in->n, r->in->p, r->out->n, r->out->p, true, NULL, &d)) {
    fprintf(stderr, "coil bench: run failed: %s\n", d.msg);
    exit(1);
  }
}

static CUdeviceptr flush_buf;
#define FLUSH_BYTES ((size_t)256 << 20)

/* do_bench's method: per call, flush L2 and bracket the call with events on stream 0; the median
 * (the mean in *mean). */
static double
kernel_ms(const runner *r, double *mean)
{
  double t0 = now();
  int warm = 0;
  while (warm < 3 || now() - t0 < 0.1)
    call(r), warm++;
  double per = (now() - t0) / warm;
  int reps = (int)(0.3 / per);
  reps = reps < 10 ? 10 : reps > 500 ? 500 : reps;
  CUevent *ev = malloc(sizeof *ev * 2 * (size_t)reps);
  for (int i = 0; i < 2 * reps; i++)
    CK(cu.EventCreate(&ev[i], 0));
  for (int i = 0; i < reps; i++) {
    CK(cu.MemsetD8Async(flush_buf, (unsigned char)i, FLUSH_BYTES, NULL));
    CK(cu.EventRecord(ev[2 * i], NULL));
    call(r);
    CK(cu.EventRecord(ev[2 * i + 1], NULL));
  }
  CK(cu.CtxSynchronize());
  double *t = malloc(sizeof *t * (size_t)reps);
  double sum = 0;
  for (int i = 0; i < reps; i++) {
    float ms;
    CK(cu.EventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    t[i] = ms, sum += ms;
  }
  *mean = sum / reps;
  for (int i = 0; i < 2 * reps; i++)
    cu.EventDestroy(ev[i]);
  double m = median(t, reps);
  free(t), free(ev);
  return m;
}

/* Wall time per call of 200 queued calls (the artifact loaded with sync = false), median of 5. */
static double
call_us(const runner *r)
{
  for (int i = 0; i < 20; i++)
    call(r);
  CK(cu.CtxSynchronize());
  double t[5];
  for (int k = 0; k < 5; k++) {
    double t0 = now();
    for (int i = 0; i < 200; i++)
      call(r);
    CK(cu.CtxSynchronize());
    t[k] = (now() - t0) / 200 * 1e6;
  }
  return median(t, 5);
}

static coil_artifact *
load(const coil_loaded_plugin *lp, coil_plugin *inst, const char *dir, const char *sync, const char *graphs)
{
  const char *keys[] = {"sync", "coil.graph_capture"}, *vals[] = {sync, graphs};
  coil_plugin_options o = {.struct_size = sizeof o, .count = 2, .keys = keys, .values = vals};
  coil_artifact *a = NULL;
  coil_diag d = {0};
  if (coil_plugin_load(lp, inst, dir, &o, &a, &d)) {
    fprintf(stderr, "coil bench: load: %s\n", d.msg);
    exit(1);
  }
  return a;
}

/* The plugin's log lines (the algorithm cuDNN was given, a refused graph capture) on stderr. */
static void
bench_log(void *user, const char *plugin, coil_log_level level, const char *message)
{
  (void)user, (void)level;
  fprintf(stderr, "  [%s] %s\n", plugin, message);
}

static bool autotune; /* --autotune: compile with coil.autotune = true (mode max-autotune) */
static const char *backend = "cuda"; /* --backend: cuda, or hip (on HIP's NVIDIA platform here) */
static const char *convolution = "auto"; /* --convolution: [coil] convolution for these compiles */
static const char *attention = "auto";   /* --attention: [coil] attention */
static const char *matmul = "auto";      /* --matmul: [coil] matmul */
static const char *decompose_k = "auto"; /* --decompose-k: [coil] decompose_k */

static int
bench_graph(const gpu_graph *gg, const char *plugin_dir, bool compile_only, result *res)
{
  coil_diag d = {0};
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  char cache[] = "/tmp/coil-bench-gpu-XXXXXX";
  char *entry = NULL;
  coil_cache_outcome oc;
  if (!mkdtemp(cache) || coil_plugin_open(backend, &plugin_dir, 1, &lp, &d) ||
      (coil_plugin_set_log(lp, bench_log, NULL), coil_plugin_create(lp, NULL, &inst, &d))) {
    fprintf(stderr, "coil bench: %s\n", d.msg[0] ? d.msg : "cannot create a temporary directory");
    return -1;
  }
  /* compiled as `coil run --backend cuda` compiles: what the plugin claims (cuDNN's
   * convolution where it loads) becomes a library call, as --convolution says */
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options co = {.fuse = true, .verify = true};
  coil_backend_compile_options(lp, inst, convolution, attention, matmul, claims, &co);
  co.decompose_k = coil_backend_decompose_k(decompose_k);
  double t0 = now();
  coil_graph *g = coil_graph_parse(gg->name, gg->text, strlen(gg->text), &d);
  coil_wir_program *p = g ? coil_compile_graph(g, &co, &d) : NULL;
  res->core_ms = 1e3 * (now() - t0);
  if (!p) {
    fprintf(stderr, "coil bench: %s: %s\n", gg->name, d.msg);
    return -1;
  }
  const char *id = ""; /* a fresh cache: no toolchain to tell apart */
  const char *tk[] = {"coil.autotune"}, *tv[] = {autotune ? "true" : "false"};
  coil_plugin_options copts = {.struct_size = sizeof copts, .count = 1, .keys = tk, .values = tv};
  t0 = now();
  if (coil_cache_get(cache, id, lp, inst, p, &copts, &entry, NULL, &oc, &d)) {
    fprintf(stderr, "coil bench: %s: compile: %s\n", gg->name, d.msg);
    return -1;
  }
  coil_artifact *a = compile_only ? NULL : load(lp, inst, entry, "true", "false");
  res->cold_ms = 1e3 * (now() - t0);
  free(entry);
  t0 = now();
  if (coil_cache_get(cache, id, lp, inst, p, &copts, &entry, NULL, &oc, &d) || oc != COIL_CACHE_HIT) {
    fprintf(stderr, "coil bench: %s: the second compile missed the cache %s\n", gg->name, d.msg);
    return -1;
  }
  coil_artifact *a_async = compile_only ? NULL : load(lp, inst, entry, "false", "false");
  res->hit_ms = 1e3 * (now() - t0);
  if (compile_only) {
    free(entry);
    coil_plugin_destroy(lp, inst);
    coil_plugin_close(lp);
    nftw(cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    coil_wir_free(p);
    coil_graph_free(g);
    return 0;
  }
  coil_artifact *a_graph_async = load(lp, inst, entry, "false", "true");

  dev_tensors in = {0}, out = {0};
  uint64_t seed = 42;
  for (int i = 0; i < p->ninputs; i++)
    alloc_buffer(&in, &p->buffers[p->inputs[i].buffer], true, &seed, gg->index_range);
  const coil_line *ol = &p->lines[p->nlines - 1];
  for (int i = 0; i < ol->nargs; i++)
    alloc_buffer(&out, &p->buffers[ol->args[i]], false, &seed, 0); /* NaN: unwritten shows */
  runner r = {lp, a, &in, &out};
  call(&r);
  for (int i = 0; i < out.n; i++)
    if (!all_finite(&out, i)) {
      fprintf(stderr, "coil bench: %s: output %d has non-finite values (unwritten?)\n", gg->name, i);
      return -1;
    }
  /* GPU times from the unsynchronized artifacts, as Inductor's calls return once queued: a run
   * that synchronizes (and reads the index check back) before returning would put the host's
   * wake-up between the kernel and the closing event */
  r.art = a_async;
  res->kernel_ms = kernel_ms(&r, &res->kernel_mean_ms);
  res->call_us = call_us(&r);
  r.art = a_graph_async;
  res->graph_ms = kernel_ms(&r, &res->graph_mean_ms);
  res->graph_call_us = call_us(&r);

  for (int i = 0; i < in.n; i++)
    cu.MemFree(in.ptr[i]);
  for (int i = 0; i < out.n; i++)
    cu.MemFree(out.ptr[i]);
  coil_plugin_artifact_free(lp, a);
  coil_plugin_artifact_free(lp, a_async);
  coil_plugin_artifact_free(lp, a_graph_async);
  free(entry);
  coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  nftw(cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  coil_wir_free(p);
  coil_graph_free(g);
  return 0;
}

int
coil_bench_cuda(int argc, char **argv, const char *plugin_dir)
{
  const char *json = NULL, *only = NULL;
  bool compile_only = false;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--compile-only") == 0)
      compile_only = true;
    else if (strcmp(argv[i], "--autotune") == 0)
      autotune = true;
    else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--convolution") == 0 && i + 1 < argc &&
             (!strcmp(argv[i + 1], "auto") || !strcmp(argv[i + 1], "generated") || !strcmp(argv[i + 1], "library")))
      convolution = argv[++i];
    else if (strcmp(argv[i], "--attention") == 0 && i + 1 < argc &&
             (!strcmp(argv[i + 1], "auto") || !strcmp(argv[i + 1], "generated") || !strcmp(argv[i + 1], "library")))
      attention = argv[++i];
    else if (strcmp(argv[i], "--matmul") == 0 && i + 1 < argc &&
             (!strcmp(argv[i + 1], "auto") || !strcmp(argv[i + 1], "generated") || !strcmp(argv[i + 1], "library")))
      matmul = argv[++i];
    else if (strcmp(argv[i], "--decompose-k") == 0 && i + 1 < argc &&
             (!strcmp(argv[i + 1], "auto") || !strcmp(argv[i + 1], "off") || atoi(argv[i + 1]) > 1))
      decompose_k = argv[++i];
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc && (!strcmp(argv[i + 1], "cuda") || !strcmp(argv[i + 1], "hip")))
      backend = argv[++i];
    else {
      fprintf(stderr, "coil: usage: coil bench --backend cuda|hip [--compile-only] [--autotune] [--json FILE] [--only NAME[,NAME...]]\n"
                      "       [--convolution auto|generated|library] [--attention auto|generated|library]\n"
                      "       [--matmul auto|generated|library] [--decompose-k auto|off|N]\n");
      return 2;
    }
  }
  gpu_graph graphs[24];
  int n = make_graphs(graphs), rows = 0;
  if (compile_only) { /* no GPU needed: the core and NVRTC, through a fresh cache */
    printf("coil bench --backend %s --compile-only: compile times (core, cold = code generation + %s, cache hit)\n",
           backend, strcmp(backend, "hip") == 0 ? "hiprtc, or NVRTC on the NVIDIA platform" : "NVRTC");
    printf("%-24s %9s %9s %9s\n", "graph", "core_ms", "cold_ms", "hit_ms");
    for (int i = 0; i < n; i++) {
      result res;
      if (only && !listed(only, graphs[i].name))
        continue;
      if (bench_graph(&graphs[i], plugin_dir, true, &res))
        return 1;
      printf("%-24s %9.3f %9.1f %9.3f\n", graphs[i].name, res.core_ms, res.cold_ms, res.hit_ms);
    }
    for (int i = 0; i < n; i++)
      free(graphs[i].text);
    return 0;
  }
  const char *why = load_cuda();
  CUcontext ctx;
  int dev;
  char name[128] = "?";
  if (why || cu.Init(0) || cu.DeviceGet(&dev, 0) || cu.PrimaryCtxRetain(&ctx, dev) || cu.CtxSetCurrent(ctx)) {
    fprintf(stderr, "coil bench: no usable GPU: %s\n", why ? why : "cuInit/cuDeviceGet/context failed");
    return 1;
  }
  cu.DeviceGetName(name, sizeof name, dev);
  CK(cu.MemAlloc(&flush_buf, FLUSH_BYTES));
  /* the copy roofline: 1 GiB device to device, read + written counted (as the anchor script) */
  double copy_gbps;
  {
    CUdeviceptr a, b;
    size_t cn = (size_t)1 << 30;
    CK(cu.MemAlloc(&a, cn));
    CK(cu.MemAlloc(&b, cn));
    CK(cu.MemsetD8Async(a, 1, cn, NULL));
    CUevent e0, e1;
    CK(cu.EventCreate(&e0, 0));
    CK(cu.EventCreate(&e1, 0));
    double t[21];
    for (int i = 0; i < 21; i++) {
      CK(cu.EventRecord(e0, NULL));
      CK(cu.MemcpyDtoDAsync(b, a, cn, NULL));
      CK(cu.EventRecord(e1, NULL));
      CK(cu.EventSynchronize(e1));
      float ms;
      CK(cu.EventElapsedTime(&ms, e0, e1));
      t[i] = ms;
    }
    copy_gbps = 2.0 * (double)cn / (median(t + 1, 20) * 1e-3) / 1e9;
    cu.EventDestroy(e0), cu.EventDestroy(e1);
    cu.MemFree(a), cu.MemFree(b);
  }
  time_t tt = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tt));
  printf("coil bench --backend %s%s: %s, %s, copy %.0f GB/s\n", backend, autotune ? " --autotune (max-autotune)" : "",
         name, date, copy_gbps);
  FILE *jf = json ? fopen(json, "w") : NULL;
  if (json && !jf) {
    fprintf(stderr, "coil bench: cannot write %s\n", json);
    return 1;
  }
  if (jf)
    fprintf(jf, "{\"backend\": \"%s\", \"device\": \"%s\", \"date\": \"%s\", \"copy_GBps\": %.1f, \"rows\": [\n", backend,
            name, date, copy_gbps);
  printf("%-24s %9s %9s %8s %6s %9s %9s %9s %8s %8s %8s\n", "graph", "kernel_ms", "mean_ms", "GB/s", "%copy", "TFLOP/s",
         "call_us", "graph_ms", "g_call_us", "cold_ms", "hit_ms");
  for (int i = 0; i < n; i++) {
    if (only && !listed(only, graphs[i].name))
      continue;
    result res;
    if (bench_graph(&graphs[i], plugin_dir, false, &res))
      return 1;
    double gbps = graphs[i].min_bytes / (res.kernel_ms * 1e-3) / 1e9, tf = graphs[i].flops / (res.kernel_ms * 1e-3) / 1e12;
    printf("%-24s %9.4f %9.4f %8.0f %5.0f%% %9.1f %9.1f %9.4f %8.1f %8.1f %8.2f\n", graphs[i].name, res.kernel_ms,
           res.kernel_mean_ms, gbps, 100 * gbps / copy_gbps, tf, res.call_us, res.graph_ms, res.graph_call_us, res.core_ms + res.cold_ms, res.hit_ms);
    fflush(stdout);
    if (jf)
      fprintf(jf,
              "%s {\"name\": \"%s\", \"kernel_ms\": %.5f, \"kernel_mean_ms\": %.5f, \"GBps\": %.1f, \"tflops\": %.2f, "
              "\"call_us\": %.2f, \"graph_ms\": %.5f, \"graph_mean_ms\": %.5f, \"graph_call_us\": %.2f, "
              "\"core_ms\": %.3f, \"cold_ms\": %.2f, \"hit_ms\": %.3f, \"min_bytes\": %.0f}\n",
              rows++ ? "," : " ", graphs[i].name, res.kernel_ms, res.kernel_mean_ms, gbps, tf, res.call_us, res.graph_ms,
              res.graph_mean_ms, res.graph_call_us, res.core_ms, res.cold_ms, res.hit_ms, graphs[i].min_bytes);
  }
  for (int i = 0; i < n; i++)
    free(graphs[i].text);
  if (jf)
    fprintf(jf, "]}\n"), fclose(jf);
  cu.MemFree(flush_buf);
  return 0;
}
