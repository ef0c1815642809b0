/* attention_compile.c — cuda-attention-compile: the cuda plugin (loaded from PLUGIN, through its
 * ABI, as a host loads it) compiles Wrapper IR programs with coil.attention lines for ARCH into
 * OUT/NAME/, and each artifact's attention.txt must name the kernels expected: the SIMT kernel
 * of the line's dtype always, the tensor-core kernel where the program allows it (f16 or bf16,
 * E = Ev in {32, 64, 128}, unit last strides, sm_80 or later, attention_kernel = auto; on sm_90 the
 * wgmma kernel for head dims 64 and 128, unless attention_kernel = mma or a tile is set) and not
 * where it does not; and lines with a bad parameter are refused with a message naming it (by the
 * Wrapper IR verifier or the plugin), never a crash, as is a bad attention_kernel option.
 * tests/attention_sass.sh then checks the cubins' machine code. No GPU needed (NVRTC alone).
 *   usage: cuda-attention-compile PLUGIN ARCH OUT   (exit 77: no NVRTC) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coil/coil_plugin.h"

typedef struct {
  const char *name;
  const char *text;      /* the program */
  const char *options;   /* "key=value" or NULL */
  const char *expect[4]; /* substrings attention.txt must hold */
  const char *refuse;    /* the compile must fail saying this; NULL: it must succeed */
} prog;

