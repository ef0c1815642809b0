/* gpu_prelude.c — the prelude of the GPU emitter's sources (coil/coil_gpu.h): the dialect's head
 * and f16/bf16 conversions, the SDK's C helpers made device functions, combining stores, and the
 * block and warp reductions and scans, written once with @TOKEN@s for the dialect's spellings
 * and warp width (the same text serves a 32-lane warp and a 64-lane wavefront). */
#include <stdio.h>
#include <string.h>

#include "coil/coil_gpu.h"
#include "gpu_int.h"

int
gpu_warp_shift(const coil_gpu_dialect *dl)
{
  int s = 0;
  while ((1 << s) < dl->warp_size)
    s++;
  return s;
}

/* text with @NAME@ tokens replaced by the dialect's spellings (see coil_gpu_dialect):
 *   @D@ __device__, @FI@ __forceinline__, @TID@ threadIdx.x, @BDIM@ blockDim.x, @SYNC@ the block's
 *   barrier, @SYNCWARP@ the warp's, @ALIGN@ the alignment attribute, @SHFL_DOWN@ @SHFL_UP@
 *   @SHFL_IDX@ the shuffle call prefixes, @WARP@ the warp size, @HALF@ half of it, @LANE@ the
 *   last lane, @SHIFT@ its log2 */
static void
expand(const coil_gpu_dialect *dl, const char *text, coil_strbuf *b)
{
  const struct {
    const char *name, *s;
    int n;
  } tokens[] = {{"D", dl->device, 0}, {"FI", dl->forceinline, 0}, {"TID", dl->thread_idx, 0},
                {"BDIM", dl->block_dim, 0}, {"SYNC", dl->barrier, 0}, {"SYNCWARP", dl->warp_barrier, 0},
                {"ALIGN", dl->align, 0}, {"SHFL_DOWN", dl->shfl_down, 0}, {"SHFL_UP", dl->shfl_up, 0},
                {"SHFL_IDX", dl->shfl_idx, 0}, {"WARP", NULL, dl->warp_size}, {"HALF", NULL, dl->warp_size / 2},
                {"LANE", NULL, dl->warp_size - 1}, {"SHIFT", NULL, gpu_warp_shift(dl)}};
  while (*text) {
    const char *at = strchr(text, '@');
    if (!at) {
      coil_strbuf_puts(b, text);
      return;
    }
    coil_strbuf_putn(b, text, (size_t)(at - text));
    const char *end = strchr(at + 1, '@');
    size_t n = end ? (size_t)(end - at - 1) : 0;
    bool found = false;
    for (size_t t = 0; end && t < sizeof tokens / sizeof *tokens && !found; t++) {
      if (strlen(tokens[t].name) != n || strncmp(at + 1, tokens[t].name, n) != 0)
        continue;
      found = true;
      if (tokens[t].s)
        coil_strbuf_puts(b, tokens[t].s);
      else
        coil_strbuf_printf(b, "%d", tokens[t].n);
    }
    if (!found) { /* not a token: the @ itself */
      coil_strbuf_puts(b, "@");
      text = at + 1;
      continue;
    }
    text = end + 1;
  }
}

