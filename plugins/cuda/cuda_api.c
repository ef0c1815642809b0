/* cuda_api.c — dlopen of NVRTC and the CUDA driver (cuda_api.h). */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Opens the first of names found in $COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64, then the
 * dynamic linker's own path. */
static void *
open_first(const char *const *names, int n, char *path, size_t pn)
{
  const char *home = getenv("COIL_CUDA_HOME");
  const char *dirs[] = {home && *home ? home : NULL, "/usr/local/cuda"};
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < n && dirs[d]; i++) {
      snprintf(path, pn, "%s/lib64/%s", dirs[d], names[i]);
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

#define SYM(lib, field, name)                                        \
  do {                                                               \
    *(void **)&(lib).field = dlsym(handle, name);                    \
    if (!(lib).field)                                                \
      return "a function is missing from the library: " name;       \
  } while (0)

/* ---- NVRTC ---- */

static cuda_nvrtc nvrtc;
static const char *nvrtc_why;
static char nvrtc_path[512];
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

static const char *
load_nvrtc(void)
{
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  void *handle = open_first(names, 3, nvrtc_path, sizeof nvrtc_path);
  if (!handle)
    return "NVRTC not found (looked for libnvrtc.so.13/.12 in $COIL_CUDA_HOME/lib64, "
           "/usr/local/cuda/lib64 and the library path)";
  nvrtc.path = nvrtc_path;
  SYM(nvrtc, Version, "nvrtcVersion");
  SYM(nvrtc, GetErrorString, "nvrtcGetErrorString");
  SYM(nvrtc, CreateProgram, "nvrtcCreateProgram");
  SYM(nvrtc, CompileProgram, "nvrtcCompileProgram");
  SYM(nvrtc, GetProgramLogSize, "nvrtcGetProgramLogSize");
  SYM(nvrtc, GetProgramLog, "nvrtcGetProgramLog");
  SYM(nvrtc, GetCUBINSize, "nvrtcGetCUBINSize");
  SYM(nvrtc, GetCUBIN, "nvrtcGetCUBIN");
  SYM(nvrtc, DestroyProgram, "nvrtcDestroyProgram");
  return NULL;
}

static void
nvrtc_init(void)
{
  nvrtc_why = load_nvrtc();
}

const cuda_nvrtc *
cuda_nvrtc_get(const char **why)
{
  pthread_once(&nvrtc_once, nvrtc_init);
  if (nvrtc_why && why)
    *why = nvrtc_why;
  return nvrtc_why ? NULL : &nvrtc;
}

/* ---- the driver ---- */

static cuda_driver driver;
static const char *driver_why;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static const char *
load_driver(void)
{
  static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
  char path[512];
  void *handle = open_first(names, 2, path, sizeof path);
  if (!handle)
    return "no CUDA driver (libcuda.so.1 not found): this machine has no NVIDIA GPU driver";
  SYM(driver, Init, "cuInit");
  SYM(driver, GetErrorString, "cuGetErrorString");
  SYM(driver, DeviceGet, "cuDeviceGet");
  SYM(driver, DeviceGetCount, "cuDeviceGetCount");
  SYM(driver, DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(driver, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(driver, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  SYM(driver, CtxSetCurrent, "cuCtxSetCurrent");
  SYM(driver, StreamCreate, "cuStreamCreate");
  SYM(driver, StreamDestroy, "cuStreamDestroy_v2");
  SYM(driver, StreamSynchronize, "cuStreamSynchronize");
  SYM(driver, ModuleLoadData, "cuModuleLoadData");
  SYM(driver, ModuleUnload, "cuModuleUnload");
  SYM(driver, ModuleGetFunction, "cuModuleGetFunction");
  SYM(driver, LaunchKernel, "cuLaunchKernel");
  SYM(driver, MemAllocAsync, "cuMemAllocAsync");
  SYM(driver, MemFreeAsync, "cuMemFreeAsync");
  SYM(driver, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  SYM(driver, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  SYM(driver, MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM(driver, MemsetD8Async, "cuMemsetD8Async");
  SYM(driver, MemAlloc, "cuMemAlloc_v2");
  SYM(driver, MemPoolCreate, "cuMemPoolCreate");
  SYM(driver, MemPoolDestroy, "cuMemPoolDestroy");
  SYM(driver, MemPoolSetAttribute, "cuMemPoolSetAttribute");
  SYM(driver, MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
  SYM(driver, MemFree, "cuMemFree_v2");
  SYM(driver, StreamBeginCapture, "cuStreamBeginCapture_v2");
  SYM(driver, StreamEndCapture, "cuStreamEndCapture");
  SYM(driver, GraphInstantiate, "cuGraphInstantiateWithFlags");
  SYM(driver, GraphLaunch, "cuGraphLaunch");
  SYM(driver, GraphExecDestroy, "cuGraphExecDestroy");
  SYM(driver, GraphDestroy, "cuGraphDestroy");
  SYM(driver, EventCreate, "cuEventCreate");
  SYM(driver, EventRecord, "cuEventRecord");
  SYM(driver, EventSynchronize, "cuEventSynchronize");
  SYM(driver, EventElapsedTime, "cuEventElapsedTime");
  SYM(driver, EventDestroy, "cuEventDestroy_v2");
  SYM(driver, ModuleLoad, "cuModuleLoad");
  SYM(driver, StreamWaitEvent, "cuStreamWaitEvent");
  SYM(driver, CtxSynchronize, "cuCtxSynchronize");
  SYM(driver, FuncSetAttribute, "cuFuncSetAttribute");
  *(void **)&driver.TensorMapEncodeTiled = dlsym(handle, "cuTensorMapEncodeTiled"); /* optional */
  int n = 0;
  if (driver.Init(0) != 0 || driver.DeviceGetCount(&n) != 0 || n < 1)
    return "the CUDA driver found no usable GPU (cuInit or cuDeviceGetCount failed)";
  return NULL;
}

static void
driver_init(void)
{
  driver_why = load_driver();
}

int
cuda_driver_present(void)
{
  static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
  char path[512];
  void *h = open_first(names, 2, path, sizeof path);
  if (h)
    dlclose(h); /* not initialised: safe to close */
  return h != NULL;
}

const cuda_driver *
cuda_driver_get(const char **why)
{
  pthread_once(&driver_once, driver_init);
  if (driver_why && why)
    *why = driver_why;
  return driver_why ? NULL : &driver;
}

/* ---- cuBLAS ---- */

static cuda_cublas cublas;
static const char *cublas_why;
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;

static const char *
load_cublas(void)
{
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  char path[512];
  void *handle = open_first(names, 3, path, sizeof path);
  if (!handle)
    return "cuBLAS not found (looked for libcublas.so.13/.12 in $COIL_CUDA_HOME/lib64, "
           "/usr/local/cuda/lib64 and the library path)";
  SYM(cublas, Create, "cublasCreate_v2");
  SYM(cublas, Destroy, "cublasDestroy_v2");
  SYM(cublas, SetStream, "cublasSetStream_v2");
  SYM(cublas, SetWorkspace, "cublasSetWorkspace_v2");
  SYM(cublas, GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  return NULL;
}

static void
cublas_init(void)
{
  cublas_why = load_cublas();
}

const cuda_cublas *
cuda_cublas_get(const char **why)
{
  pthread_once(&cublas_once, cublas_init);
  if (cublas_why && why)
    *why = cublas_why;
  return cublas_why ? NULL : &cublas;
}

/* ---- cuBLASLt ---- */

static cuda_cublaslt cublaslt;
static const char *cublaslt_why;
static pthread_once_t cublaslt_once = PTHREAD_ONCE_INIT;

static const char *
load_cublaslt(void)
{
  static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  char path[512];
  void *handle = open_first(names, 3, path, sizeof path);
  if (!handle)
    return "cuBLASLt not found (looked for libcublasLt.so.13/.12 in $COIL_CUDA_HOME/lib64, "
           "/usr/local/cuda/lib64 and the library path)";
  SYM(cublaslt, Create, "cublasLtCreate");
  SYM(cublaslt, Destroy, "cublasLtDestroy");
  SYM(cublaslt, DescCreate, "cublasLtMatmulDescCreate");
  SYM(cublaslt, DescDestroy, "cublasLtMatmulDescDestroy");
  SYM(cublaslt, DescSetAttribute, "cublasLtMatmulDescSetAttribute");
  SYM(cublaslt, LayoutCreate, "cublasLtMatrixLayoutCreate");
  SYM(cublaslt, LayoutDestroy, "cublasLtMatrixLayoutDestroy");
  SYM(cublaslt, LayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  SYM(cublaslt, PrefCreate, "cublasLtMatmulPreferenceCreate");
  SYM(cublaslt, PrefDestroy, "cublasLtMatmulPreferenceDestroy");
  SYM(cublaslt, PrefSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  SYM(cublaslt, AlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  SYM(cublaslt, Matmul, "cublasLtMatmul");
  return NULL;
}

static void
cublaslt_init(void)
{
  cublaslt_why = load_cublaslt();
}

const cuda_cublaslt *
cuda_cublaslt_get(const char **why)
{
  pthread_once(&cublaslt_once, cublaslt_init);
  if (cublaslt_why && why)
    *why = cublaslt_why;
  return cublaslt_why ? NULL : &cublaslt;
}

/* ---- cuDNN ---- */

static cuda_cudnn cudnn;
static const char *cudnn_why;
static pthread_once_t cudnn_once = PTHREAD_ONCE_INIT;

static const char *
load_cudnn(void)
{
  static const char *const names[] = {"libcudnn.so.9"};
  char path[512];
  void *handle = open_first(names, 1, path, sizeof path);
  if (!handle)
    return "cuDNN not found (looked for libcudnn.so.9 in $COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64 "
           "and the library path)";
  SYM(cudnn, GetErrorString, "cudnnGetErrorString");
  SYM(cudnn, GetVersion, "cudnnGetVersion");
  SYM(cudnn, Create, "cudnnCreate");
  SYM(cudnn, Destroy, "cudnnDestroy");
  SYM(cudnn, SetStream, "cudnnSetStream");
  SYM(cudnn, CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
  SYM(cudnn, SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor");
  SYM(cudnn, DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
  SYM(cudnn, CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
  SYM(cudnn, SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor");
  SYM(cudnn, DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
  SYM(cudnn, CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
  SYM(cudnn, SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor");
  SYM(cudnn, SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
  SYM(cudnn, SetConvolutionMathType, "cudnnSetConvolutionMathType");
  SYM(cudnn, DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
  SYM(cudnn, GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
  SYM(cudnn, ConvolutionForward, "cudnnConvolutionForward");
  SYM(cudnn, GetConvolutionBackwardDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  SYM(cudnn, ConvolutionBackwardData, "cudnnConvolutionBackwardData");
  SYM(cudnn, AddTensor, "cudnnAddTensor");
  SYM(cudnn, FindConvolutionForwardAlgorithmEx, "cudnnFindConvolutionForwardAlgorithmEx");
  SYM(cudnn, FindConvolutionBackwardDataAlgorithmEx, "cudnnFindConvolutionBackwardDataAlgorithmEx");
  SYM(cudnn, TransformTensor, "cudnnTransformTensor");
  if (cudnn.GetVersion() < 90000)
    return "cuDNN older than 9.0 (the cuda plugin needs cuDNN 9)";
  return NULL;
}

static void
cudnn_init(void)
{
  cudnn_why = load_cudnn();
}

const cuda_cudnn *
cuda_cudnn_get(const char **why)
{
  pthread_once(&cudnn_once, cudnn_init);
  if (cudnn_why && why)
    *why = cudnn_why;
  return cudnn_why ? NULL : &cudnn;
}