static const prog progs[] = {
    {"bench_f16_d64",
     "wir 1.4\nprogram bench_f16_d64\n"
     "input arg0 'q': f16[8, 16, 1024, 64] stride [1048576, 65536, 64, 1]\n"
     "input arg1 'k': f16[8, 16, 1024, 64] stride [1048576, 65536, 64, 1]\n"
     "input arg2 'v': f16[8, 16, 1024, 64] stride [1048576, 65536, 64, 1]\n"
     "alloc buf0: f16[8, 16, 1024, 64] stride [1048576, 65536, 64, 1]\n"
     "extern_call coil.attention(arg0, arg1, arg2) -> (buf0) [scale=0.125, masked_rows='zero']\n"
     "output buf0\n",
     NULL,
     {"kernel 0 simt f16", "kernel 1 tc f16 0 64 ", "line 1 0 1"},
     NULL},
    {"bf16_d128_mask",
     "wir 1.4\nprogram bf16_d128_mask\n"
     "input arg0 'q': bf16[2, 8, 256, 128] stride [262144, 32768, 128, 1]\n"
     "input arg1 'k': bf16[2, 8, 300, 128] stride [307200, 38400, 128, 1]\n"
     "input arg2 'v': bf16[2, 8, 300, 128] stride [307200, 38400, 128, 1]\n"
     "input arg3 'm': bf16[1, 1, 256, 300] stride [76800, 76800, 300, 1]\n"
     "alloc buf0: bf16[2, 8, 256, 128] stride [262144, 32768, 128, 1]\n"
     "extern_call coil.attention(arg0, arg1, arg2, arg3) -> (buf0) [scale=0.08838834764831845, masked_rows='nan']\n"
     "output buf0\n",
     NULL,
     {"kernel 0 simt bf16", "kernel 1 tc bf16 1 128 ", "line 1 0 1"},
     NULL},
    {"f16_d64_padding_mask",
     "wir 1.4\nprogram f16_d64_padding_mask\n"
     "input arg0 'q': f16[4, 12, 200, 64] stride [153600, 12800, 64, 1]\n"
     "input arg1 'm': f16[4, 1, 1, 200] stride [200, 200, 200, 1]\n"
     "alloc buf0: f16[4, 12, 200, 64] stride [153600, 12800, 64, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0, arg1) -> (buf0) [scale=0.125, masked_rows='zero']\n"
     "output buf0\n",
     NULL,
     {"kernel 1 tc f16 1 64 ", "line 1 0 1"},
     NULL},
    {"bf16_d128",
     "wir 1.4\nprogram bf16_d128\n"
     "input arg0 'q': bf16[16, 512, 128] stride [65536, 128, 1]\n"
     "alloc buf0: bf16[16, 512, 128] stride [65536, 128, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.08838834764831845, masked_rows='nan']\n"
     "output buf0\n",
     NULL,
     {"kernel 1 tc bf16 0 128 ", "line 1 0 1"},
     NULL},
    {"bf16_d32_mask",
     "wir 1.4\nprogram bf16_d32_mask\n"
     "input arg0 'q': bf16[16, 100, 32] stride [3200, 32, 1]\n"
     "input arg1 'm': bf16[16, 100, 100] stride [10000, 100, 1]\n"
     "alloc buf0: bf16[16, 100, 32] stride [3200, 32, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0, arg1) -> (buf0) [scale=0.17677669529663687, masked_rows='nan']\n"
     "output buf0\n",
     NULL,
     {"kernel 1 tc bf16 1 32 ", "line 1 0 1"},
     NULL},
    {"f16_d32_permuted", /* q a [B, H, L, E] view of [B, L, H, E]; two lines sharing kernels */
     "wir 1.4\nprogram f16_d32_permuted\n"
     "input arg0 'x': f16[4, 77, 6, 32] stride [14784, 192, 32, 1]\n"
     "input arg1 'k': f16[4, 6, 77, 32] stride [14784, 2464, 32, 1]\n"
     "view v0 = arg0: f16[4, 6, 77, 32] stride [14784, 32, 192, 1] offset 0\n"
     "alloc buf0: f16[4, 6, 77, 32] stride [14784, 2464, 32, 1]\n"
     "extern_call coil.attention(v0, arg1, arg1) -> (buf0) [scale=0.17677669529663687, masked_rows='zero']\n"
     "alloc buf1: f16[4, 6, 77, 32] stride [14784, 2464, 32, 1]\n"
     "extern_call coil.attention(buf0, arg1, v0) -> (buf1) [scale=0.17677669529663687, masked_rows='zero']\n"
     "output buf1\n",
     NULL,
     {"kernel 1 tc f16 0 32 ", "line 2 0 1", "line 4 0 1"},
     NULL},
    {"f16_d64_simt_option",
     "wir 1.4\nprogram f16_d64_simt_option\n"
     "input arg0 'q': f16[2, 64, 64] stride [4096, 64, 1]\n"
     "alloc buf0: f16[2, 64, 64] stride [4096, 64, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.125, masked_rows='nan']\n"
     "output buf0\n",
     "attention_kernel=simt",
     {"kernel 0 simt f16", "line 1 0 -1"},
     NULL},
    {"f16_d64_mma_option", /* the mma.sync kernel on sm_90 too */
     "wir 1.4\nprogram f16_d64_mma_option\n"
     "input arg0 'q': f16[2, 64, 64] stride [4096, 64, 1]\n"
     "alloc buf0: f16[2, 64, 64] stride [4096, 64, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.125, masked_rows='nan']\n"
     "output buf0\n",
     "attention_kernel=mma",
     {"kernel 0 simt f16", "kernel 1 tc f16 0 64 ", "line 1 0 1"},
     NULL},
    {"f16_d64_tile_option",
     "wir 1.4\nprogram f16_d64_tile_option\n"
     "input arg0 'q': f16[2, 64, 64] stride [4096, 64, 1]\n"
     "alloc buf0: f16[2, 64, 64] stride [4096, 64, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.125, masked_rows='nan']\n"
     "output buf0\n",
     "attention_tile=64x64x1x2x3",
     {"kernel 1 tc f16 0 64 64 64 1 2 3", "line 1 0 1"},
     NULL},
    {"f32_symbolic", /* sizes known at run time only: SIMT */
     "wir 1.4\nprogram f32_symbolic\n"
     "input arg0 'q': f32[s0, s1, 40] stride [40*s1, 40, 1]\n"
     "symbol s0 = arg0.size(0)\nsymbol s1 = arg0.size(1)\n"
     "alloc buf0: f32[s0, s1, 40] stride [40*s1, 40, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.5, masked_rows='nan']\n"
     "output buf0\n",
     NULL,
     {"kernel 0 simt f32", "line 3 0 -1"},
     NULL},
    {"f64_rank3",
     "wir 1.4\nprogram f64_rank3\n"
     "input arg0 'q': f64[3, 10, 8] stride [80, 8, 1]\n"
     "input arg1 'v': f64[3, 10, 5] stride [50, 5, 1]\n"
     "alloc buf0: f64[3, 10, 5] stride [50, 5, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg1) -> (buf0) [scale=1.0, masked_rows='zero']\n"
     "output buf0\n",
     NULL,
     {"kernel 0 simt f64", "line 1 0 -1"},
     NULL},
    {"f16_d64_kt", /* k with a strided last dim: SIMT */
     "wir 1.4\nprogram f16_d64_kt\n"
     "input arg0 'q': f16[2, 64, 64] stride [4096, 64, 1]\n"
     "view v0 = arg0: f16[2, 64, 64] stride [4096, 1, 64] offset 0\n"
     "alloc buf0: f16[2, 64, 64] stride [4096, 64, 1]\n"
     "extern_call coil.attention(arg0, v0, arg0) -> (buf0) [scale=0.125, masked_rows='zero']\n"
     "output buf0\n",
     NULL,
     {"kernel 0 simt f16", "line 2 0 -1"},
     NULL},
    {"bad_masked_rows",
     "wir 1.4\nprogram bad_masked_rows\n"
     "input arg0 'q': f32[2, 4, 4] stride [16, 4, 1]\n"
     "alloc buf0: f32[2, 4, 4] stride [16, 4, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=1.0, masked_rows='maybe']\n"
     "output buf0\n",
     NULL,
     {NULL},
     "masked_rows"},
    {"bad_param",
     "wir 1.4\nprogram bad_param\n"
     "input arg0 'q': f32[2, 4, 4] stride [16, 4, 1]\n"
     "alloc buf0: f32[2, 4, 4] stride [16, 4, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=1.0, is_causal=True]\n"
     "output buf0\n",
     NULL,
     {NULL},
     "is_causal"},
    {"bad_kernel_option", /* refused when the plugin is created */
     "wir 1.4\nprogram bad_kernel_option\n"
     "input arg0 'q': f16[2, 64, 64] stride [4096, 64, 1]\n"
     "alloc buf0: f16[2, 64, 64] stride [4096, 64, 1]\n"
     "extern_call coil.attention(arg0, arg0, arg0) -> (buf0) [scale=0.125, masked_rows='nan']\n"
     "output buf0\n",
     "attention_kernel=wgmma",
     {NULL},
     "expected auto, mma or simt, got 'wgmma'"},
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

int
main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: cuda-attention-compile PLUGIN ARCH OUT\n");
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
  int fails = 0;
  const bool wgmma = strcmp(argv[2], "sm_90") == 0 || strcmp(argv[2], "sm_90a") == 0;
  for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
    const prog *pg = &progs[i];
    const char *keys[2] = {"arch", NULL}, *values[2] = {argv[2], NULL};
    char key[64] = "", value[64] = "";
    size_t nopt = 1;
    if (pg->options) {
      const char *eq = strchr(pg->options, '=');
      snprintf(key, sizeof key, "%.*s", (int)(eq - pg->options), pg->options);
      snprintf(value, sizeof value, "%s", eq + 1);
      keys[1] = key, values[1] = value, nopt = 2;
    }
    coil_plugin_options opts = {.struct_size = sizeof opts, .count = nopt, .keys = keys, .values = values};
    coil_plugin_create_args ca = {.struct_size = sizeof ca, .options = &opts};
    coil_plugin *self = NULL;
    coil_error *e = api->create(&ca, &self);
    if (e) {
      if (pg->refuse && strstr(api->error_message(e), pg->refuse))
        printf("ok   %-22s refused at create: %s\n", pg->name, api->error_message(e));
      else {
        printf("FAIL %s: create: %s\n", pg->name, api->error_message(e));
        fails++;
      }
      api->error_free(e);
      continue;
    }
    if (api->supports(self, "coil.attention", COIL_F16) != COIL_SUPPORTED) {
      if (strstr(api->name, "cuda") && api->supports(self, "relu", COIL_F32) != COIL_SUPPORTED) {
        printf("SKIP: the cuda plugin finds no NVRTC\n");
        api->destroy(self);
        return 77;
      }
      printf("FAIL %s: coil.attention on f16 is not claimed\n", pg->name);
      fails++;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", argv[3], pg->name);
    mkdir(argv[3], 0755);
    mkdir(dir, 0755);
    coil_plugin_compile_args args = {.struct_size = sizeof args, .artifact_dir = dir, .program_text = pg->text,
                                     .program_text_len = strlen(pg->text)};
    e = api->compile(self, &args);
    if (pg->refuse) {
      if (!e || !strstr(api->error_message(e), pg->refuse)) {
        printf("FAIL %s: expected a refusal saying '%s', got %s\n", pg->name, pg->refuse, e ? api->error_message(e) : "success");
        fails++;
      } else
        printf("ok   %-22s refused: %s\n", pg->name, api->error_message(e));
    } else if (e) {
      printf("FAIL %s: %s\n", pg->name, api->error_message(e));
      fails++;
    } else {
      char path[4200];
      snprintf(path, sizeof path, "%s/attention.txt", dir);
      char *plan = slurp(path);
      bool ok = plan != NULL;
      for (int k = 0; ok && k < 4 && pg->expect[k]; k++) {
        /* " tc " of head dims 64 and 128 is " wg " on sm_90 (attn_wg) unless the options say mma */
        char want[128];
        snprintf(want, sizeof want, "%s", pg->expect[k]);
        char *tc = strstr(want, " tc ");
        if (tc && wgmma && !pg->options && (strstr(want, " 64 ") || strstr(want, " 128 ")))
          memcpy(tc, " wg ", 4);
        if (!strstr(plan, want)) {
          printf("FAIL %s: attention.txt lacks '%s':\n%s", pg->name, want, plan);
          ok = false;
        }
      }
      if (!plan)
        printf("FAIL %s: no attention.txt\n", pg->name);
      fails += !ok;
      if (ok)
        printf("ok   %-22s %s\n", pg->name, argv[2]);
      free(plan);
    }
    if (e)
      api->error_free(e);
    api->destroy(self);
  }
  printf("%d failures\n", fails);
  return fails ? 1 : 0;
}
