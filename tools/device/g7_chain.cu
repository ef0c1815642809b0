// The 10-op chain (sin, *1.01, +0.1, ten times) on 1024 f32: launch shapes and sin in or out of line.
#include <cstdio>
__device__ __noinline__ float sin_ool(float x) { return sinf(x); }
template <bool OOL> __device__ __forceinline__ float body(float x) {
  for (int i = 0; i < 10; i++) x = (OOL ? sin_ool(x) : sinf(x)) * 1.01f + 0.1f;
  return x;
}
template <bool OOL, int PER> __global__ void k(const float *in, float *out, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * PER;
  float v[PER];
#pragma unroll
  for (int j = 0; j < PER; j++) v[j] = base + j < n ? in[base + j] : 0.f;
#pragma unroll
  for (int j = 0; j < PER; j++) v[j] = body<OOL>(v[j]);
#pragma unroll
  for (int j = 0; j < PER; j++) if (base + j < n) out[base + j] = v[j];
}
int main() {
  const int n = 1024;
  float *in, *out;
  cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4);
  cudaMemset(in, 0, n * 4);
  for (int rep = 0; rep < 20; rep++) {
    k<true, 4><<<1, 256>>>(in, out, n);    // A: today's shape, sin out of line
    k<false, 4><<<1, 256>>>(in, out, n);   // B: today's shape, sin inline
    k<true, 1><<<8, 128>>>(in, out, n);    // C: 8 blocks of 128, out of line
    k<false, 1><<<8, 128>>>(in, out, n);   // D: 8 blocks of 128, inline
    k<false, 1><<<16, 64>>>(in, out, n);   // E: 16 blocks of 64, inline
    k<false, 8><<<1, 128>>>(in, out, n);   // F: Inductor's shape (XBLOCK 1024, 4 warps), inline
  }
  cudaDeviceSynchronize();
  printf("done %s\n", cudaGetErrorString(cudaGetLastError()));
}
