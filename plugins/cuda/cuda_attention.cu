/* cuda_attention.cu — the kernels of coil.attention, the fused scaled dot-product attention the
 * core emits as a library call (docs/wrapper-ir.md): per batch index and query row i,
 *   out[i, :] = sum_j softmax_j(scale * <q[i, :], k[j, :]> + mask[i, j]) * v[j, :]
 * with f16 and bf16 computed in f32 (scores, softmax, sums) and rounded once at the store, f32 in
 * f32, f64 in f64; a row whose scores are all -inf gives 0 (masked_nan = 0) or NaN.
 *
 * cuda_attention.c embeds this file (CMake makes it a string), appends one instantiation line per
 * kernel a program needs (COIL_ATTN_SIMT, COIL_ATTN_TC, COIL_ATTN_WG at the end of this file) and
 * compiles each with NVRTC. tests/attention_host.c compiles the same text with the system's C++
 * compiler under COIL_ATTN_HOST, after tests/attention_host.hpp, whose prelude runs a block's
 * threads as fibers and emulates the warp-level instructions (shuffles, ldmatrix, mma, wgmma,
 * cp.async) as PTX defines them: the kernels below reach the hardware only through the attn_*
 * functions of the device prelude, so that the host test runs this code and not a copy.
 *
 * attn_simt: every dtype, any E and Ev, any strides (0 included). A block of 128 threads takes
 *   16 query rows of one batch index and 64 columns of v (gridDim.y covers Ev); key tiles of 32
 *   and q/k column chunks of 32 go through shared memory; 8 threads share a row (4 scores, 8
 *   outputs each) and keep its running max and sum (online softmax).
 * attn_tc: FlashAttention-2 on the tensor cores for f16 and bf16, head dim HD = E = Ev in
 *   {32, 64, 128}, unit last strides and 16-byte aligned rows (the host checks; else attn_simt).
 *   A block of BR / (16 WM) warps takes BR query rows (WM m16 tiles a warp); BC keys a step, K
 *   and V tiles loaded with cp.async into ST shared-memory stages (rows XOR-swizzled in 16-byte
 *   chunks: ldmatrix without bank conflicts), one barrier a step (wait for tile j, barrier, then
 *   load tile j + ST - 1 into the stage tile j - 1 used); Q fragments in registers; S = Q K^T
 *   and O += P V with mma.sync m16n8k16 (f32 accumulators), P rounded to the input dtype as the
 *   A operand (as FlashAttention does; the SIMT kernel keeps it in f32); the online softmax in
 *   f32 with exp2 and the scale prescaled by log2(e), the running max moved (O and l rescaled)
 *   only when a tile's max passes it by more than 8; the output staged in shared memory and
 *   stored in 16-byte rows.
 * attn_wg: the same algorithm on Hopper's warpgroup MMA (wgmma, sm_90a only) for f16 and bf16,
 *   head dims 64 and 128, the operands as for attn_tc: a warpgroup of 128 threads takes 64 query
 *   rows, S and O accumulate in registers across the warpgroup, K and V tiles in the 128-byte
 *   swizzle wgmma's descriptors describe (see attn_wg below). */

/* The wgmma instructions of a dtype and an N (the device prelude's attn_wg_ss and attn_wg_rs, or
 * the host test's emulation of them) */
struct attn_f16_n64 { enum { N = 64, BF = 0 }; };
struct attn_f16_n128 { enum { N = 128, BF = 0 }; };
struct attn_bf16_n64 { enum { N = 64, BF = 1 }; };
struct attn_bf16_n128 { enum { N = 128, BF = 1 }; };

/* ---- the device prelude: everything that is not plain C++ ---- */
#ifndef COIL_ATTN_HOST
#ifdef __CUDACC_RTC__ /* NVRTC: no system headers */
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif
#define ATTN_INL __device__ __forceinline__
#define ATTN_DEV static ATTN_INL
#define ATTN_SHARED __shared__
#define ATTN_DYN_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#define ATTN_ENTRY(name, threads, minb, call) \
  extern "C" __global__ void __launch_bounds__(threads, minb) name(const coil_attn_params p) { call; }

