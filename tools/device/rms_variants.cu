// rms_variants.cu — variants of the rmsnorm+residual kernel (f16 8192 x 4096, the G7 benchmark graph:
// y = f16(f16(h * rsqrt(mean(h^2) + 1e-6)) * w), h = f16(x + r)) timed in one harness against coil's
// own kernel and Inductor's, to find what separates the two (issue G7).
//
// tools/device/rms_variants.sh prepends the cuda plugin's whole kernels.cu for the graph (its prelude
// and coil's generated kernel, named by -DCOIL_KNAME), passes the artifact's NVRTC cubin (k0.cubin) and
// Inductor's Triton cubin on the command line, and these are launched through the driver API in the
// same harness as the hand-written variants:
//   coil-cubin   coil's kernel as the plugin runs it (NVRTC's cubin from the artifact);
//   coil-src     the same source built by nvcc;
//   inductor     Inductor's Triton kernel (cubin from Triton's cache, its block and shared memory);
//   old-*        two variants of the first experiment (template `rms`, 2026-11-28);
//   op-*         one pass, the row in registers (coil's form) with a one-barrier reduction;
//   tp-*         Inductor's form: a looped two-pass reduction (pass 1 sums h^2 over the row in
//                chunks, pass 2 loads x and r again, from L2 if they stayed there, and stores);
//   opk-*        op with h kept as packed f16 pairs (half the registers of its f32 row);
//   pa-*, pb-*   persistent, the next rows' loads in flight in shared memory while a row is
//                reduced and stored (pa: cp.async; pb: cp.async.bulk and an mbarrier a stage).
// Load modes (pass 1 / pass 2 / w): nc = ld.global.nc; l1el / l1ef = .L1::evict_last / evict_first;
// l2el / l2ef = .L2::cache_hint with a createpolicy evict_last / evict_first policy; bel / bef = both
// of the L1 and L2 hints; na = .nc.L1::no_allocate; lu = ld.global.lu; cs = ld.global.cs.
//
// Checks: each variant runs once on fresh random inputs (a new seed per variant; uniform, non-zero
// with probability ~1) into an output poisoned with NaN, against a CPU reference with coil's roundings
// (h rounded to f16, h*s rounded to f16, sum of squares in double); it passes with no NaN, at most 2
// f16 ulps anywhere and ||y-ref||/||ref|| < 1e-3. Inductor keeps h and h*s in f32 (its own numerics), so
// only the norm and NaN checks apply to it. Timing: per launch, a 256 MB memset first (flushes L2),
// events around the launch alone, the median of 200 after 20 warm-ups, two rounds over all variants;
// "b2b" is the mean of 50 launches back to back between two events.
// With --once, each variant runs once on random inputs, unchecked and untimed (for ncu); --normal takes
// standard normal inputs (as torch.randn and coil bench) instead; --first N keeps the first N variants;
// --ncuflush is --once with a 256 MB write by a kernel before each variant (ncu --cache-control none
// then sees each variant start on an L2 full of dirty lines, as under do_bench); --tseeds A,B,... times
// every variant on the inputs of each seed in turn before the table; --occ adds coil's and Inductor's
// cubins launched with unused dynamic shared memory that caps them at 5, 4, 3, 2 blocks an SM;
// --queued times as do_bench and coil bench do (every flush, event and launch queued, one
// synchronize at the end) instead of waiting for each launch; --mean reports the mean (do_bench's
// default) instead of the median.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>

#define ROWS 8192
#define COLS 4096

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CU(x) do { CUresult e_ = (x); if (e_) { const char *s_ = 0; cuGetErrorString(e_, &s_); printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?"); exit(1); } } while (0)

/* ---------------- the first experiment's template (2026-11-28), two of its variants kept ---------------- */
struct u4 { uint32_t a, b, c, d; };

template <int H, bool XR>
__device__ __forceinline__ u4 ld(const uint16_t *p)
{
  u4 v;
  if (H == 2)
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.a), "=r"(v.b), "=r"(v.c), "=r"(v.d) : "l"(p));
  else if (H >= 3) {
    uint64_t pol;
    if (XR)
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    else
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.a), "=r"(v.b), "=r"(v.c), "=r"(v.d) : "l"(p), "l"(pol));
  } else
    v = *(const u4 *)p;
  return v;
}

__device__ __forceinline__ uint16_t lane(const u4 &v, int l)
{
  uint32_t w = l < 2 ? v.a : l < 4 ? v.b : l < 6 ? v.c : v.d;
  return (uint16_t)(l & 1 ? w >> 16 : w & 0xffff);
}

template <int T, int H>
__global__ void __launch_bounds__(T) rms(const uint16_t *__restrict__ in0, const uint16_t *__restrict__ in1,
                                         const uint16_t *__restrict__ in2, uint16_t *__restrict__ out0)
{
  constexpr int P = COLS / (T * 8);
  __shared__ __align__(16) unsigned char coil_smem[32 * 32];
  for (int64_t x0 = blockIdx.x; x0 < ROWS; x0 += gridDim.x) {
    float rowf[P * 8];
    float acc = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int64_t r0 = ((int64_t)j * T + threadIdx.x) * 8;
      const u4 a = ld<H, true>(&in0[r0 + (int64_t)COLS * x0]), b = ld<H, true>(&in1[r0 + (int64_t)COLS * x0]);
#pragma unroll
      for (int l = 0; l < 8; l++) {
        const float f = coil_h2f(coil_f2h(coil_h2f(lane(a, l)) + coil_h2f(lane(b, l))));
        rowf[j * 8 + l] = f;
        acc += f * f;
      }
    }
    const float sum = coil_block_reduce(acc, coil_op_sum(), coil_smem);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int64_t r0 = ((int64_t)j * T + threadIdx.x) * 8;
      const u4 w = ld<H, false>(&in2[r0]);
      uint16_t o[8];
#pragma unroll
      for (int l = 0; l < 8; l++)
        o[l] = coil_f2h(coil_rnd_h(rowf[j * 8 + l] * s) * coil_h2f(lane(w, l)));
      *(u4 *)&out0[r0 + (int64_t)COLS * x0] = u4{o[0] | (uint32_t)o[1] << 16, o[2] | (uint32_t)o[3] << 16,
                                                  o[4] | (uint32_t)o[5] << 16, o[6] | (uint32_t)o[7] << 16};
    }
    __syncthreads();
  }
}

/* ---------------- loads and stores with cache hints ---------------- */
enum { M_NC, M_PLAIN, M_L1EL, M_L1EF, M_L2EL, M_L2EF, M_BEL, M_BEF, M_NA, M_LU, M_CS, M_NCL2EL, M_NCL2EF };
enum { S_PLAIN, S_CS, S_L2EF };

