/* gpu_dialect_toy.c — sdk_gpu_dialect_toy: a made-up vendor's CUDA-like language ("Vela", 64-lane
 * wavefronts) written as a coil_gpu_dialect, the example of docs/plugin-guide.md ("A CUDA-like
 * language: write a dialect"). It emits a softmax (a persistent reduction with the dialect's
 * shuffles) and a sin (its math name) and checks that the source spells what the dialect says,
 * with the 64-lane warp's numbers, and none of CUDA's spellings. It also checks that the
 * dialect between the [doc] markers below appears verbatim in the guide, so the guide's example
 * compiles as long as this test does.
 * Usage: sdk-gpu-dialect-toy THIS_FILE PLUGIN_GUIDE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu.h"

/* [doc] */
static const char *
vela_math(coil_kop op, coil_dtype t)
{
  if (op == COIL_KOP_SIN)
    return t == COIL_F64 ? "vela_sin" : "vela_sinf";
  return NULL; /* the others: libm's names, which Vela's device library provides */
}

static const coil_gpu_dialect vela_dialect = {
    .name = "vela",
    .compiler = "velac",
    .warp_size = 64, /* a wavefront */
    .vector_bytes = 16,
    .kernel_decl = "extern \"C\" VELA_KERNEL",
    .launch_bounds = "VELA_MAX_THREADS(%u)",
    .restrict_kw = "VELA_NOALIAS",
    .thread_idx = "vela_lane_id()",
    .block_idx = "vela_group_id()",
    .block_dim = "vela_group_size()",
    .grid_dim = "vela_group_count()",
    .barrier = "vela_barrier()",
    .warp_barrier = "vela_wave_barrier()",
    .shared = "VELA_GROUP_LOCAL",
    .align = "VELA_ALIGN",
    .device = "VELA_DEVICE",
    .forceinline = "VELA_INLINE",
    .shfl_down = "vela_shuffle_down(",
    .shfl_up = "vela_shuffle_up(",
    .shfl_idx = "vela_shuffle(",
    .oob_first = "vela_atomic_cas64(coil_oob, 0, 1) == 0",
    .head = "#include <vela/runtime.h>\n#include <stdint.h>\n#include <math.h>\n",
    .half = "static VELA_DEVICE float coil_h2f(uint16_t h) { return vela_half_to_float(h); }\n"
            "static VELA_DEVICE uint16_t coil_f2h(float f) { return vela_float_to_half_rne(f); }\n"
            "static VELA_DEVICE float coil_b2f(uint16_t h) { return vela_bf16_to_float(h); }\n"
            "static VELA_DEVICE uint16_t coil_f2b(float f) { return vela_float_to_bf16_rne(f); }\n",
    .helpers = "",
    .c = {vela_math},
};
/* [/doc] */

static const char program[] = /* softmax over rows of 1024, then sin: a persistent kernel */
    "wir 1.4\n"
    "program toy\n"
    "input arg0 'x': f32[64, 1024] stride [1024, 1]\n"
    "\n"
    "kernel k0 persistent x[64] r[1024] {\n"
    "  param in0: f32\n"
    "  param out0: f32 out\n"
    "  %0: f32 = load in0[r0 + 1024*x0]\n"
    "  %1: f32 = reduce max %0\n"
    "  %2: f32 = sub %0, %1\n"
    "  %3: f32 = exp %2\n"
    "  %4: f32 = reduce sum %3\n"
    "  %5: f32 = div %3, %4\n"
    "  %6: f32 = sin %5\n"
    "  store out0[r0 + 1024*x0], %6\n"
    "}\n"
    "\n"
    "alloc buf0: f32[64, 1024] stride [1024, 1]\n"
    "kernel_call k0(arg0, buf0)\n"
    "output buf0\n";

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *
slurp(const char *path, size_t *len)
{
  return coil_sdk_read_file(path, (size_t)1 << 30, len);
}

int
main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: sdk-gpu-dialect-toy THIS_FILE PLUGIN_GUIDE\n");
    return 2;
  }
  int failed = 0;
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse("toy.wir", program, strlen(program), &d);
  if (!p) {
    fprintf(stderr, "FAIL: the toy program does not parse: %s\n", d.msg);
    return 1;
  }
  coil_strbuf src = {0};
  coil_gpu_program_source(&vela_dialect, p, NULL, &src);
  static const char *const want[] = {
      "extern \"C\" VELA_KERNEL void VELA_MAX_THREADS(", "VELA_NOALIAS in0", "vela_lane_id()", "vela_group_id()",
      "vela_group_count()", "vela_barrier()", "vela_wave_barrier()", "VELA_GROUP_LOCAL VELA_ALIGN(16)",
      "vela_shuffle_down(v, o)", "vela_shuffle_up(v, o)", "vela_shuffle(v, i)", "vela_sinf(",
      "#include <vela/runtime.h>", "vela_half_to_float", "compiled by velac",
      "for (int o = 32; o > 0; o >>= 1)",             /* the shuffle tree over 64 lanes */
      "& 63", ">> 6"};
  static const char *const never[] = {"threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp",
                                      "__shfl", "__global__", "__launch_bounds__", "__restrict__", "__shared__",
                                      "__align__", "__device__", "__forceinline__", "0xffffffffu", "& 31", ">> 5"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    if (!strstr(src.s, want[i])) {
      fprintf(stderr, "FAIL: the source lacks '%s'\n", want[i]);
      failed++;
    }
  for (size_t i = 0; i < sizeof never / sizeof *never; i++)
    if (strstr(src.s, never[i])) {
      fprintf(stderr, "FAIL: the source has CUDA's '%s'\n", never[i]);
      failed++;
    }
  /* the plan follows the wavefront: whatever it is, its block is a whole number of them */
  coil_gpu_plan pl;
  coil_gpu_plan_kernel(&vela_dialect, p, &p->kernels[0], &pl);
  if (pl.kind != COIL_GPU_PERSISTENT || pl.threads % 64 != 0) {
    fprintf(stderr, "FAIL: plan kind %d with %u threads (want a persistent one of whole wavefronts)\n", pl.kind,
            pl.threads);
    failed++;
  }
  /* the guide shows this file's dialect as it is */
  char *self = slurp(argv[1], NULL), *guide = slurp(argv[2], NULL);
  const char *a = self ? strstr(self, "/* [doc] */\n") : NULL, *b = self ? strstr(self, "/* [/doc] */") : NULL;
  if (!a || !b || !guide) {
    fprintf(stderr, "FAIL: cannot read %s or %s, or no [doc] markers\n", argv[1], argv[2]);
    failed++;
  } else {
    a += strlen("/* [doc] */\n");
    char *block = strndup(a, (size_t)(b - a));
    if (!strstr(guide, block)) {
      fprintf(stderr, "FAIL: %s does not show the dialect of %s verbatim\n", argv[2], argv[1]);
      failed++;
    }
    free(block);
  }
  free(self);
  free(guide);
  if (failed)
    fprintf(stderr, "the source:\n%s\n", src.s);
  coil_strbuf_free(&src);
  coil_wir_free(p);
  printf("toy dialect: %d failed\n", failed);
  return failed ? 1 : 0;
}
