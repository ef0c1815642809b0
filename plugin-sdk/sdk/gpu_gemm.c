/* gpu_gemm.c — the GPU emitter's generated GEMM (coil/coil_gpu.h): a tiled matrix product for the
 * Wrapper IR's aten.mm / aten.bmm extern lines, for targets without a vendor BLAS (Debian's ROCm
 * has no rocBLAS) and any CUDA-like dialect. A block computes a bm x bn tile of one C[b], walking
 * K in bk slices: each slice of A and B is read from global memory once (by whole tile rows or
 * columns, whichever the operand's unit stride runs along, so a transposed operand still reads
 * coalesced), converted to the accumulation type and staged in shared memory (+1 column against
 * bank conflicts), then every thread accumulates its tm x tn register tile from it. Threads of a
 * tile row are spread over it a thread apart (coalesced stores, conflict-free shared reads).
 * Nothing depends on the warp's width; all global indexing is 64-bit; blocks stride over the
 * tiles, so a grid smaller than the tile count (capped by coil_gpu_gemm_blocks) still covers C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu.h"

/* the kernel with @NAME@ tokens (replaced by expand below; see its table) */
static const char kernel[] =
    "/* GEMM @NAME@: C[b] = [relu](A[b] x B[b] [+ bias]) in @DT@, accumulated in @ACC@; @BM@x@BN@ tiles of C, K in slices of\n"
    " * @BK@ through shared memory, @THREADS@ threads of @TM@x@TN@ each (grid: any, blocks stride over the\n"
    " * tiles; coil_gpu_gemm_blocks gives one block per tile) */\n"
    "@KERNEL@ void@LB@\n"
    "@NAME@(const @T@ *@R@ A, const @T@ *@R@ B, @T@ *@R@ C, long long M, long long N, long long K,\n"
    "    long long batch, long long sab, long long sam, long long sak, long long sbb, long long sbk,\n"
    "    long long sbn, long long scb, long long scm, long long scn, const @T@ *@R@ bias, int relu)\n"
    "{\n"
    "  @SHARED@ @ACC@ As[@BK@][@BM@ + 1]; /* the slice of A, k-major: As[k][m] */\n"
    "  @SHARED@ @ACC@ Bs[@BK@][@BN@ + 1]; /* of B: Bs[k][n] */\n"
    "  const int tid = (int)(@TID@), tx = tid % @RX@, ty = tid / @RX@;\n"
    "  const long long tiles_n = (N + @BN@ - 1) / @BN@, tiles_m = (M + @BM@ - 1) / @BM@;\n"
    "  const long long tiles = tiles_n * tiles_m * batch;\n"
    "  /* a slice is read along the operand's unit stride: m for a transposed A, k for a transposed B */\n"
    "  const bool a_mfast = sam == 1 && sak != 1, b_kfast = sbk == 1 && sbn != 1;\n"
    "  for (long long t = (long long)(@BID@); t < tiles; t += (long long)(@GDIM@)) {\n"
    "    const long long n0 = t % tiles_n * @BN@, m0 = t / tiles_n % tiles_m * @BM@, bat = t / tiles_n / tiles_m;\n"
    "    const @T@ *Ab = A + bat * sab, *Bb = B + bat * sbb;\n"
    "    @ACC@ acc[@TM@][@TN@];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < @TM@; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < @TN@; j++)\n"
    "        acc[i][j] = 0;\n"
    "    for (long long k0 = 0; k0 < K; k0 += @BK@) {\n"
    "#pragma unroll\n"
    "      for (int r = 0; r < @A_ROUNDS@; r++) { /* the slice's elements e, threads apart */\n"
    "        const int e = tid + r * @THREADS@;\n"
    "@A_GUARD@"
    "        const int m = a_mfast ? e % @BM@ : e / @BK@, k = a_mfast ? e / @BM@ : e % @BK@;\n"
    "        const long long gm = m0 + m, gk = k0 + k;\n"
    "        As[k][m] = gm < M && gk < K ? @LOAD_A@ : (@ACC@)0;\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int r = 0; r < @B_ROUNDS@; r++) {\n"
    "        const int e = tid + r * @THREADS@;\n"
    "@B_GUARD@"
    "        const int n = b_kfast ? e / @BK@ : e % @BN@, k = b_kfast ? e % @BK@ : e / @BN@;\n"
    "        const long long gn = n0 + n, gk = k0 + k;\n"
    "        Bs[k][n] = gn < N && gk < K ? @LOAD_B@ : (@ACC@)0;\n"
    "      }\n"
    "      @SYNC@;\n"
    "#pragma unroll\n"
    "      for (int k = 0; k < @BK@; k++) {\n"
    "        @ACC@ av[@TM@], bv[@TN@];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < @TM@; i++)\n"
    "          av[i] = As[k][ty + i * @RY@];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < @TN@; j++)\n"
    "          bv[j] = Bs[k][tx + j * @RX@];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < @TM@; i++)\n"
    "#pragma unroll\n"
    "          for (int j = 0; j < @TN@; j++)\n"
    "            acc[i][j] += av[i] * bv[j];\n"
    "      }\n"
    "      @SYNC@;\n"
    "    }\n"
    "    @T@ *Cb = C + bat * scb;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < @TM@; i++) {\n"
    "      const long long gm = m0 + ty + i * @RY@;\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < @TN@; j++) {\n"
    "        const long long gn = n0 + tx + j * @RX@;\n"
    "        if (gm < M && gn < N) { /* the epilogue: + bias[n], then relu (NaN stays NaN) */\n"
    "          @ACC@ v = acc[i][j];\n"
    "          if (bias)\n"
    "            v += @LOAD_BIAS@;\n"
    "          if (relu)\n"
    "            v = v != v ? v : v > 0 ? v : (@ACC@)0;\n"
    "          Cb[gm * scm + gn * scn] = @STORE@;\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n\n";