template <int V> struct hv { uint32_t u[V / 2]; };

__device__ __forceinline__ uint64_t pol_el()
{
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t pol_ef()
{
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

#define LD4(op) asm volatile(op ".v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.u[0]), "=r"(v.u[1]), "=r"(v.u[2]), "=r"(v.u[3]) : "l"(p))
#define LD4P(op, pol) asm volatile(op ".v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.u[0]), "=r"(v.u[1]), "=r"(v.u[2]), "=r"(v.u[3]) : "l"(p), "l"(pol))
#define LD2(op) asm volatile(op ".v2.u32 {%0,%1}, [%2];" : "=r"(v.u[0]), "=r"(v.u[1]) : "l"(p))
#define LD2P(op, pol) asm volatile(op ".v2.u32 {%0,%1}, [%2], %3;" : "=r"(v.u[0]), "=r"(v.u[1]) : "l"(p), "l"(pol))
#define LDM(op) do { if constexpr (V == 8) LD4(op); else LD2(op); } while (0)
#define LDMP(op, pol) do { if constexpr (V == 8) LD4P(op, pol); else LD2P(op, pol); } while (0)

template <int M, int V>
__device__ __forceinline__ hv<V> ldh(const uint16_t *p, uint64_t pel, uint64_t pef)
{
  static_assert(V == 4 || V == 8, "V");
  hv<V> v;
  if constexpr (M == M_NC) LDM("ld.global.nc");
  else if constexpr (M == M_PLAIN) LDM("ld.global");
  else if constexpr (M == M_L1EL) LDM("ld.global.L1::evict_last");
  else if constexpr (M == M_L1EF) LDM("ld.global.L1::evict_first");
  else if constexpr (M == M_L2EL) LDMP("ld.global.L2::cache_hint", pel);
  else if constexpr (M == M_L2EF) LDMP("ld.global.L2::cache_hint", pef);
  else if constexpr (M == M_BEL) LDMP("ld.global.L1::evict_last.L2::cache_hint", pel);
  else if constexpr (M == M_BEF) LDMP("ld.global.L1::evict_first.L2::cache_hint", pef);
  else if constexpr (M == M_NA) LDM("ld.global.nc.L1::no_allocate");
  else if constexpr (M == M_LU) LDM("ld.global.lu");
  else if constexpr (M == M_CS) LDM("ld.global.cs");
  else if constexpr (M == M_NCL2EL) LDMP("ld.global.nc.L2::cache_hint", pel);
  else if constexpr (M == M_NCL2EF) LDMP("ld.global.nc.L2::cache_hint", pef);
  return v;
}

template <int S, int V>
__device__ __forceinline__ void sth(uint16_t *p, const hv<V> &v, uint64_t pef)
{
  if constexpr (V == 8) {
    if constexpr (S == S_PLAIN)
      asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]), "r"(v.u[2]), "r"(v.u[3]) : "memory");
    else if constexpr (S == S_CS)
      asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]), "r"(v.u[2]), "r"(v.u[3]) : "memory");
    else
      asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]), "r"(v.u[2]),
                   "r"(v.u[3]), "l"(pef) : "memory");
  } else {
    if constexpr (S == S_PLAIN)
      asm volatile("st.global.v2.u32 [%0], {%1,%2};" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]) : "memory");
    else if constexpr (S == S_CS)
      asm volatile("st.global.cs.v2.u32 [%0], {%1,%2};" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]) : "memory");
    else
      asm volatile("st.global.L2::cache_hint.v2.u32 [%0], {%1,%2}, %3;" ::"l"(p), "r"(v.u[0]), "r"(v.u[1]), "l"(pef) : "memory");
  }
}

template <int V> __device__ __forceinline__ uint16_t el(const hv<V> &v, int l)
{
  return (uint16_t)(l & 1 ? v.u[l >> 1] >> 16 : v.u[l >> 1] & 0xffff);
}
/* h = f16(x + r) as a float */
template <int V> __device__ __forceinline__ float hsum(const hv<V> &a, const hv<V> &b, int l)
{
  return coil_h2f(coil_f2h(coil_h2f(el(a, l)) + coil_h2f(el(b, l))));
}
template <int V> __device__ __forceinline__ hv<V> outv(const float *h, float s, const hv<V> &w)
{
  hv<V> o;
#pragma unroll
  for (int l = 0; l < V; l += 2) {
    const uint32_t lo = coil_f2h(coil_rnd_h(h[l] * s) * coil_h2f(el(w, l)));
    const uint32_t hi = coil_f2h(coil_rnd_h(h[l + 1] * s) * coil_h2f(el(w, l + 1)));
    o.u[l >> 1] = lo | hi << 16;
  }
  return o;
}

/* A row's sum over its NW warps: an xor-butterfly in each warp (every lane gets the same value),
 * the warps' partials in shared memory (double-buffered by row parity, so one barrier a row), each
 * thread adding them in the same order. */
template <int RPB, int NW>
__device__ __forceinline__ float row_sum(float acc, float (*part)[RPB][NW], int par, int sub, int wr)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if constexpr (NW == 1)
    return acc;
  if ((threadIdx.x & 31) == 0)
    part[par][sub][wr] = acc;
  __syncthreads();
  float s = 0;
#pragma unroll
  for (int k = 0; k < NW; k++)
    s += part[par][sub][k];
  return s;
}

/* ---------------- one pass: the row in registers (coil's form) ----------------
 * T threads a row, V f16 per access, COLS/(T*V) accesses per thread per tensor; RED 0: row_sum
 * (one barrier), 1: coil_block_reduce (three barriers, thread 0 folds) and a barrier at the end;
 * MINB: __launch_bounds__'s minimum blocks per SM (8 at T 256 caps registers at 32); PW 1: w is
 * loaded with x and r, before the reduction (2026-12-04), not after it; PW 2: that, and every
 * vector's math before the first store. */
