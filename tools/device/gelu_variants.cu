// gelu_variants.cu — variants of the gelu(x*w+b) kernel (f32 8192 x 8192, the G7 benchmark graph,
// exact gelu) built into one shared library beside coil's own generated kernel, so that
// tools/device/gelu_variants.py can time each with triton's do_bench in the same process, on the same
// torch tensors, as Inductor's compiled function (issue G7: on the H200 coil's kernel runs at 0.97x).
//
// tools/device/gelu_variants.sh prepends the cuda plugin's whole kernels.cu for the graph (its prelude
// and coil's kernel, named by -DCOIL_KNAME). Every launcher takes (x, w, b, y, stream):
//   coil      coil's kernel as generated (its plan's block and tile, -DCOIL_THREADS and -DCOIL_TILE)
//   i32       the same with 32-bit indices
//   i32_ld    i32 with x read by a plain ld.global (not the read-only .nc path)
//   tri       Triton's shape: 128 threads, two 16-byte vectors a thread 512 floats apart, 32-bit
//             indices, x by plain ld.global, w and b with .L1::evict_last, as Inductor's PTX loads
//   tri_nc    tri with x through ld.global.nc
//   t256x2    256 threads, two vectors a thread, 32-bit indices
//   cs        i32 with x by ld.global.cs and y by st.global.cs (streaming: evict first)
//   l2ef      i32 with x by ld.global.L2::cache_hint under an L2 evict_first policy
//   grid      i32 as a grid-stride loop over 8 blocks an SM (132 SMs x 8)
#include <cstdint>
#include <cuda_runtime.h>

#define N 8192

struct f4 { float a, b, c, d; };

__device__ __forceinline__ float gelu(float v)
{
  return 0.5f * v * (1.0f + erff(v * 0x1.6a09e6p-1f));
}