ATTN_DEV int attn_tid() { return (int)threadIdx.x; }
ATTN_DEV int64_t attn_bidx() { return (int64_t)blockIdx.x; }
ATTN_DEV int64_t attn_bidy() { return (int64_t)blockIdx.y; }
ATTN_DEV void attn_bar() { __syncthreads(); }
ATTN_DEV void attn_warp_bar() { __syncwarp(); }
ATTN_DEV float attn_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
ATTN_DEV double attn_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
ATTN_DEV bool attn_any(bool v) { return __any_sync(0xffffffffu, v); }
ATTN_DEV float attn_inf() { return __int_as_float(0x7f800000); }
ATTN_DEV float attn_nan() { return __int_as_float(0x7fffffff); }
ATTN_DEV float attn_h2f(uint16_t h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
ATTN_DEV uint16_t attn_f2h(float f) { uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
ATTN_DEV float attn_b2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
#if __CUDA_ARCH__ >= 800
ATTN_DEV uint16_t attn_f2b(float f) { uint16_t h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#else
ATTN_DEV uint16_t attn_f2b(float f)
{
  uint32_t u = __float_as_uint(f);
  if (f != f)
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
#endif
/* 2^x; -inf gives +0, results below 2^-126 flush to 0 (they vanish beside a row sum >= 1) */
ATTN_DEV float attn_ex2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
ATTN_DEV uint32_t attn_smem_u32(const void *p)
{
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
/* 16 bytes from global memory into shared memory, asynchronously (zeros when !full: nothing read) */
ATTN_DEV void attn_cp16(uint32_t dst, const void *src, bool full)
{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(full ? 16 : 0));
}
ATTN_DEV void attn_cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> ATTN_DEV void attn_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }
/* four 8x8 b16 matrices, row addresses from lanes 0-7, 8-15, 16-23, 24-31 (.trans: transposed) */
ATTN_DEV void attn_ldsm4(uint32_t *r, uint32_t addr)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
ATTN_DEV void attn_ldsm4t(uint32_t *r, uint32_t addr)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

/* Hopper's warpgroup MMA (sm_90a; docs/attention-wgmma-notes.md): D[64 x N] (+)= A[64 x 16] B[16 x N]
 * by the 128 threads of a warpgroup, f32 accumulators d[N / 2] a thread: row 16 w + g + 8 ((i >> 1)
 * & 1), column 8 (i >> 2) + 2 t + (i & 1) for warp w of the group and lane 4 g + t. attn_wg_ss: A
 * and B in shared memory, both K-major (descriptors da, db), D = A B + (acc ? D : 0); attn_wg_rs:
 * A in registers (the warp's 16 rows as mma.sync's A fragment), B N-major, D += A B. Both are
 * asynchronous: attn_wg_fence before the first of a batch, attn_wg_commit after the last,
 * attn_wg_wait before the accumulators are touched. The tags name dtype and N; an instruction
 * reaches the PTX only in a kernel that uses it, compiled for sm_90a. The tags: see below. */
ATTN_DEV void attn_wg_ss(float *d, uint64_t da, uint64_t db, int acc, attn_f16_n64)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(acc) : "memory");
}
ATTN_DEV void attn_wg_rs(float *d, const uint32_t *a, uint64_t db, attn_f16_n64)
{
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db) : "memory");
}
ATTN_DEV void attn_wg_ss(float *d, uint64_t da, uint64_t db, int acc, attn_f16_n128)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(acc) : "memory");
}
ATTN_DEV void attn_wg_rs(float *d, const uint32_t *a, uint64_t db, attn_f16_n128)
{
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db) : "memory");
}
ATTN_DEV void attn_wg_ss(float *d, uint64_t da, uint64_t db, int acc, attn_bf16_n64)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(acc) : "memory");
}
ATTN_DEV void attn_wg_rs(float *d, const uint32_t *a, uint64_t db, attn_bf16_n64)
{
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db) : "memory");
}
ATTN_DEV void attn_wg_ss(float *d, uint64_t da, uint64_t db, int acc, attn_bf16_n128)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(acc) : "memory");
}
ATTN_DEV void attn_wg_rs(float *d, const uint32_t *a, uint64_t db, attn_bf16_n128)
{
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db) : "memory");
}
ATTN_DEV void attn_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
ATTN_DEV void attn_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
ATTN_DEV void attn_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
/* cp.async's writes to shared memory made visible to the async proxy wgmma reads through */
ATTN_DEV void attn_fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif /* !COIL_ATTN_HOST */

/* ---- what the host passes (cuda_attention.c's cuda_attn_params: the same layout) ---- */
#define ATTN_MAX_BATCH 6
struct coil_attn_params {
  const void *q, *k, *v, *mask; /* element 0 of each (mask: NULL when there is none) */
  void *out;
  int64_t L, S, E, Ev;
  int64_t q_l, q_e, k_s, k_e, v_s, v_e, m_l, m_s, o_l, o_e; /* strides of the last two dims */
  int64_t nb;                   /* batch dims (out's, merged where every operand allows) */
  int64_t bsize[ATTN_MAX_BATCH];
  int64_t q_b[ATTN_MAX_BATCH], k_b[ATTN_MAX_BATCH], v_b[ATTN_MAX_BATCH], m_b[ATTN_MAX_BATCH],
      o_b[ATTN_MAX_BATCH];      /* their strides (0: broadcast) */
  int64_t q_tiles;              /* blocks over L (blockIdx.x = tile + q_tiles * batch index) */
  int64_t masked_nan;           /* a row of all -inf scores: NaN (1) or 0 */
  double scale;
  float scale_log2, pad_;       /* scale * log2(e), in f32 (an operand from the constant bank) */
};
static_assert(sizeof(coil_attn_params) == 8 * 60, "coil_attn_params: the host's layout");

/* dtypes: storage T, arithmetic A */
struct attn_f16 {
  typedef uint16_t T;
  typedef float A;
  static ATTN_INL float load(const uint16_t *p) { return attn_h2f(*p); }
  static ATTN_INL uint16_t from(float f) { return attn_f2h(f); }
};
struct attn_bf16 {
  typedef uint16_t T;
  typedef float A;
  static ATTN_INL float load(const uint16_t *p) { return attn_b2f(*p); }
  static ATTN_INL uint16_t from(float f) { return attn_f2b(f); }
};
struct attn_f32 {
  typedef float T;
  typedef float A;
  static ATTN_INL float load(const float *p) { return *p; }
  static ATTN_INL float from(float f) { return f; }
};
struct attn_f64 {
  typedef double T;
  typedef double A;
  static ATTN_INL double load(const double *p) { return *p; }
  static ATTN_INL double from(double f) { return f; }
};

#ifndef COIL_ATTN_HOST
/* P packed as the A operand (two values of one row, the lower column in the low half), and
 * D += A B on the tensor cores, per dtype */