template <int T, int V, int M, int MW, int S, int RED, int MINB = 1, int PW = 0>
__global__ void __launch_bounds__(T, MINB) op(const uint16_t *__restrict__ x, const uint16_t *__restrict__ r,
                                        const uint16_t *__restrict__ w, uint16_t *__restrict__ y)
{
  constexpr int NW = T / 32, P = COLS / (T * V);
  static_assert(COLS % (T * V) == 0, "shape");
  __shared__ float part[2][1][NW];
  __shared__ __align__(16) unsigned char coil_smem[32 * 32];
  const uint64_t pel = pol_el(), pef = pol_ef();
  int par = 0;
  for (int row = blockIdx.x; row < ROWS; row += gridDim.x, par ^= 1) {
    const size_t base = (size_t)row * COLS;
    float h[P * V];
    hv<V> wv[PW ? P : 1];
    float acc = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int c = (j * T + threadIdx.x) * V;
      const hv<V> a = ldh<M, V>(x + base + c, pel, pef), b = ldh<M, V>(r + base + c, pel, pef);
      if constexpr (PW >= 1)
        wv[j] = ldh<MW, V>(w + c, pel, pef);
#pragma unroll
      for (int l = 0; l < V; l++) {
        h[j * V + l] = hsum(a, b, l);
        acc += h[j * V + l] * h[j * V + l];
      }
    }
    float sum;
    if constexpr (RED == 1)
      sum = coil_block_reduce(acc, coil_op_sum(), coil_smem);
    else
      sum = row_sum<1, NW>(acc, part, par, 0, threadIdx.x >> 5);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
    if constexpr (PW == 2) { /* every vector's math, then the stores */
      hv<V> ov[P];
#pragma unroll
      for (int j = 0; j < P; j++)
        ov[j] = outv<V>(&h[j * V], s, wv[j]);
#pragma unroll
      for (int j = 0; j < P; j++)
        sth<S, V>(y + base + (j * T + threadIdx.x) * V, ov[j], pef);
    } else {
#pragma unroll
      for (int j = 0; j < P; j++) {
        const int c = (j * T + threadIdx.x) * V;
        sth<S, V>(y + base + c, outv<V>(&h[j * V], s, PW == 1 ? wv[PW ? j : 0] : ldh<MW, V>(w + c, pel, pef)), pef);
      }
    }
    if constexpr (RED == 1)
      __syncthreads();
  }
}

/* ---------------- two passes, looped (Inductor's form) ----------------
 * A block takes RPB rows at once, T/RPB threads each; per pass the row in COLS/(T/RPB*V) chunks of
 * V f16 a thread; UNR: the chunk loops' unroll factor (1: not unrolled; >= chunks: fully). Pass 1
 * loads x and r with mode M1 and sums h^2; pass 2 loads them again with M2 (and w with MW), computes
 * and stores with mode S. RED as in op (RED 1 needs RPB 1). */
template <int T, int RPB, int V, int UNR, int M1, int M2, int MW, int S, int RED>
__global__ void __launch_bounds__(T) tp(const uint16_t *__restrict__ x, const uint16_t *__restrict__ r,
                                        const uint16_t *__restrict__ w, uint16_t *__restrict__ y)
{
  constexpr int TPR = T / RPB, NW = TPR / 32, STEP = TPR * V, IT = COLS / STEP;
  static_assert(TPR % 32 == 0 && COLS % STEP == 0 && ROWS % RPB == 0 && (RED == 0 || RPB == 1), "shape");
  __shared__ float part[2][RPB][NW];
  __shared__ __align__(16) unsigned char coil_smem[32 * 32];
  const uint64_t pel = pol_el(), pef = pol_ef();
  const int sub = threadIdx.x / TPR, tid = threadIdx.x % TPR;
  int par = 0;
  for (int r0 = blockIdx.x * RPB; r0 < ROWS; r0 += gridDim.x * RPB, par ^= 1) {
    const size_t base = (size_t)(r0 + sub) * COLS;
    float acc = 0;
#pragma unroll UNR
    for (int i = 0; i < IT; i++) {
      const int c = i * STEP + tid * V;
      const hv<V> a = ldh<M1, V>(x + base + c, pel, pef), b = ldh<M1, V>(r + base + c, pel, pef);
#pragma unroll
      for (int l = 0; l < V; l++) {
        const float h = hsum(a, b, l);
        acc += h * h;
      }
    }
    float sum;
    if constexpr (RED == 1)
      sum = coil_block_reduce(acc, coil_op_sum(), coil_smem);
    else
      sum = row_sum<RPB, NW>(acc, part, par, sub, tid >> 5);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
#pragma unroll UNR
    for (int i = 0; i < IT; i++) {
      const int c = i * STEP + tid * V;
      const hv<V> a = ldh<M2, V>(x + base + c, pel, pef), b = ldh<M2, V>(r + base + c, pel, pef);
      const hv<V> ww = ldh<MW, V>(w + c, pel, pef);
      float h[V];
#pragma unroll
      for (int l = 0; l < V; l++)
        h[l] = hsum(a, b, l);
      sth<S, V>(y + base + c, outv<V>(h, s, ww), pef);
    }
    if constexpr (RED == 1)
      __syncthreads();
  }
}

/* ---------------- one pass, the row kept as packed f16 (2026-12-04, session 43) ----------------
 * As op, but h (which the graph rounds to f16 anyway) is held as f16 pairs, half the registers of
 * the f32 row, so that more blocks fit on an SM (more rows' loads in flight). RED as in op. */
template <int T, int V, int RED, int MINB = 1>
__global__ void __launch_bounds__(T, MINB) opk(const uint16_t *__restrict__ x, const uint16_t *__restrict__ r,
                                         const uint16_t *__restrict__ w, uint16_t *__restrict__ y)
{
  constexpr int NW = T / 32, P = COLS / (T * V);
  static_assert(COLS % (T * V) == 0, "shape");
  __shared__ float part[2][1][NW];
  __shared__ __align__(16) unsigned char coil_smem[32 * 32];
  int par = 0;
  for (int row = blockIdx.x; row < ROWS; row += gridDim.x, par ^= 1) {
    const size_t base = (size_t)row * COLS;
    hv<V> hp[P];
    float acc = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int c = (j * T + threadIdx.x) * V;
      const hv<V> a = ldh<M_NC, V>(x + base + c, 0, 0), b = ldh<M_NC, V>(r + base + c, 0, 0);
#pragma unroll
      for (int l = 0; l < V; l += 2) {
        const uint32_t lo = coil_f2h(coil_h2f(el(a, l)) + coil_h2f(el(b, l)));
        const uint32_t hi = coil_f2h(coil_h2f(el(a, l + 1)) + coil_h2f(el(b, l + 1)));
        hp[j].u[l >> 1] = lo | hi << 16;
        const float fl = coil_h2f((uint16_t)lo), fh = coil_h2f((uint16_t)hi);
        acc += fl * fl;
        acc += fh * fh;
      }
    }
    float sum;
    if constexpr (RED == 1)
      sum = coil_block_reduce(acc, coil_op_sum(), coil_smem);
    else
      sum = row_sum<1, NW>(acc, part, par, 0, threadIdx.x >> 5);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int c = (j * T + threadIdx.x) * V;
      float h[V];
#pragma unroll
      for (int l = 0; l < V; l++)
        h[l] = coil_h2f(el(hp[j], l));
      sth<S_PLAIN, V>(y + base + c, outv<V>(h, s, ldh<M_NC, V>(w + c, 0, 0)), 0);
    }
    if constexpr (RED == 1)
      __syncthreads();
  }
}