__device__ __forceinline__ f4 ld_plain(const float *p)
{
  f4 v;
  asm volatile("ld.global.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.a), "=f"(v.b), "=f"(v.c), "=f"(v.d) : "l"(p));
  return v;
}
__device__ __forceinline__ f4 ld_nc(const float *p)
{
  f4 v;
  asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.a), "=f"(v.b), "=f"(v.c), "=f"(v.d) : "l"(p));
  return v;
}
__device__ __forceinline__ f4 ld_el(const float *p)
{
  f4 v;
  asm volatile("ld.global.L1::evict_last.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.a), "=f"(v.b), "=f"(v.c), "=f"(v.d) : "l"(p));
  return v;
}
__device__ __forceinline__ f4 ld_cs(const float *p)
{
  f4 v;
  asm volatile("ld.global.cs.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.a), "=f"(v.b), "=f"(v.c), "=f"(v.d) : "l"(p));
  return v;
}
__device__ __forceinline__ f4 ld_l2ef(const float *p)
{
  f4 v;
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm volatile("ld.global.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
               : "=f"(v.a), "=f"(v.b), "=f"(v.c), "=f"(v.d) : "l"(p), "l"(pol));
  return v;
}
__device__ __forceinline__ void st_plain(float *p, f4 v)
{
  asm volatile("st.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(v.a), "f"(v.b), "f"(v.c), "f"(v.d) : "memory");
}
__device__ __forceinline__ void st_cs(float *p, f4 v)
{
  asm volatile("st.global.cs.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(v.a), "f"(v.b), "f"(v.c), "f"(v.d) : "memory");
}

__device__ __forceinline__ f4 apply(f4 x, f4 w, f4 b)
{
  return f4{gelu(x.a * w.a + b.a), gelu(x.b * w.b + b.b), gelu(x.c * w.c + b.c), gelu(x.d * w.d + b.d)};
}

enum { X_NC, X_PLAIN, X_CS, X_L2EF };

template <int THREADS, int VECS, int XLOAD, bool WB_EL, bool ST_CS>
__global__ void __launch_bounds__(THREADS) gelu_tile(const float *__restrict__ x, const float *__restrict__ w,
                                                     const float *__restrict__ b, float *__restrict__ y)
{
  const uint32_t base = blockIdx.x * (uint32_t)(THREADS * VECS * 4);
#pragma unroll
  for (int j = 0; j < VECS; j++) {
    const uint32_t i = base + ((uint32_t)j * THREADS + threadIdx.x) * 4;
    const uint32_t col = i % N;
    f4 xv = XLOAD == X_NC ? ld_nc(x + i) : XLOAD == X_PLAIN ? ld_plain(x + i) : XLOAD == X_CS ? ld_cs(x + i) : ld_l2ef(x + i);
    f4 wv = WB_EL ? ld_el(w + col) : ld_nc(w + col);
    f4 bv = WB_EL ? ld_el(b + col) : ld_nc(b + col);
    f4 r = apply(xv, wv, bv);
    if (ST_CS)
      st_cs(y + i, r);
    else
      st_plain(y + i, r);
  }
}

__global__ void __launch_bounds__(256) gelu_grid(const float *__restrict__ x, const float *__restrict__ w,
                                                 const float *__restrict__ b, float *__restrict__ y)
{
  for (uint32_t i = (blockIdx.x * 256u + threadIdx.x) * 4; i < (uint32_t)N * N; i += gridDim.x * 1024u) {
    const uint32_t col = i % N;
    st_plain(y + i, apply(ld_nc(x + i), ld_nc(w + col), ld_nc(b + col)));
  }
}

#define TILE(name, T, V, XL, EL, CS)                                                                  \
  extern "C" int gv_##name(const float *x, const float *w, const float *b, float *y, cudaStream_t s) \
  {                                                                                                   \
    gelu_tile<T, V, XL, EL, CS><<<(unsigned)((int64_t)N * N / (T * V * 4)), T, 0, s>>>(x, w, b, y);    \
    return (int)cudaGetLastError();                                                                   \
  }
TILE(i32, 256, 1, X_NC, false, false)
TILE(i32_ld, 256, 1, X_PLAIN, false, false)
TILE(tri, 128, 2, X_PLAIN, true, false)
TILE(tri_nc, 128, 2, X_NC, true, false)
TILE(t256x2, 256, 2, X_NC, false, false)
TILE(cs, 256, 1, X_CS, false, true)
TILE(l2ef, 256, 1, X_L2EF, false, false)

extern "C" int gv_grid(const float *x, const float *w, const float *b, float *y, cudaStream_t s)
{
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  gelu_grid<<<sms * 8, 256, 0, s>>>(x, w, b, y);
  return (int)cudaGetLastError();
}

extern "C" int gv_coil(const float *x, const float *w, const float *b, float *y, cudaStream_t s)
{
  COIL_KNAME<<<(unsigned)((int64_t)N * N / COIL_TILE), COIL_THREADS, 0, s>>>(x, w, b, y);
  return (int)cudaGetLastError();
}

/* coil's two-vector plan (256 threads x 2 vectors, its index arithmetic and C loads, not asm) with
 * the order of its parts changed (2026-12-04: coil's own two-vector kernel ran at 0.95x Inductor, the
 * hand-written t256x2 at 1.003x; in coil's SASS the first vector's store sits between the second
 * vector's loads and its math, in t256x2's both stores come last):
 *   c3def  per vector loads and math, both stores after the loop;
 *   c3pre  both vectors' loads first, then per vector math and store. */
template <int ORDER>
__global__ void __launch_bounds__(256) gelu_c3(const float *__restrict__ in0, const float *__restrict__ in1,
                                               const float *__restrict__ in2, float *__restrict__ out0)
{
  const uint32_t xbase = (uint32_t)blockIdx.x * 2048u;
  coil_vec<float, 4> o[2], a[2], w[2], c[2];
  int32_t ox0[2], ox1[2];
#pragma unroll
  for (int j = 0; j < 2; j++) {
    const uint32_t xindex = xbase + ((uint32_t)j * 256 + threadIdx.x) * 4;
    uint32_t rem = xindex;
    const int32_t x1 = rem % (8192);
    rem /= (8192);
    const int32_t x0 = rem;
    ox0[j] = x0;
    ox1[j] = x1;
    a[j] = *(const coil_vec<float, 4> *)&in0[8192 * x0 + x1];
    w[j] = *(const coil_vec<float, 4> *)&in1[x1];
    c[j] = *(const coil_vec<float, 4> *)&in2[x1];
    if (ORDER == 0) {
#pragma unroll
      for (int l = 0; l < 4; l++)
        o[j].e[l] = gelu(a[j].e[l] * w[j].e[l] + c[j].e[l]);
    }
  }
#pragma unroll
  for (int j = 0; j < 2; j++) {
    if (ORDER == 1) {
#pragma unroll
      for (int l = 0; l < 4; l++)
        o[j].e[l] = gelu(a[j].e[l] * w[j].e[l] + c[j].e[l]);
    }
    *(coil_vec<float, 4> *)&out0[8192 * ox0[j] + ox1[j]] = o[j];
  }
}
extern "C" int gv_c3def(const float *x, const float *w, const float *b, float *y, cudaStream_t s)
{
  gelu_c3<0><<<(unsigned)((int64_t)N * N / 2048), 256, 0, s>>>(x, w, b, y);
  return (int)cudaGetLastError();
}
extern "C" int gv_c3pre(const float *x, const float *w, const float *b, float *y, cudaStream_t s)
{
  gelu_c3<1><<<(unsigned)((int64_t)N * N / 2048), 256, 0, s>>>(x, w, b, y);
  return (int)cudaGetLastError();
}

extern "C" const char *gv_names(void)
{
  return "coil i32 i32_ld tri tri_nc t256x2 cs l2ef grid c3def c3pre";
}
