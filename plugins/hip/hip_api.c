/* hip_api.c — dlopen of hiprtc and the HIP runtime (hip_api.h), on AMD's platform or, as HIP's
 * nvidia_detail headers do, over NVRTC and the CUDA driver. */
#include "hip_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens the first of names found in $ENV/SUB, DFLT/SUB, then the dynamic linker's own path. */
static void *
open_first(const char *env, const char *dflt, const char *sub, const char *const *names, int n, char *path, size_t pn)
{
  const char *home = getenv(env);
  const char *dirs[] = {home && *home ? home : NULL, dflt};
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < n && dirs[d]; i++) {
      snprintf(path, pn, "%s/%s/%s", dirs[d], sub, names[i]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h)
        return h;
    }
  for (int i = 0; i < n; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(path, pn, "%s", names[i]);
      return h;
    }
  }
  return NULL;
}

#define ROCM_OPEN(names, n, path) open_first("COIL_ROCM_HOME", "/opt/rocm", "lib", names, n, path, sizeof path)
#define CUDA_OPEN(names, n, path) open_first("COIL_CUDA_HOME", "/usr/local/cuda", "lib64", names, n, path, sizeof path)

#define SYM(lib, field, name)                                        \
  do {                                                               \
    *(void **)&(lib).field = dlsym(handle, name);                    \
    if (!(lib).field)                                                \
      return "a function is missing from the library: " name;       \
  } while (0)

/* ---- hiprtc: ROCm's, or NVRTC under the same calls ---- */

typedef struct {
  hip_rtc rtc;
  const char *why;
  char path[512];
} rtc_state;

static rtc_state rtcs[2];
static pthread_once_t rtc_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static pthread_mutex_t rtc_mutex = PTHREAD_MUTEX_INITIALIZER; /* the library's state is global too */

/* ROCm 6 has libhiprtc.so.6 of its own; ROCm 5 keeps hiprtc in libamdhip64 */
static const char *
load_amd_rtc(rtc_state *s)
{
  static const char *const names[] = {"libhiprtc.so.6", "libamdhip64.so.5", "libhiprtc.so", "libamdhip64.so"};
  void *handle = ROCM_OPEN(names, 4, s->path);
  if (!handle)
    return "hiprtc not found (looked for libhiprtc.so.6 and libamdhip64.so.5 in $COIL_ROCM_HOME/lib, /opt/rocm/lib "
           "and the library path; Debian 12: apt-get install libamdhip64-dev rocm-device-libs libamd-comgr-dev)";
  SYM(s->rtc, Version, "hiprtcVersion");
  SYM(s->rtc, GetErrorString, "hiprtcGetErrorString");
  SYM(s->rtc, CreateProgram, "hiprtcCreateProgram");
  SYM(s->rtc, CompileProgram, "hiprtcCompileProgram");
  SYM(s->rtc, GetProgramLogSize, "hiprtcGetProgramLogSize");
  SYM(s->rtc, GetProgramLog, "hiprtcGetProgramLog");
  SYM(s->rtc, GetCodeSize, "hiprtcGetCodeSize");
  SYM(s->rtc, GetCode, "hiprtcGetCode");
  SYM(s->rtc, DestroyProgram, "hiprtcDestroyProgram");
  return NULL;
}

/* hipRTC on NVIDIA is NVRTC (nvidia_hiprtc.h): the calls line up one for one, the code is a cubin */
static const char *
load_nvidia_rtc(rtc_state *s)
{
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  void *handle = CUDA_OPEN(names, 3, s->path);
  if (!handle)
    return "NVRTC not found (the NVIDIA platform compiles with it; looked for libnvrtc.so.13/.12 in "
           "$COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64 and the library path)";
  SYM(s->rtc, Version, "nvrtcVersion");
  SYM(s->rtc, GetErrorString, "nvrtcGetErrorString");
  SYM(s->rtc, CreateProgram, "nvrtcCreateProgram");
  SYM(s->rtc, CompileProgram, "nvrtcCompileProgram");
  SYM(s->rtc, GetProgramLogSize, "nvrtcGetProgramLogSize");
  SYM(s->rtc, GetProgramLog, "nvrtcGetProgramLog");
  SYM(s->rtc, GetCodeSize, "nvrtcGetCUBINSize");
  SYM(s->rtc, GetCode, "nvrtcGetCUBIN");
  SYM(s->rtc, DestroyProgram, "nvrtcDestroyProgram");
  return NULL;
}

