/* hip_plugin.c — the `hip` plugin: HIP C++ kernels (coil-sdk's GPU emitter, coil/coil_gpu.h, with
 * the HIP dialects of hip_codegen.c) compiled in process by hiprtc into AMD GPU code objects,
 * one per kernel per arch. hiprtc is dlopen'd (hip_api.c), so the plugin builds and loads without
 * ROCm. It only compiles so far (the entry returns the emit-only table): loading and running
 * through the HIP runtime come with its wrapper (issue 15), and until then no machine runs it.
 *
 * Options ([plugin.hip]): arch = one AMD GPU target or a comma-separated list of them (gfx90a,
 * gfx908, gfx1030, ...; default: the first AMD GPU's, from the kernel driver, else gfx90a). Keys
 * starting with "coil." are accepted and ignored (graph capture and autotune need the runtime).
 *
 * An artifact: kernels-wave<W>.hip (every kernel, readable, for the targets of wavefront W: 64
 * for gfx8/gfx9, 32 for gfx10/gfx11; launch plans and reductions differ between the two),
 * plans-wave<W>.txt (each kernel's launch plan), k<i>-<arch>.co per kernel and arch (an AMDGPU
 * ELF holding the kernel NAME, and NAME__unaligned where the plan vectorises), program.wir,
 * manifest.json (with "archs").
 *
 * Library ops are refused as not supported: Debian 12 has no rocBLAS or MIOpen, and generated
 * GEMM kernels are still to come; convolutions stay generated kernels (the plugin claims none). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/wir.h"
#include "hip.h"
#include "hip_api.h"

#define HIP_VERSION_STR "0.1.0"
#define HIP_ARCHS_MAX 8
#define HIP_ARCH_LEN 16

typedef struct {
  int narchs;                          /* 0: not decided yet (the device's, on first need) */
  char archs[HIP_ARCHS_MAX][HIP_ARCH_LEN];
} hip_options;

struct coil_plugin {
  hip_options opt;
  char identity[64 + HIP_ARCHS_MAX * HIP_ARCH_LEN]; /* hiprtc version and archs: the cache's key */
  pthread_mutex_t lock; /* the default arch is decided once; compiles may ask from several threads */
};

/* ---- options ---- */

/* arch = gfxA[,gfxB...] */
static coil_error *
parse_archs(const char *v, hip_options *opt)
{
  hip_options o = {0};
  for (const char *s = v; *s;) {
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    while (n && *s == ' ')
      s++, n--;
    while (n && s[n - 1] == ' ')
      n--;
    if (o.narchs == HIP_ARCHS_MAX)
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option arch: at most %d archs", HIP_ARCHS_MAX);
    char *a = o.archs[o.narchs];
    snprintf(a, HIP_ARCH_LEN, "%.*s", (int)(n < HIP_ARCH_LEN ? n : HIP_ARCH_LEN - 1), s);
    if (n >= HIP_ARCH_LEN || !hip_arch_valid(a))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT,
                            "hip: option arch: expected AMD GPU targets such as gfx90a or gfx90a,gfx1030, got '%s'", v);
    bool seen = false;
    for (int i = 0; i < o.narchs; i++)
      seen = seen || strcmp(o.archs[i], a) == 0;
    o.narchs += !seen;
    s += n;
    while (*s == ' ')
      s++;
    if (*s == ',')
      s++;
  }
  if (!o.narchs)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option arch is empty");
  *opt = o;
  return NULL;
}

/* Applies o over *opt (which holds the instance's values, or the defaults). */
static coil_error *
parse_options(const coil_plugin_options *o, hip_options *opt)
{
  size_t n = o && COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = o->keys[i], *v = o->values[i];
    if (strncmp(k, "coil.", 5) == 0)
      continue;
    if (strcmp(k, "arch") == 0) {
      coil_error *e = parse_archs(v, opt);
      if (e)
        return e;
      continue;
    }
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: unknown option '%s' (known: arch)", k);
  }
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return coil_sdk_out_of_memory();
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options) ? args->options : NULL, &p->opt);
  if (e) {
    free(p);
    return e;
  }
  pthread_mutex_init(&p->lock, NULL);
  *out = p;
  return NULL;
}