ATTN_DEV uint32_t attn_pack(float lo, float hi, attn_f16)
{
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
ATTN_DEV uint32_t attn_pack(float lo, float hi, attn_bf16)
{
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
ATTN_DEV void attn_mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, attn_f16)
{
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
ATTN_DEV void attn_mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, attn_bf16)
{
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

ATTN_DEV float attn_max(float a, float b) { return fmaxf(a, b); }
ATTN_DEV double attn_max(double a, double b) { return fmax(a, b); }
ATTN_DEV float attn_exp(float x) { return expf(x); }
ATTN_DEV double attn_exp(double x) { return exp(x); }

/* The element offsets of batch index b (row-major over p.bsize) in each operand. */
struct attn_off {
  int64_t q, k, v, m, o;
};
ATTN_DEV attn_off attn_batch(const coil_attn_params &p, int64_t b)
{
  attn_off r = {0, 0, 0, 0, 0};
#pragma unroll
  for (int d = ATTN_MAX_BATCH - 1; d >= 0; d--)
    if (d < p.nb) {
      const int64_t i = d ? b % p.bsize[d] : b; /* b < bsize[0] there: no division (a long call) */
      if (d)
        b /= p.bsize[d];
      r.q += i * p.q_b[d], r.k += i * p.k_b[d], r.v += i * p.v_b[d], r.m += i * p.m_b[d], r.o += i * p.o_b[d];
    }
  return r;
}

/* ---- attn_simt ---- */
#define ATTN_SQ 16 /* query rows a block */
#define ATTN_SK 32 /* keys a step */
#define ATTN_SE 32 /* q and k columns a chunk */
#define ATTN_SV 64 /* v columns a block */
#define ATTN_SIMT_THREADS 128

template <typename D>
ATTN_DEV void
attn_simt(const coil_attn_params &p)
{
  typedef typename D::T T;
  typedef typename D::A A;
  ATTN_SHARED A qs[ATTN_SQ][ATTN_SE + 1];
  ATTN_SHARED A ks[ATTN_SK][ATTN_SE + 1];
  ATTN_SHARED A ps[ATTN_SQ][ATTN_SK + 1];
  ATTN_SHARED A vs[ATTN_SK][ATTN_SV];
  const int t = attn_tid(), r = t >> 3, c = t & 7; /* row r; columns c + 8 u */
  const int64_t b = attn_bidx() / p.q_tiles, i0 = attn_bidx() % p.q_tiles * ATTN_SQ, row = i0 + r;
  const int64_t ev0 = attn_bidy() * ATTN_SV;
  const attn_off o = attn_batch(p, b);
  const T *q = (const T *)p.q + o.q, *k = (const T *)p.k + o.k, *v = (const T *)p.v + o.v;
  const T *mk = (const T *)p.mask + o.m;
  const A scale = (A)p.scale, inf = (A)attn_inf();
  A m = -inf, l = 0, acc[8];
#pragma unroll
  for (int u = 0; u < 8; u++)
    acc[u] = 0;
  for (int64_t j0 = 0; j0 < p.S; j0 += ATTN_SK) {
    A s[4] = {0, 0, 0, 0};
    for (int64_t e0 = 0; e0 < p.E; e0 += ATTN_SE) {
      for (int u = t; u < ATTN_SQ * ATTN_SE; u += ATTN_SIMT_THREADS) {
        const int rr = u / ATTN_SE, ee = u % ATTN_SE;
        const int64_t i = i0 + rr, e = e0 + ee;
        qs[rr][ee] = i < p.L && e < p.E ? D::load(q + i * p.q_l + e * p.q_e) : A(0);
      }
      for (int u = t; u < ATTN_SK * ATTN_SE; u += ATTN_SIMT_THREADS) {
        const int jj = u / ATTN_SE, ee = u % ATTN_SE;
        const int64_t j = j0 + jj, e = e0 + ee;
        ks[jj][ee] = j < p.S && e < p.E ? D::load(k + j * p.k_s + e * p.k_e) : A(0);
      }
      attn_bar();
#pragma unroll 8
      for (int e = 0; e < ATTN_SE; e++) {
        const A x = qs[r][e];
#pragma unroll
        for (int u = 0; u < 4; u++)
          s[u] += x * ks[c + 8 * u][e];
      }
      attn_bar();
    }
    /* the scores of this step, their max and sum over the row's 8 threads */
    A mx = -inf;
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int64_t j = j0 + c + 8 * u;
      A x = s[u] * scale;
      if (j >= p.S)
        x = -inf;
      else if (p.mask && row < p.L)
        x += D::load(mk + row * p.m_l + j * p.m_s);
      s[u] = x;
      mx = attn_max(mx, x);
    }
    mx = attn_max(mx, attn_shfl_xor(mx, 1));
    mx = attn_max(mx, attn_shfl_xor(mx, 2));
    mx = attn_max(mx, attn_shfl_xor(mx, 4));
    const A mnew = attn_max(m, mx), base = mnew == -inf ? A(0) : mnew; /* all -inf so far: p = 0 */
    const A corr = attn_exp(m - base);
    A sum = 0;
#pragma unroll
    for (int u = 0; u < 4; u++) {
      s[u] = attn_exp(s[u] - base);
      sum += s[u];
      ps[r][c + 8 * u] = s[u];
    }
    sum += attn_shfl_xor(sum, 1);
    sum += attn_shfl_xor(sum, 2);
    sum += attn_shfl_xor(sum, 4);
    l = l * corr + sum;
    m = mnew;
    for (int u = t; u < ATTN_SK * ATTN_SV; u += ATTN_SIMT_THREADS) {
      const int jj = u / ATTN_SV, cc = u % ATTN_SV;
      const int64_t j = j0 + jj, e = ev0 + cc;
      vs[jj][cc] = j < p.S && e < p.Ev ? D::load(v + j * p.v_s + e * p.v_e) : A(0);
    }
    attn_bar();
#pragma unroll
    for (int u = 0; u < 8; u++)
      acc[u] *= corr;
#pragma unroll 4
    for (int jj = 0; jj < ATTN_SK; jj++) {
      const A w = ps[r][jj];
#pragma unroll
      for (int u = 0; u < 8; u++)
        acc[u] += w * vs[jj][c + 8 * u];
    }
    attn_bar();
  }
  if (row >= p.L)
    return;
  T *out = (T *)p.out + o.o + row * p.o_l;
#pragma unroll
  for (int u = 0; u < 8; u++) {
    const int64_t e = ev0 + c + 8 * u;
    if (e < p.Ev)
      out[e * p.o_e] = D::from(l == 0 ? (p.masked_nan ? (A)attn_nan() : A(0)) : acc[u] / l);
  }
}

/* ---- attn_tc ---- */

/* The byte offset of 16-byte chunk ch of row r in a [rows][HD] tile of 2-byte elements: chunks
 * XOR-swizzled so that the 8 rows an ldmatrix reads at one logical chunk hit 8 bank groups. */
template <int HD>
ATTN_DEV int
attn_swz(int r)
{
  return HD >= 64 ? (r & 7) : HD == 32 ? ((r >> 1) & 3) : ((r >> 2) & 1);
}
template <int HD>
ATTN_DEV uint32_t
attn_at(int r, int ch)
{
  return (uint32_t)(r * HD * 2 + ((ch ^ attn_swz<HD>(r)) << 4));
}

/* ROWS rows of HD elements from g (row stride rs, rows r0.. of n) into the tile at s: rows past
 * n are zeros. */
template <int HD, int ROWS, int NT>
ATTN_DEV void
attn_load_tile(uint32_t s, const uint16_t *g, int64_t rs, int64_t r0, int64_t n)
{
  constexpr int CH = HD / 8, N = ROWS * CH;
#pragma unroll
  for (int it = 0; it < (N + NT - 1) / NT; it++) {
    const int u = it * NT + attn_tid();
    if (N % NT == 0 || u < N) {
      const int r = u / CH, ch = u % CH;
      const bool in = r0 + r < n;
      attn_cp16(s + attn_at<HD>(r, ch), g + (in ? r0 + r : 0) * rs + ch * 8, in);
    }
  }
}

template <typename D, int HD, int BR, int BC, int WM, int ST, bool MASK>
ATTN_DEV void
attn_tc(const coil_attn_params &p)
{
  constexpr int NW = BR / (16 * WM), NT = NW * 32;
  constexpr int NK = HD / 16; /* k steps of Q K^T */
  constexpr int NN = BC / 8;  /* n tiles of S */
  constexpr int ND = HD / 8;  /* n tiles of O */
  constexpr int CH = HD / 8;  /* 16-byte chunks a row */
  constexpr int RS = HD * 2;  /* bytes a row */
  constexpr uint32_t TILE = BC * RS;
  static_assert(BR % (16 * WM) == 0 && BC % 16 == 0 && HD % 16 == 0 && ST >= 2, "attn_tc: tile shape");
  const float inf = attn_inf(), log2e = 1.4426950408889634f;
  ATTN_DYN_SMEM(smem);
  const uint32_t sq = attn_smem_u32(smem), skv = sq + BR * HD * 2; /* Q (then O), the stages */
  const int tid = attn_tid(), warp = tid >> 5, lane = tid & 31, g = lane >> 2, qd = lane & 3;
  const int64_t b = attn_bidx() / p.q_tiles, i0 = attn_bidx() % p.q_tiles * BR;
  const attn_off o = attn_batch(p, b);
  const uint16_t *q = (const uint16_t *)p.q + o.q, *k = (const uint16_t *)p.k + o.k, *v = (const uint16_t *)p.v + o.v;
  const int ntiles = (int)((p.S + BC - 1) / BC); /* the host keeps S below 2^31 here */
  const float sl2 = (float)p.scale_log2;

  attn_load_tile<HD, BR, NT>(sq, q, p.q_l, i0, p.L);
  attn_cp_commit();
#pragma unroll
  for (int s = 0; s < ST - 1; s++) {
    if (s < ntiles) {
      attn_load_tile<HD, BC, NT>(skv + s * 2 * TILE, k, p.k_s, (int64_t)s * BC, p.S);
      attn_load_tile<HD, BC, NT>(skv + s * 2 * TILE + TILE, v, p.v_s, (int64_t)s * BC, p.S);
    }
    attn_cp_commit();
  }
  attn_cp_wait<ST - 1>(); /* Q is there */
  attn_bar();
  const int wr = warp * 16 * WM; /* the warp's first row in the block */
  /* The ldmatrix row addresses, lane by lane: K's for (n pair np, k step kk) at
   * np * 16 * RS + (lk ^ (kk << 5)) in the stage, V's for (k step kk, d pair dp) at
   * kk * 16 * RS + (lv ^ (dp << 5)) (attn_at's offsets: the swizzle of a row depends on its
   * lane alone here, and XOR-ing the chunk is XOR-ing bits the row's offset does not use), so
   * that the unrolled loops use immediate offsets, not a register per address. */
  const uint32_t lk = attn_at<HD>(((lane >> 4) << 3) + (lane & 7), (lane >> 3) & 1);
  const uint32_t lv = attn_at<HD>((((lane >> 3) & 1) << 3) + (lane & 7), lane >> 4);
  uint32_t qf[WM][NK][4];
#pragma unroll
  for (int mi = 0; mi < WM; mi++)
#pragma unroll
    for (int kk = 0; kk < NK; kk++)
      attn_ldsm4(qf[mi][kk], sq + attn_at<HD>(wr + mi * 16 + (lane & 15), kk * 2 + (lane >> 4)));

  /* the mask rows of this thread's rows g and g + 8 of each m tile */
  const uint16_t *mrow[WM][2];
  if (MASK)
#pragma unroll
    for (int mi = 0; mi < WM; mi++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int64_t i = i0 + wr + mi * 16 + g + 8 * h;
        mrow[mi][h] = i < p.L ? (const uint16_t *)p.mask + o.m + i * p.m_l : nullptr;
      }
  float oacc[WM][ND][4], mrun[WM][2], lrun[WM][2];
#pragma unroll
  for (int mi = 0; mi < WM; mi++) {
#pragma unroll
    for (int n = 0; n < ND; n++)
      oacc[mi][n][0] = oacc[mi][n][1] = oacc[mi][n][2] = oacc[mi][n][3] = 0;
    mrun[mi][0] = mrun[mi][1] = -inf;
    lrun[mi][0] = lrun[mi][1] = 0;
  }

  for (int j = 0; j < ntiles; j++) {
    attn_cp_wait<ST - 2>(); /* tile j is there (tiles j + 1 .. j + ST - 2 may still be coming) */
    attn_bar();             /* for every thread, and every warp is done with tile j - 1 */
    const int jn = j + ST - 1; /* loaded now, into the stage tile j - 1 used */
    if (jn < ntiles) {
      const uint32_t st = skv + (uint32_t)jn % ST * 2 * TILE;
      attn_load_tile<HD, BC, NT>(st, k, p.k_s, (int64_t)jn * BC, p.S);
      attn_load_tile<HD, BC, NT>(st + TILE, v, p.v_s, (int64_t)jn * BC, p.S);
    }
    attn_cp_commit();
    const uint32_t sk = skv + (uint32_t)j % ST * 2 * TILE, sv = sk + TILE;

    /* S = Q K^T */
    float s[WM][NN][4];
#pragma unroll
    for (int mi = 0; mi < WM; mi++)
#pragma unroll
      for (int n = 0; n < NN; n++)
        s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0;
#pragma unroll
    for (int kk = 0; kk < NK; kk++)
#pragma unroll
      for (int np = 0; np < NN / 2; np++) {
        uint32_t bk[4];
        attn_ldsm4(bk, sk + np * 16 * RS + (lk ^ (kk << 5)));
#pragma unroll
        for (int mi = 0; mi < WM; mi++) {
          attn_mma(s[mi][2 * np], qf[mi][kk], bk[0], bk[1], D());
          attn_mma(s[mi][2 * np + 1], qf[mi][kk], bk[2], bk[3], D());
        }
      }

    /* the online softmax, in log2 units: rows g (h = 0) and g + 8 (h = 1) of each m tile, whose
     * other columns the 3 other threads of the quad hold. Keys past S (the last tile) and the
     * mask first; without a mask the scores stay unscaled until the exp (scale > 0). */
    const int64_t j0 = (int64_t)j * BC;
    const int lim = p.S - j0 < BC ? (int)(p.S - j0) : BC; /* keys of this tile */
    if (MASK) {
#pragma unroll
      for (int mi = 0; mi < WM; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int n = 0; n < NN; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
              float &x = s[mi][n][2 * h + e];
              const int c = n * 8 + 2 * qd + e;
              const float mv = mrow[mi][h] && c < lim ? D::load(mrow[mi][h] + (j0 + c) * p.m_s) : 0.f;
              x = c < lim ? fmaf(x, sl2, mv * log2e) : -inf;
            }
    } else if (lim < BC) {
#pragma unroll
      for (int mi = 0; mi < WM; mi++)
#pragma unroll
        for (int n = 0; n < NN; n++)
#pragma unroll
          for (int e = 0; e < 4; e++)
            if (n * 8 + 2 * qd + (e & 1) >= lim)
              s[mi][n][e] = -inf;
    }
    /* The running max m of a row moves only when a tile's max passes it by more than 8 (exp2:
     * a factor 256), so that O and l are rescaled in few steps (p stays below 256, well inside
     * f16 and bf16); a row with no finite score yet has m = -inf and its p taken against 0. */
    float base[WM][2];
    bool grow = false;
#pragma unroll
    for (int mi = 0; mi < WM; mi++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        float mx = -inf;
#pragma unroll
        for (int n = 0; n < NN; n++)
          mx = fmaxf(mx, fmaxf(s[mi][n][2 * h], s[mi][n][2 * h + 1]));
        mx = fmaxf(mx, attn_shfl_xor(mx, 1));
        mx = fmaxf(mx, attn_shfl_xor(mx, 2));
        if (!MASK)
          mx *= sl2;
        const bool up = mx > mrun[mi][h] + 8.f;
        base[mi][h] = up ? mx : mrun[mi][h]; /* the new m where it moves */
        grow = grow || up;
      }
    if (attn_any(grow)) { /* some row of the warp moves its m: rescale O and l (by 1 elsewhere) */
#pragma unroll
      for (int mi = 0; mi < WM; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          /* 1 where m stays (-inf included), 0 where it leaves -inf */
          const float corr = base[mi][h] == mrun[mi][h] ? 1.f : attn_ex2(mrun[mi][h] - base[mi][h]);
          mrun[mi][h] = base[mi][h];
          lrun[mi][h] *= corr;
#pragma unroll
          for (int n = 0; n < ND; n++)
            oacc[mi][n][2 * h] *= corr, oacc[mi][n][2 * h + 1] *= corr;
        }
    }
#pragma unroll
    for (int mi = 0; mi < WM; mi++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const float b = mrun[mi][h] == -inf ? 0.f : mrun[mi][h];
        float sum = 0;
#pragma unroll
        for (int n = 0; n < NN; n++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            float &x = s[mi][n][2 * h + e];
            x = attn_ex2(MASK ? x - b : fmaf(x, sl2, -b));
            sum += x;
          }
        lrun[mi][h] += sum;
      }

    /* O += P V: the S accumulators of n tiles 2 kk and 2 kk + 1 are the A fragment of k step kk */
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
      uint32_t pa[WM][4];
#pragma unroll
      for (int mi = 0; mi < WM; mi++) {
        pa[mi][0] = attn_pack(s[mi][2 * kk][0], s[mi][2 * kk][1], D());
        pa[mi][1] = attn_pack(s[mi][2 * kk][2], s[mi][2 * kk][3], D());
        pa[mi][2] = attn_pack(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1], D());
        pa[mi][3] = attn_pack(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3], D());
      }
#pragma unroll
      for (int dp = 0; dp < ND / 2; dp++) {
        uint32_t bv[4];
        attn_ldsm4t(bv, sv + kk * 16 * RS + (lv ^ (dp << 5)));
#pragma unroll
        for (int mi = 0; mi < WM; mi++) {
          attn_mma(oacc[mi][2 * dp], pa[mi], bv[0], bv[1], D());
          attn_mma(oacc[mi][2 * dp + 1], pa[mi], bv[2], bv[3], D());
        }
      }
    }
  }

  /* O / l, rounded once, into the Q tile (each warp its own rows), then out in 16-byte rows */
