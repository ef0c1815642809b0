/* cuda_gemm.c — the cuda plugin's generated GEMM: aten.mm lines on sm_90 through a wgmma kernel of
 * its own (cuda_gemm.cu, tools/device/wgmma_gemm_probe.cu's best configuration), with the
 * pointwise kernel after the line folded into its epilogue: the SDK finds the kernel
 * (coil_gpu_find_gemm_epilogues) and writes its body as a device function
 * (coil_gpu_gemm_epilogue_source), which the GEMM's epilogue warps call on each element of the
 * f16 (or bf16) product. The result is the unfused kernel's, computed from the same rounded product; the
 * product's 32 MiB round trip and the kernel's launch are gone.
 *
 * Here, not in the SDK beside gpu_gemm.c: the kernel is wgmma, TMA and setmaxnreg, sm_90a's
 * alone, and its run time needs the CUDA driver's tensor maps; no other dialect can take it. The
 * parts a SIMT GEMM can share (the matcher, the epilogue's code) are the SDK's.
 *
 * Which lines (option gemm; docs/config.md): `library` none; `generated` every line the checks
 * below pass, with an epilogue where one folds and without one elsewhere; `auto` (the default)
 * the cost rule of docs/gemm-wgmma-notes.md: the checks, a foldable epilogue that cuBLASLt's
 * fixed ones cannot do (coil_gpu_find_epilogues finds none there), at least 2 x 132 tiles of
 * 128 x 256 (an H200's and an H100 SXM's SMs: the compile may run without a GPU) and K >= 1024.
 * Outside that region nothing was measured, so cuBLASLt keeps it. With max-autotune, `auto`
 * times instead (cuda_tune.c, cuda_gemm_choices): each line the checks pass, generated or not,
 * as the whole program; `force` then says per line.
 *
 * The checks, from the program: sm_90; aten.mm.default whose operands and output are all f16 or
 * all bf16; A [M, K] with strides [K, 1]; B [K, N] with [N, 1] (row-major, as x @ w passes it)
 * or [1, K] (the transposed view of a row-major [N, K], as x @ w.t() passes an nn.Linear
 * weight: the kernel's "bt" variant, B K-major in shared memory); the output row-major; constant
 * sizes, K % 8 == N % 8 == 0 (TMA's 16-byte row strides, the 16-byte stores), below 2^31. At run
 * time (cuda_gemm_run) the same on the bound buffers, against the kernel's dtype and B layout,
 * and A, B and the output 16-byte aligned; a line that fails them there runs on cuBLASLt and its
 * kernel line as usual.
 *
 * Compile plans the kernels (one per distinct GEMM: the plain one is shared, each folded kernel
 * has its own), writes their source to gemm.cu, each kernel's cubin (gI.cubin, NVRTC for
 * sm_90a) and the plan to gemm.txt; load reads them back, sets each kernel's dynamic shared
 * memory once, and finds the epilogues again from the program; a run encodes the two tensor maps
 * (cached per line while the pointers and sizes stay) and launches a persistent grid of one CTA
 * an SM. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

extern const char cuda_gemm_cu[]; /* cuda_gemm.cu (embed.cmake) */

#define TILE_M 128
#define TILE_N 256
#define THREADS 384
/* dynamic shared memory, as cuda_gemm.cu lays it out: 1024 bytes to align the base, 3 stages of
 * 48 KB, the staging buffer (128 rows of 512 + 16 bytes), 8 mbarriers: 216,128 bytes */
#define SMEM (1024 + 3 * 49152 + TILE_M * (2 * TILE_N + 16) + 8 * 8)
/* the cost rule: tiles >= 2 x RULE_SMS, K >= RULE_MIN_K */
#define RULE_SMS 132
#define RULE_MIN_K 1024

/* ---- compile ---- */

typedef struct {
  char *name;
  int mm_line;     /* a line it serves (its epilogue's), or -1 for the plain GEMM */
  int kernel_line; /* the folded kernel's line, or -1 */
  coil_dtype dtype; /* COIL_F16 or COIL_BF16: A's, B's and C's */
  bool bt;          /* B stored transposed: [K, N] with strides [1, K] (K-major) */
} gemm_kernel;