/* The archs to compile for: the option's, else the device's (decided once per instance). */
static hip_options
options_of(coil_plugin *self)
{
  pthread_mutex_lock(&self->lock);
  if (!self->opt.narchs) {
    hip_default_arch(self->opt.archs[0], HIP_ARCH_LEN);
    self->opt.narchs = 1;
  }
  hip_options o = self->opt;
  pthread_mutex_unlock(&self->lock);
  return o;
}

static void
destroy(coil_plugin *self)
{
  pthread_mutex_destroy(&self->lock);
  free(self);
}

static const char *
identity(coil_plugin *self)
{
  const hip_rtc *rtc = hip_rtc_get(NULL);
  int ma = 0, mi = 0;
  if (rtc)
    rtc->Version(&ma, &mi);
  hip_options o = options_of(self);
  coil_strbuf s = {0};
  coil_strbuf_printf(&s, "hiprtc %d.%d", ma, mi);
  for (int i = 0; i < o.narchs; i++)
    coil_strbuf_printf(&s, " %s", o.archs[i]);
  snprintf(self->identity, sizeof self->identity, "%s", s.s ? s.s : "");
  coil_strbuf_free(&s);
  return self->identity;
}

/* Every kernel op and reduction on every dtype; scans and combining stores as cuda has them; no
 * library op (no BLAS or DNN library on Debian 12's ROCm). Nothing without hiprtc. */
static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  (void)self;
  if ((unsigned)dtype >= COIL_DTYPE_COUNT || !hip_rtc_get(NULL))
    return COIL_UNSUPPORTED;
  if (coil_kop_from_name(op, strlen(op)) >= 0)
    return COIL_SUPPORTED;
  if (strncmp(op, "reduce.", 7) == 0 && coil_reduction_from_name(op + 7, strlen(op + 7)) >= 0)
    return COIL_SUPPORTED;
  if (strncmp(op, "scan.", 5) == 0) { /* scans (Wrapper IR 1.4) */
    int r = coil_reduction_from_name(op + 5, strlen(op + 5));
    return (r == COIL_REDUCE_SUM || r == COIL_REDUCE_PROD || r == COIL_REDUCE_MAX || r == COIL_REDUCE_MIN) &&
                   dtype != COIL_BOOL ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  }
  if (strncmp(op, "store.", 6) == 0) { /* combining stores (Wrapper IR 1.3) */
    int m = coil_store_mode_from_name(op + 6, strlen(op + 6));
    return m >= 0 && coil_store_mode_valid((coil_store_mode)m, dtype) ? COIL_SUPPORTED : COIL_UNSUPPORTED;
  }
  return COIL_UNSUPPORTED;
}

/* ---- compile: one hiprtc program per kernel and arch, one at a time (hip_rtc_lock) ---- */

static int
wave_slot(const char *arch)
{
  return hip_arch_wave(arch) == 32;
}