#pragma unroll
  for (int mi = 0; mi < WM; mi++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float l = lrun[mi][h];
      l += attn_shfl_xor(l, 1);
      l += attn_shfl_xor(l, 2);
      const bool none = l == 0; /* every score -inf */
      const float inv = none ? 0.f : 1.f / l, fill = none && p.masked_nan ? attn_nan() : 0.f;
      const int r = wr + mi * 16 + g + 8 * h;
#pragma unroll
      for (int n = 0; n < ND; n++) {
        const uint32_t w = attn_pack(none ? fill : oacc[mi][n][2 * h] * inv, none ? fill : oacc[mi][n][2 * h + 1] * inv, D());
        *(uint32_t *)(smem + attn_at<HD>(r, n) + 4 * qd) = w;
      }
    }
  attn_warp_bar();
  uint16_t *out = (uint16_t *)p.out + attn_batch(p, b).o; /* again: fewer registers held */
#pragma unroll
  for (int it = 0; it < 16 * WM * CH / 32; it++) {
    const int u = it * 32 + lane, r = wr + u / CH, ch = u % CH;
    if (i0 + r < p.L)
      *(uint4 *)(out + (i0 + r) * p.o_l + ch * 8) = *(const uint4 *)(smem + attn_at<HD>(r, ch));
  }
}

