/* emit_golden.c — cuda_emit_golden: the cuda plugin's generated CUDA C++ stays what it was; built
 * again with -DGOLDEN_HIP as hip_emit_golden, the same for the hip plugin's two dialects.
 *
 * Usage: cuda-emit-golden GOLDEN_DIR [OUT_DIR] [--wir DIR] [--dialect NAME]
 *        cuda-emit-golden --print FILE.wir    (its kernels.cu to stdout)
 *        (cuda-emit-golden only: [--gemm-wir DIR], see below)
 * --wir: where the programs are (default GOLDEN_DIR/wir); --dialect: cuda (the default), or in
 * hip-emit-golden wave64 (the default) or wave32; kernels/NAME.cu is kernels/NAME.hip there.
 *
 * For every Wrapper IR program GOLDEN_DIR/wir/NAME.wir (the plugin's input, stored so that a
 * change in the core's lowering does not show up here), the code generator runs as the plugin
 * runs it without a GPU, and four texts are checked:
 *
 *   kernels.cu   coil_gpu_program_source with the default plans: the artifact's readable source;
 *   per-kernel   coil_gpu_kernel_source of each kernel: what NVRTC compiles;
 *   plans        each kernel's default plan and max-autotune's candidates (coil_gpu_plan_candidates);
 *   candidates   coil_gpu_candidates_source of those candidates: the autotuner's source.
 *
 * Each text's size and 64-bit FNV-1a hash are compared with GOLDEN_DIR/hashes.txt (a line per
 * program: NAME, then SIZE:HASH of the four texts in that order), and where
 * GOLDEN_DIR/kernels/NAME.cu exists, kernels.cu with it byte for byte (a failure writes the new
 * text to OUT_DIR/NAME.cu and names the first differing line). COIL_UPDATE_GOLDEN=1 rewrites
 * hashes.txt and the kernels/ files that exist (after an intended change of the generated code;
 * review the diff). No GPU and no NVRTC are needed.
 *
 * The cuda build also checks the generated GEMMs (cuda_gemm.c): for every program of the wir
 * directory and of --gemm-wir DIR (named gemm~NAME; default: none) where option gemm = generated
 * plans one on sm_90, gemm.txt's plan and every GEMM's NVRTC source (the folded kernel's body, the
 * template filled in; the prelude, which the kernels' goldens cover, left out) against
 * GOLDEN_DIR/gemm/NAME.cu byte for byte (written by COIL_UPDATE_GOLDEN=1; a program with a GEMM
 * and no such file fails). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GOLDEN_HIP
#include "../../hip/hip.h"
#define GOLDEN_EXT ".hip"
static const coil_gpu_dialect *dialect_dl;

static const coil_gpu_dialect *
dialect_named(const char *name)
{
  return strcmp(name, "wave64") == 0 ? hip_dialect(64) : strcmp(name, "wave32") == 0 ? hip_dialect(32) : NULL;
}
#define DEFAULT_DIALECT "wave64"
#else
#include "../cuda.h"
#define GOLDEN_EXT ".cu"
static const coil_gpu_dialect *dialect_dl;

static const coil_gpu_dialect *
dialect_named(const char *name)
{
  return strcmp(name, "cuda") == 0 ? &cuda_dialect : NULL;
}
#define DEFAULT_DIALECT "cuda"
#endif

#define MAX_CANDIDATES 16 /* as coil_gpu_tune.c */

static uint64_t
fnv1a(const char *s, size_t n)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *
slurp(const char *path, size_t *len)
{
  return coil_sdk_read_file(path, (size_t)1 << 30, len);
}

