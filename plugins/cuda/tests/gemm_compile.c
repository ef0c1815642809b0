/* gemm_compile.c — cuda-gemm-compile: the cuda plugin (loaded from PLUGIN through its ABI, as a
 * host loads it) compiles the Wrapper IR programs of tests/gemm/ with each setting of option gemm
 * into OUT/CASE/, and each artifact's gemm.txt must plan the generated GEMMs expected: under
 * `auto` only where the cost rule takes the line (sm_90, f16 or bf16, A row-major, B row-major or
 * transposed as x @ w.t() passes it, a folded kernel that cuBLASLt's epilogues cannot do, >= 264
 * tiles of 128 x 256, K >= 1024), under `generated` every line the checks pass (plain where
 * nothing folds), under `library` none; and every planned
 * kernel's cubin must be there (NVRTC compiled the generated text for sm_90a). A bad gemm value
 * is refused with a message. tests/gemm_sass.sh then checks the cubins' machine code. No GPU
 * needed (NVRTC alone).
 *   usage: cuda-gemm-compile PLUGIN WIR_DIR OUT   (exit 77: no NVRTC) */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coil/coil_plugin.h"

typedef struct {
  const char *name;
  const char *wir;       /* tests/gemm/WIR.wir */
  const char *arch;
  const char *gemm;      /* the option's value, or NULL: left out (auto) */
  const char *expect[4]; /* lines gemm.txt must hold; expect[0] NULL: there must be no gemm.txt */
  const char *reject;    /* a line it must not hold, or NULL */
  const char *refuse;    /* create or compile must fail saying this */
} gcase;