/* ---- attn_wg ---- */

template <bool B> struct attn_bool {
  static constexpr bool value = B;
};

/* The wgmma tags of a dtype and an N */
template <typename D, int N> struct attn_wg_tag;
template <> struct attn_wg_tag<attn_f16, 64> { typedef attn_f16_n64 T; };
template <> struct attn_wg_tag<attn_f16, 128> { typedef attn_f16_n128 T; };
template <> struct attn_wg_tag<attn_bf16, 64> { typedef attn_bf16_n64 T; };
template <> struct attn_wg_tag<attn_bf16, 128> { typedef attn_bf16_n128 T; };

/* A shared-memory matrix descriptor of the 128-byte swizzle: start address, leading and stride
 * byte offsets (docs/attention-wgmma-notes.md, table of bits) */
ATTN_DEV uint64_t
attn_wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
  return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

/* ROWS rows of HD elements from g (row stride rs; rows from n on zeros) into the tile at s
 * (1024-aligned), stored as HD / 64 slabs of [ROWS][64] with the 128-byte swizzle: 16-byte chunk
 * c of row r at (c / 8) ROWS 128 + r 128 + ((c % 8) ^ (r % 8)) 16. Shifts and masks, not
 * division, and 32-bit offsets (the host keeps rs below 2^24): the registers are the
 * accumulators', and 64-bit arithmetic cost 1.5 % of the time. */