/* The threads along a tile row (rx; ry = threads / rx along a column): each thread then holds
 * tm = bm / ry rows and tn = bn / rx columns, as near square as the plan allows (fewest shared
 * reads per multiply-add). 0 when no split fits. */
static unsigned
split_rx(const coil_gpu_gemm_plan *pl)
{
  unsigned best = 0;
  long best_gap = -1;
  for (unsigned rx = 1; rx <= pl->threads; rx++) {
    unsigned ry = pl->threads / rx;
    if (pl->threads % rx || (unsigned)pl->bn % rx || (unsigned)pl->bm % ry)
      continue;
    long tm = pl->bm / (int)ry, tn = pl->bn / (int)rx, gap = labs(tm - tn);
    if (best_gap < 0 || gap < best_gap)
      best = rx, best_gap = gap;
  }
  return best;
}

static size_t
acc_size(coil_dtype t)
{
  return t == COIL_F64 ? 8 : 4;
}

static bool
supported(coil_dtype t)
{
  return t == COIL_F16 || t == COIL_BF16 || t == COIL_F32 || t == COIL_F64;
}

void
coil_gpu_gemm_plan_for(const coil_gpu_dialect *dl, coil_dtype t, coil_gpu_gemm_plan *out)
{
  (void)dl; /* 256 threads: whole warps of 32 and wavefronts of 64 alike */
  /* 64 x 64 tiles of 4 x 4 per thread; f64 takes half the K slice, so both stage 8.3 KB */
  *out = (coil_gpu_gemm_plan){.threads = 256, .bm = 64, .bn = 64, .bk = t == COIL_F64 ? 8 : 16};
}

void
coil_gpu_gemm_plan_small(const coil_gpu_dialect *dl, coil_dtype t, coil_gpu_gemm_plan *out)
{
  (void)dl; (void)t; /* two wavefronts of 64, four warps of 32; 8.7 KB of shared memory for f64 */
  *out = (coil_gpu_gemm_plan){.threads = 128, .bm = 16, .bn = 16, .bk = 32};
}

bool
coil_gpu_gemm_is_small(const coil_gpu_gemm_plan *dflt, int64_t M, int64_t N, int64_t batch)
{
  unsigned tiles = coil_gpu_gemm_blocks(dflt, M, N, batch);
  return tiles > 0 && tiles < 8;
}

bool
coil_gpu_gemm_plan_valid(coil_dtype t, const coil_gpu_gemm_plan *pl)
{
  if (!supported(t) || pl->threads < 1 || pl->threads > 1024 || pl->bm < 1 || pl->bn < 1 || pl->bk < 1 ||
      pl->bm > 1024 || pl->bn > 1024 || pl->bk > 1024 || !split_rx(pl))
    return false;
  size_t smem = ((size_t)pl->bk * (size_t)(pl->bm + 1) + (size_t)pl->bk * (size_t)(pl->bn + 1)) * acc_size(t);
  unsigned rx = split_rx(pl), ry = pl->threads / rx;
  int regs = (pl->bm / (int)ry) * (pl->bn / (int)rx);
  return smem <= COIL_GPU_GEMM_SMEM_MAX && regs <= COIL_GPU_GEMM_TILE_MAX;
}

/* The kernel text with its @TOKEN@s replaced: strings from the table, numbers in decimal. */
static void
expand(const char *text, const char *const (*tokens)[2], size_t ntokens, coil_strbuf *b)
{
  while (*text) {
    const char *at = strchr(text, '@'), *end = at ? strchr(at + 1, '@') : NULL;
    if (!end) {
      coil_strbuf_puts(b, text);
      return;
    }
    coil_strbuf_putn(b, text, (size_t)(at - text));
    size_t n = (size_t)(end - at - 1), t = 0;
    while (t < ntokens && (strlen(tokens[t][0]) != n || strncmp(at + 1, tokens[t][0], n) != 0))
      t++;
    if (t == ntokens) { /* not a token: the @ itself */
      coil_strbuf_puts(b, "@");
      text = at + 1;
      continue;
    }
    coil_strbuf_puts(b, tokens[t][1]);
    text = end + 1;
  }
}