static const gcase cases[] = {
    /* the benchmark's gelu(x @ w1) @ w2 at 4096^3: the first mm takes the gelu; the second has no
     * kernel after it, so cuBLASLt keeps it under auto */
    {"mlp_auto", "mlp", "sm_90", NULL, {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 16", "line 14 0"}, "line 19", NULL},
    {"mlp_generated", "mlp", "sm_90", "generated",
     {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 16", "kernel 1 coil_gemm_wg_f16 -1", "line 14 0", "line 19 1"}, NULL, NULL},
    {"mlp_library", "mlp", "sm_90", "library", {NULL}, NULL, NULL},
    {"mlp_sm80", "mlp", "sm_80", "generated", {NULL}, NULL, NULL},
    {"mlp_sm90a", "mlp", "sm_90a", NULL, {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 16"}, NULL, NULL},
    /* bias (x1), a per-row scale (x0) and a residual around a tanh, 300 x 264 x 520: below the
     * rule's tile count; generated folds all three loads */
    {"epi_auto", "epi", "sm_90", "auto", {NULL}, NULL, NULL},
    {"epi_generated", "epi", "sm_90", "generated", {"kernel 0 coil_gemm_wg_poi_fused_add_tanh_mul_0 21", "line 19 0"}, NULL,
     NULL},
    /* relu(x @ w + b): cuBLASLt's RELU_BIAS does it, so auto leaves it */
    {"relu_bias_auto", "relu_bias", "sm_90", NULL, {NULL}, NULL, NULL},
    {"relu_bias_generated", "relu_bias", "sm_90", "generated", {"kernel 0 coil_gemm_wg_poi_fused_add_relu_0 14"}, NULL,
     NULL},
    /* a reduction after the mm is no epilogue: the plain GEMM under generated, nothing under auto */
    {"mm_sum_auto", "mm_sum", "sm_90", NULL, {NULL}, NULL, NULL},
    {"mm_sum_generated", "mm_sum", "sm_90", "generated", {"kernel 0 coil_gemm_wg_f16 -1", "line 10 0"}, NULL, NULL},
    /* gelu(x @ w.t()) at 4096 x 4096 x 1024, w [N, K] row-major (an nn.Linear weight): the bt
     * variant (B K-major), under auto (512 tiles, K 1024) too */
    {"wt_auto", "wt", "sm_90", NULL, {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 13 bt", "line 11 0"}, NULL, NULL},
    {"wt_generated", "wt", "sm_90", "generated", {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 13 bt", "line 11 0"}, NULL, NULL},
    /* the MLP in bf16: the gelu folded under auto, the second mm the plain bf16 kernel under
     * generated */
    {"bf16_auto", "bf16", "sm_90", NULL, {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 16 bf16", "line 14 0"}, "line 19", NULL},
    {"bf16_generated", "bf16", "sm_90", "generated",
     {"kernel 0 coil_gemm_wg_poi_fused_gelu_0 16 bf16", "kernel 1 coil_gemm_wg_bf16 -1 bf16", "line 14 0", "line 19 1"}, NULL,
     NULL},
    /* addmm(b, x, w.t()) in bf16: both variants at once; cuBLASLt's BIAS epilogue does it, so auto
     * leaves it */
    {"wt_bias_auto", "wt_bias", "sm_90", NULL, {NULL}, NULL, NULL},
    {"wt_bias_generated", "wt_bias", "sm_90", "generated", {"kernel 0 coil_gemm_wg_poi_fused_addmm_0 15 bf16 bt", "line 13 0"},
     NULL, NULL},
    /* not f16 or bf16; K % 8 != 0: the checks refuse them */
    {"f32_generated", "f32", "sm_90", "generated", {NULL}, NULL, NULL},
    {"k4100_generated", "k4100", "sm_90", "generated", {NULL}, NULL, NULL},
    {"bad_option", "mlp", "sm_90", "fast", {NULL}, NULL, "expected auto, library or generated, got 'fast'"},
};

static char *
slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *s = calloc(1, 1 << 20);
  size_t n = s ? fread(s, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (s)
    s[n] = 0;
  return s;
}

/* Whether text holds want as a whole line. */
static bool
has_line(const char *text, const char *want)
{
  size_t n = strlen(want);
  for (const char *s = text; (s = strstr(s, want)); s++)
    if ((s == text || s[-1] == '\n') && (s[n] == '\n' || s[n] == 0))
      return true;
  return false;
}

/* Every "kernel I ..." line of plan has its gI.cubin in dir. */
static bool
cubins_there(const char *plan, const char *dir, const char *name)
{
  for (const char *s = plan; (s = strstr(s, "\nkernel ")); s++) {
    int i;
    if (sscanf(s + 1, "kernel %d", &i) != 1)
      return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/g%d.cubin", dir, i);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size < 1024) {
      printf("FAIL %s: %s missing or empty\n", name, path);
      return false;
    }
  }
  return true;
}

int
main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: cuda-gemm-compile PLUGIN WIR_DIR OUT\n");
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  coil_plugin_entry_fn *entry = h ? (coil_plugin_entry_fn *)dlsym(h, "coil_plugin_entry") : NULL;
  const char *why = NULL;
  const coil_plugin_api *api = entry ? entry(COIL_PLUGIN_ABI_MAJOR, COIL_PLUGIN_ABI_MINOR, NULL, &why) : NULL;
  if (!api) {
    fprintf(stderr, "FAIL: cannot load %s: %s\n", argv[1], h ? (why ? why : "no entry") : dlerror());
    return 1;
  }
  mkdir(argv[3], 0755);
  int fails = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i];
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.wir", argv[2], c->wir);
    char *text = slurp(path);
    if (!text) {
      printf("FAIL %s: cannot read %s\n", c->name, path);
      fails++;
      continue;
    }
    const char *keys[2] = {"arch", "gemm"}, *values[2] = {c->arch, c->gemm};
    coil_plugin_options opts = {.struct_size = sizeof opts, .count = c->gemm ? 2 : 1, .keys = keys, .values = values};
    coil_plugin_create_args ca = {.struct_size = sizeof ca, .options = &opts};
    coil_plugin *self = NULL;
    coil_error *e = api->create(&ca, &self);
    if (e) {
      if (c->refuse && strstr(api->error_message(e), c->refuse))
        printf("ok   %-20s refused at create: %s\n", c->name, api->error_message(e));
      else {
        printf("FAIL %s: create: %s\n", c->name, api->error_message(e));
        fails++;
      }
      api->error_free(e);
      free(text);
      continue;
    }
    if (api->supports(self, "relu", COIL_F32) != COIL_SUPPORTED) {
      printf("SKIP: the cuda plugin finds no NVRTC\n");
      api->destroy(self);
      free(text);
      return 77;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", argv[3], c->name);
    mkdir(dir, 0755);
    coil_plugin_compile_args args = {.struct_size = sizeof args, .artifact_dir = dir, .program_text = text,
                                     .program_text_len = strlen(text)};
    e = api->compile(self, &args);
    free(text);
    if (c->refuse) {
      printf("%s %s: expected a refusal saying '%s', got %s\n", e && strstr(api->error_message(e), c->refuse) ? "ok  " : "FAIL",
             c->name, c->refuse, e ? api->error_message(e) : "success");
      fails += !(e && strstr(api->error_message(e), c->refuse));
    } else if (e) {
      printf("FAIL %s: %s\n", c->name, api->error_message(e));
      fails++;
    } else {
      snprintf(path, sizeof path, "%s/gemm.txt", dir);
      char *plan = slurp(path);
      bool ok = true;
      if (!c->expect[0] && plan) {
        printf("FAIL %s: a generated GEMM was planned where none should be:\n%s", c->name, plan);
        ok = false;
      }
      if (c->expect[0] && !plan) {
        printf("FAIL %s: no gemm.txt\n", c->name);
        ok = false;
      }
      for (int k = 0; ok && k < 4 && c->expect[k]; k++)
        if (!has_line(plan, c->expect[k])) {
          printf("FAIL %s: gemm.txt lacks '%s':\n%s", c->name, c->expect[k], plan);
          ok = false;
        }
      if (ok && plan && c->reject && strstr(plan, c->reject)) {
        printf("FAIL %s: gemm.txt holds '%s':\n%s", c->name, c->reject, plan);
        ok = false;
      }
      ok = ok && (!plan || cubins_there(plan, dir, c->name));
      fails += !ok;
      if (ok)
        printf("ok   %-20s %s, gemm = %s: %s\n", c->name, c->arch, c->gemm ? c->gemm : "(auto)",
               plan ? "the generated GEMMs planned and compiled" : "no generated GEMM, as expected");
      free(plan);
    }
    if (e)
      api->error_free(e);
    api->destroy(self);
  }
  printf("%d failures\n", fails);
  return fails ? 1 : 0;
}