struct cuda_gemm_build {
  int nkernels;
  gemm_kernel *kernels;
  int nlines;
  int *line_kernel;            /* per line: its kernel, or -1 */
  coil_gpu_gemm_epilogue *epi; /* per line */
};

void
cuda_gemm_build_free(cuda_gemm_build *b)
{
  if (!b)
    return;
  for (int i = 0; i < b->nkernels; i++)
    free(b->kernels[i].name);
  free(b->kernels);
  free(b->line_kernel);
  free(b->epi);
  free(b);
}

static bool
const_is(const coil_sym *s, int64_t v)
{
  int64_t x;
  return coil_sym_is_const(s, &x) && x == v;
}

/* Why line l cannot take the generated GEMM on sm (NULL: it can); its M, N, K into mnk, the
 * operands' dtype into *dt and whether B is transposed into *bt. */
static const char *
refusal(const coil_wir_program *p, const coil_line *l, int sm, int64_t *mnk, coil_dtype *dt, bool *bt)
{
  if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "aten.mm.default") != 0 || l->nargs != 2 ||
      l->nouts != 1)
    return "not an aten.mm.default line";
  if (sm != 90)
    return "the target is not sm_90 (wgmma, TMA and setmaxnreg are sm_90a's)";
  const coil_buffer *A = &p->buffers[l->args[0]], *B = &p->buffers[l->args[1]], *C = &p->buffers[l->outs[0]];
  if ((A->dtype != COIL_F16 && A->dtype != COIL_BF16) || B->dtype != A->dtype || C->dtype != A->dtype)
    return "not f16 or bf16 throughout (operands and output of one type)";
  int64_t M, K, K2, N;
  if (A->rank != 2 || B->rank != 2 || C->rank != 2 || !coil_sym_is_const(A->sizes[0], &M) ||
      !coil_sym_is_const(A->sizes[1], &K) || !coil_sym_is_const(B->sizes[0], &K2) || !coil_sym_is_const(B->sizes[1], &N) ||
      K2 != K)
    return "sizes not constant";
  if (K % 8 || N % 8) /* (K, N >= 8 from here: B's two layouts below are told apart) */
    return "K or N not a multiple of 8";
  bool nn = const_is(B->strides[0], N) && const_is(B->strides[1], 1), t = const_is(B->strides[0], 1) && const_is(B->strides[1], K);
  if (!const_is(A->strides[0], K) || !const_is(A->strides[1], 1) || (!nn && !t) || !const_is(C->strides[0], N) ||
      !const_is(C->strides[1], 1))
    return "A or the output not row-major, or B neither row-major nor the transpose of a row-major [N, K]";
  if (M < 1 || N < 1 || K < 1 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX ||
      (M + TILE_M - 1) / TILE_M * ((N + TILE_N - 1) / TILE_N) > INT32_MAX)
    return "an empty product, or sizes beyond 2^31";
  mnk[0] = M, mnk[1] = N, mnk[2] = K;
  *dt = A->dtype, *bt = t;
  return NULL;
}

/* The kernel index of name (added when new). */
static int
kernel_for(cuda_gemm_build *b, const char *name, int mm_line, int kernel_line, coil_dtype dt, bool bt)
{
  for (int i = 0; i < b->nkernels; i++)
    if (strcmp(b->kernels[i].name, name) == 0)
      return i;
  char *s = malloc(strlen(name) + 1);
  if (!s)
    return -1;
  strcpy(s, name);
  b->kernels[b->nkernels] = (gemm_kernel){s, mm_line, kernel_line, dt, bt};
  return b->nkernels++;
}

/* Whether the cost rule (gemm = auto) takes a line of product mnk that passed the checks. */
static bool
rule_takes(const int64_t *mnk, const coil_gpu_gemm_epilogue *e, const coil_gpu_epilogue *lt)
{
  int64_t tiles = (mnk[0] + TILE_M - 1) / TILE_M * ((mnk[1] + TILE_N - 1) / TILE_N);
  return e->kernel_line >= 0 && lt->kernel_line < 0 && tiles >= 2 * RULE_SMS && mnk[2] >= RULE_MIN_K;
}

