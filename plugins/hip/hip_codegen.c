/* hip_codegen.c — the hip plugin's dialects of the SDK's GPU emitter (coil/coil_gpu.h): HIP C++ as
 * hiprtc compiles it, and as hipcc compiles a dumped kernels-wave*.hip. The kernels, their launch
 * plans and the reductions' code are the SDK's; what is HIP's is spelled here: shuffles without
 * a lane mask (__shfl_down(v, d): a wavefront runs in lockstep), a wavefront of 64 lanes on
 * GCN/CDNA or 32 on RDNA (two dialects, so the plans and the reductions' shuffle trees fit the
 * target), a wavefront barrier made of fences (HIP 5.2 has no __syncwarp), f16/bf16 conversions
 * that round to nearest even, and the integer types hiprtc lacks without system headers. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip.h"

/* hiprtc (__HIPCC_RTC__) and NVRTC (__CUDACC_RTC__) read no system headers and pre-include the
 * device functions; hipcc needs hip_runtime.h. On AMD, coil_syncwarp: lanes of a wavefront execute
 * together, so a barrier among them only has to keep the compiler from moving shared-memory
 * accesses across it and order them (HIP 6's own __syncwarp is these three builtins). On HIP's
 * NVIDIA platform (__HIP_PLATFORM_NVIDIA__, compiled by NVRTC: platform = nvidia) the same source
 * is CUDA underneath: the shuffles become the _sync ones over the full warp, as
 * hip/nvidia_detail/nvidia_hip_runtime_api.h defines them, and CUDA has the atomics HIP 5.2 lacks. */
#define HIP_HEAD                                                                                               \
  "#if defined(__HIPCC_RTC__) || defined(__CUDACC_RTC__) /* hiprtc, NVRTC: no system headers */\n"             \
  "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"      \
  "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"          \
  "typedef unsigned long long uint64_t;\n"                                                                     \
  "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n"                 \
  "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"                                       \
  "#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n#define INT8_MIN (-128)\n#define INT8_MAX 127\n"      \
  "#define UINT8_MAX 255\n"                                                                                    \
  "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"                     \
  "#else /* hipcc, for reading the dumped kernels-wave*.hip */\n"                                              \
  "#include <hip/hip_runtime.h>\n#include <stdint.h>\n#include <math.h>\n#endif\n"                             \
  "#ifdef __HIP_PLATFORM_NVIDIA__ /* HIP on NVIDIA: CUDA underneath */\n"                                      \
  "#ifndef __shfl_down\n"                                                                                      \
  "#define __shfl_down(...) __shfl_down_sync(0xffffffffu, __VA_ARGS__)\n"                                      \
  "#define __shfl_up(...) __shfl_up_sync(0xffffffffu, __VA_ARGS__)\n"                                          \
  "#define __shfl(...) __shfl_sync(0xffffffffu, __VA_ARGS__)\n"                                                \
  "#endif\n"                                                                                                   \
  "static __device__ __forceinline__ void coil_syncwarp() { __syncwarp(); }\n"                                 \
  "#else /* AMD */\n"                                                                                          \
  "/* HIP 5.2 has no 16-bit atomicCAS (CUDA's, which the SDK's f16/bf16 combining stores use):\n"             \
  " * a compare-and-swap of the aligned 32-bit word that holds the element */\n"                              \
  "static __device__ __forceinline__ unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short val) {\n" \
  "  unsigned int *w = (unsigned int *)((unsigned long long)p & ~3ull);\n"                                  \
  "  const unsigned int sh = (unsigned int)((unsigned long long)p & 2ull) * 8u;\n"                          \
  "  unsigned int old = *w, was;\n"                                                                           \
  "  do {\n"                                                                                                  \
  "    was = old;\n"                                                                                          \
  "    if ((unsigned short)(was >> sh) != cmp) return (unsigned short)(was >> sh);\n"                         \
  "    old = atomicCAS(w, was, (was & ~(0xffffu << sh)) | ((unsigned int)val << sh));\n"                     \
  "  } while (old != was);\n"                                                                                 \
  "  return cmp;\n"                                                                                           \
  "}\n"                                                                                                       \
  "/* nor atomicMax and atomicMin of 64-bit signed integers: clang's atomic builtins */\n"                     \
  "static __device__ __forceinline__ long long atomicMax(long long *p, long long v) { return __atomic_fetch_max(p, v, __ATOMIC_RELAXED); }\n" \
  "static __device__ __forceinline__ long long atomicMin(long long *p, long long v) { return __atomic_fetch_min(p, v, __ATOMIC_RELAXED); }\n" \
  "static __device__ __forceinline__ void coil_syncwarp() {\n"                                                 \
  "  __builtin_amdgcn_fence(__ATOMIC_RELEASE, \"wavefront\");\n"                                               \
  "  __builtin_amdgcn_wave_barrier();\n"                                                                       \
  "  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"wavefront\");\n"                                               \
  "}\n"                                                                                                       \
  "#endif\n"