static void
amd_rtc_init(void)
{
  rtcs[HIP_AMD].why = load_amd_rtc(&rtcs[HIP_AMD]);
  rtcs[HIP_AMD].rtc.path = rtcs[HIP_AMD].path;
}

static void
nvidia_rtc_init(void)
{
  rtcs[HIP_NVIDIA].why = load_nvidia_rtc(&rtcs[HIP_NVIDIA]);
  rtcs[HIP_NVIDIA].rtc.path = rtcs[HIP_NVIDIA].path;
}

const hip_rtc *
hip_rtc_get(hip_platform pf, const char **why)
{
  pthread_once(&rtc_once[pf], pf == HIP_NVIDIA ? nvidia_rtc_init : amd_rtc_init);
  if (rtcs[pf].why && why)
    *why = rtcs[pf].why;
  return rtcs[pf].why ? NULL : &rtcs[pf].rtc;
}

void
hip_rtc_lock(void)
{
  pthread_mutex_lock(&rtc_mutex);
}

void
hip_rtc_unlock(void)
{
  pthread_mutex_unlock(&rtc_mutex);
}

/* ---- the runtime on AMD: libamdhip64's own functions ---- */

typedef struct {
  hip_runtime rt;
  const char *why;
  char path[512];
} rt_state;

static rt_state rts[2];
static pthread_once_t rt_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static const char *const amd_names[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};

