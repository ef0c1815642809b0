/* cuda_codegen.c — the cuda plugin's dialect of the SDK's GPU emitter (coil/coil_gpu.h): CUDA C++
 * as NVRTC compiles it. The kernels, their launch plans and the reductions' code are the SDK's;
 * what is CUDA's is spelled here: the thread and block indices, __syncthreads and __syncwarp,
 * the _sync shuffles over a full 32-lane mask, __launch_bounds__, the PTX conversions of f16 and
 * bf16 (cvt, round to nearest even, as the SDK's bit-exact C versions), the out-of-line sin, cos
 * and tan, and the integer types NVRTC lacks without system headers. */
#include "cuda.h"

const coil_gpu_dialect cuda_dialect = {
    .name = "cuda",
    .compiler = "NVRTC",
    .warp_size = 32,
    .vector_bytes = 16,
    .kernel_decl = "extern \"C\" __global__",
    .launch_bounds = "__launch_bounds__(%u)",
    .restrict_kw = "__restrict__",
    .thread_idx = "threadIdx.x",
    .block_idx = "blockIdx.x",
    .block_dim = "blockDim.x",
    .grid_dim = "gridDim.x",
    .barrier = "__syncthreads()",
    .warp_barrier = "__syncwarp()",
    .shared = "__shared__",
    .align = "__align__",
    .device = "__device__",
    .forceinline = "__forceinline__",
    .shfl_down = "__shfl_down_sync(0xffffffffu, ",
    .shfl_up = "__shfl_up_sync(0xffffffffu, ",
    .shfl_idx = "__shfl_sync(0xffffffffu, ",
    .oob_first = "atomicCAS((unsigned long long *)coil_oob, 0ull, 1ull) == 0ull",
    .head = /* NVRTC has no system headers; nvcc, reading the dumped kernels.cu, has */
        "#ifdef __CUDACC_RTC__ /* NVRTC: no system headers */\n"
        "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
        "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
        "typedef unsigned long long uint64_t;\n"
        "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n"
        "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
        "#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n#define INT8_MIN (-128)\n#define INT8_MAX 127\n"
        "#define UINT8_MAX 255\n"
        "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
        "#else /* nvcc, for reading the dumped kernels.cu */\n#include <stdint.h>\n#include <math.h>\n#endif\n",
    .half = /* the hardware's conversions: cvt rounds to nearest even and keeps subnormals and NaN */
        "static __device__ __forceinline__ float coil_h2f(uint16_t h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
        "static __device__ __forceinline__ uint16_t coil_f2h(float f) { uint16_t h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
        "static __device__ __forceinline__ float coil_b2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "static __device__ __forceinline__ uint16_t coil_f2b(float f) { uint16_t h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
        "#else\n"
        "static __device__ __forceinline__ uint16_t coil_f2b(float f) { uint32_t u = __float_as_uint(f); if (f != f) return (uint16_t)((u >> 16) | 0x40); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }\n"
        "#endif\n",
    .helpers = COIL_GPU_OOL_HELPERS /* sin, cos, tan out of line: NVRTC's time */
        /* a vector load with an L2 evict_last policy (ld.global.L2::cache_hint, sm_80 on) */
        "template <typename T> static __device__ __forceinline__ T coil_ld_keep(const T *p) {\n"
        "  T v;\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "  uint64_t pol; uint32_t *u = (uint32_t *)&v;\n"
        "  asm(\"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\" : \"=l\"(pol));\n"
        "  if constexpr (sizeof(T) == 16)\n"
        "    asm volatile(\"ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\" : \"=r\"(u[0]), \"=r\"(u[1]), \"=r\"(u[2]), \"=r\"(u[3]) : \"l\"(p), \"l\"(pol));\n"
        "  else if constexpr (sizeof(T) == 8)\n"
        "    asm volatile(\"ld.global.L2::cache_hint.v2.u32 {%0,%1}, [%2], %3;\" : \"=r\"(u[0]), \"=r\"(u[1]) : \"l\"(p), \"l\"(pol));\n"
        "  else if constexpr (sizeof(T) == 4)\n"
        "    asm volatile(\"ld.global.L2::cache_hint.u32 %0, [%1], %2;\" : \"=r\"(u[0]) : \"l\"(p), \"l\"(pol));\n"
        "  else\n"
        "    v = *p;\n"
        "#else\n"
        "  v = *p;\n"
        "#endif\n"
        "  return v;\n"
        "}\n",
    .c = {coil_gpu_ool_math},
    .load_keep = "coil_ld_keep(",
};
