/* hip_api.h — the parts of HIP the hip plugin calls, loaded with dlopen at run time: nothing links
 * against ROCm or CUDA, and the plugin builds without their headers (the few types are declared
 * here, with HIP's values).
 *
 * Two platforms, as HIP itself has: on `amd`, hiprtc and the HIP runtime come from ROCm (Debian
 * 12's ROCm 5.2 ships hiprtc inside libamdhip64.so.5 beside libhiprtc-builtins.so.5; a later ROCm
 * has its own libhiprtc.so), looked for in $COIL_ROCM_HOME/lib, /opt/rocm/lib and the system's
 * search path. On `nvidia`, the same tables are filled as HIP's NVIDIA headers
 * (hip/nvidia_detail) map HIP onto CUDA: hiprtc by NVRTC (the same program calls, a cubin for the
 * code object), the runtime by the CUDA driver (libcuda.so.1; NVRTC from $COIL_CUDA_HOME/lib64,
 * /usr/local/cuda/lib64 or the search path). The rest of the plugin sees HIP only.
 *
 * hiprtc compiles without a GPU. The loaders are thread-safe, load once per process and never
 * unload. */
#ifndef COIL_HIP_API_H
#define COIL_HIP_API_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { HIP_AMD, HIP_NVIDIA } hip_platform;

typedef int hiprtcResult; /* 0: HIPRTC_SUCCESS (NVRTC_SUCCESS) */
typedef struct _hiprtcProgram *hiprtcProgram;

typedef struct hip_rtc {
  const char *path; /* the library loaded */
  hiprtcResult (*Version)(int *major, int *minor);
  const char *(*GetErrorString)(hiprtcResult r);
  hiprtcResult (*CreateProgram)(hiprtcProgram *p, const char *src, const char *name, int nheaders,
                                const char **headers, const char **include_names);
  hiprtcResult (*CompileProgram)(hiprtcProgram p, int nopts, const char **opts);
  hiprtcResult (*GetProgramLogSize)(hiprtcProgram p, size_t *n);
  hiprtcResult (*GetProgramLog)(hiprtcProgram p, char *log);
  /* the code object: an AMDGPU ELF (amd), a cubin (nvidia) */
  hiprtcResult (*GetCodeSize)(hiprtcProgram p, size_t *n);
  hiprtcResult (*GetCode)(hiprtcProgram p, char *code);
  hiprtcResult (*DestroyProgram)(hiprtcProgram *p);
} hip_rtc;

/* hiprtc of platform pf, loaded on first use; NULL with why (static text) when it cannot be. */
const hip_rtc *hip_rtc_get(hip_platform pf, const char **why);
/* ROCm 5.2's hiprtc is not thread-safe (two programs compiled at once crash in comgr): every
 * program's create .. destroy is held under this process-wide lock (NVRTC is taken the same
 * way: one lock keeps the code simple, and NVIDIA compiles are for tests). */
void hip_rtc_lock(void);
void hip_rtc_unlock(void);

/* ---- the runtime ---- */
typedef int hipError_t; /* 0: hipSuccess */
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef void *hipDeviceptr_t;

#define hipStreamNonBlocking 1
#define hipStreamCaptureModeThreadLocal 1
#define hipMemPoolAttrReleaseThreshold 4