/* the block and warp reductions, scans, and the vector type (before the dialect's helpers) */
static const char reductions[] =
    "\n/* block reductions: a full-warp shuffle tree, one partial per warp in shared memory, thread 0\n"
    " * folds the partials; every thread returns the result */\n"
    "template <typename T> @D@ @FI@ T coil_shfl(T v, int o) { return @SHFL_DOWN@v, o); }\n"
    "template <> @D@ @FI@ bool coil_shfl(bool v, int o) { return @SHFL_DOWN@(int)v, o) != 0; }\n"
    "template <> @D@ @FI@ int8_t coil_shfl(int8_t v, int o) { return (int8_t)@SHFL_DOWN@(int)v, o); }\n"
    "template <> @D@ @FI@ int16_t coil_shfl(int16_t v, int o) { return (int16_t)@SHFL_DOWN@(int)v, o); }\n"
    "template <> @D@ @FI@ uint8_t coil_shfl(uint8_t v, int o) { return (uint8_t)@SHFL_DOWN@(int)v, o); }\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_block_reduce(T v, Op op, void *smem) {\n"
    "  T *s = (T *)smem;\n"
    "  for (int o = @HALF@; o > 0; o >>= 1) v = op(v, coil_shfl(v, o));\n"
    "  const int lane = @TID@ & @LANE@, warp = @TID@ >> @SHIFT@, nw = @BDIM@ >> @SHIFT@;\n"
    "  @SYNC@;\n"
    "  if (lane == 0) s[warp] = v;\n"
    "  @SYNC@;\n"
    "  if (@TID@ == 0) { T a = s[0]; for (int w = 1; w < nw; w++) a = op(a, s[w]); s[0] = a; }\n"
    "  @SYNC@;\n"
    "  return s[0];\n"
    "}\n"
    "/* a warp's reduction (persistent kernels with a row per warp): the shuffle tree, then lane 0's\n"
    " * result to every lane through the warp's own 32 bytes of shared memory, at the same place\n"
    " * whatever T is (warps are not synchronized with each other: slots indexed by T would let one\n"
    " * warp's bool land in another's float) */\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_warp_reduce(T v, Op op, void *smem) {\n"
    "  T *s = (T *)((unsigned char *)smem + 32 * (@TID@ >> @SHIFT@));\n"
    "  for (int o = @HALF@; o > 0; o >>= 1) v = op(v, coil_shfl(v, o));\n"
    "  @SYNCWARP@;\n"
    "  if ((@TID@ & @LANE@) == 0) *s = v;\n"
    "  @SYNCWARP@;\n"
    "  return *s;\n"
    "}\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_own_reduce(T v, Op, void *) { return v; }\n"
    "/* scans: a warp's inclusive scan (shuffles); lane @LANE@'s value to every lane; the combination of\n"
    " * the warps before this one (id for warp 0; wt: this warp's total, the same in every lane), the\n"
    " * warps' totals scanned by warp 0 in shared memory, *total the block's; and a block's inclusive\n"
    " * scan in thread order from those */\n"
    "template <typename T> @D@ @FI@ T coil_shfl_up(T v, int o) { return @SHFL_UP@v, o); }\n"
    "template <> @D@ @FI@ int8_t coil_shfl_up(int8_t v, int o) { return (int8_t)@SHFL_UP@(int)v, o); }\n"
    "template <> @D@ @FI@ int16_t coil_shfl_up(int16_t v, int o) { return (int16_t)@SHFL_UP@(int)v, o); }\n"
    "template <> @D@ @FI@ uint8_t coil_shfl_up(uint8_t v, int o) { return (uint8_t)@SHFL_UP@(int)v, o); }\n"
    "template <typename T> @D@ @FI@ T coil_shfl_idx(T v, int i) { return @SHFL_IDX@v, i); }\n"
    "template <> @D@ @FI@ int8_t coil_shfl_idx(int8_t v, int i) { return (int8_t)@SHFL_IDX@(int)v, i); }\n"
    "template <> @D@ @FI@ int16_t coil_shfl_idx(int16_t v, int i) { return (int16_t)@SHFL_IDX@(int)v, i); }\n"
    "template <> @D@ @FI@ uint8_t coil_shfl_idx(uint8_t v, int i) { return (uint8_t)@SHFL_IDX@(int)v, i); }\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_warp_scan(T v, Op op) {\n"
    "  const int lane = @TID@ & @LANE@;\n"
    "  for (int o = 1; o < @WARP@; o <<= 1) { const T u = coil_shfl_up(v, o); if (lane >= o) v = op(u, v); }\n"
    "  return v;\n"
    "}\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_warps_before(T wt, Op op, T id, T *total, void *smem) {\n"
    "  T *s = (T *)smem;\n"
    "  const int lane = @TID@ & @LANE@, warp = @TID@ >> @SHIFT@, nw = @BDIM@ >> @SHIFT@;\n"
    "  @SYNC@;\n"
    "  if (lane == 0) s[warp] = wt;\n"
    "  @SYNC@;\n"
    "  if (warp == 0) {\n"
    "    const T w = coil_warp_scan(s[lane < nw ? lane : 0], op);\n"
    "    if (lane < nw) s[lane] = w;\n"
    "  }\n"
    "  @SYNC@;\n"
    "  *total = s[nw - 1];\n"
    "  return warp > 0 ? s[warp - 1] : id;\n"
    "}\n"
    "template <typename T, typename Op> @D@ @FI@ T coil_block_scan(T v, Op op, T *total, void *smem) {\n"
    "  v = coil_warp_scan(v, op);\n"
    "  const T before = coil_warps_before(coil_shfl_idx(v, @LANE@), op, v, total, smem);\n"
    "  return (@TID@ >> @SHIFT@) > 0 ? op(before, v) : v;\n"
    "}\n"
    "template <typename T, int V> struct @ALIGN@(sizeof(T) * V) coil_vec { T e[V]; };\n";