int
cuda_gemm_choices(const coil_wir_program *p, const char *arch, cuda_gemm_choice *out, int max)
{
  if (strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) != 90)
    return 0;
  coil_gpu_gemm_epilogue *epi = calloc((size_t)p->nlines + 1, sizeof *epi);
  coil_gpu_epilogue *lt = calloc((size_t)p->nlines + 1, sizeof *lt);
  int n = 0;
  if (epi && lt) {
    coil_gpu_find_gemm_epilogues(p, epi);
    coil_gpu_find_epilogues(p, lt);
    for (int l = 0; l < p->nlines && n < max; l++) {
      int64_t mnk[3];
      coil_dtype dt;
      bool bt;
      if (refusal(p, &p->lines[l], 90, mnk, &dt, &bt))
        continue;
      cuda_gemm_choice *c = &out[n++];
      c->line = l;
      c->rule = rule_takes(mnk, &epi[l], &lt[l]);
      int k = epi[l].kernel_line;
      snprintf(c->what, sizeof c->what, "%" PRId64 "x%" PRId64 "x%" PRId64 " %s%s%s%s", mnk[0], mnk[1], mnk[2],
               dt == COIL_BF16 ? "bf16" : "f16", bt ? ", B transposed" : "", k >= 0 ? ", epilogue " : "",
               k >= 0 ? p->kernels[p->lines[k].kernel].name : "");
    }
  }
  free(epi);
  free(lt);
  return n;
}

coil_error *
cuda_gemm_plan(const coil_wir_program *p, const cuda_options *opt, const char *arch, const signed char *force,
               cuda_gemm_build **out)
{
  *out = NULL;
  if ((!force && opt->gemm == CUDA_GEMM_LIBRARY) || strncmp(arch, "sm_", 3) != 0)
    return NULL;
  int sm = atoi(arch + 3), nmm = 0;
  for (int l = 0; l < p->nlines; l++)
    nmm += p->lines[l].kind == COIL_LINE_EXTERN_CALL && p->lines[l].op && strcmp(p->lines[l].op, "aten.mm.default") == 0;
  if (!nmm || sm != 90)
    return NULL;
  cuda_gemm_build *b = calloc(1, sizeof *b);
  coil_gpu_epilogue *lt = calloc((size_t)p->nlines + 1, sizeof *lt);
  if (!b || !lt || !(b->kernels = calloc((size_t)nmm, sizeof *b->kernels)) ||
      !(b->line_kernel = malloc(sizeof(int) * (size_t)p->nlines)) ||
      !(b->epi = calloc((size_t)p->nlines + 1, sizeof *b->epi))) {
    free(lt);
    cuda_gemm_build_free(b);
    return coil_sdk_out_of_memory();
  }
  b->nlines = p->nlines;
  coil_gpu_find_gemm_epilogues(p, b->epi);
  coil_gpu_find_epilogues(p, lt); /* what cuBLASLt folds itself */
  for (int l = 0; l < p->nlines; l++) {
    b->line_kernel[l] = -1;
    int64_t mnk[3];
    coil_dtype dt;
    bool bt;
    if (refusal(p, &p->lines[l], sm, mnk, &dt, &bt))
      continue;
    const coil_gpu_gemm_epilogue *e = &b->epi[l];
    bool fold = e->kernel_line >= 0;
    if (force ? !force[l] : opt->gemm == CUDA_GEMM_AUTO && !rule_takes(mnk, e, &lt[l]))
      continue;
    char name[600];
    if (fold) { /* named after the kernel it holds: coil_gemm_wg_poi_fused_gelu_0 */
      const char *kn = p->kernels[p->lines[e->kernel_line].kernel].name;
      snprintf(name, sizeof name, "coil_gemm_wg_%s", strncmp(kn, "coil_", 5) == 0 ? kn + 5 : kn);
      for (int i = 0; i < b->nkernels; i++) /* the same kernel after two lines: bound differently */
        if (strcmp(b->kernels[i].name, name) == 0) {
          snprintf(name + strlen(name), sizeof name - strlen(name), "_l%d", l);
          break;
        }
    } else { /* one a variant: coil_gemm_wg_f16, _bf16, _f16_bt, _bf16_bt */
      snprintf(name, sizeof name, "coil_gemm_wg_%s%s", dt == COIL_BF16 ? "bf16" : "f16", bt ? "_bt" : "");
    }
    int k = kernel_for(b, name, fold ? l : -1, fold ? e->kernel_line : -1, dt, bt);
    if (k < 0) {
      free(lt);
      cuda_gemm_build_free(b);
      return coil_sdk_out_of_memory();
    }
    b->line_kernel[l] = k;
  }
  free(lt);
  if (!b->nkernels) {
    cuda_gemm_build_free(b);
    return NULL;
  }
  *out = b;
  return NULL;
}