template <int HD, int ROWS, int NT>
ATTN_DEV void
attn_wg_load(uint32_t s, const uint16_t *g, int64_t rs, int n)
{
  constexpr int CH = HD / 8, LG = HD == 64 ? 3 : 4, N = ROWS * CH, RI = NT >> LG; /* rows an iteration */
  static_assert(RI % 8 == 0, "attn_wg_load: the swizzle of a chunk the same every iteration");
  const int r0 = attn_tid() >> LG, c = attn_tid() & (CH - 1);
  const uint32_t d = s + (uint32_t)((c >> 3) * ROWS * 128 + r0 * 128 + (((c & 7) ^ (r0 & 7)) << 4));
  if (n == ROWS) { /* a whole tile (every one but the last): one address step an iteration */
    const uint16_t *src = g + (r0 * (int)rs + c * 8);
#pragma unroll
    for (int it = 0; it < (N + NT - 1) / NT; it++)
      if (N % NT == 0 || it * NT + attn_tid() < N)
        attn_cp16(d + it * RI * 128, src + it * RI * (int)rs, true);
    return;
  }
#pragma unroll
  for (int it = 0; it < (N + NT - 1) / NT; it++) {
    const int r = r0 + it * RI;
    if (N % NT == 0 || it * NT + attn_tid() < N)
      attn_cp16(d + it * RI * 128, g + ((r < n ? r : 0) * (int)rs + c * 8), r < n);
  }
}

