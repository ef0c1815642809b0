/* rowsum_bench.c — the row sum of a 4096x4096 f32 matrix three ways, at 1 and 2 threads: one
 * `omp simd` accumulator per row on 64-byte aligned data (what the cpu plugin generates), 64
 * accumulator lanes, and one accumulator on data at mmap+16 (what calloc gave before tensors
 * were aligned). Median of 15 after 0.3 s of warm-up. Run by tools/device/cpu_side_by_side.sh. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define N 4096
static int nth = 1;
static void one(const float *in0, float *out0) {
#pragma omp parallel for num_threads(nth)
  for (int64_t x0 = 0; x0 < N; x0++) { float v1 = 0;
#pragma omp simd reduction(+:v1)
    for (int64_t r0 = 0; r0 < N; r0++) v1 += in0[r0 + N*x0];
    out0[x0] = v1; } }
static void lanes(const float *in0, float *out0) {
#pragma omp parallel for num_threads(nth)
  for (int64_t x0 = 0; x0 < N; x0++) { float acc[64] = {0};
    for (int64_t c = 0; c < N; c += 64) {
#pragma omp simd
      for (int64_t r0 = c; r0 < c + 64; r0++) acc[r0 - c] += in0[r0 + N*x0];
    }
    float v1 = 0; for (int l = 0; l < 64; l++) v1 += acc[l];
    out0[x0] = v1; } }
static double med(double *t, int n){ for(int i=0;i<n;i++)for(int j=i+1;j<n;j++) if(t[j]<t[i]){double x=t[i];t[i]=t[j];t[j]=x;} return t[n/2]; }
int main(void){
  float *x = aligned_alloc(64, (size_t)N*N*4), *o = aligned_alloc(64, N*4);
  float *xu = (float *)((char *)malloc((size_t)N*N*4 + 64) + 16);
  for (int64_t i=0;i<(int64_t)N*N;i++) x[i]=xu[i]=(float)(i%7);
  for (nth = 1; nth <= 2; nth++)
    for (int v = 0; v < 3; v++) {
      void (*f)(const float*, float*) = v == 1 ? lanes : one;
      const float *in = v == 2 ? xu : x;
      double t[15]; double s=now(); while(now()-s<0.3) f(in,o);
      for (int r=0;r<15;r++){double t0=now(); f(in,o); t[r]=now()-t0;}
      printf("threads %d %-22s %.3f ms\n", nth, v==0?"one acc, aligned":v==1?"64 lanes, aligned":"one acc, mmap+16", med(t,15)*1e3);
    }
  return 0;
}