int
cuda_gemm_nkernels(const cuda_gemm_build *b)
{
  return b ? b->nkernels : 0;
}

const char *
cuda_gemm_kernel_name(const cuda_gemm_build *b, int i)
{
  return b->kernels[i].name;
}

/* The text with its @TOKEN@s replaced from the table (an @ that starts no token stays). */
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
    if (t == ntokens) {
      coil_strbuf_puts(b, "@");
      text = at + 1;
      continue;
    }
    coil_strbuf_puts(b, tokens[t][1]);
    text = end + 1;
  }
}

void
cuda_gemm_source(const coil_wir_program *p, const cuda_gemm_build *b, int i, coil_strbuf *src)
{
  const gemm_kernel *k = &b->kernels[i];
  coil_strbuf fn = {0}, params = {0}, args = {0}, what = {0};
  char epi[640];
  snprintf(epi, sizeof epi, "%s__epi", k->name);
  if (k->kernel_line >= 0) {
    const coil_gpu_gemm_epilogue *e = &b->epi[k->mm_line];
    coil_gpu_gemm_epilogue_source(&cuda_dialect, p, e, epi, &fn);
    const coil_kernel *kk = &p->kernels[p->lines[e->kernel_line].kernel];
    for (int j = 0; j < e->ninputs; j++) {
      coil_strbuf_printf(&params, ", const %s *__restrict__ coil_e%d", coil_c_storage_type(kk->params[e->inputs[j]].dtype), j);
      coil_strbuf_printf(&args, ", coil_e%d", j);
    }
    coil_strbuf_printf(&what, "%s(A x B), the kernel folded in; the CTA's last tile from registers", epi);
  } else { /* never called (HAS_EPI 0), but the text names it */
    coil_strbuf_printf(&fn, "static __device__ __forceinline__ float\n%s(float coil_mm, int64_t x0, int64_t x1)\n"
                            "{\n  return coil_mm;\n}\n\n", epi);
    coil_strbuf_puts(&what, "A x B, no epilogue");
  }
  coil_strbuf_printf(src, "/* Generated by the coil cuda plugin from Wrapper IR program %s: the GEMM %s (cuda_gemm.cu), "
                          "compiled by NVRTC for " CUDA_GEMM_ARCH ". */\n", p->name, k->name);
  coil_gpu_prelude(&cuda_dialect, src);
  bool has = k->kernel_line >= 0;
  /* the last tile from registers with an epilogue (0.1889 ms against 0.1950 for gelu at 4096^3),
   * staged without one (0.1814 against 0.1862): docs/gemm-wgmma-notes.md */
  /* B N-major: BN / 64 slabs [64 k][64 n], a k16 step 16 rows on (2048 bytes), LBO the slab
   * stride; K-major (bt): [BN n][64 k] as A, a k16 step 32 bytes along the rows, SBO 8 rows */
  const bool bf = k->dtype == COIL_BF16;
  const char *const tokens[][2] = {
      {"NAME", k->name}, {"EPI_FN", fn.s ? fn.s : ""}, {"EPI", epi}, {"EPI_PARAMS", params.s ? params.s : ""},
      {"EPI_ARGS", args.s ? args.s : ""}, {"HAS_EPI", has ? "1" : "0"}, {"LAST_REG", has ? "1" : "0"},
      {"WHAT", what.s ? what.s : ""}, {"AB", bf ? "bf16" : "f16"}, {"TO_F", bf ? "coil_b2f" : "coil_h2f"},
      {"TRANS_B", k->bt ? "0" : "1"}, {"B_MAJOR", k->bt ? "K-major (stored [N, K])" : "N-major"},
      {"B_COORDS", k->bt ? "kt * COIL_GEMM_BK, n0 + 64 * q" : "n0 + 64 * q, kt * COIL_GEMM_BK"},
      {"B_DESC", k->bt ? "coil_gemm_desc(sb + kk * 32, 16, 1024)" : "coil_gemm_desc(sb + kk * 2048, COIL_GEMM_B_SLAB, 1024)"},
      {"B_DESC_WHAT", k->bt ? "(K-major, [BN n rows][64 k]): as A, its 256 rows 8 to a 1024-byte atom"
                            : "(N-major): 16 k rows further (2048 bytes, whole\n           * swizzle atoms), LBO = the "
                              "next 64 columns' slab"}};
  expand(cuda_gemm_cu, tokens, sizeof tokens / sizeof *tokens, src);
  coil_strbuf_free(&fn);
  coil_strbuf_free(&params);
  coil_strbuf_free(&args);
  coil_strbuf_free(&what);
}