/* ---------------- persistent, the next rows' loads in flight (2026-12-04, session 43) ----------------
 * A block takes rows blockIdx.x, + gridDim.x, ... and keeps the loads of its next S-1 rows in flight
 * while it reduces and stores the current one, so no block is ever without loads outstanding (the
 * one-pass kernel has none while it reduces and stores). The rows go to shared memory: S stages of
 * x's and r's row (16 KB a stage), dynamic shared memory.
 *   pa: cp.async.cg, 16 bytes a thread per access; each thread reads back only what it copied, so
 *       a stage needs no barrier, only cp.async.wait_group.
 *   pb: cp.async.bulk (the TMA's 1-D copy), thread 0 copies each 8 KB row with one instruction,
 *       completion by an mbarrier per stage; the stage is refilled after the row's reduction barrier
 *       (every thread has read it by then). */
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

template <int T, int S>
__global__ void __launch_bounds__(T) pa(const uint16_t *__restrict__ x, const uint16_t *__restrict__ r,
                                        const uint16_t *__restrict__ w, uint16_t *__restrict__ y)
{
  constexpr int V = 8, NW = T / 32, P = COLS / (T * V);
  static_assert(COLS % (T * V) == 0, "shape");
  extern __shared__ __align__(16) uint4 buf[]; /* [S][2][P][T] */
  __shared__ float part[2][1][NW];
  const int tid = threadIdx.x;
  const int nrows = (ROWS - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;
  auto issue = [&](int k) {
    if (k < nrows) {
      const size_t base = (size_t)(blockIdx.x + k * gridDim.x) * COLS;
      uint4 *st = buf + (size_t)(k % S) * 2 * P * T;
#pragma unroll
      for (int j = 0; j < P; j++) {
        const size_t c = base + (size_t)(j * T + tid) * V;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(st + j * T + tid)), "l"(x + c) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(st + (P + j) * T + tid)), "l"(r + c) : "memory");
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
#pragma unroll
  for (int k = 0; k < S - 1; k++)
    issue(k);
  int par = 0;
  for (int i = 0; i < nrows; i++, par ^= 1) {
    issue(i + S - 1);
    asm volatile("cp.async.wait_group %0;" ::"n"(S - 1) : "memory");
    const uint4 *st = buf + (size_t)(i % S) * 2 * P * T;
    const size_t base = (size_t)(blockIdx.x + i * gridDim.x) * COLS;
    float h[P * V], acc = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      hv<V> a, b;
      memcpy(&a, &st[j * T + tid], 16);
      memcpy(&b, &st[(P + j) * T + tid], 16);
#pragma unroll
      for (int l = 0; l < V; l++) {
        h[j * V + l] = hsum(a, b, l);
        acc += h[j * V + l] * h[j * V + l];
      }
    }
    const float sum = row_sum<1, NW>(acc, part, par, 0, tid >> 5);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int c = (j * T + tid) * V;
      sth<S_PLAIN, V>(y + base + c, outv<V>(&h[j * V], s, ldh<M_NC, V>(w + c, 0, 0)), 0);
    }
  }
}

template <int T, int S>
__global__ void __launch_bounds__(T) pb(const uint16_t *__restrict__ x, const uint16_t *__restrict__ r,
                                        const uint16_t *__restrict__ w, uint16_t *__restrict__ y)
{
  constexpr int V = 8, NW = T / 32, P = COLS / (T * V);
  static_assert(COLS % (T * V) == 0, "shape");
  extern __shared__ __align__(128) uint4 buf[]; /* [S][2][COLS / 8] */
  __shared__ __align__(8) uint64_t bar[S];
  __shared__ float part[2][1][NW];
  const int tid = threadIdx.x;
  const int nrows = (ROWS - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;
  constexpr uint32_t ROWB = COLS * 2;
  if (tid == 0) {
#pragma unroll
    for (int k = 0; k < S; k++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar[k])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int k) { /* thread 0 only */
    if (k >= nrows)
      return;
    const size_t base = (size_t)(blockIdx.x + k * gridDim.x) * COLS;
    uint4 *st = buf + (size_t)(k % S) * 2 * (COLS / 8);
    const uint32_t b = smem_u32(&bar[k % S]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(2 * ROWB) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_u32(st)), "l"(x + base), "r"(ROWB), "r"(b) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_u32(st + COLS / 8)), "l"(r + base), "r"(ROWB), "r"(b) : "memory");
  };
  if (tid == 0)
    for (int k = 0; k < S; k++)
      issue(k);
  int par = 0;
  for (int i = 0; i < nrows; i++, par ^= 1) {
    const uint32_t b = smem_u32(&bar[i % S]), phase = (uint32_t)(i / S) & 1;
    uint32_t done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b), "r"(phase) : "memory");
    const uint4 *st = buf + (size_t)(i % S) * 2 * (COLS / 8);
    const size_t base = (size_t)(blockIdx.x + i * gridDim.x) * COLS;
    float h[P * V], acc = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      hv<V> a, bb;
      memcpy(&a, &st[j * T + tid], 16);
      memcpy(&bb, &st[COLS / 8 + j * T + tid], 16);
#pragma unroll
      for (int l = 0; l < V; l++) {
        h[j * V + l] = hsum(a, bb, l);
        acc += h[j * V + l] * h[j * V + l];
      }
    }
    const float sum = row_sum<1, NW>(acc, part, par, 0, tid >> 5); /* its barrier: the stage is read */
    if (tid == 0)
      issue(i + S);
    const float s = coil_rsqrtf_ref(sum / 4096.0f + 0x1.0c6f7ap-20f);
#pragma unroll
    for (int j = 0; j < P; j++) {
      const int c = (j * T + tid) * V;
      sth<S_PLAIN, V>(y + base + c, outv<V>(&h[j * V], s, ldh<M_NC, V>(w + c, 0, 0)), 0);
    }
  }
}

/* ---------------- inputs ---------------- */
__device__ __forceinline__ uint32_t hash32(uint32_t h)
{
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  return h;
}
static bool normal_inputs; /* --normal: standard normal inputs (as torch.randn) instead of uniform */
__global__ void gen(uint16_t *p, size_t n, uint32_t seed, float scale, bool normal)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t h = hash32((uint32_t)i * 0x9e3779b1u ^ seed * 0x85ebca6bu ^ (uint32_t)(i >> 32) * 0xc2b2ae35u);
    if (normal) { /* Box-Muller */
      const float u1 = ((float)(h >> 8) + 0.5f) * 0x1p-24f, u2 = (float)(hash32(h ^ 0x5bd1e995u) >> 8) * 0x1p-24f;
      p[i] = coil_f2h(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
    } else
      p[i] = coil_f2h(((float)(h >> 8) * 0x1p-24f * 2.0f - 1.0f) * scale); /* uniform in [-scale, scale) */
  }
}