/* f16: on AMD, _Float16 conversions, what hip_fp16.h's __half2float and __float2half (_rn) are
 * made of: an fptrunc, v_cvt_f16_f32 in the default round-to-nearest-even mode, keeping
 * subnormals and NaN (not __builtin_amdgcn_cvt_pkrtz, which rounds toward zero); on NVIDIA, the
 * cvt instructions cuda_fp16.h's are made of (no header needed). bf16: CDNA2 and RDNA2 have no
 * conversion instruction, so the rounding is written out as hip_bf16.h does, and as the SDK's
 * bit-exact C version: nearest even, NaN kept quiet. */
#define HIP_HALF                                                                                               \
  "#ifdef __HIP_PLATFORM_NVIDIA__\n"                                                                           \
  "static __device__ __forceinline__ float coil_h2f(uint16_t h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n" \
  "static __device__ __forceinline__ uint16_t coil_f2h(float f) { uint16_t h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n" \
  "#else\n"                                                                                                    \
  "static __device__ __forceinline__ float coil_h2f(uint16_t h) { return (float)__builtin_bit_cast(_Float16, h); }\n" \
  "static __device__ __forceinline__ uint16_t coil_f2h(float f) { return __builtin_bit_cast(uint16_t, (_Float16)f); }\n" \
  "#endif\n"                                                                                                   \
  "static __device__ __forceinline__ float coil_b2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }\n" \
  "static __device__ __forceinline__ uint16_t coil_f2b(float f) { uint32_t u = __float_as_uint(f); if (f != f) return (uint16_t)((u >> 16) | 0x40); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }\n"

/* Math: the libm names, which HIP's device library (OCML) provides in float and double; sin, cos
 * and tan out of line (coil_gpu_ool_math), as cuda calls them, which keeps hiprtc's time down (a
 * chain of ten sines compiled 5x faster). */
#define HIP_DIALECT(WAVE)                                                                                      \
  {                                                                                                            \
    .name = "hip", .compiler = "hiprtc", .warp_size = WAVE, .vector_bytes = 16,                                \
    .kernel_decl = "extern \"C\" __global__", .launch_bounds = "__launch_bounds__(%u)",                        \
    .restrict_kw = "__restrict__", .thread_idx = "threadIdx.x", .block_idx = "blockIdx.x",                     \
    .block_dim = "blockDim.x", .grid_dim = "gridDim.x", .barrier = "__syncthreads()",                          \
    .warp_barrier = "coil_syncwarp()", .shared = "__shared__", .align = "__align__", .device = "__device__",    \
    .forceinline = "__forceinline__", .shfl_down = "__shfl_down(", .shfl_up = "__shfl_up(",                    \
    .shfl_idx = "__shfl(", .oob_first = "atomicCAS((unsigned long long *)coil_oob, 0ull, 1ull) == 0ull",       \
    .head = HIP_HEAD, .half = HIP_HALF, .helpers = COIL_GPU_OOL_HELPERS, .c = {coil_gpu_ool_math},                                          \
  }

static const coil_gpu_dialect wave64 = HIP_DIALECT(64);
static const coil_gpu_dialect wave32 = HIP_DIALECT(32);

const coil_gpu_dialect *
hip_dialect(int wave)
{
  return wave == 32 ? &wave32 : &wave64;
}

bool
hip_arch_valid(const char *arch)
{
  size_t n = strlen(arch);
  if (strncmp(arch, "gfx", 3) != 0 || n < 6 || n > 7)
    return false;
  for (const char *s = arch + 3; *s; s++)
    if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
      return false;
  return isdigit((unsigned char)arch[3]);
}

bool
hip_nvidia_arch_valid(const char *arch)
{
  size_t n = strlen(arch);
  if (strncmp(arch, "sm_", 3) != 0 || n < 5 || n > 7)
    return false;
  for (size_t i = 3; i < n; i++)
    if (!isdigit((unsigned char)arch[i]) && !(i == n - 1 && i >= 5 && arch[i] == 'a'))
      return false;
  return true;
}

int
hip_arch_wave(const char *arch)
{
  /* the major version is what precedes the last two characters: gfx9|0a, gfx10|30 */
  return strlen(arch) >= 7 ? 32 : 64;
}

void
hip_default_arch(char *arch, size_t n)
{
  snprintf(arch, n, "gfx90a");
  /* gfx_target_version = major * 10000 + minor * 100 + stepping (gfx90a: 90010; CPUs: 0) */
  for (int node = 0; node < 64; node++) {
    char path[128], line[256];
    snprintf(path, sizeof path, "/sys/class/kfd/kfd/topology/nodes/%d/properties", node);
    FILE *f = fopen(path, "r");
    if (!f)
      return;
    unsigned long v = 0;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "gfx_target_version %lu", &v) == 1)
        break;
    fclose(f);
    if (v) {
      snprintf(arch, n, "gfx%lu%lx%lx", v / 10000, v / 100 % 100, v % 100);
      return;
    }
  }
}

bool
hip_gemm_line(const coil_wir_program *p, const coil_line *l, coil_dtype *t)
{
  if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || l->nargs != 2 || l->nouts != 1 ||
      (strcmp(l->op, "aten.mm.default") != 0 && strcmp(l->op, "aten.bmm.default") != 0))
    return false;
  *t = p->buffers[l->outs[0]].dtype;
  return *t == COIL_F16 || *t == COIL_BF16 || *t == COIL_F32 || *t == COIL_F64;
}