void
cuda_gemm_plan_text(const cuda_gemm_build *b, const bool *failed, coil_strbuf *t)
{
  coil_strbuf_puts(t, "# generated GEMMs (cuda_gemm.c): kernel I NAME KERNEL_LINE (in gI.cubin; KERNEL_LINE: the line of "
                      "the kernel folded in, -1: none), then per mm line its kernel\n");
  bool variants = false;
  for (int i = 0; i < b->nkernels; i++)
    variants |= b->kernels[i].dtype == COIL_BF16 || b->kernels[i].bt;
  if (variants)
    coil_strbuf_puts(t, "# after KERNEL_LINE: bf16 (not f16), bt (B stored transposed, [N, K] row-major)\n");
  for (int i = 0; i < b->nkernels; i++)
    if (!failed || !failed[i])
      coil_strbuf_printf(t, "kernel %d %s %d%s%s\n", i, b->kernels[i].name, b->kernels[i].kernel_line,
                         b->kernels[i].dtype == COIL_BF16 ? " bf16" : "", b->kernels[i].bt ? " bt" : "");
  for (int l = 0; l < b->nlines; l++)
    if (b->line_kernel[l] >= 0 && (!failed || !failed[b->line_kernel[l]]))
      coil_strbuf_printf(t, "line %d %d\n", l, b->line_kernel[l]);
}

coil_error *
cuda_gemm_write(const cuda_gemm_build *b, const coil_wir_program *p, const bool *failed, const char *dir)
{
  coil_strbuf t = {0}, src = {0};
  cuda_gemm_plan_text(b, failed, &t);
  for (int i = 0; i < b->nkernels; i++)
    cuda_gemm_source(p, b, i, &src);
  coil_error *e = coil_sdk_write_file(dir, "gemm.txt", t.s);
  if (!e)
    e = coil_sdk_write_file(dir, "gemm.cu", src.s ? src.s : "");
  coil_strbuf_free(&t);
  coil_strbuf_free(&src);
  return e;
}

/* ---- load ---- */

/* A line's two tensor maps (CUtensorMap: 128 bytes, 64-aligned), for the operands in key. */
typedef struct {
  _Alignas(64) unsigned char a[128];
  _Alignas(64) unsigned char b[128];
  uint64_t key[5]; /* A, B, M, N, K */
  bool valid;
  bool noted;      /* a fallback to the library was logged */
} gemm_maps;

struct cuda_gemm_loaded {
  int nkernels;
  CUmodule *modules;
  CUfunction *functions;       /* NULL: not listed, or not usable on this GPU */
  int *kernel_line;            /* per kernel */
  coil_dtype *dtype;           /* per kernel: COIL_F16 or COIL_BF16 */
  bool *bt;                    /* per kernel: B transposed */
  int nlines;
  int *line_kernel;            /* per line, or -1 */
  coil_gpu_gemm_epilogue *epi; /* per line, found again from the program */
  gemm_maps *maps;             /* per line */
  int nsm;
};

void
cuda_gemm_unload(coil_artifact *a)
{
  cuda_gemm_loaded *G = a->gemm;
  if (!G)
    return;
  for (int i = 0; i < G->nkernels; i++)
    if (G->modules && G->modules[i])
      a->cu->ModuleUnload(G->modules[i]);
  free(G->modules);
  free(G->functions);
  free(G->kernel_line);
  free(G->dtype);
  free(G->bt);
  free(G->line_kernel);
  free(G->epi);
  free(G->maps);
  free(G);
  a->gemm = NULL;
}

