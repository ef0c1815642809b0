// wgmma_probe.cu: a probe of the sm_90a warpgroup MMA facts docs/attention-wgmma-notes.md
// collects, before coil's attention kernel relies on them. One warpgroup (128 threads) computes,
// from f16 tiles in shared memory stored with the 128-byte swizzle (16-byte chunk c of 128-byte
// row r at r*128 + ((c ^ (r & 7)) * 16), tile bases 1024-aligned):
//   S = Q K^T   Q [64][64], K [64 keys][64]: wgmma m64n64k16 SS, both K-major (4 k16 steps)
//   O = P V     P = f16(S * 0.125) from S's accumulators as the A registers (RS form, no
//               shuffles), V [64 keys][64] N-major (trans-b 1)
// and writes S and O; the host compares them with its own double-precision products (P rounded
// to f16 as the kernel rounds it). Build and run on the GPU machine (tools/device/wgmma_probe.sh):
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o wgmma_probe wgmma_probe.cu && ./wgmma_probe
// (-arch=sm_90a alone gave compute_90 PTX with CUDA 13.0, which has no wgmma)
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cuda_fp16.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// the descriptor: start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, base offset 0,
// swizzle mode 1 (128 B) in bits 62-63
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
  return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

__device__ __forceinline__ void mma_ss(float *d, uint64_t da, uint64_t db, int scale_d)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(scale_d) : "memory");
}

__device__ __forceinline__ void mma_rs_tb(float *d, const uint32_t *a, uint64_t db, int scale_d)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d) : "memory");
}

__device__ __forceinline__ uint32_t pack(float lo, float hi)
{
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); // the first source goes high
  return r;
}

// byte offset of element (r, c) in a [rows][64] f16 tile with the 128-byte swizzle
__host__ __device__ inline uint32_t swz(int r, int c) { return r * 128 + (((c >> 3) ^ (r & 7)) << 4) + (c & 7) * 2; }

__global__ void __launch_bounds__(128) probe(const __half *q, const __half *k, const __half *v, float *s_out, float *o_out)
{
  extern __shared__ unsigned char raw[];
  unsigned char *sm = (unsigned char *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023); // 1024-aligned
  unsigned char *sq = sm, *sk = sm + 8192, *sv = sm + 16384;
  const int tid = threadIdx.x;
  for (int i = tid; i < 64 * 64; i += 128) {
    int r = i / 64, c = i % 64;
    *(__half *)(sq + swz(r, c)) = q[i];
    *(__half *)(sk + swz(r, c)) = k[i];
    *(__half *)(sv + swz(r, c)) = v[i];
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // generic stores -> async proxy
  __syncthreads();
  float s[32], o[32];
  for (int i = 0; i < 32; i++)
    s[i] = 0, o[i] = 0;
  wg_fence();
  for (int kk = 0; kk < 4; kk++) // k16 steps: +32 bytes inside the swizzled rows
    mma_ss(s, desc(smem_addr(sq) + 32 * kk, 16, 1024), desc(smem_addr(sk) + 32 * kk, 16, 1024), kk > 0);
  wg_commit();
  wg_wait0();
  const int w = tid / 32, l = tid % 32, g = l / 4, t = l % 4;
  for (int i = 0; i < 32; i++) {
    int row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
    s_out[row * 64 + col] = s[i];
  }
  // P = f16(S / 8) as A: k16 slice j of P is accumulators 8j..8j+7, packed pairwise
  uint32_t a[4][4];
  for (int j = 0; j < 4; j++)
    for (int r = 0; r < 4; r++)
      a[j][r] = pack(s[8 * j + 2 * r] * 0.125f, s[8 * j + 2 * r + 1] * 0.125f);
  wg_fence();
  for (int j = 0; j < 4; j++) // V N-major: 16 keys a step = 2048 bytes; SBO 8 keys = 1024 bytes
    mma_rs_tb(o, a[j], desc(smem_addr(sv) + 2048 * j, 8192, 1024), j > 0);
  wg_commit();
  wg_wait0();
  for (int i = 0; i < 32; i++) {
    int row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
    o_out[row * 64 + col] = o[i];
  }
}

int main()
{
  const int n = 64 * 64;
  __half hq[n], hk[n], hv[n];
  float fq[n], fk[n], fv[n];
  srand(1);
  for (int i = 0; i < n; i++) {
    fq[i] = __half2float(hq[i] = __float2half((rand() % 2001 - 1000) / 1000.f));
    fk[i] = __half2float(hk[i] = __float2half((rand() % 2001 - 1000) / 1000.f));
    fv[i] = __half2float(hv[i] = __float2half((rand() % 2001 - 1000) / 1000.f));
  }
  __half *dq, *dk, *dv;
  float *ds, *dout;
  CK(cudaMalloc(&dq, sizeof hq)); CK(cudaMalloc(&dk, sizeof hk)); CK(cudaMalloc(&dv, sizeof hv));
  CK(cudaMalloc(&ds, n * 4)); CK(cudaMalloc(&dout, n * 4));
  CK(cudaMemcpy(dq, hq, sizeof hq, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, hk, sizeof hk, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, hv, sizeof hv, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * 8192 + 1024));
  probe<<<1, 128, 3 * 8192 + 1024>>>(dq, dk, dv, ds, dout);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  static float s[n], o[n];
  CK(cudaMemcpy(s, ds, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(o, dout, n * 4, cudaMemcpyDeviceToHost));
  double es = 0, eo = 0, ms = 0, mo = 0;
  static float p[n];
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      double acc = 0;
      for (int e = 0; e < 64; e++)
        acc += (double)fq[i * 64 + e] * fk[j * 64 + e];
      es = fmax(es, fabs(acc - s[i * 64 + j]));
      ms = fmax(ms, fabs(acc));
      p[i * 64 + j] = __half2float(__float2half(s[i * 64 + j] * 0.125f)); // as the kernel rounds P
    }
  for (int i = 0; i < 64; i++)
    for (int d = 0; d < 64; d++) {
      double acc = 0;
      for (int j = 0; j < 64; j++)
        acc += (double)p[i * 64 + j] * fv[j * 64 + d];
      eo = fmax(eo, fabs(acc - o[i * 64 + d]));
      mo = fmax(mo, fabs(acc));
    }
  printf("S = Q K^T (SS, K-major, 128B swizzle): max |err| %.3g of max |S| %.3g\n", es, ms);
  printf("O = P V (RS, V N-major):              max |err| %.3g of max |O| %.3g\n", eo, mo);
  bool ok = es <= 1e-3 * ms && eo <= 1e-3 * mo;
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
