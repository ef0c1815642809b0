/* cuda_gemm.cu — the cuda plugin's generated GEMM for Hopper (sm_90a): the kernel text that
 * cuda_gemm.c fills in (its tokens are words between two at-signs) after the SDK's prelude and
 * the fused kernel's body (coil_gpu_gemm_epilogue_source), and NVRTC compiles for sm_90a. It is
 * tools/device/wgmma_gemm_probe.cu's best configuration (docs/gemm-wgmma-notes.md): 128 x 256
 * tiles, 3 stages, the staged epilogue, a CTA's last tile from registers.
 *
 *   C[M, N] = epi(A[M, K] B[K, N]): A row-major, B row-major ([K, N], n contiguous) or, with
 *   the "bt" variant, stored transposed (row-major [N, K], k contiguous: x @ w.t()); A, B and C
 *   all f16 or all bf16 (AB, the wgmma's type), f32 accumulation, C row-major; epi(x, row, col)
 *   the fused pointwise kernel's body, given the product rounded to AB (what the unfused
 *   program's kernel loads), or nothing.
 *
 * A persistent grid (one CTA an SM; tiles in groups of GROUP_M tile rows, so that concurrent CTAs
 * share A and B in L2) of three warpgroups:
 *   warpgroup 0, warp 0, lane 0: the producer. For each BK = 64 slice of a tile it waits for a
 *     free stage of the ring, arms the stage's "full" mbarrier with the bytes to come and issues
 *     bulk tensor copies (TMA): A as one box [BM rows][64 k], B as BN / 64 boxes [64 k][64 n]
 *     (N-major B) or [64 n][64 k] (K-major B, bt), in the 128-byte swizzle the wgmma descriptors
 *     describe. TMA fills what lies outside the matrix
 *     with zeros, so partial tiles in M, N and K need no code.
 *   warpgroups 1 and 2: the consumers, 64 rows each, wgmma m64n256k16 from shared memory (A
 *     K-major; B N-major, or K-major in the bt variant: TRANS_B). One wgmma group stays in
 *     flight: after committing slice i a consumer waits for slice i - 1 and releases its stage.
 *   the epilogue: the consumers round their accumulators to AB into a staging buffer and go on
 *     to the next tile; warps 1-3 of warpgroup 0 apply epi to the staged tile and store it with
 *     16-byte stores while the consumers run the next mainloop. With LAST_REG a CTA's last tile,
 *     which has no mainloop after it to hide behind, is stored by the consumers from registers
 *     (rounded to AB first, so that epi sees the same value either way).
 * setmaxnreg moves registers from warpgroup 0 (PREG) to the consumers (CREG): 128 PREG + 256 CREG
 * = 384 x 168, what __launch_bounds__(384, 1) gives, so the CTA's pool balances.
 * The host's checks (cuda_gemm.c): K % 8 == 0 and N % 8 == 0 (TMA's 16-byte global strides, the
 * 16-byte stores), A, B and C 16-byte aligned, sizes below 2^31. */

struct __align__(64) coil_tmap { unsigned long long opaque[16]; }; /* CUtensorMap, by value */

#define COIL_GEMM_BM 128
#define COIL_GEMM_BN 256
#define COIL_GEMM_BK 64
#define COIL_GEMM_STAGES 3
#define COIL_GEMM_GROUP_M 8
#define COIL_GEMM_PREG 56
#define COIL_GEMM_CREG 224
/* bytes: a stage holds A (16 KB) and B (32 KB); staging rows are padded by 16 bytes, so that a
 * consumer warp's 4-byte stores (8 rows x 4 columns) hit 32 banks and every row still starts
 * 16-byte aligned for the epilogue's vector loads */
#define COIL_GEMM_A_BYTES (COIL_GEMM_BM * COIL_GEMM_BK * 2)
#define COIL_GEMM_B_SLAB (COIL_GEMM_BK * 128)
#define COIL_GEMM_STAGE_BYTES (COIL_GEMM_A_BYTES + COIL_GEMM_BK * COIL_GEMM_BN * 2)
#define COIL_GEMM_PITCH (COIL_GEMM_BN * 2 + 16)

static __device__ __forceinline__ uint32_t coil_gemm_smem(const void *p)
{
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
/* a wgmma shared-memory descriptor: start, LBO, SBO in 16-byte units; the 128-byte swizzle */
static __device__ __forceinline__ uint64_t coil_gemm_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
  return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}
/* keeps the compiler from moving accumulator reads or writes across the asynchronous window (the
 * wgmma asm says it writes them when issued; they are final only after the wait) */
static __device__ __forceinline__ void coil_gemm_fence_acc(float *d)
{
#pragma unroll
  for (int i = 0; i < COIL_GEMM_BN / 2; i++)
    asm volatile("" : "+f"(d[i])::"memory");
}
#define COIL_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define COIL_F16(i) COIL_F4(i), COIL_F4(i + 4), COIL_F4(i + 8), COIL_F4(i + 12)
#define COIL_F64(i) COIL_F16(i), COIL_F16(i + 16), COIL_F16(i + 32), COIL_F16(i + 48)
/* D (+)= A B, m64n256k16, A K-major, B N-major (trans-b 1) or K-major (trans-b 0): the trailing
 * "0, TRANS_B" are trans-a and trans-b */