static void
warn(const coil_artifact *a, const char *msg)
{
  if (a->host && COIL_STRUCT_HAS(a->host, coil_host_api, log) && a->host->log)
    a->host->log(a->host, COIL_LOG_WARN, msg);
}

/* Reads gemm.txt into G (names into names[i], checked against the kernels loaded); false when
 * it is malformed or disagrees with the program. */
static bool
plan_read(const char *text, const coil_wir_program *p, cuda_gemm_loaded *G, char (*names)[600])
{
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
    int i, kl, line, n = 0;
    char name[600];
    if (sscanf(s, "kernel %d %599s %d%n", &i, name, &kl, &n) == 3) {
      if (i < 0 || i >= G->nkernels || kl < -1 || kl >= p->nlines || names[i][0])
        return false;
      snprintf(names[i], sizeof names[i], "%s", name);
      G->kernel_line[i] = kl;
      G->dtype[i] = COIL_F16, G->bt[i] = false;
      for (const char *w = s + n; *w && *w != '\n';) { /* the variant's words */
        while (*w == ' ')
          w++;
        size_t len = strcspn(w, " \n");
        if (len == 4 && strncmp(w, "bf16", 4) == 0)
          G->dtype[i] = COIL_BF16;
        else if (len == 2 && strncmp(w, "bt", 2) == 0)
          G->bt[i] = true;
        else if (len)
          return false;
        w += len;
      }
    } else if (sscanf(s, "line %d %d", &line, &i) == 2) {
      if (line < 0 || line >= p->nlines || i < 0 || i >= G->nkernels || !names[i][0])
        return false;
      const coil_line *l = &p->lines[line];
      if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "aten.mm.default") != 0 ||
          (G->kernel_line[i] >= 0 && G->epi[line].kernel_line != G->kernel_line[i]))
        return false;
      G->line_kernel[line] = i;
    }
  }
  return true;
}