/* The HIP runtime calls the plugin makes, with HIP's signatures (hip_runtime_api.h). */
typedef struct hip_runtime {
  hip_platform platform;
  const char *path;
  hipError_t (*Init)(unsigned flags);
  hipError_t (*GetDeviceCount)(int *n);
  hipError_t (*SetDevice)(int device); /* and makes it current in this thread */
  const char *(*GetErrorString)(hipError_t e);
  hipError_t (*StreamCreateWithFlags)(hipStream_t *s, unsigned flags);
  hipError_t (*StreamDestroy)(hipStream_t s);
  hipError_t (*StreamSynchronize)(hipStream_t s);
  hipError_t (*StreamWaitEvent)(hipStream_t s, hipEvent_t e, unsigned flags);
  hipError_t (*EventCreate)(hipEvent_t *e);
  hipError_t (*EventRecord)(hipEvent_t e, hipStream_t s);
  hipError_t (*EventDestroy)(hipEvent_t e);
  hipError_t (*EventSynchronize)(hipEvent_t e);
  hipError_t (*EventElapsedTime)(float *ms, hipEvent_t start, hipEvent_t stop);
  hipError_t (*DeviceSynchronize)(void);
  hipError_t (*ModuleLoadData)(hipModule_t *m, const void *image);
  hipError_t (*ModuleUnload)(hipModule_t m);
  hipError_t (*ModuleGetFunction)(hipFunction_t *f, hipModule_t m, const char *name);
  hipError_t (*ModuleLaunchKernel)(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shmem, hipStream_t s, void **params, void **extra);
  hipError_t (*Malloc)(void **p, size_t bytes);
  hipError_t (*Free)(void *p);
  hipError_t (*MallocAsync)(void **p, size_t bytes, hipStream_t s);
  hipError_t (*FreeAsync)(void *p, hipStream_t s);
  hipError_t (*DeviceGetDefaultMemPool)(hipMemPool_t *pool, int device);
  hipError_t (*MemPoolSetAttribute)(hipMemPool_t pool, int attr, void *value);
  hipError_t (*MemcpyHtoDAsync)(hipDeviceptr_t dst, void *src, size_t bytes, hipStream_t s);
  hipError_t (*MemcpyDtoHAsync)(void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t s);
  hipError_t (*MemcpyDtoDAsync)(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t s);
  hipError_t (*MemsetD8Async)(hipDeviceptr_t p, unsigned char v, size_t n, hipStream_t s);
  /* graphs (reduce-overhead) */
  hipError_t (*StreamBeginCapture)(hipStream_t s, int mode);
  hipError_t (*StreamEndCapture)(hipStream_t s, hipGraph_t *g);
  hipError_t (*GraphInstantiate)(hipGraphExec_t *e, hipGraph_t g, void *error_node, char *log, size_t log_size);
  hipError_t (*GraphLaunch)(hipGraphExec_t e, hipStream_t s);
  hipError_t (*GraphExecDestroy)(hipGraphExec_t e);
  hipError_t (*GraphDestroy)(hipGraph_t g);
} hip_runtime;

/* ---- a vendor BLAS for mm and bmm: hipBLAS's calls ----
 * On HIP's NVIDIA platform hipBLAS is cuBLAS underneath: the table is cuBLAS's (libcublas.so.13
 * or .12, from $COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64 or the search path), with its enum
 * values. On AMD it is hipBLAS's API 2 (libhipblas.so.3 or .2 from $COIL_ROCM_HOME/lib,
 * /opt/rocm/lib or the search path: ROCm 6 and later; Debian 12 ships none, and the API 1 of ROCm
 * 5's hipBLAS, with other types, is not taken), untested on AMD hardware: a loaded BLAS is
 * checked against small products before use (hip_run.c), and without one mm and bmm run the
 * generated GEMM. */
typedef struct hipblasContext *hipblasHandle_t;
typedef struct hip_blas {
  int op_n, op_t, r16f, r16bf, r32f, r64f, compute32f, compute64f, algo_default; /* enum values */
  int (*Create)(hipblasHandle_t *h);
  int (*Destroy)(hipblasHandle_t h);
  int (*SetStream)(hipblasHandle_t h, hipStream_t s);
  int (*SetWorkspace)(hipblasHandle_t h, void *ws, size_t bytes);
  int (*GemmStridedBatchedEx)(hipblasHandle_t h, int transa, int transb, int m, int n, int k, const void *alpha,
                              const void *a, int atype, int lda, long long stride_a, const void *b, int btype, int ldb,
                              long long stride_b, const void *beta, void *c, int ctype, int ldc, long long stride_c,
                              int batch, int compute, int algo);
} hip_blas;

/* The BLAS of platform pf, loaded on first use; NULL with why when there is none. */
const hip_blas *hip_blas_get(hip_platform pf, const char **why);

/* The platform a code object is for, from its ELF header (EM_AMDGPU: amd, EM_CUDA: nvidia);
 * -1 when it is neither. */
int hip_code_platform(const void *code, size_t n);

/* Whether platform pf's runtime library is there and may have a device (amd: libamdhip64 and
 * /dev/kfd; nvidia: libcuda.so.1), without initialising it: a host may still fork after. */
bool hip_runtime_present(hip_platform pf);
/* The runtime of pf, loaded and initialised on first use; NULL with why when it cannot be. */
const hip_runtime *hip_runtime_get(hip_platform pf, const char **why);
/* The NVIDIA platform's default arch: sm_XY of device 0 (initialises the driver), "" without. */
void hip_nvidia_arch(char *arch, size_t n);

#endif
