/* cuda_api.h — the parts of NVRTC, the CUDA driver API and cuBLAS the cuda plugin calls, loaded with
 * dlopen at run time: nothing links against a GPU driver or the toolkit, and the plugin builds
 * without CUDA headers (the few types and constants are declared here, with the values of
 * cuda.h and nvrtc.h, which are ABI-stable).
 *
 * Libraries are looked for in $COIL_CUDA_HOME/lib64, /usr/local/cuda/lib64 and the system's
 * search path (libnvrtc.so.13, .12, libnvrtc.so; libcuda.so.1). NVRTC alone is enough to compile
 * (CI has no GPU); running needs the driver. Each loader is thread-safe and loads once per
 * process; nothing is ever unloaded (a driver library does not survive dlclose well). */
#ifndef COIL_CUDA_API_H
#define COIL_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVRTC ---- */
typedef int nvrtcResult; /* 0: NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nvrtcProgram;

typedef struct cuda_nvrtc {
  const char *path; /* the library loaded */
  nvrtcResult (*Version)(int *major, int *minor);
  const char *(*GetErrorString)(nvrtcResult r);
  nvrtcResult (*CreateProgram)(nvrtcProgram *p, const char *src, const char *name, int nheaders,
                               const char *const *headers, const char *const *include_names);
  nvrtcResult (*CompileProgram)(nvrtcProgram p, int nopts, const char *const *opts);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram p, size_t *n);
  nvrtcResult (*GetProgramLog)(nvrtcProgram p, char *log);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram p, size_t *n);
  nvrtcResult (*GetCUBIN)(nvrtcProgram p, char *cubin);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *p);
} cuda_nvrtc;

/* NVRTC, loaded on first use; NULL with why (static text) when it cannot be. */
const cuda_nvrtc *cuda_nvrtc_get(const char **why);

/* ---- the driver ---- */
typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st *CUgraph;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
/* CUmemPoolProps as cuda.h lays it out (its tail is reserved bytes, zero) */
typedef struct {
  int allocType;       /* CU_MEM_ALLOCATION_TYPE_PINNED */
  int handleTypes;     /* 0: none */
  int locationType;    /* CU_MEM_LOCATION_TYPE_DEVICE */
  int locationId;      /* the device */
  void *win32SecurityAttributes;
  unsigned char reserved[64];
} cuda_mem_pool_props;
#define CU_MEM_ALLOCATION_TYPE_PINNED 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
typedef struct CUgraphExec_st *CUgraphExec;

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_STREAM_DEFAULT 0
#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

typedef struct cuda_driver {
  CUresult (*Init)(unsigned flags);
  CUresult (*GetErrorString)(CUresult r, const char **s);
  CUresult (*DeviceGet)(CUdevice *d, int ordinal);
  CUresult (*DeviceGetCount)(int *n);
  CUresult (*DeviceGetAttribute)(int *v, int attr, CUdevice d);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice d);
  CUresult (*CtxSetCurrent)(CUcontext c);
  CUresult (*StreamCreate)(CUstream *s, unsigned flags);
  CUresult (*StreamDestroy)(CUstream s);
  CUresult (*StreamSynchronize)(CUstream s);
  CUresult (*ModuleLoadData)(CUmodule *m, const void *image);
  CUresult (*ModuleUnload)(CUmodule m);
  CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
  CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
  CUresult (*MemAllocAsync)(CUdeviceptr *p, size_t bytes, CUstream s);
  CUresult (*MemFreeAsync)(CUdeviceptr p, CUstream s);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
  CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
  CUresult (*MemsetD8Async)(CUdeviceptr p, unsigned char v, size_t n, CUstream s);
  CUresult (*MemAlloc)(CUdeviceptr *p, size_t bytes);
  CUresult (*MemPoolCreate)(CUmemoryPool *pool, const cuda_mem_pool_props *props);
  CUresult (*MemPoolDestroy)(CUmemoryPool pool);
  CUresult (*MemPoolSetAttribute)(CUmemoryPool pool, int attr, void *value);
  CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *p, size_t bytes, CUmemoryPool pool, CUstream s);
  CUresult (*MemFree)(CUdeviceptr p);
  /* graphs (reduce-overhead) */
  CUresult (*StreamBeginCapture)(CUstream s, int mode);
  CUresult (*StreamEndCapture)(CUstream s, CUgraph *g);
  CUresult (*GraphInstantiate)(CUgraphExec *e, CUgraph g, unsigned long long flags);
  CUresult (*GraphLaunch)(CUgraphExec e, CUstream s);
  CUresult (*GraphExecDestroy)(CUgraphExec e);
  CUresult (*GraphDestroy)(CUgraph g);
  /* events (the autotuner's timings) */
  CUresult (*EventCreate)(CUevent *e, unsigned flags);
  CUresult (*EventRecord)(CUevent e, CUstream s);
  CUresult (*EventSynchronize)(CUevent e);
  CUresult (*EventElapsedTime)(float *ms, CUevent a, CUevent b);
  CUresult (*EventDestroy)(CUevent e);
  CUresult (*ModuleLoad)(CUmodule *m, const char *path);
  /* a caller's stream (ABI 1.2): ordering a run after another stream's work */
  CUresult (*StreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
  CUresult (*CtxSynchronize)(void);
  /* a kernel's limits (coil.attention: more than 48 KB of dynamic shared memory) */
  CUresult (*FuncSetAttribute)(CUfunction f, int attr, int value);
  /* a TMA descriptor (the generated GEMM, cuda_gemm.c): CUtensorMap is 128 bytes, 64-aligned.
   * Optional: NULL where the driver has none (before CUDA 12), and the GEMMs go to cuBLAS */
  CUresult (*TensorMapEncodeTiled)(void *map, int dtype, uint32_t rank, void *addr, const uint64_t *dims,
                                   const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
                                   int interleave, int swizzle, int l2_promotion, int oob_fill);
} cuda_driver;
/* cuTensorMapEncodeTiled's enums, as cuda.h numbers them */
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6
#define CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define CU_TENSOR_MAP_SWIZZLE_128B 3
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0