/* ---------------- host: f16, the reference ---------------- */
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float h2f(uint16_t h)
{
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) { float f = m * 0x1p-24f; return s ? -f : f; }
  if (e == 31) return bitsf(s | 0x7f800000u | m << 13);
  return bitsf(s | (e + 112) << 23 | m << 13);
}
static uint16_t f2h(float f) /* round to nearest even */
{
  uint32_t u = fbits(f), s = (u >> 16) & 0x8000;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return (uint16_t)(s | 0x7e00);
  if (u >= 0x477ff000u) return (uint16_t)(s | 0x7c00);
  if (u < 0x38800000u) return (uint16_t)(s | (uint16_t)rintf(bitsf(u) * 0x1p24f));
  uint32_t hm = ((u >> 23) - 112) << 10 | (u & 0x7fffff) >> 13, rem = u & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) hm++;
  return (uint16_t)(s | hm);
}
static int ord16(uint16_t h) { return h & 0x8000 ? -(int)(h & 0x7fff) : (int)(h & 0x7fff); }

static void reference(const uint16_t *x, const uint16_t *r, const uint16_t *w, uint16_t *y)
{
#pragma omp parallel for
  for (int i = 0; i < ROWS; i++) {
    const size_t b = (size_t)i * COLS;
    std::vector<float> h(COLS);
    double ss = 0;
    for (int j = 0; j < COLS; j++) {
      h[j] = h2f(f2h(h2f(x[b + j]) + h2f(r[b + j])));
      ss += (double)h[j] * h[j];
    }
    const float s = 1.0f / sqrtf((float)ss / 4096.0f + 0x1.0c6f7ap-20f);
    for (int j = 0; j < COLS; j++)
      y[b + j] = f2h(h2f(f2h(h[j] * s)) * h2f(w[j]));
  }
}

/* ---------------- variants ---------------- */
typedef void (*kfn)(const uint16_t *, const uint16_t *, const uint16_t *, uint16_t *);
struct var {
  std::string name;
  kfn f;             /* runtime-API kernel, or */
  CUfunction cf;     /* a driver-API one (cubins) */
  int threads, grid; /* grid 0: ROWS / rows-per-block; < 0: blocks resident at once (persistent) */
  int rpb;
  size_t smem;
  bool ind_numerics;
  int nparam;
  size_t psize[16];
  int regs, occ_blocks;
  double t[2], b2b, err;
  int ulp;
  long nan;
  bool ok;
};

static const uint16_t *gx, *gr, *gw;
static uint16_t *gy;

static void launch(const var &v, cudaStream_t st = 0)
{
  if (v.f) {
    v.f<<<v.grid, v.threads, v.smem, st>>>(gx, gr, gw, gy);
    CK(cudaGetLastError());
    return;
  }
  uint64_t store[16];
  void *args[16];
  int np = 0, ni = 0;
  const void *ptrs[4] = {gx, gr, gw, gy};
  for (int i = 0; i < v.nparam; i++) {
    store[i] = 0;
    if (v.psize[i] == 8 && np < 4)
      memcpy(&store[i], &ptrs[np++], 8);
    else if (v.psize[i] == 4) {
      int32_t n = ni++ == 0 ? ROWS : COLS;
      memcpy(&store[i], &n, 4);
    }
    args[i] = &store[i];
  }
  CU(cuLaunchKernel(v.cf, v.grid, 1, 1, v.threads, 1, 1, (unsigned)v.smem, (CUstream)st, args, 0));
}

static CUfunction load_cubin(const char *path, const char *name)
{
  FILE *f = fopen(path, "rb");
  if (!f) { printf("cannot open %s\n", path); return 0; }
  std::vector<char> d;
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) d.insert(d.end(), buf, buf + k);
  fclose(f);
  CUmodule m;
  CUresult e = cuModuleLoadData(&m, d.data());
  if (e) { printf("cuModuleLoadData(%s): %d\n", path, (int)e); return 0; }
  CUfunction fn;
  e = cuModuleGetFunction(&fn, m, name);
  if (e) { printf("cuModuleGetFunction(%s): %d\n", name, (int)e); return 0; }
  return fn;
}

static bool queued, mean_of; /* --queued: do_bench's order; --mean: its mean, not the median */

/* As triton's do_bench and coil bench: every launch queued (flush, event, launch, event), one
 * synchronize at the end, so the GPU never idles between a launch and the next flush. */
static double bench_queued(const var &v, char *flush)
{
  enum { N = 220 };
  std::vector<cudaEvent_t> e(2 * N);
  for (auto &x : e)
    CK(cudaEventCreate(&x));
  for (int i = 0; i < N; i++) {
    CK(cudaMemsetAsync(flush, i, 256 << 20));
    CK(cudaEventRecord(e[2 * i]));
    launch(v);
    CK(cudaEventRecord(e[2 * i + 1]));
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  double sum = 0;
  for (int i = 20; i < N; i++) {
    float ms;
    CK(cudaEventElapsedTime(&ms, e[2 * i], e[2 * i + 1]));
    t.push_back(ms), sum += ms;
  }
  for (auto &x : e)
    CK(cudaEventDestroy(x));
  std::sort(t.begin(), t.end());
  return (mean_of ? sum / t.size() : t[t.size() / 2]) * 1e3;
}

static double bench(const var &v, char *flush)
{
  if (queued)
    return bench_queued(v, flush);
  std::vector<float> t;
  double sum = 0;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 220; i++) {
    CK(cudaMemsetAsync(flush, i, 256 << 20));
    CK(cudaEventRecord(e0));
    launch(v);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 20)
      t.push_back(ms), sum += ms;
  }
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return (mean_of ? sum / t.size() : t[t.size() / 2]) * 1e3;
}

static double bench_b2b(const var &v)
{
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 5; i++)
    launch(v);
  CK(cudaEventRecord(e0));
  for (int i = 0; i < 50; i++)
    launch(v);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms * 1e3 / 50;
}