coil_error *
cuda_gemm_load(coil_artifact *a, const char *dir)
{
  const coil_wir_program *p = a->program;
  char path[4200];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/gemm.txt", dir);
  char *text = coil_sdk_read_file(path, 1u << 20, &len);
  if (!text)
    return NULL; /* no generated GEMM in this artifact */
  int n = 0; /* kernels are numbered as compiled: one NVRTC refused leaves a gap */
  for (const char *s = text; (s = strstr(s, "\nkernel ")); s++) {
    int i;
    if (sscanf(s + 1, "kernel %d", &i) == 1 && i >= n && i < 4096)
      n = i + 1;
  }
  cuda_gemm_loaded *G = a->gemm = calloc(1, sizeof *G);
  char (*names)[600] = calloc((size_t)n + 1, sizeof *names);
  if (!G || !names || !(G->modules = calloc((size_t)n + 1, sizeof *G->modules)) ||
      !(G->functions = calloc((size_t)n + 1, sizeof *G->functions)) ||
      !(G->kernel_line = calloc((size_t)n + 1, sizeof *G->kernel_line)) ||
      !(G->dtype = calloc((size_t)n + 1, sizeof *G->dtype)) || !(G->bt = calloc((size_t)n + 1, sizeof *G->bt)) ||
      !(G->line_kernel = malloc(sizeof(int) * ((size_t)p->nlines + 1))) ||
      !(G->epi = calloc((size_t)p->nlines + 1, sizeof *G->epi)) ||
      !(G->maps = aligned_alloc(64, sizeof *G->maps * ((size_t)p->nlines + 1)))) {
    free(text);
    free(names);
    return coil_sdk_out_of_memory();
  }
  memset(G->maps, 0, sizeof *G->maps * ((size_t)p->nlines + 1));
  G->nkernels = n, G->nlines = p->nlines;
  for (int l = 0; l < p->nlines; l++)
    G->line_kernel[l] = -1;
  coil_gpu_find_gemm_epilogues(p, G->epi);
  bool ok = plan_read(text, p, G, names);
  free(text);
  if (!ok) {
    free(names);
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: %s is malformed or does not fit program.wir", path);
  }
  a->cu->DeviceGetAttribute(&G->nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, a->dev);
  int optin = 0;
  a->cu->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, a->dev);
  char msg[900];
  for (int i = 0; i < n; i++) {
    if (!names[i][0])
      continue; /* NVRTC refused it at compile: its lines were left to cuBLAS */
    snprintf(path, sizeof path, "%s/g%d.cubin", dir, i);
    char *cubin = coil_sdk_read_file(path, 64u << 20, &len);
    if (!cubin) {
      free(names);
      return coil_sdk_error(COIL_ERR_IO, "cuda: cannot read %s", path);
    }
    CUresult r = a->cu->ModuleLoadData(&G->modules[i], cubin);
    free(cubin);
    const char *call = "cuModuleLoadData";
    if (!r) {
      call = "cuModuleGetFunction";
      r = a->cu->ModuleGetFunction(&G->functions[i], G->modules[i], names[i]);
    }
    if (!r && (optin < SMEM || !a->cu->TensorMapEncodeTiled)) {
      snprintf(msg, sizeof msg, "the generated GEMM %s needs %d bytes of shared memory a block (this GPU gives %d) and "
               "cuTensorMapEncodeTiled (%s): its mm lines run on cuBLAS", names[i], SMEM, optin,
               a->cu->TensorMapEncodeTiled ? "found" : "missing from the driver");
      warn(a, msg);
      G->functions[i] = NULL;
      continue;
    }
    if (!r) { /* raised once: the launches ask for it */
      call = "cuFuncSetAttribute";
      r = a->cu->FuncSetAttribute(G->functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SMEM);
    }
    if (r) { /* an sm_90a cubin on another GPU, say: cuBLAS keeps its lines */
      const char *s = NULL;
      a->cu->GetErrorString(r, &s);
      snprintf(msg, sizeof msg, "the generated GEMM %s cannot run here (%s failed: %s, %d): its mm lines run on cuBLAS",
               names[i], call, s ? s : "?", r);
      warn(a, msg);
      G->functions[i] = NULL;
    }
  }
  free(names);
  return NULL;
}

/* ---- run ---- */

/* The line goes to the library (a warning, once a line: compile chose the generated GEMM for
 * it): returns NULL for the caller. */
static coil_error *
fallback(coil_gpu_run *c, gemm_maps *m, const char *why)
{
  coil_artifact *a = c->user;
  if (m->noted || !a->host || !COIL_STRUCT_HAS(a->host, coil_host_api, log) || !a->host->log)
    return NULL;
  m->noted = true;
  char line[600];
  snprintf(line, sizeof line, "%s, line %d: aten.mm.default on cuBLAS, not the generated GEMM: %s", c->p->name, c->line + 1,
           why);
  a->host->log(a->host, COIL_LOG_WARN, line);
  return NULL;
}

/* The tensor map of a row-major [rows, cols] f16 or bf16 matrix at addr, read in boxes of
 * [box_rows][64]. */