/* src compiled by hiprtc for arch into the code object at path (what: for messages). */
static coil_error *
rtc_compile(const char *src, const char *arch, const char *what, const char *dir, const char *path)
{
  const hip_rtc *rtc = hip_rtc_get(NULL);
  hiprtcProgram prog;
  char opt_arch[48];
  snprintf(opt_arch, sizeof opt_arch, "--offload-arch=%s", arch);
  const char *opts[] = {opt_arch, "-std=c++17", "-O3"};
  hip_rtc_lock();
  if (rtc->CreateProgram(&prog, src, "kernel.hip", 0, NULL, NULL)) {
    hip_rtc_unlock();
    return coil_sdk_error(COIL_ERR_INTERNAL, "hip: hiprtcCreateProgram failed for %s", what);
  }
  hiprtcResult r = rtc->CompileProgram(prog, 3, opts);
  coil_error *e = NULL;
  size_t n = 0;
  char *code = NULL;
  if (r) {
    rtc->GetProgramLogSize(prog, &n);
    char *log = malloc(n + 1);
    if (log && !rtc->GetProgramLog(prog, log)) {
      log[n] = 0;
      char *nl = strchr(log, '\n');
      if (nl && nl - log > 300)
        *nl = 0;
    } else if (log) {
      log[0] = 0;
    }
    e = coil_sdk_error(COIL_ERR_COMPILE_FAILED, "hip: hiprtc (%s) rejected %s (source in %s/kernels-wave%d.hip): %s: %.400s",
                       arch, what, dir, hip_arch_wave(arch), rtc->GetErrorString(r), log ? log : "");
    free(log);
  } else if (rtc->GetCodeSize(prog, &n) || n == 0 || !(code = malloc(n)) || rtc->GetCode(prog, code)) {
    e = coil_sdk_error(COIL_ERR_INTERNAL, "hip: hiprtc gave no code object for %s", what);
  }
  rtc->DestroyProgram(&prog);
  hip_rtc_unlock();
  if (!e) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(code, 1, n, f) != n || fclose(f) != 0 || rename(tmp, path) != 0)
      e = coil_sdk_error(COIL_ERR_IO, "hip: cannot write %s", path);
  }
  free(code);
  return e;
}

/* Kernel k for arch, with the plan of arch's wavefront. */
static coil_error *
compile_kernel(const coil_wir_program *p, int k, const char *arch, const coil_gpu_plan *plan, const char *dir)
{
  coil_strbuf src = {0};
  coil_gpu_kernel_source(hip_dialect(hip_arch_wave(arch)), p, k, plan, &src);
  char path[4096], what[600];
  snprintf(path, sizeof path, "%s/k%d-%s.co", dir, k, arch);
  snprintf(what, sizeof what, "kernel %s", p->kernels[k].name);
  coil_error *e = src.s ? rtc_compile(src.s, arch, what, dir, path) : coil_sdk_out_of_memory();
  coil_strbuf_free(&src);
  return e;
}

/* The artifact's files other than the code objects: per wavefront used, the readable source and
 * the plans; the program; the manifest. */
static coil_error *
write_files(const coil_wir_program *p, const hip_options *opt, coil_gpu_plan *const plans[2], const char *dir)
{
  coil_error *e = NULL;
  coil_strbuf files = {0}, archs = {0};
  for (int w = 0; w < 2 && !e; w++) {
    int wave = w ? 32 : 64;
    bool used = false;
    for (int a = 0; a < opt->narchs; a++)
      used = used || wave_slot(opt->archs[a]) == w;
    if (!used)
      continue;
    coil_strbuf all = {0}, ptext = {0};
    coil_gpu_program_source(hip_dialect(wave), p, plans[w], &all);
    for (int k = 0; k < p->nkernels; k++) {
      const coil_gpu_plan *q = &plans[w][k];
      coil_strbuf_printf(&ptext, "k%d %d %u %d %d %d %d %d\n", k, q->kind, q->threads, q->per_thread, q->vec,
                         q->vec_per_thread, q->tvar, q->rows);
    }
    char name[64];
    snprintf(name, sizeof name, "kernels-wave%d.hip", wave);
    e = coil_sdk_write_file(dir, name, all.s ? all.s : "");
    coil_strbuf_printf(&files, ", \"%s\"", name);
    snprintf(name, sizeof name, "plans-wave%d.txt", wave);
    if (!e)
      e = coil_sdk_write_file(dir, name, ptext.s ? ptext.s : "");
    coil_strbuf_printf(&files, ", \"%s\"", name);
    coil_strbuf_free(&all);
    coil_strbuf_free(&ptext);
  }
  for (int a = 0; a < opt->narchs; a++) {
    coil_strbuf_printf(&archs, "%s\"%s\"", a ? ", " : "", opt->archs[a]);
    for (int k = 0; k < p->nkernels; k++)
      coil_strbuf_printf(&files, ", \"k%d-%s.co\"", k, opt->archs[a]);
  }
  char *text = e ? NULL : coil_wir_print(p);
  if (!e)
    e = text ? coil_sdk_write_file(dir, "program.wir", text) : coil_sdk_out_of_memory();
  free(text);
  if (!e) {
    coil_strbuf manifest = {0};
    coil_strbuf_printf(&manifest,
                       "{\"plugin\": \"hip\", \"plugin_version\": \"" HIP_VERSION_STR "\", \"wir_version\": \"%d.%d\", "
                       "\"archs\": [%s], \"files\": [\"program.wir\"%s]}\n",
                       p->version_major, p->version_minor, archs.s ? archs.s : "", files.s ? files.s : "");
    e = manifest.s ? coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest.s) : coil_sdk_out_of_memory();
    coil_strbuf_free(&manifest);
  }
  coil_strbuf_free(&files);
  coil_strbuf_free(&archs);
  return e;
}