/* The driver, loaded and initialised (cuInit) on first use; NULL with why when there is none. */
const cuda_driver *cuda_driver_get(const char **why);
/* Whether a driver library is there, without initialising it: CUDA does not survive fork(), so
 * nothing may call cuInit before a host forks (coil-conformance runs each case in a child). */
int cuda_driver_present(void);

/* ---- cuBLAS (mm, bmm) ---- */
typedef int cublasStatus_t; /* 0: CUBLAS_STATUS_SUCCESS */
typedef struct cublasContext *cublasHandle_t;
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_GEMM_DEFAULT = -1 };

typedef struct cuda_cublas {
  cublasStatus_t (*Create)(cublasHandle_t *h);
  cublasStatus_t (*Destroy)(cublasHandle_t h);
  cublasStatus_t (*SetStream)(cublasHandle_t h, CUstream s);
  cublasStatus_t (*SetWorkspace)(cublasHandle_t h, void *ws, size_t bytes);
  cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t h, int transa, int transb, int m, int n, int k,
                                         const void *alpha, const void *a, int atype, int lda, long long stride_a,
                                         const void *b, int btype, int ldb, long long stride_b, const void *beta,
                                         void *c, int ctype, int ldc, long long stride_c, int batch, int compute,
                                         int algo);
} cuda_cublas;

/* cuBLAS (libcublas.so.13/.12), loaded on first use; NULL with why when it cannot be. */
const cuda_cublas *cuda_cublas_get(const char **why);