static CUresult
encode(const cuda_driver *cu, void *map, coil_gpu_ptr addr, int64_t rows, int64_t cols, uint32_t box_rows, bool bf16)
{
  const uint64_t dims[2] = {(uint64_t)cols, (uint64_t)rows}, strides[1] = {(uint64_t)cols * 2};
  const uint32_t box[2] = {64, box_rows}, es[2] = {1, 1};
  return cu->TensorMapEncodeTiled(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                  (void *)(uintptr_t)addr, dims, strides, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

coil_error *
cuda_gemm_run(coil_gpu_run *c, const coil_line *l, bool *done)
{
  *done = false;
  coil_artifact *a = c->user;
  cuda_gemm_loaded *G = a->gemm;
  if (!G || c->line >= G->nlines || G->line_kernel[c->line] < 0 || !G->functions[G->line_kernel[c->line]])
    return NULL;
  const int ki = G->line_kernel[c->line];
  gemm_maps *m = &G->maps[c->line];
  const coil_gpu_buf *A = &c->bufs[l->args[0]], *B = &c->bufs[l->args[1]], *C = &c->bufs[l->outs[0]];
  const coil_dtype dt = G->dtype[ki];
  const bool bt = G->bt[ki], bf = dt == COIL_BF16;
  if (A->rank != 2 || B->rank != 2 || C->rank != 2 || A->dtype != dt || B->dtype != dt || C->dtype != dt)
    return fallback(c, m, bf ? "not a 2-d bf16 product" : "not a 2-d f16 product");
  const int64_t M = A->sizes[0], K = A->sizes[1], N = B->sizes[1];
  if (B->sizes[0] != K || M < 1 || N < 1 || K < 1 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || K % 8 || N % 8)
    return fallback(c, m, "sizes (K and N a multiple of 8, below 2^31)");
  if ((M > 1 && A->strides[0] != K) || (K > 1 && A->strides[1] != 1))
    return fallback(c, m, "A is not row-major");
  if (!bt && (B->strides[0] != N || B->strides[1] != 1)) /* K, N >= 8 here */
    return fallback(c, m, "B is not row-major");
  if (bt && (B->strides[0] != 1 || B->strides[1] != K))
    return fallback(c, m, "B is not the transpose of a row-major [N, K]");
  coil_gpu_ptr D = C->ptr;
  const coil_gpu_gemm_epilogue *e = G->kernel_line[ki] >= 0 ? &G->epi[c->line] : NULL;
  CUdeviceptr inputs[COIL_GPU_EPILOGUE_MAX_INPUTS];
  if (e) { /* the folded kernel's output, and what its body reads, must be at hand now */
    const coil_line *kc = &c->p->lines[e->kernel_line];
    const coil_gpu_buf *out = &c->bufs[kc->args[e->out_arg]];
    if (!out->live)
      return fallback(c, m, "the folded kernel's output is not allocated yet");
    for (int i = 0; i < e->ninputs; i++) {
      const coil_gpu_buf *in = &c->bufs[kc->args[e->inputs[i]]];
      if (!in->live)
        return fallback(c, m, "an input of the folded kernel is not live");
      inputs[i] = in->ptr;
    }
    D = out->ptr;
  }
  if (A->ptr % 16 || B->ptr % 16 || D % 16)
    return fallback(c, m, "an operand or the output is not 16-byte aligned");
  const uint64_t key[5] = {A->ptr, B->ptr, (uint64_t)M, (uint64_t)N, (uint64_t)K};
  if (!m->valid || memcmp(m->key, key, sizeof key) != 0) {
    m->valid = false;
    CUresult r = encode(a->cu, m->a, A->ptr, M, K, TILE_M, bf);
    if (!r) /* B as stored: [K, N], or [N, K] when transposed; boxes of 64 rows either way */
      r = bt ? encode(a->cu, m->b, B->ptr, N, K, 64, bf) : encode(a->cu, m->b, B->ptr, K, N, 64, bf);
    if (r) { /* a layout the driver refuses: the library runs it */
      const char *es = NULL;
      a->cu->GetErrorString(r, &es);
      char why[200];
      snprintf(why, sizeof why, "cuTensorMapEncodeTiled refused the operands (%s, %d)", es ? es : "?", (int)r);
      return fallback(c, m, why);
    }
    memcpy(m->key, key, sizeof key);
    m->valid = true;
  }
  int M32 = (int)M, N32 = (int)N, K32 = (int)K;
  const int64_t tiles = (M + TILE_M - 1) / TILE_M * ((N + TILE_N - 1) / TILE_N);
  const unsigned grid = (unsigned)(G->nsm > 0 && tiles > G->nsm ? G->nsm : tiles);
  void *params[6 + COIL_GPU_EPILOGUE_MAX_INPUTS] = {m->a, m->b, &D, &M32, &N32, &K32};
  for (int i = 0; e && i < e->ninputs; i++)
    params[6 + i] = &inputs[i];
  CUresult r = a->cu->LaunchKernel(G->functions[ki], grid, 1, 1, THREADS, 1, 1, SMEM, a->stream, params, NULL);
  if (r)
    return coil_gpu_run_rtfail(c, (int)r, "cuLaunchKernel (the generated GEMM)");
  *done = true;
  if (e)
    c->skip_line = e->kernel_line; /* its work is done */
  return NULL;
}