static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  hip_options opt = options_of(self);
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options) ? args->options : NULL, &opt);
  if (e)
    return e;
  const coil_wir_program *p = args->program;
  for (int l = 0; l < p->nlines; l++)
    if (p->lines[l].kind == COIL_LINE_EXTERN_CALL)
      return coil_sdk_error(COIL_ERR_UNSUPPORTED, "hip: line %d: library op %s: no generated kernel for it yet", l + 1,
                            p->lines[l].op ? p->lines[l].op : "?");
  const char *why = NULL;
  if (p->nkernels && !hip_rtc_get(&why))
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "hip: %s", why);
  coil_gpu_plan *plans[2]; /* per kernel, for wavefronts of 64 ([0]) and 32 ([1]) lanes */
  for (int w = 0; w < 2; w++) {
    plans[w] = calloc((size_t)p->nkernels + 1, sizeof *plans[w]);
    for (int k = 0; plans[w] && k < p->nkernels; k++)
      coil_gpu_plan_kernel(hip_dialect(w ? 32 : 64), p, &p->kernels[k], &plans[w][k]);
  }
  if (!plans[0] || !plans[1]) {
    free(plans[0]), free(plans[1]);
    return coil_sdk_out_of_memory();
  }
  coil_error *failed = NULL;
  for (int a = 0; a < opt.narchs && !failed; a++)
    for (int k = 0; k < p->nkernels && !failed; k++)
      failed = compile_kernel(p, k, opt.archs[a], &plans[wave_slot(opt.archs[a])][k], args->artifact_dir);
  /* the sources are written on failure too, for the message to point at */
  e = write_files(p, &opt, plans, args->artifact_dir);
  free(plans[0]), free(plans[1]);
  if (failed) {
    if (e)
      coil_sdk_error_free(e);
    return failed;
  }
  return e;
}

/* ---- the table and the entry ---- */

static const coil_plugin_api emits = {
    .struct_size = sizeof(coil_plugin_api), .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .min_host_minor = 0, .name = "hip", .vendor = "The coil authors", .version = HIP_VERSION_STR,
    .features = COIL_FEATURE_EMITS_ONLY, .wir_major = COIL_WIR_VERSION_MAJOR, .wir_min_minor = 0,
    .wir_max_minor = COIL_WIR_VERSION_MINOR, .error_code = coil_sdk_error_code,
    .error_message = coil_sdk_error_message, .error_free = coil_sdk_error_free, .create = create,
    .destroy = destroy, .supports = supports, .compile = compile, .identity = identity,
};

/* Emit-only everywhere for now: the table that executes (load, run) comes with the wrapper over
 * the HIP runtime, returned where an AMD GPU is present, as cuda does for its driver. */
COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor, (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "hip is built for plugin ABI 1.x";
    return NULL;
  }
  return &emits;
}