/* the reduction functors, argmax/argmin and Welford (after the dialect's helpers) */
static const char combiners[] =
    "struct coil_op_sum { template <typename T> @D@ T operator()(T a, T b) const { return (T)(a + b); } };\n"
    "struct coil_op_prod { template <typename T> @D@ T operator()(T a, T b) const { return (T)(a * b); } };\n"
    "struct coil_op_any { @D@ bool operator()(bool a, bool b) const { return a || b; } };\n"
    "template <typename T> @D@ @FI@ T coil_maxv(T a, T b) { return a > b ? a : b; }\n"
    "template <typename T> @D@ @FI@ T coil_minv(T a, T b) { return a < b ? a : b; }\n"
    "template <> @D@ @FI@ float coil_maxv(float a, float b) { return coil_fmaxf(a, b); }\n"
    "template <> @D@ @FI@ float coil_minv(float a, float b) { return coil_fminf(a, b); }\n"
    "template <> @D@ @FI@ double coil_maxv(double a, double b) { return coil_fmax(a, b); }\n"
    "template <> @D@ @FI@ double coil_minv(double a, double b) { return coil_fmin(a, b); }\n"
    "struct coil_op_max { template <typename T> @D@ T operator()(T a, T b) const { return coil_maxv(a, b); } };\n"
    "struct coil_op_min { template <typename T> @D@ T operator()(T a, T b) const { return coil_minv(a, b); } };\n"
    "/* argmax / argmin: (value, first index); i < 0 means no element yet; NaN wins (torch) */\n"
    "template <typename T> struct coil_arg { T v; long long i; };\n"
    "template <typename T> @D@ @FI@ bool coil_isnan(T v) { return v != v; }\n"
    "template <typename T, bool MAX> @D@ @FI@ bool coil_arg_better(T a, long long ai, T b, long long bi) {\n"
    "  if (bi < 0) return true; if (ai < 0) return false;\n"
    "  if (coil_isnan(a) || coil_isnan(b)) return coil_isnan(a) && (!coil_isnan(b) || ai < bi);\n"
    "  if (a == b) return ai < bi;\n"
    "  return MAX ? a > b : a < b;\n"
    "}\n"
    "template <typename T, bool MAX> struct coil_op_arg { @D@ coil_arg<T> operator()(coil_arg<T> a, coil_arg<T> b) const {\n"
    "  return coil_arg_better<T, MAX>(a.v, a.i, b.v, b.i) ? a : b; } };\n"
    "template <typename T> @D@ @FI@ coil_arg<T> coil_shfl(coil_arg<T> v, int o) {\n"
    "  coil_arg<T> r; r.v = coil_shfl(v.v, o); r.i = @SHFL_DOWN@v.i, o); return r; }\n"
    "/* Welford: (mean, m2, n), combined by Chan's formula */\n"
    "template <typename T> struct coil_wf { T m, q; long long n; };\n"
    "template <typename T> @D@ @FI@ coil_wf<T> coil_shfl(coil_wf<T> v, int o) {\n"
    "  coil_wf<T> r; r.m = coil_shfl(v.m, o); r.q = coil_shfl(v.q, o); r.n = @SHFL_DOWN@v.n, o); return r; }\n"
    "struct coil_op_wf { template <typename T> @D@ coil_wf<T> operator()(coil_wf<T> a, coil_wf<T> b) const {\n"
    "  if (b.n == 0) return a; if (a.n == 0) return b;\n"
    "  long long t = a.n + b.n; T d = b.m - a.m, f = (T)b.n / (T)t;\n"
    "  coil_wf<T> r; r.m = a.m + d * f; r.q = a.q + b.q + d * d * (T)a.n * f; r.n = t; return r; } };\n\n"
;

/* The SDK's C helpers made device functions, between the dialect's head and conversions and the
 * reductions. */
void
coil_gpu_prelude(const coil_gpu_dialect *dl, coil_strbuf *b)
{
  coil_strbuf_puts(b, dl->head ? dl->head : "");
  coil_strbuf_puts(b, dl->half ? dl->half : "");
  /* the SDK prelude without its #includes, each static inline made a device function, and the
   * f16/bf16 conversions replaced by the dialect's (the hardware's) */
  static const char *const hw[] = {"static inline float coil_h2f(", "static inline uint16_t coil_f2h(",
                                   "static inline float coil_b2f(", "static inline uint16_t coil_f2b("};
  const char *s = coil_c_prelude();
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    bool replaced = false;
    for (size_t i = 0; i < sizeof hw / sizeof *hw; i++)
      replaced = replaced || strncmp(s, hw[i], strlen(hw[i])) == 0;
    if (replaced) {
      s += n;
      continue;
    }
    if (strncmp(s, "#include", 8) != 0) {
      if (strncmp(s, "static inline ", 14) == 0) {
        coil_strbuf_printf(b, "static %s %s ", dl->device, dl->forceinline);
        coil_strbuf_printf(b, "%.*s", (int)(n - 14), s + 14);
      } else {
        coil_strbuf_printf(b, "%.*s", (int)n, s);
      }
    }
    s += n;
  }
  /* combining stores: the SDK writes them for CUDA (its bit casts and atomics, which HIP shares:
   * __uint_as_float, atomicAdd, atomicCAS, atomicMax, atomicMin; another language defines those
   * in its head), its function qualifiers respelled here */
  coil_strbuf stores = {0};
  coil_c_combining_stores(&stores, true);
  static const char cuda_fn[] = "static __device__ __forceinline__ ";
  for (const char *t = stores.s ? stores.s : "", *e; *t; t = e + strlen(cuda_fn)) {
    if (!(e = strstr(t, cuda_fn))) {
      coil_strbuf_puts(b, t);
      break;
    }
    coil_strbuf_putn(b, t, (size_t)(e - t));
    coil_strbuf_printf(b, "static %s %s ", dl->device, dl->forceinline);
  }
  coil_strbuf_free(&stores);
  expand(dl, reductions, b);
  coil_strbuf_puts(b, dl->helpers ? dl->helpers : "");
  expand(dl, combiners, b);
}