int
main(int argc, char **argv)
{
  const char *coil_cubin = 0, *coil_name = 0, *ind_cubin = 0, *ind_name = 0;
  int coil_threads = 256, ind_threads = 0, ind_grid = 0, ind_smem = 0;
  bool once = false, ncuflush = false, occ = false;
  const char *tseeds = 0;
  int first = 0; /* --first N: only the first N variants (coil's, Inductor's) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--once"))
      once = true;
    else if (!strcmp(argv[i], "--ncuflush"))
      once = ncuflush = true;
    else if (!strcmp(argv[i], "--tseeds") && i + 1 < argc)
      tseeds = argv[++i];
    else if (!strcmp(argv[i], "--occ"))
      occ = true;
    else if (!strcmp(argv[i], "--queued"))
      queued = true;
    else if (!strcmp(argv[i], "--mean"))
      mean_of = true;
    else if (!strcmp(argv[i], "--normal"))
      normal_inputs = true;
    else if (!strcmp(argv[i], "--first") && i + 1 < argc)
      first = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--coil") && i + 3 < argc) {
      coil_cubin = argv[++i]; coil_name = argv[++i]; coil_threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--inductor") && i + 5 < argc) {
      ind_cubin = argv[++i]; ind_name = argv[++i]; ind_threads = atoi(argv[++i]);
      ind_smem = atoi(argv[++i]); ind_grid = atoi(argv[++i]);
    }
  }
  CU(cuInit(0));
  CK(cudaSetDevice(0));
  CK(cudaFree(0)); /* the primary context, which the driver-API modules load into too */
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int clk = 0, mclk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0);
  printf("device: %s, %d SMs, L2 %d MB, sm_%d%d, clock %d MHz, memory clock %d MHz\n", prop.name,
         prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.major, prop.minor, clk / 1000, mclk / 1000);

  const size_t n = (size_t)ROWS * COLS;
  uint16_t *x, *r, *w, *y;
  char *flush;
  CK(cudaMalloc(&x, n * 2)); CK(cudaMalloc(&r, n * 2)); CK(cudaMalloc(&w, COLS * 2));
  CK(cudaMalloc(&y, n * 2)); CK(cudaMalloc(&flush, 256 << 20));
  gx = x; gr = r; gw = w; gy = y;

  /* the copy ceiling: a 512 MB device-to-device copy, bytes read plus written */
  if (!once) {
    char *a, *b;
    const size_t cb = 512u << 20;
    CK(cudaMalloc(&a, cb)); CK(cudaMalloc(&b, cb));
    CK(cudaMemset(a, 1, cb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int i = 0; i < 23; i++) {
      CK(cudaEventRecord(e0));
      CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice));
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (i >= 3) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("copy 512 MB device to device: %.1f us, %.0f GB/s (read + write); the graph's 201 MB at that rate: %.1f us\n",
           t[10] * 1e3, 2.0 * cb / (t[10] * 1e-3) / 1e9, 3.0 * n * 2 / (2.0 * cb / (t[10] * 1e-3)) * 1e6);
    CK(cudaFree(a)); CK(cudaFree(b));
  }

  std::vector<var> v;
  auto add = [&](const char *name, kfn f, int threads, int rpb = 1, int grid = 0, size_t smem = 0) {
    var a = {};
    a.name = name; a.f = f; a.threads = threads; a.rpb = rpb; a.grid = grid; a.smem = smem;
    if (smem > 0) /* static shared memory counts against the 48 KB too */
      CK(cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    v.push_back(a);
  };
  auto addd = [&](const char *name, CUfunction f, int threads, size_t smem, int grid, bool ind) {
    var a = {};
    a.name = name; a.cf = f; a.threads = threads; a.rpb = 1; a.grid = grid; a.smem = smem; a.ind_numerics = ind;
    for (size_t i = 0; i < 16; i++) {
      size_t off, sz;
      if (cuFuncGetParamInfo(f, i, &off, &sz) != CUDA_SUCCESS) break;
      a.psize[a.nparam++] = sz;
    }
    printf("%s: %d params (sizes", name, a.nparam);
    for (int i = 0; i < a.nparam; i++) printf(" %zu", a.psize[i]);
    printf("), %d threads, %zu B dynamic shared memory, grid %d\n", threads, smem, grid);
    if (smem > 48 * 1024)
      CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
    v.push_back(a);
  };

  if (coil_cubin) {
    CUfunction f = load_cubin(coil_cubin, coil_name);
    if (f) addd("coil-cubin (NVRTC, as coil runs it)", f, coil_threads, 0, ROWS, false);
  }
#ifdef COIL_KNAME
  add("coil-src (nvcc)", (kfn)COIL_KNAME, coil_threads);
#endif
  if (ind_cubin) {
    CUfunction f = load_cubin(ind_cubin, ind_name);
    if (f) addd("inductor (Triton cubin)", f, ind_threads, ind_smem, ind_grid, true);
  }
  /* persistent with the next rows in flight (session 43): grid -1 = every block resident at once */
  /* --occ: coil's and Inductor's cubins again with dynamic shared memory they do not use, which caps
   * the blocks an SM holds (is the resident work, and so the last wave's tail, what separates them?) */
  if (occ) {
    const int smem_sm = prop.sharedMemPerMultiprocessor;
    for (int nb : {5, 4, 3, 2})
      for (int k = 0; k < 2; k++) {
        const var *b = nullptr;
        for (auto &q : v)
          if (q.cf && (k == 0 ? !q.ind_numerics : q.ind_numerics))
            b = &q;
        if (!b)
          continue;
        var a = *b;
        const size_t sm = (size_t)(smem_sm / nb - 1024 - (k ? 64 : 0)) & ~(size_t)1023;
        a.smem = sm + b->smem;
        a.name = (k ? "inductor" : "coil-cubin") + std::string(" at most ") + std::to_string(nb) + " blocks/SM";
        int st = 0;
        cuFuncGetAttribute(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, a.cf);
        const CUresult e = cuFuncSetAttribute(a.cf, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)a.smem);
        printf("%s: %zu B dynamic + %d B static shared memory (SM %d, block opt-in %zu)%s\n", a.name.c_str(), a.smem, st,
               smem_sm, prop.sharedMemPerBlockOptin, e ? ": refused, left out" : "");
        if (!e)
          v.push_back(a);
      }
  }
  /* coil's form with Inductor's cache hints and the others (session 43) */
  add("op T256x16 bel coilred", op<256, 8, M_BEL, M_BEL, S_PLAIN, 1>, 256);
  add("op T256x16 l1el coilred", op<256, 8, M_L1EL, M_L1EL, S_PLAIN, 1>, 256);
  add("op T256x16 l2el coilred", op<256, 8, M_L2EL, M_L2EL, S_PLAIN, 1>, 256);
  add("op T256x16 plain coilred", op<256, 8, M_PLAIN, M_PLAIN, S_PLAIN, 1>, 256);
  add("op T256x16 l2ef coilred", op<256, 8, M_L2EF, M_NC, S_PLAIN, 1>, 256);
  add("op T256x16 nc st.cs coilred", op<256, 8, M_NC, M_NC, S_CS, 1>, 256);
  add("op T256x16 nc st l2ef coilred", op<256, 8, M_NC, M_NC, S_L2EF, 1>, 256);
  add("op T256x16 l1ef coilred", op<256, 8, M_L1EF, M_NC, S_PLAIN, 1>, 256);
  add("opk T256x16 packed h coilred", opk<256, 8, 1>, 256);
  add("opk T256x16 packed h", opk<256, 8, 0>, 256);
  add("opk T256x16 packed h minb8", opk<256, 8, 0, 8>, 256);
  add("opk T256x16 packed h coilred minb8", opk<256, 8, 1, 8>, 256);
  add("opk T128x32 packed h", opk<128, 8, 0>, 128);
  add("opk T128x32 packed h coilred", opk<128, 8, 1>, 128);
  add("opk T128x32 packed h minb16", opk<128, 8, 0, 16>, 128);
  add("opk T512x8 packed h", opk<512, 8, 0>, 512);
  add("opk T64x64 packed h", opk<64, 8, 0>, 64);
  add("pa T256 S2 cp.async resident", pa<256, 2>, 256, 1, -1, 2 * 16384);
  add("pa T256 S3 cp.async resident", pa<256, 3>, 256, 1, -1, 3 * 16384);
  add("pa T256 S4 cp.async resident", pa<256, 4>, 256, 1, -1, 4 * 16384);
  add("pa T512 S3 cp.async resident", pa<512, 3>, 512, 1, -1, 3 * 16384);
  add("pa T256 S3 cp.async grid 1024", pa<256, 3>, 256, 1, 1024, 3 * 16384);
  add("pa T256 S3 cp.async grid 512", pa<256, 3>, 256, 1, 512, 3 * 16384);
  add("pb T256 S2 bulk resident", pb<256, 2>, 256, 1, -1, 2 * 16384);
  add("pb T256 S3 bulk resident", pb<256, 3>, 256, 1, -1, 3 * 16384);
  add("pb T256 S4 bulk resident", pb<256, 4>, 256, 1, -1, 4 * 16384);
  add("pb T512 S3 bulk resident", pb<512, 3>, 512, 1, -1, 3 * 16384);
  add("pb T128 S3 bulk resident", pb<128, 3>, 128, 1, -1, 3 * 16384);
  add("pb T256 S3 bulk grid 1024", pb<256, 3>, 256, 1, 1024, 3 * 16384);
  add("pb T256 S3 bulk grid 512", pb<256, 3>, 256, 1, 512, 3 * 16384);
  add("old T256 ld.nc", rms<256, 2>, 256);
  add("old T512 L2 evict_first x,r", rms<512, 3>, 512);
  /* one pass */
  add("op T256x16 nc coilred", op<256, 8, M_NC, M_NC, S_PLAIN, 1>, 256);
  add("op T256x16 nc coilred minb8", op<256, 8, M_NC, M_NC, S_PLAIN, 1, 8>, 256);
  add("op T256x16 nc", op<256, 8, M_NC, M_NC, S_PLAIN, 0>, 256);
  add("op T256x16 nc minb8", op<256, 8, M_NC, M_NC, S_PLAIN, 0, 8>, 256);
  add("op T256x16 nc coilred w first", op<256, 8, M_NC, M_NC, S_PLAIN, 1, 1, 1>, 256);
  add("op T256x16 nc w first", op<256, 8, M_NC, M_NC, S_PLAIN, 0, 1, 1>, 256);
  add("op T512x8 nc coilred w first", op<512, 8, M_NC, M_NC, S_PLAIN, 1, 1, 1>, 512);
  add("op T256x16 nc coilred w first st last", op<256, 8, M_NC, M_NC, S_PLAIN, 1, 1, 2>, 256);
  add("op T512x8 nc", op<512, 8, M_NC, M_NC, S_PLAIN, 0>, 512);
  add("op T512x8 nc coilred", op<512, 8, M_NC, M_NC, S_PLAIN, 1>, 512);
  add("op T512x8 na", op<512, 8, M_NA, M_NC, S_PLAIN, 0>, 512);
  add("op T512x8 l2ef", op<512, 8, M_L2EF, M_L2EL, S_PLAIN, 0>, 512);
  add("op T512x8 nc persistent", op<512, 8, M_NC, M_NC, S_PLAIN, 0>, 512, 1, -1);
  add("op T1024x4 nc", op<1024, 4, M_NC, M_NC, S_PLAIN, 0>, 1024);
  add("op T512x2x4 nc", op<512, 4, M_NC, M_NC, S_PLAIN, 0>, 512);
  /* two passes (Inductor's form) */
  add("tp T512 V4 nc/nc", tp<512, 1, 4, 64, M_NC, M_NC, M_NC, S_PLAIN, 0>, 512);
  add("tp T512 V4 plain/plain", tp<512, 1, 4, 64, M_PLAIN, M_PLAIN, M_PLAIN, S_PLAIN, 0>, 512);
  add("tp T512 V4 l1el/l1ef w l1el", tp<512, 1, 4, 64, M_L1EL, M_L1EF, M_L1EL, S_PLAIN, 0>, 512);
  add("tp T512 V4 l2el/l2ef w l2el", tp<512, 1, 4, 64, M_L2EL, M_L2EF, M_L2EL, S_PLAIN, 0>, 512);
  add("tp T512 V4 bel/bef w bel", tp<512, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 512);
  add("tp T512 V4 ncl2el/ncl2ef w nc", tp<512, 1, 4, 64, M_NCL2EL, M_NCL2EF, M_NC, S_PLAIN, 0>, 512);
  add("tp T512 V4 bel/lu w bel", tp<512, 1, 4, 64, M_BEL, M_LU, M_BEL, S_PLAIN, 0>, 512);
  add("tp T512 V4 bel/bef st.cs", tp<512, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_CS, 0>, 512);
  add("tp T512 V4 bel/bef unroll1", tp<512, 1, 4, 1, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 512);
  add("tp T512 V4 bel/bef coilred", tp<512, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 1>, 512);
  add("tp T512 V4 bel/bef persistent", tp<512, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 512, 1, -1);
  add("tp T512 V8 bel/bef", tp<512, 1, 8, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 512);
  add("tp T512 V8 l2el/l2ef", tp<512, 1, 8, 64, M_L2EL, M_L2EF, M_L2EL, S_PLAIN, 0>, 512);
  add("tp T256 V8 bel/bef", tp<256, 1, 8, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 256);
  add("tp T256 V4 bel/bef", tp<256, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 256);
  add("tp T256 V4 l1el/l1ef w l1el", tp<256, 1, 4, 64, M_L1EL, M_L1EF, M_L1EL, S_PLAIN, 0>, 256);
  add("tp T256 V4 nc/nc", tp<256, 1, 4, 64, M_NC, M_NC, M_NC, S_PLAIN, 0>, 256);
  add("tp T1024 V4 bel/bef", tp<1024, 1, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 1024);
  add("tp T512 2 rows V4 bel/bef", tp<512, 2, 4, 64, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 512, 2);
  add("tp T512 2 rows V4 l1el/l1ef", tp<512, 2, 4, 64, M_L1EL, M_L1EF, M_L1EL, S_PLAIN, 0>, 512, 2);
  add("tp T256 8 rows (warp/row) V8 bel/bef", tp<256, 8, 8, 4, M_BEL, M_BEF, M_BEL, S_PLAIN, 0>, 256, 8);

  if (first > 0 && (size_t)first < v.size())
    v.resize(first);
  printf("inputs: %s\n", normal_inputs ? "standard normal (x, r, w)" : "uniform in [-2, 2) (x, r), [-1.5, 1.5) (w)");
  for (auto &a : v) {
    if (a.f) {
      cudaFuncAttributes at;
      CK(cudaFuncGetAttributes(&at, (const void *)a.f));
      a.regs = at.numRegs;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a.occ_blocks, a.f, a.threads, a.smem));
    } else {
      CU(cuFuncGetAttribute(&a.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, a.cf));
      CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&a.occ_blocks, a.cf, a.threads, a.smem));
    }
    if (a.grid == 0)
      a.grid = ROWS / a.rpb;
    else if (a.grid < 0)
      a.grid = a.occ_blocks * prop.multiProcessorCount;
  }

  if (once) { /* one launch of each on random inputs, nothing else (for ncu) */
    gen<<<1024, 256>>>(x, n, 7, 2.0f, normal_inputs);
    gen<<<1024, 256>>>(r, n, 8, 2.0f, normal_inputs);
    gen<<<4, 256>>>(w, COLS, 9, 1.5f, normal_inputs);
    for (auto &a : v) {
      if (ncuflush) /* a 256 MB write by a kernel first, which leaves L2 dirty as do_bench's zero_() */
        gen<<<1024, 256>>>((uint16_t *)flush, (128u << 20), 11, 1.0f, false);
      launch(a);
    }
    CK(cudaDeviceSynchronize());
    return 0;
  }

  /* checks: fresh inputs for each variant, the output poisoned */
  std::vector<uint16_t> hx(n), hr(n), hw(COLS), hy(n), ref(n);
  int nbad = 0;
  for (size_t i = 0; i < v.size(); i++) {
    var &a = v[i];
    const uint32_t seed = 1000 + 3 * (uint32_t)i;
    gen<<<1024, 256>>>(x, n, seed, 2.0f, normal_inputs);
    gen<<<1024, 256>>>(r, n, seed + 1, 2.0f, normal_inputs);
    gen<<<4, 256>>>(w, COLS, seed + 2, 1.5f, normal_inputs);
    CK(cudaGetLastError());
    CK(cudaMemset(y, 0xff, n * 2)); /* f16 NaN */
    launch(a);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hx.data(), x, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hr.data(), r, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hw.data(), w, COLS * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
    reference(hx.data(), hr.data(), hw.data(), ref.data());
    double num = 0, den = 0;
    long nan = 0, nz = 0;
    int ulp = 0;
    for (size_t j = 0; j < n; j++) {
      const float a_ = h2f(hy[j]), b_ = h2f(ref[j]);
      if (a_ != a_) { nan++; continue; }
      nz += hx[j] != 0;
      num += (double)(a_ - b_) * (a_ - b_);
      den += (double)b_ * b_;
      ulp = std::max(ulp, abs(ord16(hy[j]) - ord16(ref[j])));
    }
    a.err = sqrt(num / den);
    a.ulp = ulp;
    a.nan = nan;
    a.ok = nan == 0 && a.err < 1e-3 && (a.ind_numerics || ulp <= 2) && nz > (long)(n * 0.99);
    nbad += !a.ok;
    printf("check %-38s seed %u: NaN/unwritten %ld, max %d ulp, rel err %.2e, non-zero x %.4f -> %s\n", a.name.c_str(),
           seed, nan, ulp, a.err, (double)nz / n, a.ok ? "ok" : "FAIL");
  }

  /* --tseeds A,B,...: the variants timed on the inputs of each seed in turn (is a kernel's time a
   * function of the input values?), then the table as usual on the last of them */
  for (const char *q = tseeds; q && *q;) {
    const uint32_t seed = (uint32_t)strtoul(q, (char **)&q, 10);
    q += *q == ',';
    gen<<<1024, 256>>>(x, n, seed, 2.0f, normal_inputs);
    gen<<<1024, 256>>>(r, n, seed + 1, 2.0f, normal_inputs);
    gen<<<4, 256>>>(w, COLS, seed + 2, 1.5f, normal_inputs);
    CK(cudaDeviceSynchronize());
    for (int round = 0; round < 2; round++)
      for (auto &a : v)
        printf("tseed %u round %d %-38s %8.2f us\n", seed, round, a.name.c_str(), bench(a, flush));
  }

  /* timing, on the last check's inputs (random, non-zero) */
  for (int round = 0; round < 2; round++)
    for (auto &a : v) {
      a.t[round] = bench(a, flush);
      if (round == 1)
        a.b2b = bench_b2b(a);
    }

  double tind = 0;
  for (auto &a : v)
    if (a.ind_numerics)
      tind = std::min(a.t[0], a.t[1]);
  printf("\n%-38s %8s %8s %8s %6s %7s %5s %5s %6s %s\n", "variant", "us r1", "us r2", "us b2b", "GB/s", "vs ind", "regs",
         "grid", "occ%", "check");
  for (auto &a : v) {
    const double t = std::min(a.t[0], a.t[1]);
    char vs[16] = "-";
    if (tind > 0)
      snprintf(vs, sizeof vs, "%.3f", tind / t);
    printf("%-38s %8.2f %8.2f %8.2f %6.0f %7s %5d %5d %5.0f%% %s (%d ulp, %.1e)\n", a.name.c_str(), a.t[0], a.t[1], a.b2b,
           3.0 * n * 2 / (t * 1e-6) / 1e9, vs, a.regs, a.grid, 100.0 * a.occ_blocks * a.threads / prop.maxThreadsPerMultiProcessor,
           a.ok ? "ok" : "FAIL", a.ulp, a.err);
  }
  printf("(timing: %s, %s)\n", queued ? "queued as do_bench" : "each launch waited for", mean_of ? "mean" : "median");
  printf("(us: median of 200 launches, each after a 256 MB memset; b2b: mean of 50 back to back; GB/s: 201 MB over the "
         "better median; vs ind: Inductor's cubin time over the variant's, > 1 is faster than Inductor)\n");
  return nbad != 0;
}