/* FlashAttention-2 on Hopper's warpgroup MMA for f16 and bf16, head dim HD in {64, 128}, the
 * operands as for attn_tc. A block of WGS warpgroups takes 64 WGS query rows (64 a warpgroup);
 * BN keys a step, K and V tiles loaded with cp.async into two stages (attn_wg_load's swizzled
 * slabs), one barrier a step; S = Q K^T with both operands in shared memory (HD / 16 wgmma
 * m64nBNk16), the online softmax in registers (exp2, the scale prescaled by log2(e), O and l
 * rescaled every step), P rounded to the input dtype as the register A operand of O += P V (BN /
 * 16 wgmma m64nHDk16, V N-major: its slabs are the 64-column atoms, LBO the slab stride). */
template <typename D, int HD, int BN, int WGS, bool MASK>
ATTN_DEV void
attn_wg(const coil_attn_params &p)
{
  constexpr int BM = 64 * WGS, NT = 128 * WGS;
  constexpr uint32_t QT = BM * HD * 2, KT = BN * HD * 2; /* bytes of the Q tile, of a K or V tile */
  static_assert((HD == 64 || HD == 128) && (BN == 64 || BN == 128), "attn_wg: tile shape");
  typedef typename attn_wg_tag<D, BN>::T SN;
  typedef typename attn_wg_tag<D, HD>::T ON;
  const float inf = attn_inf(), log2e = 1.4426950408889634f;
  ATTN_DYN_SMEM(smem);
  const uint32_t sq = (attn_smem_u32(smem) + 1023) & ~1023u, skv = sq + QT; /* Q, the two stages (K, V) */
  const int tid = attn_tid(), wg = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int i0 = (int)(attn_bidx() % p.q_tiles) * BM; /* the host keeps L below 2^31 here */
  const attn_off o = attn_batch(p, attn_bidx() / p.q_tiles);
  const uint16_t *q = (const uint16_t *)p.q + o.q, *k = (const uint16_t *)p.k + o.k, *v = (const uint16_t *)p.v + o.v;
  const int ntiles = (int)((p.S + BN - 1) / BN); /* the host keeps S below 2^31 here */

  attn_wg_load<HD, BM, NT>(sq, q + i0 * p.q_l, p.q_l, p.L - i0 < BM ? (int)p.L - i0 : BM);
  attn_wg_load<HD, BN, NT>(skv, k, p.k_s, (int)(p.S < BN ? p.S : BN));
  attn_wg_load<HD, BN, NT>(skv + KT, v, p.v_s, (int)(p.S < BN ? p.S : BN));
  attn_cp_commit();
  /* with a mask, k and v in shared memory, where they take no registers (read once a step):
   * in registers the kernel spills; without one, registers are 2 % faster */
  ATTN_SHARED const uint16_t *kv[2];
  if (MASK && tid == 0)
    kv[0] = k, kv[1] = v;
  /* the mask rows of this thread's rows g and g + 8 of its warp's 16 */
  const int r0 = wg * 64 + 16 * w + g; /* in the block */
  ATTN_SHARED const uint16_t *mrows[2][MASK ? NT : 1]; /* in shared memory too */
  if (MASK)
#pragma unroll
    for (int h = 0; h < 2; h++)
      mrows[h][tid] =
          i0 + r0 + 8 * h < p.L ? (const uint16_t *)p.mask + o.m + (int64_t)(i0 + r0 + 8 * h) * p.m_l : nullptr;
  float oacc[HD / 2], m[2] = {-inf, -inf}, l[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < HD / 2; i++)
    oacc[i] = 0;
  const uint32_t qw = sq + wg * 64 * 128; /* this warpgroup's 64 rows in each slab of Q */
  /* one step: tile j of keys; LAST: the last tile, of fewer than BN keys (whole tiles need no
   * check of their columns: a loop of them, then this one) */
  auto step = [&](const int j, auto last) {
    constexpr bool LAST = decltype(last)::value;
    attn_cp_wait<0>();
    attn_fence_async();
    attn_bar(); /* tile j is there for all; every warpgroup is done with tile j - 1 */
    if (j + 1 < ntiles) {
      const uint32_t st = skv + ((j + 1) & 1) * 2 * KT;
      const int64_t jn = (int64_t)(j + 1) * BN;
      const int n = p.S - jn < BN ? (int)(p.S - jn) : BN;
      attn_wg_load<HD, BN, NT>(st, (MASK ? kv[0] : k) + jn * p.k_s, p.k_s, n);
      attn_wg_load<HD, BN, NT>(st + KT, (MASK ? kv[1] : v) + jn * p.v_s, p.v_s, n);
    }
    attn_cp_commit();
    const uint32_t sk = skv + (j & 1) * 2 * KT, sv = sk + KT;

    /* S = Q K^T: k step kk is 32 bytes into the rows of slab kk / 4 */
    float s[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
      s[i] = 0; /* overwritten (acc 0 at kk 0), but "+f" reads it */
    attn_wg_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
      attn_wg_ss(s, attn_wg_desc(qw + (kk >> 2) * BM * 128 + 32 * (kk & 3), 16, 1024),
                 attn_wg_desc(sk + (kk >> 2) * BN * 128 + 32 * (kk & 3), 16, 1024), kk > 0, SN());
    attn_wg_commit();
    attn_wg_wait();

    /* the online softmax in log2 units, rows g (h = 0) and g + 8 (h = 1) of the warp's 16, whose
     * other columns the 3 other threads of the quad hold. Keys past S and the mask first;
     * without a mask the scores stay unscaled until the exp (scale > 0). */
    const int64_t j0 = (int64_t)j * BN;
    const int lim = LAST ? (int)(p.S - j0) : BN; /* keys of this tile */
    if (MASK) {
      const uint16_t *mrow[2] = {mrows[0][tid], mrows[1][tid]};
#pragma unroll
      for (int i = 0; i < BN / 2; i++) {
        const int h = (i >> 1) & 1, c = 8 * (i >> 2) + 2 * t + (i & 1);
        const float mv = mrow[h] && c < lim ? D::load(mrow[h] + (j0 + c) * p.m_s) : 0.f;
        s[i] = c < lim ? fmaf(s[i], p.scale_log2, mv * log2e) : -inf;
      }
    } else if (LAST) {
#pragma unroll
      for (int i = 0; i < BN / 2; i++)
        if (8 * (i >> 2) + 2 * t + (i & 1) >= lim)
          s[i] = -inf;
    }
    float mx[2] = {-inf, -inf}, corr[2], base[2], sum[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
      mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
#pragma unroll
    for (int h = 0; h < 2; h++) {
      mx[h] = fmaxf(mx[h], attn_shfl_xor(mx[h], 1));
      mx[h] = fmaxf(mx[h], attn_shfl_xor(mx[h], 2));
      const float mn = fmaxf(m[h], MASK ? mx[h] : mx[h] * p.scale_log2);
      /* with a mask a row may have no finite score yet (m stays -inf); without one every tile
       * has a key for every row, and a score of -inf comes from an infinite input: NaN then, as
       * the softmax of the reference gives */
      corr[h] = MASK && mn == -inf ? 1.f : attn_ex2(m[h] - mn);
      base[h] = MASK && mn == -inf ? 0.f : mn;
      m[h] = mn;
    }
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int h = (i >> 1) & 1;
      s[i] = attn_ex2(MASK ? s[i] - base[h] : fmaf(s[i], p.scale_log2, -base[h]));
      sum[h] += s[i];
    }
#pragma unroll
    for (int h = 0; h < 2; h++)
      l[h] = l[h] * corr[h] + sum[h];
#pragma unroll
    for (int i = 0; i < HD / 2; i++)
      oacc[i] *= corr[(i >> 1) & 1];

    /* O += P V: the scores of columns 16 jj.. are the A fragment of k step jj */
    uint32_t a[BN / 16][4];
#pragma unroll
    for (int jj = 0; jj < BN / 16; jj++)
#pragma unroll
      for (int r = 0; r < 4; r++)
        a[jj][r] = attn_pack(s[8 * jj + 2 * r], s[8 * jj + 2 * r + 1], D());
    attn_wg_fence();
#pragma unroll
    for (int jj = 0; jj < BN / 16; jj++) /* 16 keys a step: 16 rows of 128 bytes into each slab */
      attn_wg_rs(oacc, a[jj], attn_wg_desc(sv + 2048 * jj, BN * 128, 1024), ON());
    attn_wg_commit();
    attn_wg_wait();
  };
  const int nfull = (int)(p.S / BN);
  for (int j = 0; j < nfull; j++)
    step(j, attn_bool<false>());
  if (nfull < ntiles)
    step(nfull, attn_bool<true>());

  /* O / l, rounded once, stored two columns a thread */
  uint16_t *out = (uint16_t *)p.out + attn_batch(p, attn_bidx() / p.q_tiles).o; /* again: fewer registers held */
#pragma unroll
  for (int h = 0; h < 2; h++) {
    l[h] += attn_shfl_xor(l[h], 1);
    l[h] += attn_shfl_xor(l[h], 2);
    const bool none = l[h] == 0; /* every score -inf */
    const float inv = none ? 0.f : 1.f / l[h], fill = none && p.masked_nan ? attn_nan() : 0.f;
    const int i = i0 + r0 + 8 * h;
    if (i < p.L)
#pragma unroll
      for (int c = 0; c < HD / 8; c++) {
        const float x0 = oacc[4 * c + 2 * h], x1 = oacc[4 * c + 2 * h + 1];
        *(uint32_t *)(out + (int64_t)i * p.o_l + 8 * c + 2 * t) =
            attn_pack(none ? fill : x0 * inv, none ? fill : x1 * inv, D());
      }
  }
}

/* ---- the kernels a module holds: one line each, appended by cuda_attention.c ---- */
#define COIL_ATTN_SIMT(name, D) ATTN_ENTRY(name, ATTN_SIMT_THREADS, 1, (attn_simt<D>(p)))
#define COIL_ATTN_TC(name, D, HD, BR, BC, WM, ST, MASK, MINB) \
  ATTN_ENTRY(name, (BR) / (16 * (WM)) * 32, MINB, (attn_tc<D, HD, BR, BC, WM, ST, MASK>(p)))
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL) /* device code for other than sm_90a */
#define COIL_ATTN_WG(name, D, HD, BN, WGS, MASK, MINB) static_assert(false, "attn_wg needs sm_90a");
#else
#define COIL_ATTN_WG(name, D, HD, BN, WGS, MASK, MINB) \
  ATTN_ENTRY(name, 128 * (WGS), MINB, (attn_wg<D, HD, BN, WGS, MASK>(p)))
#endif