bool
coil_gpu_gemm_source(const coil_gpu_dialect *dl, coil_dtype t, const coil_gpu_gemm_plan *pl, const char *name,
                     coil_strbuf *out)
{
  if (!coil_gpu_gemm_plan_valid(t, pl))
    return false;
  unsigned rx = split_rx(pl), ry = pl->threads / rx;
  char threads[16], bm[16], bn[16], bk[16], tm[16], tn[16], srx[16], sry[16], lb[128] = "";
  snprintf(threads, sizeof threads, "%u", pl->threads);
  snprintf(bm, sizeof bm, "%d", pl->bm);
  snprintf(bn, sizeof bn, "%d", pl->bn);
  snprintf(bk, sizeof bk, "%d", pl->bk);
  snprintf(tm, sizeof tm, "%d", pl->bm / (int)ry);
  snprintf(tn, sizeof tn, "%d", pl->bn / (int)rx);
  snprintf(srx, sizeof srx, "%u", rx);
  snprintf(sry, sizeof sry, "%u", ry);
  if (dl->launch_bounds) { /* " __launch_bounds__(256)" */
    lb[0] = ' ';
    snprintf(lb + 1, sizeof lb - 1, dl->launch_bounds, pl->threads);
  }
  /* each thread stages ceil(slice / threads) elements of a slice (a constant trip count, so the
   * loop unrolls); the last round is guarded where the threads do not divide the slice */
  const int a_slice = pl->bm * pl->bk, b_slice = pl->bk * pl->bn, nt = (int)pl->threads;
  char a_rounds[16], b_rounds[16], a_guard[64] = "", b_guard[64] = "";
  snprintf(a_rounds, sizeof a_rounds, "%d", (a_slice + nt - 1) / nt);
  snprintf(b_rounds, sizeof b_rounds, "%d", (b_slice + nt - 1) / nt);
  if (a_slice % nt)
    snprintf(a_guard, sizeof a_guard, "        if (e >= %d)\n          break;\n", a_slice);
  if (b_slice % nt)
    snprintf(b_guard, sizeof b_guard, "        if (e >= %d)\n          break;\n", b_slice);
  /* f16/bf16 are stored as uint16_t and converted by the prelude's coil_h2f/coil_f2h, coil_b2f/coil_f2b */
  const char *to_acc = t == COIL_F16 ? "coil_h2f" : t == COIL_BF16 ? "coil_b2f" : "";
  const char *to_store = t == COIL_F16 ? "coil_f2h" : t == COIL_BF16 ? "coil_f2b" : "";
  char load_a[96], load_b[96], load_bias[64], store[64];
  snprintf(load_a, sizeof load_a, "%s(Ab[gm * sam + gk * sak])", to_acc);
  snprintf(load_b, sizeof load_b, "%s(Bb[gk * sbk + gn * sbn])", to_acc);
  snprintf(load_bias, sizeof load_bias, "%s(bias[gn])", to_acc);
  snprintf(store, sizeof store, "%s(v)", to_store);
  const char *const tokens[][2] = {
      {"NAME", name}, {"DT", coil_dtype_name(t)}, {"T", coil_c_storage_type(t)},
      {"ACC", t == COIL_F64 ? "double" : "float"}, {"KERNEL", dl->kernel_decl}, {"LB", lb},
      {"R", dl->restrict_kw}, {"SHARED", dl->shared}, {"TID", dl->thread_idx}, {"BID", dl->block_idx},
      {"GDIM", dl->grid_dim}, {"SYNC", dl->barrier}, {"THREADS", threads}, {"BM", bm}, {"BN", bn}, {"BK", bk},
      {"TM", tm}, {"TN", tn}, {"RX", srx}, {"RY", sry}, {"LOAD_A", load_a}, {"LOAD_B", load_b}, {"LOAD_BIAS", load_bias}, {"STORE", store},
      {"A_ROUNDS", a_rounds}, {"B_ROUNDS", b_rounds}, {"A_GUARD", a_guard}, {"B_GUARD", b_guard}};
  expand(kernel, tokens, sizeof tokens / sizeof *tokens, out);
  return true;
}

unsigned
coil_gpu_gemm_blocks(const coil_gpu_gemm_plan *pl, int64_t M, int64_t N, int64_t batch)
{
  if (M <= 0 || N <= 0 || batch <= 0 || pl->bm < 1 || pl->bn < 1 || pl->threads < 1)
    return 0;
  /* blocks x threads must fit HIP's 32-bit grid of work-items (and CUDA's 2^31 - 1 blocks) */
  const int64_t cap = (int64_t)(UINT32_MAX / pl->threads) < INT32_MAX ? (int64_t)(UINT32_MAX / pl->threads) : INT32_MAX;
  int64_t tiles = (M - 1) / pl->bm + 1, tn = (N - 1) / pl->bn + 1;
  if (tiles > cap / tn)
    return (unsigned)cap;
  tiles *= tn;
  if (tiles > cap / batch)
    return (unsigned)cap;
  return (unsigned)(tiles * batch);
}