/* ---- cuBLASLt (mm and bmm with a cached algorithm, bias and relu epilogues) ---- */
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtPrefOpaque *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
enum { /* the values of cublasLt.h */
  CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4, CUBLASLT_EPILOGUE_RELU_BIAS = 6,
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

typedef struct cuda_cublaslt {
  cublasStatus_t (*Create)(cublasLtHandle_t *h);
  cublasStatus_t (*Destroy)(cublasLtHandle_t h);
  cublasStatus_t (*DescCreate)(cublasLtMatmulDesc_t *d, int compute, int scale_type);
  cublasStatus_t (*DescDestroy)(cublasLtMatmulDesc_t d);
  cublasStatus_t (*DescSetAttribute)(cublasLtMatmulDesc_t d, int attr, const void *buf, size_t n);
  cublasStatus_t (*LayoutCreate)(cublasLtMatrixLayout_t *l, int type, uint64_t rows, uint64_t cols, int64_t ld);
  cublasStatus_t (*LayoutDestroy)(cublasLtMatrixLayout_t l);
  cublasStatus_t (*LayoutSetAttribute)(cublasLtMatrixLayout_t l, int attr, const void *buf, size_t n);
  cublasStatus_t (*PrefCreate)(cublasLtMatmulPreference_t *p);
  cublasStatus_t (*PrefDestroy)(cublasLtMatmulPreference_t p);
  cublasStatus_t (*PrefSetAttribute)(cublasLtMatmulPreference_t p, int attr, const void *buf, size_t n);
  cublasStatus_t (*AlgoGetHeuristic)(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                     cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                     cublasLtMatmulPreference_t p, int requested, cublasLtMatmulHeuristicResult_t *out,
                                     int *returned);
  cublasStatus_t (*Matmul)(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *a,
                           cublasLtMatrixLayout_t la, const void *b, cublasLtMatrixLayout_t lb, const void *beta,
                           const void *c, cublasLtMatrixLayout_t lc, void *dd, cublasLtMatrixLayout_t ld,
                           const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, CUstream s);
} cuda_cublaslt;

/* cuBLASLt (libcublasLt.so.13/.12), loaded on first use; NULL with why when it cannot be. */
const cuda_cublaslt *cuda_cublaslt_get(const char **why);

/* ---- cuDNN (convolution; the legacy API that libcudnn.so.9 still exports) ---- */
typedef int cudnnStatus_t; /* 0: CUDNN_STATUS_SUCCESS */
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
enum { /* the values of cudnn_graph.h and cudnn_cnn.h */
  CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1, CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9,
  CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_FMA_MATH = 3,
  CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1, CUDNN_CROSS_CORRELATION = 1,
};
typedef struct { /* cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t */
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
} cudnn_algo_perf;

typedef struct cuda_cudnn {
  const char *(*GetErrorString)(cudnnStatus_t s);
  size_t (*GetVersion)(void);
  cudnnStatus_t (*Create)(cudnnHandle_t *h);
  cudnnStatus_t (*Destroy)(cudnnHandle_t h);
  cudnnStatus_t (*SetStream)(cudnnHandle_t h, CUstream s);
  cudnnStatus_t (*CreateTensorDescriptor)(cudnnTensorDescriptor_t *d);
  cudnnStatus_t (*SetTensorNdDescriptor)(cudnnTensorDescriptor_t d, int type, int nd, const int *dims, const int *strides);
  cudnnStatus_t (*DestroyTensorDescriptor)(cudnnTensorDescriptor_t d);
  cudnnStatus_t (*CreateFilterDescriptor)(cudnnFilterDescriptor_t *d);
  cudnnStatus_t (*SetFilterNdDescriptor)(cudnnFilterDescriptor_t d, int type, int format, int nd, const int *dims);
  cudnnStatus_t (*DestroyFilterDescriptor)(cudnnFilterDescriptor_t d);
  cudnnStatus_t (*CreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t *d);
  cudnnStatus_t (*SetConvolutionNdDescriptor)(cudnnConvolutionDescriptor_t d, int n, const int *pad, const int *stride,
                                              const int *dilation, int mode, int compute_type);
  cudnnStatus_t (*SetConvolutionGroupCount)(cudnnConvolutionDescriptor_t d, int groups);
  cudnnStatus_t (*SetConvolutionMathType)(cudnnConvolutionDescriptor_t d, int math);
  cudnnStatus_t (*DestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t d);
  cudnnStatus_t (*GetConvolutionForwardAlgorithm_v7)(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                                                     cudnnConvolutionDescriptor_t c, cudnnTensorDescriptor_t y,
                                                     int requested, int *returned, cudnn_algo_perf *perf);
  cudnnStatus_t (*ConvolutionForward)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                      cudnnFilterDescriptor_t wd, const void *w, cudnnConvolutionDescriptor_t c, int algo,
                                      void *ws, size_t ws_bytes, const void *beta, cudnnTensorDescriptor_t yd, void *y);
  cudnnStatus_t (*GetConvolutionBackwardDataAlgorithm_v7)(cudnnHandle_t h, cudnnFilterDescriptor_t w,
                                                          cudnnTensorDescriptor_t dy, cudnnConvolutionDescriptor_t c,
                                                          cudnnTensorDescriptor_t dx, int requested, int *returned,
                                                          cudnn_algo_perf *perf);
  cudnnStatus_t (*ConvolutionBackwardData)(cudnnHandle_t h, const void *alpha, cudnnFilterDescriptor_t wd, const void *w,
                                           cudnnTensorDescriptor_t dyd, const void *dy, cudnnConvolutionDescriptor_t c,
                                           int algo, void *ws, size_t ws_bytes, const void *beta,
                                           cudnnTensorDescriptor_t dxd, void *dx);
  cudnnStatus_t (*FindConvolutionForwardAlgorithmEx)(cudnnHandle_t h, cudnnTensorDescriptor_t xd, const void *x,
                                                     cudnnFilterDescriptor_t wd, const void *w,
                                                     cudnnConvolutionDescriptor_t c, cudnnTensorDescriptor_t yd, void *y,
                                                     int requested, int *returned, cudnn_algo_perf *perf, void *ws,
                                                     size_t ws_bytes);
  cudnnStatus_t (*FindConvolutionBackwardDataAlgorithmEx)(cudnnHandle_t h, cudnnFilterDescriptor_t wd, const void *w,
                                                          cudnnTensorDescriptor_t dyd, const void *dy,
                                                          cudnnConvolutionDescriptor_t c, cudnnTensorDescriptor_t dxd,
                                                          void *dx, int requested, int *returned, cudnn_algo_perf *perf,
                                                          void *ws, size_t ws_bytes);
  cudnnStatus_t (*TransformTensor)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                   const void *beta, cudnnTensorDescriptor_t yd, void *y);
  cudnnStatus_t (*AddTensor)(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t ad, const void *a,
                             const void *beta, cudnnTensorDescriptor_t cd, void *c);
} cuda_cudnn;

/* cuDNN 9 (libcudnn.so.9), loaded on first use; NULL with why when it cannot be. */
const cuda_cudnn *cuda_cudnn_get(const char **why);

#endif