static int
write_text(const char *path, const char *s)
{
  FILE *f = fopen(path, "wb");
  if (!f || fputs(s, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  return 0;
}

/* The line number (from 1) where a and b first differ. */
static int
first_diff_line(const char *a, const char *b)
{
  int line = 1;
  for (; *a && *a == *b; a++, b++)
    line += *a == '\n';
  return line;
}

static void
plan_line(coil_strbuf *b, const char *what, int k, int i, const coil_gpu_plan *q)
{
  coil_strbuf_printf(b, "k%d %s%d: kind %d threads %u per_thread %d vec %d vec_per_thread %d tvar %d rows %d\n", k, what,
                     i, q->kind, q->threads, q->per_thread, q->vec, q->vec_per_thread, q->tvar, q->rows);
}

/* The four texts of program p (see the file comment) as a line "NAME SIZE:HASH ..." of each, in
 * the order kernels.cu, per-kernel, plans, candidates. */
static void
hash_lines(const char *name, const coil_wir_program *p, const char *kernels_cu, coil_strbuf *out)
{
  coil_strbuf per = {0}, plans = {0}, cand = {0};
  for (int k = 0; k < p->nkernels; k++) {
    coil_gpu_kernel_source(dialect_dl, p, k, NULL, &per);
    coil_gpu_plan c[MAX_CANDIDATES];
    int n = coil_gpu_plan_candidates(dialect_dl, p, &p->kernels[k], c, MAX_CANDIDATES);
    coil_gpu_plan d;
    coil_gpu_plan_kernel(dialect_dl, p, &p->kernels[k], &d);
    plan_line(&plans, "default", k, 0, &d);
    for (int i = 0; i < n; i++)
      plan_line(&plans, "candidate", k, i, &c[i]);
    coil_gpu_candidates_source(dialect_dl, p, k, c, n, &cand);
  }
  const char *texts[] = {kernels_cu, per.s ? per.s : "", plans.s ? plans.s : "", cand.s ? cand.s : ""};
  coil_strbuf_puts(out, name);
  for (int t = 0; t < 4; t++) {
    size_t n = strlen(texts[t]);
    coil_strbuf_printf(out, " %zu:%016" PRIx64, n, fnv1a(texts[t], n));
  }
  coil_strbuf_puts(out, "\n");
  coil_strbuf_free(&per);
  coil_strbuf_free(&plans);
  coil_strbuf_free(&cand);
}

static coil_wir_program *
read_program(const char *path)
{
  size_t len = 0;
  char *text = slurp(path, &len);
  coil_diag d = {0};
  coil_wir_program *p = text ? coil_wir_parse(path, text, len, &d) : NULL;
  if (!p)
    fprintf(stderr, "FAIL %s: %s\n", path, text ? d.msg : "cannot read");
  free(text);
  return p;
}

static int
print_one(const char *path)
{
  coil_wir_program *p = read_program(path);
  if (!p)
    return 1;
  coil_strbuf cu = {0};
  coil_gpu_program_source(dialect_dl, p, NULL, &cu);
  fputs(cu.s ? cu.s : "", stdout);
  coil_strbuf_free(&cu);
  coil_wir_free(p);
  return 0;
}

#ifndef GOLDEN_HIP
/* The generated GEMMs of p as the plugin plans them with gemm = generated for sm_90: gemm.txt's
 * text and each kernel's source; false when p has none. */
static bool
gemm_text(const coil_wir_program *p, coil_strbuf *out)
{
  cuda_options opt = {.gemm = CUDA_GEMM_GENERATED};
  cuda_gemm_build *b = NULL;
  coil_error *e = cuda_gemm_plan(p, &opt, "sm_90", NULL, &b);
  if (e || !b) {
    coil_sdk_error_free(e);
    return false;
  }
  cuda_gemm_plan_text(b, NULL, out);
  coil_strbuf prelude = {0};
  coil_gpu_prelude(&cuda_dialect, &prelude);
  for (int i = 0; i < cuda_gemm_nkernels(b); i++) {
    coil_strbuf src = {0};
    cuda_gemm_source(p, b, i, &src);
    const char *at = strstr(src.s, prelude.s);
    coil_strbuf_printf(out, "\n/* ==== g%d.cubin ==== */\n", i);
    if (at) {
      coil_strbuf_putn(out, src.s, (size_t)(at - src.s));
      coil_strbuf_puts(out, "/* (coil_gpu_prelude) */\n");
      coil_strbuf_puts(out, at + prelude.len);
    } else {
      coil_strbuf_puts(out, src.s);
    }
    coil_strbuf_free(&src);
  }
  coil_strbuf_free(&prelude);
  cuda_gemm_build_free(b);
  return true;
}

/* Compares program NAME's generated GEMMs with GOLD/gemm/NAME.cu (see the file comment). */
static int
check_gemm(const char *gold, const char *outdir, const char *name, const coil_wir_program *p, bool update, int *checked)
{
  coil_strbuf t = {0};
  if (!gemm_text(p, &t))
    return 0;
  (*checked)++;
  char path[8192];
  snprintf(path, sizeof path, "%s/gemm/%s.cu", gold, name);
  char *want = slurp(path, NULL);
  int failed = 0;
  if (update) {
    failed = write_text(path, t.s);
  } else if (!want) {
    fprintf(stderr, "FAIL %s: a generated GEMM is planned but %s is missing (COIL_UPDATE_GOLDEN=1 writes it)\n", name, path);
    failed = 1;
  } else if (strcmp(want, t.s) != 0) {
    char out[4096];
    snprintf(out, sizeof out, "%s/%s.gemm.cu", outdir, name);
    write_text(out, t.s);
    fprintf(stderr, "FAIL %s: the generated GEMMs differ from %s from line %d (new text in %s)\n", name, path,
            first_diff_line(want, t.s), out);
    failed = 1;
  }
  free(want);
  coil_strbuf_free(&t);
  return failed;
}
#endif

static int
wir_file(const struct dirent *e)
{
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".wir") == 0;
}

int
main(int argc, char **argv)
{
  dialect_dl = dialect_named(DEFAULT_DIALECT);
  if (argc < 2) {
    fprintf(stderr, "usage: emit-golden GOLDEN_DIR [OUT_DIR] [--wir DIR] [--dialect NAME] | --print FILE.wir\n");
    return 2;
  }
  if (strcmp(argv[1], "--print") == 0 && argc == 3)
    return print_one(argv[2]);
  const char *gold = argv[1], *outdir = ".", *wirdir = NULL, *gemmdir = NULL;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--wir") == 0 && i + 1 < argc)
      wirdir = argv[++i];
    else if (strcmp(argv[i], "--gemm-wir") == 0 && i + 1 < argc)
      gemmdir = argv[++i];
    else if (strcmp(argv[i], "--dialect") == 0 && i + 1 < argc && dialect_named(argv[i + 1]))
      dialect_dl = dialect_named(argv[++i]);
    else if (argv[i][0] != '-')
      outdir = argv[i];
    else {
      fprintf(stderr, "emit-golden: bad argument %s\n", argv[i]);
      return 2;
    }
  }
  bool update = getenv("COIL_UPDATE_GOLDEN") != NULL;
  char path[8192], wir[4096];
  snprintf(wir, sizeof wir, "%s", wirdir ? wirdir : "");
  if (!wirdir)
    snprintf(wir, sizeof wir, "%s/wir", gold);
  snprintf(path, sizeof path, "%s", wir);
  struct dirent **ents;
  int nfiles = scandir(path, &ents, wir_file, alphasort);
  if (nfiles <= 0) {
    fprintf(stderr, "%s: no .wir files\n", path);
    return 1;
  }
  int failed = 0, full = 0, gemms = 0;
  size_t full_bytes = 0, all_bytes = 0;
  coil_strbuf hashes = {0};
  for (int f = 0; f < nfiles; f++) {
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(ents[f]->d_name) - 4), ents[f]->d_name);
    snprintf(path, sizeof path, "%s/%s", wir, ents[f]->d_name);
    coil_wir_program *p = read_program(path);
    free(ents[f]);
    if (!p) {
      failed++;
      continue;
    }
    coil_strbuf cu = {0};
    coil_gpu_program_source(dialect_dl, p, NULL, &cu);
    const char *got = cu.s ? cu.s : "";
    all_bytes += strlen(got);
    hash_lines(name, p, got, &hashes);
    snprintf(path, sizeof path, "%s/kernels/%s" GOLDEN_EXT, gold, name);
    char *want = slurp(path, NULL);
    if (want && update) {
      failed += write_text(path, got);
    } else if (want && strcmp(want, got) != 0) {
      char out[4096];
      snprintf(out, sizeof out, "%s/%s" GOLDEN_EXT, outdir, name);
      write_text(out, got);
      fprintf(stderr, "FAIL %s: kernels.cu differs from %s from line %d (new text in %s)\n", name, path,
              first_diff_line(want, got), out);
      failed++;
    }
    if (want) {
      full++;
      full_bytes += strlen(got);
    }
    free(want);
