// attn_kernel_bench.cu: one of coil's attention kernels (plugins/cuda/cuda_attention.cu, the text
// the plugin hands NVRTC, included as it is) built with nvcc and timed alone, as
// wgmma_attn_probe.cu times its kernel: f16 [128, 1024, 64] contiguous (8 x 16 heads: the
// benchmark's attention_fp16), checked against a double reference on two heads, the L2 flushed
// before each launch, median of 50. For trying variants of a kernel (-D flags the kernel reads)
// side by side in one run; attn_kernel_bench.sh builds and runs them.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a [-DWG_HD=128 -DWG_BN=64] [-D...]
//        -o attn_kernel_bench attn_kernel_bench.cu
#include "../../plugins/cuda/cuda_attention.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_fp16.h>

#ifndef WG_HD
#define WG_HD 64
#endif
#ifndef WG_BN
#define WG_BN 128
#endif
#ifndef WG_MINB
#define WG_MINB 2
#endif
COIL_ATTN_WG(bench_kernel, attn_f16, WG_HD, WG_BN, 2, false, WG_MINB)

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

int main()
{
  const int HD = WG_HD, L = 1024, S = 1024, BH = HD == 64 ? 128 : 64, BM = 128;
  const size_t n = (size_t)BH * L * HD;
  std::vector<__half> hq(n), hk(n), hv(n), ho(n);
  srand(1);
  for (size_t i = 0; i < n; i++) {
    hq[i] = __float2half((rand() % 2001 - 1000) / 500.f);
    hk[i] = __float2half((rand() % 2001 - 1000) / 500.f);
    hv[i] = __float2half((rand() % 2001 - 1000) / 1000.f);
  }
  __half *dq, *dk, *dv, *dout;
  CK(cudaMalloc(&dq, n * 2)); CK(cudaMalloc(&dk, n * 2)); CK(cudaMalloc(&dv, n * 2)); CK(cudaMalloc(&dout, n * 2));
  CK(cudaMemcpy(dq, hq.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, hk.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, hv.data(), n * 2, cudaMemcpyHostToDevice));
  const double scale = 1.0 / std::sqrt((double)HD);
  coil_attn_params p = {};
  p.q = dq, p.k = dk, p.v = dv, p.mask = nullptr, p.out = dout;
  p.L = L, p.S = S, p.E = HD, p.Ev = HD;
  p.q_l = p.k_s = p.v_s = p.o_l = HD, p.q_e = p.k_e = p.v_e = p.o_e = 1;
  p.nb = 1, p.bsize[0] = BH, p.q_b[0] = p.k_b[0] = p.v_b[0] = p.o_b[0] = (int64_t)L * HD;
  p.q_tiles = (L + BM - 1) / BM, p.masked_nan = 0, p.scale = scale, p.scale_log2 = (float)(scale * 1.4426950408889634);
  const int smem = BM * HD * 2 + 2 * 2 * WG_BN * HD * 2 + 1024;
  CK(cudaFuncSetAttribute(bench_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid((unsigned)(p.q_tiles * BH)), block(256);
  bench_kernel<<<grid, block, smem>>>(p);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(ho.data(), dout, n * 2, cudaMemcpyDeviceToHost));
  double err = 0, mag = 0;
  for (int bh : {0, BH - 1})
    for (int i = 0; i < L; i += 7) {
      std::vector<double> pr(S);
      double mx = -1e300, sum = 0;
      for (int j = 0; j < S; j++) {
        double a = 0;
        for (int e = 0; e < HD; e++)
          a += (double)__half2float(hq[((size_t)bh * L + i) * HD + e]) * __half2float(hk[((size_t)bh * S + j) * HD + e]);
        pr[j] = a * scale;
        mx = std::max(mx, pr[j]);
      }
      for (int j = 0; j < S; j++)
        sum += pr[j] = std::exp(pr[j] - mx);
      for (int e = 0; e < HD; e++) {
        double a = 0;
        for (int j = 0; j < S; j++)
          a += pr[j] * __half2float(hv[((size_t)bh * S + j) * HD + e]);
        a /= sum;
        err = std::max(err, std::fabs(a - __half2float(ho[((size_t)bh * L + i) * HD + e])));
        mag = std::max(mag, std::fabs(a));
      }
    }
  void *flush;
  CK(cudaMalloc(&flush, 256 << 20));
  cudaEvent_t e0[50], e1[50];
  for (int i = 0; i < 50; i++) {
    CK(cudaEventCreate(&e0[i]));
    CK(cudaEventCreate(&e1[i]));
  }
  for (int r = 0; r < 60; r++) {
    CK(cudaMemsetAsync(flush, r, 256 << 20));
    if (r >= 10) CK(cudaEventRecord(e0[r - 10]));
    bench_kernel<<<grid, block, smem>>>(p);
    if (r >= 10) CK(cudaEventRecord(e1[r - 10]));
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> ms(50);
  for (int i = 0; i < 50; i++)
    CK(cudaEventElapsedTime(&ms[i], e0[i], e1[i]));
  std::sort(ms.begin(), ms.end());
  const double tf = 4.0 * BH * L * S * HD / (ms[25] * 1e-3) / 1e12;
  printf("  f16 [%d, %d, %d]: max |err| %.3g of %.3g (%s), %.4f ms, %.0f TFLOP/s\n", BH, L, HD, err, mag,
         err < 2e-3 + 1e-2 * mag ? "PASS" : "FAIL", ms[25], tf);
  return 0;
}