static __device__ __forceinline__ void coil_gemm_mma(float *d, uint64_t da, uint64_t db, int scale_d)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.@AB@.@AB@ {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, @TRANS_B@;\n}\n"
               : COIL_F64(0), COIL_F64(64)
               : "l"(da), "l"(db), "r"(scale_d) : "memory");
}
static __device__ __forceinline__ void coil_mbar_init(uint32_t bar, uint32_t count)
{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void coil_mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void coil_mbar_arrive(uint32_t bar)
{
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* waits until the phase of parity `parity` has completed (a fresh barrier counts parity 1 done) */
static __device__ __forceinline__ void coil_mbar_wait(uint32_t bar, uint32_t parity)
{
  uint32_t done;
  do
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  while (!done);
}
static __device__ __forceinline__ void coil_tma_2d(uint32_t dst, const coil_tmap *map, int c0, int c1, uint32_t bar)
{
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
/* two floats as AB (round to nearest even, as coil_f2h and coil_f2b), lo in the low half */
static __device__ __forceinline__ uint32_t coil_gemm_pack(float lo, float hi)
{
  uint32_t r;
  asm("cvt.rn.@AB@x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
/* tile t of the order: groups of GROUP_M tile rows, column by column inside a group */
static __device__ __forceinline__ void coil_gemm_tile(int t, int tm, int tn, int &m0, int &n0)
{
  const int per = COIL_GEMM_GROUP_M * tn, grp = t / per, first = grp * COIL_GEMM_GROUP_M;
  const int gs = min(tm - first, COIL_GEMM_GROUP_M), r = t - grp * per;
  m0 = (first + r % gs) * COIL_GEMM_BM;
  n0 = (r / gs) * COIL_GEMM_BN;
}

@EPI_FN@/* GEMM @NAME@: C = @WHAT@; @AB@, B @B_MAJOR@, 128x256 tiles, 3 stages, the staged epilogue */
extern "C" __global__ void __launch_bounds__(384, 1)
@NAME@(const __grid_constant__ coil_tmap tmA, const __grid_constant__ coil_tmap tmB, uint16_t *__restrict__ C, int M,
    int N, int K@EPI_PARAMS@)
{
  extern __shared__ __align__(128) unsigned char coil_raw[];
  /* TMA's 128-byte swizzle is a function of the absolute address: the base rounded up to 1024 */
  unsigned char *sm = (unsigned char *)(((unsigned long long)coil_raw + 1023) & ~1023ull);
  const uint32_t base = coil_gemm_smem(sm), stg = base + COIL_GEMM_STAGES * COIL_GEMM_STAGE_BYTES;
  const uint32_t bars = stg + COIL_GEMM_BM * COIL_GEMM_PITCH;
  const uint32_t full = bars, empty = bars + 8 * COIL_GEMM_STAGES, sfull = bars + 16 * COIL_GEMM_STAGES, sempty = sfull + 8;
  const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int tm = (M + COIL_GEMM_BM - 1) / COIL_GEMM_BM, tn = (N + COIL_GEMM_BN - 1) / COIL_GEMM_BN;
  const int nk = (K + COIL_GEMM_BK - 1) / COIL_GEMM_BK, ntiles = tm * tn;
  if (tid == 0) {
    for (int s = 0; s < COIL_GEMM_STAGES; s++) {
      coil_mbar_init(full + 8 * s, 1);  /* the producer's arrive.expect_tx; TMA's bytes complete it */
      coil_mbar_init(empty + 8 * s, 8); /* one arrive from each consumer warp */
    }
    coil_mbar_init(sfull, 256);         /* every consumer thread has staged its part */
    coil_mbar_init(sempty, 96);         /* every epilogue thread has stored its part */
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(COIL_GEMM_PREG));
    if (warp == 0) {
      if (lane != 0)
        return;
      asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmA) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tmB) : "memory");
      int s = 0;
      uint32_t ph = 0;
      for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        int m0, n0;
        coil_gemm_tile(t, tm, tn, m0, n0);
        /* B slabs wholly right of N are not loaded (their columns are never stored) */
        const int slabs = min(COIL_GEMM_BN / 64, (N - n0 + 63) / 64);
        for (int kt = 0; kt < nk; kt++) {
          coil_mbar_wait(empty + 8 * s, ph ^ 1);
          const uint32_t sa = base + s * COIL_GEMM_STAGE_BYTES, sb = sa + COIL_GEMM_A_BYTES, fb = full + 8 * s;
          coil_mbar_expect_tx(fb, COIL_GEMM_A_BYTES + slabs * COIL_GEMM_B_SLAB); /* zero-filled parts count too */
          coil_tma_2d(sa, &tmA, kt * COIL_GEMM_BK, m0, fb);
          for (int q = 0; q < slabs; q++)
            coil_tma_2d(sb + q * COIL_GEMM_B_SLAB, &tmB, @B_COORDS@, fb);
          if (++s == COIL_GEMM_STAGES)
            s = 0, ph ^= 1;
        }
      }
    } else { /* warps 1-3: the epilogue of the staged tile, 16 bytes (8 columns) a thread at a time */
      const int et = tid - 32;
      uint32_t j = 0;
      for (int t = blockIdx.x; t < ntiles; t += gridDim.x, j++) {
        if (@LAST_REG@ && t + (int)gridDim.x >= ntiles)
          break; /* the consumers store the CTA's last tile themselves */
        int m0, n0;
        coil_gemm_tile(t, tm, tn, m0, n0);
        coil_mbar_wait(sfull, j & 1);
        for (int u = et; u < COIL_GEMM_BM * (COIL_GEMM_BN / 8); u += 96) {
          const int r = u / (COIL_GEMM_BN / 8), ch = u % (COIL_GEMM_BN / 8), gm = m0 + r, gn = n0 + 8 * ch;
          if (gm >= M || gn >= N) /* N % 8 == 0: a chunk is wholly in or out */
            continue;
          uint32_t w[4];
          asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                       : "r"(stg + r * COIL_GEMM_PITCH + ch * 16) : "memory");
          if (@HAS_EPI@) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const float lo = @TO_F@((uint16_t)(w[e] & 0xffff)), hi = @TO_F@((uint16_t)(w[e] >> 16));
              w[e] = coil_gemm_pack(@EPI@(lo, gm, gn + 2 * e@EPI_ARGS@), @EPI@(hi, gm, gn + 2 * e + 1@EPI_ARGS@));
            }
          }
          *(uint4 *)(C + (long long)gm * N + gn) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        coil_mbar_arrive(sempty);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(COIL_GEMM_CREG));
    const int c = wg - 1, g = lane >> 2, t4 = lane & 3;
    float acc[COIL_GEMM_BN / 2];
#pragma unroll
    for (int i = 0; i < COIL_GEMM_BN / 2; i++)
      acc[i] = 0;
    int s = 0;
    uint32_t ph = 0, j = 0;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x, j++) {
      int m0, n0;
      coil_gemm_tile(t, tm, tn, m0, n0);
      int prev = 0;
      for (int kt = 0; kt < nk; kt++) {
        coil_mbar_wait(full + 8 * s, ph);
        const uint32_t sa = base + s * COIL_GEMM_STAGE_BYTES + c * 64 * 128, sb = base + s * COIL_GEMM_STAGE_BYTES + COIL_GEMM_A_BYTES;
        coil_gemm_fence_acc(acc);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < COIL_GEMM_BK / 16; kk++) {
          /* A: 32 bytes along each 128-byte row, SBO = 8 rows; B @B_DESC_WHAT@ */
          coil_gemm_mma(acc, coil_gemm_desc(sa + kk * 32, 16, 1024), @B_DESC@,
                        kt > 0 || kk > 0);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (kt > 0) { /* the previous slice's group is done: its stage can be refilled */
          asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
          __syncwarp();
          if (lane == 0)
            coil_mbar_arrive(empty + 8 * prev);
        }
        prev = s;
        if (++s == COIL_GEMM_STAGES)
          s = 0, ph ^= 1;
      }
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      coil_gemm_fence_acc(acc);
      __syncwarp();
      if (lane == 0)
        coil_mbar_arrive(empty + 8 * prev);
      /* accumulator i: row 16 warp + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 t4 + (i & 1) */
      if (!(@LAST_REG@ && t + (int)gridDim.x >= ntiles)) {
        coil_mbar_wait(sempty, (j & 1) ^ 1); /* the epilogue warps are done with the previous tile */
#pragma unroll
        for (int i = 0; i < COIL_GEMM_BN / 2; i += 2) {
          const int r = c * 64 + 16 * warp + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t4;
          asm volatile("st.shared.b32 [%0], %1;" ::"r"(stg + r * COIL_GEMM_PITCH + col * 2),
                       "r"(coil_gemm_pack(acc[i], acc[i + 1])) : "memory");
        }
        coil_mbar_arrive(sfull);
      } else {
#pragma unroll
        for (int i = 0; i < COIL_GEMM_BN / 2; i += 2) {
          const int gm = m0 + c * 64 + 16 * warp + g + 8 * ((i >> 1) & 1), gn = n0 + 8 * (i >> 2) + 2 * t4;
          if (gm < M && gn < N) {
            uint32_t v = coil_gemm_pack(acc[i], acc[i + 1]);
            if (@HAS_EPI@) /* the product rounded to AB, as the staged path and the unfused kernel see it */
              v = coil_gemm_pack(@EPI@(@TO_F@((uint16_t)(v & 0xffff)), gm, gn@EPI_ARGS@),
                                 @EPI@(@TO_F@((uint16_t)(v >> 16)), gm, gn + 1@EPI_ARGS@));
            *(uint32_t *)(C + (long long)gm * N + gn) = v;
          }
        }
      }
    }
  }
}