#ifndef GOLDEN_HIP
    failed += check_gemm(gold, outdir, name, p, update, &gemms);
#endif
    coil_strbuf_free(&cu);
    coil_wir_free(p);
  }
  free(ents);
  snprintf(path, sizeof path, "%s/hashes.txt", gold);
  const char *got = hashes.s ? hashes.s : "";
  char *want = slurp(path, NULL);
  if (update) {
    failed += write_text(path, got);
  } else if (!want) {
    fprintf(stderr, "FAIL %s missing (run with COIL_UPDATE_GOLDEN=1 once)\n", path);
    failed++;
  } else if (strcmp(want, got) != 0) {
    char out[4096];
    snprintf(out, sizeof out, "%s/hashes.txt", outdir);
    write_text(out, got);
    fprintf(stderr, "FAIL hashes differ from %s from line %d (new hashes in %s):\n", path, first_diff_line(want, got), out);
    const char *w = want, *g = got;
    while (*w || *g) { /* the lines that differ */
      size_t wn = strcspn(w, "\n"), gn = strcspn(g, "\n");
      if (wn != gn || strncmp(w, g, wn) != 0)
        fprintf(stderr, "  want %.*s\n  got  %.*s\n", (int)wn, w, (int)gn, g);
      w += wn + (w[wn] == '\n');
      g += gn + (g[gn] == '\n');
    }
    failed++;
  }
  free(want);
  coil_strbuf_free(&hashes);
#ifndef GOLDEN_HIP
  int ng = gemmdir ? scandir(gemmdir, &ents, wir_file, alphasort) : 0;
  for (int f = 0; f < ng; f++) {
    char name[300];
    snprintf(name, sizeof name, "gemm~%.*s", (int)(strlen(ents[f]->d_name) - 4), ents[f]->d_name);
    snprintf(path, sizeof path, "%s/%s", gemmdir, ents[f]->d_name);
    coil_wir_program *p = read_program(path);
    free(ents[f]);
    failed += p ? check_gemm(gold, outdir, name, p, update, &gemms) : 1;
    coil_wir_free(p);
  }
  if (ng > 0)
    free(ents);
#else
  (void)gemmdir;
#endif
  printf("%d programs (%zu bytes of kernels.cu; %d compared byte for byte, %zu bytes), each's kernels.cu, per-kernel "
         "sources, plans and autotune candidates hashed, %d programs' generated GEMMs compared%s: %d failed\n",
         nfiles, all_bytes, full, full_bytes, gemms, update ? " (updated)" : "", failed);
  return failed ? 1 : 0;
}