static const char *
load_amd(rt_state *s)
{
  void *handle = ROCM_OPEN(amd_names, 3, s->path);
  if (!handle)
    return "the HIP runtime (libamdhip64.so) not found in $COIL_ROCM_HOME/lib, /opt/rocm/lib or the library path";
  hip_runtime *r = &s->rt;
  SYM(*r, Init, "hipInit");
  SYM(*r, GetDeviceCount, "hipGetDeviceCount");
  SYM(*r, SetDevice, "hipSetDevice");
  SYM(*r, GetErrorString, "hipGetErrorString");
  SYM(*r, StreamCreateWithFlags, "hipStreamCreateWithFlags");
  SYM(*r, StreamDestroy, "hipStreamDestroy");
  SYM(*r, StreamSynchronize, "hipStreamSynchronize");
  SYM(*r, StreamWaitEvent, "hipStreamWaitEvent");
  SYM(*r, EventCreate, "hipEventCreate");
  SYM(*r, EventRecord, "hipEventRecord");
  SYM(*r, EventDestroy, "hipEventDestroy");
  SYM(*r, EventSynchronize, "hipEventSynchronize");
  SYM(*r, EventElapsedTime, "hipEventElapsedTime");
  SYM(*r, DeviceSynchronize, "hipDeviceSynchronize");
  SYM(*r, ModuleLoadData, "hipModuleLoadData");
  SYM(*r, ModuleUnload, "hipModuleUnload");
  SYM(*r, ModuleGetFunction, "hipModuleGetFunction");
  SYM(*r, ModuleLaunchKernel, "hipModuleLaunchKernel");
  SYM(*r, Malloc, "hipMalloc");
  SYM(*r, Free, "hipFree");
  SYM(*r, MallocAsync, "hipMallocAsync");
  SYM(*r, FreeAsync, "hipFreeAsync");
  SYM(*r, DeviceGetDefaultMemPool, "hipDeviceGetDefaultMemPool");
  SYM(*r, MemPoolSetAttribute, "hipMemPoolSetAttribute");
  SYM(*r, MemcpyHtoDAsync, "hipMemcpyHtoDAsync");
  SYM(*r, MemcpyDtoHAsync, "hipMemcpyDtoHAsync");
  SYM(*r, MemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  SYM(*r, MemsetD8Async, "hipMemsetD8Async");
  SYM(*r, StreamBeginCapture, "hipStreamBeginCapture");
  SYM(*r, StreamEndCapture, "hipStreamEndCapture");
  SYM(*r, GraphInstantiate, "hipGraphInstantiate");
  SYM(*r, GraphLaunch, "hipGraphLaunch");
  SYM(*r, GraphExecDestroy, "hipGraphExecDestroy");
  SYM(*r, GraphDestroy, "hipGraphDestroy");
  return NULL;
}

/* ---- the runtime on NVIDIA: each HIP call made of the CUDA driver's, as nvidia_detail's
 * inline functions make them of CUDA's runtime (hipError_t is the CUresult then) ---- */

typedef unsigned long long CUdeviceptr;
static struct {
  int (*Init)(unsigned);
  int (*GetErrorString)(int, const char **);
  int (*DeviceGet)(int *, int);
  int (*DeviceGetCount)(int *);
  int (*DeviceGetAttribute)(int *, int, int);
  int (*DevicePrimaryCtxRetain)(void **, int);
  int (*CtxSetCurrent)(void *);
  int (*CtxSynchronize)(void);
  int (*StreamCreate)(hipStream_t *, unsigned);
  int (*StreamDestroy)(hipStream_t);
  int (*StreamSynchronize)(hipStream_t);
  int (*StreamWaitEvent)(hipStream_t, hipEvent_t, unsigned);
  int (*EventCreate)(hipEvent_t *, unsigned);
  int (*EventRecord)(hipEvent_t, hipStream_t);
  int (*EventDestroy)(hipEvent_t);
  int (*EventSynchronize)(hipEvent_t);
  int (*EventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  int (*ModuleLoadData)(hipModule_t *, const void *);
  int (*ModuleUnload)(hipModule_t);
  int (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  int (*LaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, hipStream_t,
                      void **, void **);
  int (*MemAlloc)(CUdeviceptr *, size_t);
  int (*MemFree)(CUdeviceptr);
  int (*MemAllocAsync)(CUdeviceptr *, size_t, hipStream_t);
  int (*MemFreeAsync)(CUdeviceptr, hipStream_t);
  int (*DeviceGetDefaultMemPool)(hipMemPool_t *, int);
  int (*MemPoolSetAttribute)(hipMemPool_t, int, void *);
  int (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, hipStream_t);
  int (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, hipStream_t);
  int (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, hipStream_t);
  int (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, hipStream_t);
  int (*StreamBeginCapture)(hipStream_t, int);
  int (*StreamEndCapture)(hipStream_t, hipGraph_t *);
  int (*GraphInstantiate)(hipGraphExec_t *, hipGraph_t, unsigned long long);
  int (*GraphLaunch)(hipGraphExec_t, hipStream_t);
  int (*GraphExecDestroy)(hipGraphExec_t);
  int (*GraphDestroy)(hipGraph_t);
} cu;

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

static hipError_t
nv_set_device(int device)
{
  int dev;
  void *ctx;
  int r = cu.DeviceGet(&dev, device);
  if (!r)
    r = cu.DevicePrimaryCtxRetain(&ctx, dev); /* retained for the process, as HIP/CUDA's runtime does */
  return r ? r : cu.CtxSetCurrent(ctx);
}
static const char *
nv_error_string(hipError_t e)
{
  const char *s = NULL;
  cu.GetErrorString(e, &s);
  return s ? s : "unknown CUDA error";
}
static hipError_t nv_event_create(hipEvent_t *e) { return cu.EventCreate(e, 0); /* timed, as hipEventCreate's */ }
static hipError_t
nv_malloc(void **p, size_t n)
{
  CUdeviceptr d = 0;
  int r = cu.MemAlloc(&d, n);
  *p = (void *)(uintptr_t)d;
  return r;
}
static hipError_t nv_free(void *p) { return cu.MemFree(DP(p)); }
static hipError_t
nv_malloc_async(void **p, size_t n, hipStream_t s)
{
  CUdeviceptr d = 0;
  int r = cu.MemAllocAsync(&d, n, s);
  *p = (void *)(uintptr_t)d;
  return r;
}
static hipError_t nv_free_async(void *p, hipStream_t s) { return cu.MemFreeAsync(DP(p), s); }
static hipError_t nv_h2d(hipDeviceptr_t d, void *h, size_t n, hipStream_t s) { return cu.MemcpyHtoDAsync(DP(d), h, n, s); }
static hipError_t nv_d2h(void *h, hipDeviceptr_t d, size_t n, hipStream_t s) { return cu.MemcpyDtoHAsync(h, DP(d), n, s); }
static hipError_t nv_d2d(hipDeviceptr_t d, hipDeviceptr_t a, size_t n, hipStream_t s) { return cu.MemcpyDtoDAsync(DP(d), DP(a), n, s); }
static hipError_t nv_memset(hipDeviceptr_t d, unsigned char v, size_t n, hipStream_t s) { return cu.MemsetD8Async(DP(d), v, n, s); }
static hipError_t
nv_graph_instantiate(hipGraphExec_t *e, hipGraph_t g, void *node, char *log, size_t n)
{
  (void)node;
  if (log && n)
    log[0] = 0;
  return cu.GraphInstantiate(e, g, 0);
}

#undef SYM
#define SYM(lib, field, name)                                        \
  do {                                                               \
    *(void **)&(lib).field = dlsym(handle, name);                    \
    if (!(lib).field)                                                \
      return "a function is missing from libcuda: " name;           \
  } while (0)

static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so"};

static const char *
load_nvidia(rt_state *s)
{
  void *handle = CUDA_OPEN(cuda_names, 2, s->path);
  if (!handle)
    return "the CUDA driver (libcuda.so.1) not found: the NVIDIA platform runs on it";
  SYM(cu, Init, "cuInit");
  SYM(cu, GetErrorString, "cuGetErrorString");
  SYM(cu, DeviceGet, "cuDeviceGet");
  SYM(cu, DeviceGetCount, "cuDeviceGetCount");
  SYM(cu, DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(cu, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cu, CtxSetCurrent, "cuCtxSetCurrent");
  SYM(cu, CtxSynchronize, "cuCtxSynchronize");
  SYM(cu, StreamCreate, "cuStreamCreate");
  SYM(cu, StreamDestroy, "cuStreamDestroy_v2");
  SYM(cu, StreamSynchronize, "cuStreamSynchronize");
  SYM(cu, StreamWaitEvent, "cuStreamWaitEvent");
  SYM(cu, EventCreate, "cuEventCreate");
  SYM(cu, EventRecord, "cuEventRecord");
  SYM(cu, EventDestroy, "cuEventDestroy_v2");
  SYM(cu, EventSynchronize, "cuEventSynchronize");
  SYM(cu, EventElapsedTime, "cuEventElapsedTime");
  SYM(cu, ModuleLoadData, "cuModuleLoadData");
  SYM(cu, ModuleUnload, "cuModuleUnload");
  SYM(cu, ModuleGetFunction, "cuModuleGetFunction");
  SYM(cu, LaunchKernel, "cuLaunchKernel");
  SYM(cu, MemAlloc, "cuMemAlloc_v2");
  SYM(cu, MemFree, "cuMemFree_v2");
  SYM(cu, MemAllocAsync, "cuMemAllocAsync");
  SYM(cu, MemFreeAsync, "cuMemFreeAsync");
  SYM(cu, DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
  SYM(cu, MemPoolSetAttribute, "cuMemPoolSetAttribute");
  SYM(cu, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  SYM(cu, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  SYM(cu, MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM(cu, MemsetD8Async, "cuMemsetD8Async");
  SYM(cu, StreamBeginCapture, "cuStreamBeginCapture_v2");
  SYM(cu, StreamEndCapture, "cuStreamEndCapture");
  SYM(cu, GraphInstantiate, "cuGraphInstantiateWithFlags");
  SYM(cu, GraphLaunch, "cuGraphLaunch");
  SYM(cu, GraphExecDestroy, "cuGraphExecDestroy");
  SYM(cu, GraphDestroy, "cuGraphDestroy");
  s->rt = (hip_runtime){
      .Init = cu.Init, .GetDeviceCount = cu.DeviceGetCount, .SetDevice = nv_set_device,
      .GetErrorString = nv_error_string, .StreamCreateWithFlags = cu.StreamCreate, .StreamDestroy = cu.StreamDestroy,
      .StreamSynchronize = cu.StreamSynchronize, .StreamWaitEvent = cu.StreamWaitEvent, .EventCreate = nv_event_create,
      .EventRecord = cu.EventRecord, .EventDestroy = cu.EventDestroy, .EventSynchronize = cu.EventSynchronize,
      .EventElapsedTime = cu.EventElapsedTime, .DeviceSynchronize = cu.CtxSynchronize,
      .ModuleLoadData = cu.ModuleLoadData, .ModuleUnload = cu.ModuleUnload,
      .ModuleGetFunction = cu.ModuleGetFunction, .ModuleLaunchKernel = cu.LaunchKernel, .Malloc = nv_malloc,
      .Free = nv_free, .MallocAsync = nv_malloc_async, .FreeAsync = nv_free_async,
      .DeviceGetDefaultMemPool = cu.DeviceGetDefaultMemPool, .MemPoolSetAttribute = cu.MemPoolSetAttribute,
      .MemcpyHtoDAsync = nv_h2d, .MemcpyDtoHAsync = nv_d2h, .MemcpyDtoDAsync = nv_d2d, .MemsetD8Async = nv_memset,
      .StreamBeginCapture = cu.StreamBeginCapture, .StreamEndCapture = cu.StreamEndCapture,
      .GraphInstantiate = nv_graph_instantiate, .GraphLaunch = cu.GraphLaunch,
      .GraphExecDestroy = cu.GraphExecDestroy, .GraphDestroy = cu.GraphDestroy,
  };
  return NULL;
}

static void
rt_init(hip_platform pf)
{
  rt_state *s = &rts[pf];
  s->why = pf == HIP_NVIDIA ? load_nvidia(s) : load_amd(s);
  s->rt.platform = pf;
  s->rt.path = s->path;
  int n = 0;
  if (!s->why && (s->rt.Init(0) || s->rt.GetDeviceCount(&n)))
    s->why = pf == HIP_NVIDIA ? "the CUDA driver found no usable GPU (cuInit failed)"
                              : "the HIP runtime found no usable AMD GPU (hipInit failed)";
  else if (!s->why && n < 1)
    s->why = "no GPU";
}

static void amd_rt_init(void) { rt_init(HIP_AMD); }
static void nvidia_rt_init(void) { rt_init(HIP_NVIDIA); }

const hip_runtime *
hip_runtime_get(hip_platform pf, const char **why)
{
  pthread_once(&rt_once[pf], pf == HIP_NVIDIA ? nvidia_rt_init : amd_rt_init);
  if (rts[pf].why && why)
    *why = rts[pf].why;
  return rts[pf].why ? NULL : &rts[pf].rt;
}

bool
hip_runtime_present(hip_platform pf)
{
  char path[512];
  if (pf == HIP_AMD && access("/dev/kfd", R_OK | W_OK) != 0)
    return false;
  void *h = pf == HIP_NVIDIA ? CUDA_OPEN(cuda_names, 2, path) : ROCM_OPEN(amd_names, 3, path);
  if (h && pf == HIP_NVIDIA)
    dlclose(h); /* not initialised: safe to close (libamdhip64 is kept: ROCm does not unload cleanly) */
  return h != NULL;
}

void
hip_nvidia_arch(char *arch, size_t n)
{
  const hip_runtime *rt = hip_runtime_get(HIP_NVIDIA, NULL);
  int dev, ma = 0, mi = 0;
  arch[0] = 0;
  if (rt && !cu.DeviceGet(&dev, 0) && !cu.DeviceGetAttribute(&ma, 75, dev) && !cu.DeviceGetAttribute(&mi, 76, dev))
    snprintf(arch, n, "sm_%d%d", ma, mi);
}

int
hip_code_platform(const void *code, size_t n)
{
  const unsigned char *c = code;
  if (n < 20 || c[0] != 0x7f || c[1] != 'E' || c[2] != 'L' || c[3] != 'F')
    return -1;
  unsigned machine = c[5] == 2 ? (unsigned)c[18] << 8 | c[19] : (unsigned)c[18] | (unsigned)c[19] << 8;
  return machine == 224 ? HIP_AMD : machine == 190 ? HIP_NVIDIA : -1; /* EM_AMDGPU, EM_CUDA */
}

/* ---- BLAS: hipBLAS on AMD (its API 2, ROCm 6 and later), cuBLAS on the NVIDIA platform (what
 * hipBLAS's NVIDIA backend calls). The two take the same arguments; the enum values differ and
 * are the table's. hipBLAS 2 exports the API 2 GEMM as hipblasGemmStridedBatchedEx_v2 beside the
 * deprecated one of hipblasDatatype_t; hipBLAS 3 keeps the API 2 one alone, under the plain name.
 * hipBLAS on AMD has not run here (Debian 12 has no hipBLAS, coil's GPU machine is NVIDIA's):
 * hip_run.c checks a loaded BLAS against small products before using it. ---- */

#undef SYM
#define SYM(lib, field, name)                                        \
  do {                                                               \
    *(void **)&(lib).field = dlsym(handle, name);                    \
    if (!(lib).field)                                                \
      return "a function is missing from the BLAS: " name;          \
  } while (0)

static hip_blas blases[2] = {
    /* hipBLAS 2: HIPBLAS_OP_N/T, hipDataType HIP_R_16F/16BF/32F/64F, HIPBLAS_COMPUTE_32F/64F, HIPBLAS_GEMM_DEFAULT */
    [HIP_AMD] = {.op_n = 111, .op_t = 112, .r16f = 2, .r16bf = 14, .r32f = 0, .r64f = 1, .compute32f = 2,
                 .compute64f = 7, .algo_default = 160},
    /* cuBLAS's values */
    [HIP_NVIDIA] = {.op_n = 0, .op_t = 1, .r16f = 2, .r16bf = 14, .r32f = 0, .r64f = 1, .compute32f = 68,
                    .compute64f = 70, .algo_default = -1},
};
static const char *blas_why[2];
static pthread_once_t blas_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static const char *
load_amd_blas(hip_blas *b)
{
  static const char *const names[] = {"libhipblas.so.3", "libhipblas.so.2"};
  char path[512];
  void *handle = ROCM_OPEN(names, 2, path);
  if (!handle)
    return "hipBLAS not found (looked for libhipblas.so.3/.2 in $COIL_ROCM_HOME/lib, /opt/rocm/lib and the library "
           "path; Debian 12 has none)";
  SYM(*b, Create, "hipblasCreate");
  SYM(*b, Destroy, "hipblasDestroy");
  SYM(*b, SetStream, "hipblasSetStream");
  SYM(*b, SetWorkspace, "hipblasSetWorkspace");
  *(void **)&b->GemmStridedBatchedEx = dlsym(handle, "hipblasGemmStridedBatchedEx_v2");
  if (!b->GemmStridedBatchedEx && strstr(path, ".so.2") == NULL) /* hipBLAS 3: the plain name is API 2's */
    SYM(*b, GemmStridedBatchedEx, "hipblasGemmStridedBatchedEx");
  if (!b->GemmStridedBatchedEx)
    return "hipBLAS 2 without hipblasGemmStridedBatchedEx_v2";
  return NULL;
}

static const char *
load_nvidia_blas(hip_blas *b)
{
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  char path[512];
  void *handle = CUDA_OPEN(names, 3, path);
  if (!handle)
    return "cuBLAS not found (looked for libcublas.so.13/.12 in $COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64 and the "
           "library path)";
  SYM(*b, Create, "cublasCreate_v2");
  SYM(*b, Destroy, "cublasDestroy_v2");
  SYM(*b, SetStream, "cublasSetStream_v2");
  SYM(*b, SetWorkspace, "cublasSetWorkspace_v2");
  SYM(*b, GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  return NULL;
}

static void
amd_blas_init(void)
{
  blas_why[HIP_AMD] = load_amd_blas(&blases[HIP_AMD]);
}

static void
nvidia_blas_init(void)
{
  blas_why[HIP_NVIDIA] = load_nvidia_blas(&blases[HIP_NVIDIA]);
}

const hip_blas *
hip_blas_get(hip_platform pf, const char **why)
{
  pthread_once(&blas_once[pf], pf == HIP_AMD ? amd_blas_init : nvidia_blas_init);
  if (blas_why[pf] && why)
    *why = blas_why[pf];
  return blas_why[pf] ? NULL : &blases[pf];
}
