/* cuda_tune.c — max-autotune for cuda: coil-sdk's tuner (coil/coil_gpu_tune.h) with NVRTC for the
 * candidates and coil-cuda-tune (tune_main.c), installed beside libcoil_cuda.so, to time them.
 * The fastest plan is compiled into the artifact and recorded in plans.txt (with every time in
 * tuning.log), so the compile cache keeps the winner with the cubins.
 *
 * The generated GEMM against cuBLAS(Lt) (cuda_tune_gemm) is timed as whole programs, not as
 * kernels: what a fold saves (the epilogue kernel's launch and its round trip through memory)
 * is outside the GEMM kernel. Candidate 0 is the program with every mm line on the library,
 * candidate i the same with only line i generated; each is a complete artifact (cuda_build,
 * default launch plans) in a temporary directory, which the worker loads through this plugin's
 * own table and times on random inputs. A line is generated when its candidate is at least 1 %
 * faster than candidate 0 (below that the two are within run-to-run noise). */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coil/coil_gpu_tune.h"
#include "cuda.h"

#define MAX_GEMM_LINES 15 /* lines timed one by one; more keep the cost rule */

static coil_error *
compile(void *user, const char *src, const char *what, const char *dir, const char *path)
{
  return cuda_nvrtc_compile(src, user, what, dir, path);
}

void
cuda_tune_kernel(const coil_wir_program *p, int k, const char *arch, coil_gpu_plan *best, coil_strbuf *log)
{
  char worker[4096];
  bool there = coil_gpu_tune_worker_beside((const void *)cuda_tune_kernel, "coil-cuda-tune", worker, sizeof worker);
  coil_gpu_tuner t = {.name = "cuda", .worker = there ? worker : NULL, .compile = compile, .user = (void *)arch};
  coil_gpu_tune_kernel(&cuda_dialect, p, k, &t, best, log);
}

/* ---- the generated GEMM against the library ---- */

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* One tensor line of the spec: in|out DTYPE RANK SIZES... STRIDES...; false when a size or
 * stride is not constant. */
static bool
spec_tensor(coil_strbuf *t, const char *role, const coil_buffer *b)
{
  coil_strbuf_printf(t, "%s %d %d", role, (int)b->dtype, b->rank);
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < b->rank; d++) {
      int64_t v;
      if (!coil_sym_is_const(pass ? b->strides[d] : b->sizes[d], &v))
        return false;
      coil_strbuf_printf(t, " %lld", (long long)v);
    }
  coil_strbuf_puts(t, "\n");
  return true;
}

void
cuda_tune_gemm(coil_plugin *self, const coil_wir_program *p, const cuda_options *opt, signed char **force,
               coil_strbuf *log)
{
  *force = NULL;
  cuda_gemm_choice *ch = malloc(sizeof *ch * MAX_GEMM_LINES);
  int n = ch ? cuda_gemm_choices(p, opt->arch, ch, MAX_GEMM_LINES) : 0;
  if (!n) {
    free(ch);
    return;
  }
  coil_strbuf_printf(log, "generated GEMMs: %d mm line%s the generated GEMM can take, each timed against the library "
                          "as the whole program:\n", n, n == 1 ? "" : "s");
  char worker[4096];
  Dl_info so;
  if (!cuda_driver_present()) { /* no candidate could be timed: none is compiled */
    coil_strbuf_puts(log, "  the cost rule decides: no CUDA driver on this machine\n");
    free(ch);
    return;
  }
  if (!coil_gpu_tune_worker_beside((const void *)cuda_tune_gemm, "coil-cuda-tune", worker, sizeof worker) ||
      !dladdr((const void *)cuda_tune_gemm, &so) || !so.dli_fname) {
    coil_strbuf_puts(log, "  the cost rule decides: the tuning worker is not installed beside the plugin\n");
    free(ch);
    return;
  }
  coil_strbuf spec = {0};
  coil_strbuf_printf(&spec, "graphs %s\n", so.dli_fname);
  bool constant = true;
  for (int i = 0; i < p->ninputs && constant; i++)
    constant = spec_tensor(&spec, "in", &p->buffers[p->inputs[i].buffer]);
  for (int l = 0; l < p->nlines && constant; l++)
    if (p->lines[l].kind == COIL_LINE_OUTPUT)
      for (int i = 0; i < p->lines[l].nargs && constant; i++)
        constant = spec_tensor(&spec, "out", &p->buffers[p->lines[l].args[i]]);
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/coil-cuda-gemm-tune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  signed char *f = calloc((size_t)p->nlines + 1, 1);
  if (!constant || !f || !mkdtemp(dir)) {
    coil_strbuf_puts(log, constant ? "  the cost rule decides: no temporary directory\n"
                                   : "  the cost rule decides: symbolic sizes (tuning runs the real sizes)\n");
    coil_strbuf_free(&spec);
    free(ch), free(f);
    return;
  }
  /* the candidates: 0 every line on the library, i only choice i - 1's line generated */
  cuda_options o = *opt;
  o.autotune = false;
  for (int c = 0; c <= n; c++) {
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/c%d", dir, c);
    memset(f, 0, (size_t)p->nlines);
    if (c)
      f[ch[c - 1].line] = 1;
    coil_error *e = mkdir(sub, 0700) == 0 ? cuda_build(self, p, &o, f, sub, NULL)
                                          : coil_sdk_error(COIL_ERR_IO, "cannot create %s", sub);
    if (e) {
      coil_strbuf_printf(log, "  candidate %d did not compile: %s\n", c, coil_sdk_error_message(e));
      coil_sdk_error_free(e);
      coil_strbuf_puts(&spec, "artifact -\n"); /* the worker reports it failed */
    } else {
      coil_strbuf_printf(&spec, "artifact %s\n", sub);
    }
  }
  double ms[MAX_GEMM_LINES + 1];
  coil_error *e = spec.s ? coil_sdk_write_file(dir, "spec", spec.s) : coil_sdk_out_of_memory();
  char spec_path[4200];
  snprintf(spec_path, sizeof spec_path, "%s/spec", dir);
  if (e) {
    coil_strbuf_printf(log, "  the cost rule decides: %s\n", coil_sdk_error_message(e));
    coil_sdk_error_free(e);
    for (int c = 0; c <= n; c++)
      ms[c] = -1;
  } else {
    coil_gpu_tune_run(worker, spec_path, n + 1, ms, log);
  }
  coil_strbuf_free(&spec);
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  if (ms[0] < 0) {
    coil_strbuf_puts(log, "  the cost rule decides: the program with the library was not timed\n");
    free(ch), free(f);
    return;
  }
  coil_strbuf_printf(log, "  candidate 0, every mm line on the library: %.4f ms\n", ms[0]);
  memset(f, 0, (size_t)p->nlines);
  for (int c = 1; c <= n; c++) {
    const cuda_gemm_choice *x = &ch[c - 1];
    bool gen = ms[c] >= 0 ? ms[c] < 0.99 * ms[0] : x->rule;
    f[x->line] = gen;
    coil_strbuf_printf(log, "  candidate %d, line %d (aten.mm %s) generated: ", c, x->line + 1, x->what);
    if (ms[c] >= 0)
      coil_strbuf_printf(log, "%.4f ms (%+.1f %%)", ms[c], 100.0 * (ms[c] / ms[0] - 1));
    else
      coil_strbuf_puts(log, "no time");
    coil_strbuf_printf(log, "; chosen: %s (the cost rule: %s)\n", gen ? "generated" : "library",
                       x->rule ? "generated" : "library");
  }
  free(ch);
  *force = f;
}
