/* hip_plugin.c — the `hip` plugin: HIP C++ kernels (coil-sdk's GPU emitter, coil/coil_gpu.h, with
 * the HIP dialects of hip_codegen.c) compiled in process by hiprtc, one code object per kernel
 * per arch, and run through the HIP runtime (hip_run.c). hiprtc and the runtime are dlopen'd
 * (hip_api.c), so the plugin builds and loads without ROCm.
 *
 * Two platforms, as HIP has: `amd` (ROCm: hiprtc and libamdhip64, AMD GPU targets) and `nvidia`
 * (HIP's NVIDIA platform: the same HIP source compiled by NVRTC for an sm_XY target and run on the
 * CUDA driver behind the same HIP calls), which lets the generated HIP run on an NVIDIA GPU.
 *
 * Options ([plugin.hip]): arch = one target or a comma-separated list of them (gfx90a, gfx908,
 * gfx1030, ...; or sm_90 on the NVIDIA platform; default: the device's), platform = amd | nvidia
 * (default: the arch's, else amd where an AMD GPU is (/dev/kfd), else nvidia where the CUDA
 * driver is, else amd), sync = true | false (false: a run whose tensors are all on the GPU returns
 * once queued, as on a caller's stream), gemm = auto | generated | library (mm and bmm through
 * the platform's BLAS where it loads, which is cuBLAS on the NVIDIA platform and none on AMD yet;
 * always the generated GEMM; or the BLAS or a load error). coil.graph_capture (mode reduce-overhead) captures runs
 * into HIP graphs (hipGraph); coil.autotune (mode max-autotune) times each kernel's candidate
 * plans in coil-hip-tune (coil/coil_gpu_tune.h) when compiling for one arch on a machine with
 * its GPU; other keys starting with "coil." are accepted and ignored.
 *
 * An artifact: kernels-wave<W>.hip (every kernel, readable, for the targets of wavefront W: 64
 * for gfx8/gfx9, 32 for gfx10/gfx11 and NVIDIA; launch plans and reductions differ between the
 * two), plans-wave<W>.txt (each kernel's launch plan), k<i>-<arch>.co per kernel and arch (an
 * AMDGPU ELF, or a cubin, holding the kernel NAME, and NAME__unaligned where the plan
 * vectorises), program.wir, manifest.json (with "platform" and "archs").
 *
 * Library ops: mm and bmm on f16, bf16, f32 and f64 run as the SDK's generated tiled GEMM (one
 * kernel per dtype used, gemm-<dtype>-<arch>.co; Debian 12 has no rocBLAS or hipBLASLt), or
 * through cuBLAS on the NVIDIA platform (option gemm, hip_run.c);
 * convolutions stay generated kernels (the plugin claims none); other library ops are refused. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_tune.h"
#include "coil/coil_plugin.h"
#include "coil/coil_sdk.h"
#include "coil/wir.h"
#include "hip.h"
#include "hip_api.h"

#define HIP_VERSION_STR "0.1.0"
#define HIP_ARCHS_MAX 8
#define HIP_ARCH_LEN 16

typedef struct {
  int gemm;                            /* option gemm: HIP_GEMM_* */
  bool autotune;                       /* coil.autotune (mode max-autotune): time candidate plans */
  bool graphs;                         /* coil.graph_capture (mode reduce-overhead): capture, replay */
  bool async;                          /* sync = false: runs with every tensor on the GPU return once queued */
  int platform;                        /* -1: not decided yet; else a hip_platform */
  int narchs;                          /* 0: not decided yet (the device's, on first need) */
  char archs[HIP_ARCHS_MAX][HIP_ARCH_LEN];
} hip_options;

struct coil_plugin {
  hip_options opt;
  const coil_host_api *host; /* for the log (may be NULL) */
  char identity[64 + HIP_ARCHS_MAX * HIP_ARCH_LEN]; /* hiprtc version and archs: the cache's key */
  pthread_mutex_t lock; /* the default arch is decided once; compiles may ask from several threads */
};

/* ---- options ---- */

static bool
arch_valid(int platform, const char *a)
{
  return platform == HIP_NVIDIA ? hip_nvidia_arch_valid(a) : hip_arch_valid(a);
}

/* arch = gfxA[,gfxB...] or sm_XY: the platform is the first arch's unless the option said */
static coil_error *
parse_archs(const char *v, hip_options *opt)
{
  hip_options o = {.platform = opt->platform};
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
    if (o.platform < 0 && n < HIP_ARCH_LEN)
      o.platform = hip_nvidia_arch_valid(a) ? HIP_NVIDIA : HIP_AMD;
    if (n >= HIP_ARCH_LEN || !arch_valid(o.platform, a))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT,
                            o.platform == HIP_NVIDIA
                                ? "hip: option arch: platform nvidia expects one NVIDIA target such as sm_90, got '%s'"
                                : "hip: option arch: expected AMD GPU targets such as gfx90a or gfx90a,gfx1030, got '%s'",
                            v);
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
  if (o.platform == HIP_NVIDIA && o.narchs > 1)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option arch: platform nvidia takes one arch, got '%s'", v);
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
    if (strcmp(k, "coil.autotune") == 0) {
      if (strcmp(v, "true") && strcmp(v, "false"))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option coil.autotune: expected true or false, got '%s'", v);
      opt->autotune = strcmp(v, "true") == 0;
      continue;
    }
    if (strcmp(k, "coil.graph_capture") == 0) {
      if (strcmp(v, "true") && strcmp(v, "false"))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option coil.graph_capture: expected true or false, got '%s'", v);
      opt->graphs = strcmp(v, "true") == 0;
      continue;
    }
    if (strncmp(k, "coil.", 5) == 0)
      continue;
    if (strcmp(k, "gemm") == 0) {
      int g = strcmp(v, "auto") == 0 ? HIP_GEMM_AUTO : strcmp(v, "generated") == 0 ? HIP_GEMM_GENERATED
              : strcmp(v, "library") == 0 ? HIP_GEMM_LIBRARY : -1;
      if (g < 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option gemm: expected auto, generated or library, got '%s'", v);
      opt->gemm = g;
      continue;
    }
    if (strcmp(k, "sync") == 0) {
      if (strcmp(v, "true") && strcmp(v, "false"))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option sync: expected true or false, got '%s'", v);
      opt->async = strcmp(v, "false") == 0;
      continue;
    }
    if (strcmp(k, "platform") == 0) {
      int pf = strcmp(v, "amd") == 0 ? HIP_AMD : strcmp(v, "nvidia") == 0 ? HIP_NVIDIA : -1;
      if (pf < 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: option platform: expected amd or nvidia, got '%s'", v);
      if (pf != opt->platform)
        opt->narchs = 0; /* archs given before are the other platform's */
      opt->platform = pf;
      continue;
    }
    if (strcmp(k, "arch") == 0) {
      coil_error *e = parse_archs(v, opt);
      if (e)
        return e;
      continue;
    }
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "hip: unknown option '%s' (known: arch, platform, sync, gemm)", k);
  }
  return NULL;
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return coil_sdk_out_of_memory();
  p->opt.platform = -1;
  p->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options) ? args->options : NULL, &p->opt);
  if (e) {
    free(p);
    return e;
  }
  pthread_mutex_init(&p->lock, NULL);
  *out = p;
  return NULL;
}

/* The platform and (need_arch) the archs: the options', else the device's. The platform is
 * found without initialising a runtime; the NVIDIA platform's default arch initialises the CUDA
 * driver, so it is decided only where it is needed (compile, load), never in supports(): a host
 * may fork after asking that. */
static void
decide(hip_options *o, bool need_arch)
{
  if (o->platform < 0)
    o->platform = hip_runtime_present(HIP_AMD) || !hip_runtime_present(HIP_NVIDIA) ? HIP_AMD : HIP_NVIDIA;
  if (!o->narchs && need_arch) {
    if (o->platform == HIP_NVIDIA)
      hip_nvidia_arch(o->archs[0], HIP_ARCH_LEN);
    else
      hip_default_arch(o->archs[0], HIP_ARCH_LEN);
    if (!o->archs[0][0])
      snprintf(o->archs[0], HIP_ARCH_LEN, "sm_90");
    o->narchs = 1;
  }
}

static hip_options
options_of(coil_plugin *self, bool need_arch)
{
  pthread_mutex_lock(&self->lock);
  decide(&self->opt, need_arch);
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
  hip_options o = options_of(self, true);
  const hip_rtc *rtc = hip_rtc_get(o.platform, NULL);
  int ma = 0, mi = 0;
  if (rtc)
    rtc->Version(&ma, &mi);
  coil_strbuf s = {0};
  coil_strbuf_printf(&s, "%s %d.%d", o.platform == HIP_NVIDIA ? "nvrtc" : "hiprtc", ma, mi);
  for (int i = 0; i < o.narchs; i++)
    coil_strbuf_printf(&s, " %s", o.archs[i]);
  const char *c = getenv("COIL_GPU_TUNE_CANDIDATE"); /* a tuned plan forced (coil_gpu_tune.h) */
  if (c && *c)
    coil_strbuf_printf(&s, " tune-candidate %.8s", c);
  snprintf(self->identity, sizeof self->identity, "%s", s.s ? s.s : "");
  coil_strbuf_free(&s);
  return self->identity;
}

/* Every kernel op and reduction on every dtype; scans and combining stores as cuda has them; no
 * library op (no BLAS or DNN library on Debian 12's ROCm). Nothing without hiprtc. */
static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  hip_options o = options_of((coil_plugin *)self, false);
  if ((unsigned)dtype >= COIL_DTYPE_COUNT || !hip_rtc_get(o.platform, NULL))
    return COIL_UNSUPPORTED;
  if (coil_kop_from_name(op, strlen(op)) >= 0)
    return COIL_SUPPORTED;
  if (strcmp(op, "aten.mm.default") == 0 || strcmp(op, "aten.bmm.default") == 0) /* the generated GEMM */
    return dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F32 || dtype == COIL_F64 ? COIL_SUPPORTED
                                                                                               : COIL_UNSUPPORTED;
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

/* The wavefront of arch's kernels: NVIDIA's warps are 32 lanes. */
static int
wave_of(int platform, const char *arch)
{
  return platform == HIP_NVIDIA ? 32 : hip_arch_wave(arch);
}

static int
wave_slot(int platform, const char *arch)
{
  return wave_of(platform, arch) == 32;
}

/* src compiled by hiprtc for arch into the code object at path (what: for messages). */
static coil_error *
rtc_compile(int platform, const char *src, const char *arch, const char *what, const char *dir, const char *path)
{
  const hip_rtc *rtc = hip_rtc_get(platform, NULL);
  hiprtcProgram prog;
  char opt_arch[48];
  /* NVIDIA: what hipcc passes nvcc for HIP source (HIP's platform macro), NVRTC's spelling */
  snprintf(opt_arch, sizeof opt_arch, platform == HIP_NVIDIA ? "--gpu-architecture=%s" : "--offload-arch=%s", arch);
  const char *amd_opts[] = {opt_arch, "-std=c++17", "-O3"};
  const char *nv_opts[] = {opt_arch, "-std=c++17", "-D__HIP_PLATFORM_NVIDIA__", "-default-device"};
  const char **opts = platform == HIP_NVIDIA ? nv_opts : amd_opts;
  int nopts = platform == HIP_NVIDIA ? 4 : 3;
  hip_rtc_lock();
  if (rtc->CreateProgram(&prog, src, "kernel.hip", 0, NULL, NULL)) {
    hip_rtc_unlock();
    return coil_sdk_error(COIL_ERR_INTERNAL, "hip: hiprtcCreateProgram failed for %s", what);
  }
  hiprtcResult r = rtc->CompileProgram(prog, nopts, opts);
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
    e = coil_sdk_error(COIL_ERR_COMPILE_FAILED, "hip: %s (%s) rejected %s (source in %s/kernels-wave%d.hip): %s: %.400s",
                       platform == HIP_NVIDIA ? "NVRTC" : "hiprtc", arch, what, dir, wave_of(platform, arch),
                       rtc->GetErrorString(r), log ? log : "");
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
compile_kernel(const coil_wir_program *p, int k, int platform, const char *arch, const coil_gpu_plan *plan, const char *dir)
{
  coil_strbuf src = {0};
  coil_gpu_kernel_source(hip_dialect(wave_of(platform, arch)), p, k, plan, &src);
  char path[4096], what[600];
  snprintf(path, sizeof path, "%s/" HIP_CODE_OBJECT, dir, k, arch);
  snprintf(what, sizeof what, "kernel %s", p->kernels[k].name);
  coil_error *e = src.s ? rtc_compile(platform, src.s, arch, what, dir, path) : coil_sdk_out_of_memory();
  coil_strbuf_free(&src);
  return e;
}

/* max-autotune: candidates compiled as the kernels are, timed by coil-hip-tune */
typedef struct {
  int platform;
  const char *arch;
} tune_target;

static coil_error *
tune_compile(void *user, const char *src, const char *what, const char *dir, const char *path)
{
  const tune_target *t = user;
  return rtc_compile(t->platform, src, t->arch, what, dir, path);
}

/* Each kernel's plan for the one arch of opt: the fastest candidate on this machine's GPU. */
static void
tune(const coil_wir_program *p, const hip_options *opt, coil_gpu_plan *plans, coil_strbuf *log)
{
  if (opt->narchs != 1) {
    coil_strbuf_puts(log, "default plans: max-autotune tunes a compile for one arch (the GPU's), not several\n");
    return;
  }
  char worker[4096];
  bool there = coil_gpu_tune_worker_beside((const void *)tune, "coil-hip-tune", worker, sizeof worker);
  tune_target target = {opt->platform, opt->archs[0]};
  coil_gpu_tuner t = {.name = "hip", .worker = there ? worker : NULL, .compile = tune_compile, .user = &target};
  for (int k = 0; k < p->nkernels; k++)
    coil_gpu_tune_kernel(hip_dialect(wave_of(opt->platform, opt->archs[0])), p, k, &t, &plans[k], log);
}

/* The dtypes of p's GEMM lines, as a bit set (checking every extern line is one). */
static coil_error *
gemm_dtypes(const coil_wir_program *p, unsigned *set)
{
  *set = 0;
  for (int l = 0; l < p->nlines; l++) {
    coil_dtype t;
    if (hip_gemm_line(p, &p->lines[l], &t))
      *set |= 1u << t;
    else if (p->lines[l].kind == COIL_LINE_EXTERN_CALL)
      return coil_sdk_error(COIL_ERR_UNSUPPORTED, "hip: line %d: library op %s: no generated kernel for it", l + 1,
                            p->lines[l].op ? p->lines[l].op : "?");
  }
  return NULL;
}

/* The GEMMs of dtype t, the default plan's and the small plan's, after a prelude (out: the
 * source). */
static void
gemm_source(const coil_gpu_dialect *dl, coil_dtype t, bool prelude, coil_strbuf *out)
{
  coil_gpu_gemm_plan pl;
  char name[64];
  if (prelude)
    coil_gpu_prelude(dl, out);
  coil_gpu_gemm_plan_for(dl, t, &pl);
  snprintf(name, sizeof name, HIP_GEMM_KERNEL, coil_dtype_name(t));
  coil_gpu_gemm_source(dl, t, &pl, name, out);
  coil_gpu_gemm_plan_small(dl, t, &pl);
  snprintf(name, sizeof name, HIP_GEMM_KERNEL HIP_GEMM_SMALL, coil_dtype_name(t));
  coil_gpu_gemm_source(dl, t, &pl, name, out);
}

static coil_error *
compile_gemm(coil_dtype t, int platform, const char *arch, const char *dir)
{
  coil_strbuf src = {0};
  gemm_source(hip_dialect(wave_of(platform, arch)), t, true, &src);
  char path[4096], what[64];
  snprintf(path, sizeof path, "%s/" HIP_GEMM_OBJECT, dir, coil_dtype_name(t), arch);
  snprintf(what, sizeof what, "the %s GEMM", coil_dtype_name(t));
  coil_error *e = src.s ? rtc_compile(platform, src.s, arch, what, dir, path) : coil_sdk_out_of_memory();
  coil_strbuf_free(&src);
  return e;
}

/* The artifact's files other than the code objects: per wavefront used, the readable source and
 * the plans; the program; the manifest. */
static coil_error *
write_files(const coil_wir_program *p, const hip_options *opt, coil_gpu_plan *const plans[2], unsigned gemms,
            const char *tuning, const char *dir)
{
  coil_error *e = NULL;
  coil_strbuf files = {0}, archs = {0};
  for (int w = 0; w < 2 && !e; w++) {
    int wave = w ? 32 : 64;
    bool used = false;
    for (int a = 0; a < opt->narchs; a++)
      used = used || wave_slot(opt->platform, opt->archs[a]) == w;
    if (!used)
      continue;
    coil_strbuf all = {0}, ptext = {0};
    coil_gpu_program_source(hip_dialect(wave), p, plans[w], &all);
    for (int t = 0; t < COIL_DTYPE_COUNT; t++)
      if (gemms >> t & 1)
        gemm_source(hip_dialect(wave), (coil_dtype)t, !p->nkernels && !all.s, &all);
    for (int k = 0; k < p->nkernels; k++) {
      const coil_gpu_plan *q = &plans[w][k];
      coil_gpu_plan_print(k, q, &ptext);
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
      coil_strbuf_printf(&files, ", \"" HIP_CODE_OBJECT "\"", k, opt->archs[a]);
    for (int t = 0; t < COIL_DTYPE_COUNT; t++)
      if (gemms >> t & 1)
        coil_strbuf_printf(&files, ", \"" HIP_GEMM_OBJECT "\"", coil_dtype_name((coil_dtype)t), opt->archs[a]);
  }
  if (!e && tuning) { /* max-autotune's times */
    e = coil_sdk_write_file(dir, "tuning.log", tuning);
    coil_strbuf_puts(&files, ", \"tuning.log\"");
  }
  char *text = e ? NULL : coil_wir_print(p);
  if (!e)
    e = text ? coil_sdk_write_file(dir, "program.wir", text) : coil_sdk_out_of_memory();
  free(text);
  if (!e) {
    coil_strbuf manifest = {0};
    coil_strbuf_printf(&manifest,
                       "{\"plugin\": \"hip\", \"plugin_version\": \"" HIP_VERSION_STR "\", \"wir_version\": \"%d.%d\", "
                       "\"platform\": \"%s\", \"archs\": [%s], \"files\": [\"program.wir\"%s]}\n",
                       p->version_major, p->version_minor, opt->platform == HIP_NVIDIA ? "nvidia" : "amd",
                       archs.s ? archs.s : "", files.s ? files.s : "");
    e = manifest.s ? coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest.s) : coil_sdk_out_of_memory();
    coil_strbuf_free(&manifest);
  }
  coil_strbuf_free(&files);
  coil_strbuf_free(&archs);
  return e;
}

static coil_error *
compile_program(coil_plugin *self, const coil_plugin_compile_args *args, const coil_wir_program *p)
{
  hip_options opt = options_of(self, false);
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options) ? args->options : NULL, &opt);
  if (e)
    return e;
  unsigned gemms;
  if ((e = gemm_dtypes(p, &gemms)))
    return e;
  decide(&opt, true); /* a platform option alone leaves the arch to the device */
  const char *why = NULL;
  if ((p->nkernels || gemms) && !hip_rtc_get(opt.platform, &why))
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
  coil_strbuf tlog = {0};
  if (opt.autotune)
    tune(p, &opt, plans[wave_slot(opt.platform, opt.archs[0])], &tlog);
  coil_error *failed = NULL;
  for (int a = 0; a < opt.narchs && !failed; a++)
    for (int k = 0; k < p->nkernels && !failed; k++)
      failed = compile_kernel(p, k, opt.platform, opt.archs[a], &plans[wave_slot(opt.platform, opt.archs[a])][k],
                              args->artifact_dir);
  for (int a = 0; a < opt.narchs && !failed; a++)
    for (int t = 0; t < COIL_DTYPE_COUNT && !failed; t++)
      if (gemms >> t & 1)
        failed = compile_gemm((coil_dtype)t, opt.platform, opt.archs[a], args->artifact_dir);
  /* the sources are written on failure too, for the message to point at */
  e = write_files(p, &opt, plans, gemms, opt.autotune ? (tlog.s ? tlog.s : "") : NULL, args->artifact_dir);
  coil_strbuf_free(&tlog);
  free(plans[0]), free(plans[1]);
  if (failed) {
    if (e)
      coil_sdk_error_free(e);
    return failed;
  }
  return e;
}

/* The program comes as text (ABI 1.3, COIL_FEATURE_PROGRAM_TEXT): parsed into a copy of our own,
 * which the emitter may change (loop ranges) without touching the host's. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  coil_wir_program *p = NULL;
  coil_error *e = coil_sdk_compile_program("hip", args, &p);
  if (!e)
    e = compile_program(self, args, p);
  coil_wir_free(p);
  return e;
}

/* ---- load and run (hip_run.c) ---- */

/* The artifact in dir, when this plugin wrote it for the instance's platform and one of its
 * archs is the one to run. */
static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  hip_options o = options_of(self, true);
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_load_args, options) ? args->options : NULL, &o);
  if (e)
    return e;
  decide(&o, true);
  char path[4096];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/%s", args->artifact_dir, COIL_ARTIFACT_MANIFEST);
  char *manifest = coil_sdk_read_file(path, 1u << 20, &len);
  if (!manifest)
    return coil_sdk_error(COIL_ERR_IO, "hip: no artifact in %s (manifest.json is missing)", args->artifact_dir);
  char want[64];
  snprintf(want, sizeof want, "\"platform\": \"%s\"", o.platform == HIP_NVIDIA ? "nvidia" : "amd");
  bool ours = strstr(manifest, "\"plugin\": \"hip\"") && strstr(manifest, "\"plugin_version\": \"" HIP_VERSION_STR "\"") &&
              strstr(manifest, want);
  snprintf(want, sizeof want, "\"%s\"", o.archs[0]);
  bool arch_ok = strstr(manifest, want) != NULL;
  free(manifest);
  if (!ours)
    return coil_sdk_error(COIL_ERR_VERSION, "hip: %s was not written by this hip plugin (" HIP_VERSION_STR ") for platform %s",
                          path, o.platform == HIP_NVIDIA ? "nvidia" : "amd");
  if (!arch_ok)
    return coil_sdk_error(COIL_ERR_VERSION, "hip: %s was not compiled for %s: recompile", path, o.archs[0]);
  hip_load_options lo = {.gemm = o.gemm, .async = o.async, .graphs = o.graphs, .host = self->host};
  return hip_load((hip_platform)o.platform, o.archs[0], &lo, args->artifact_dir, out);
}

static coil_error *
run(coil_artifact *a, const coil_plugin_run_args *args)
{
  return hip_run(a, args);
}

static void
artifact_free(coil_artifact *a)
{
  hip_artifact_free(a);
}

/* ---- the table and the entry ---- */

#define HIP_TABLE(FEATURES, LOAD, RUN, FREE)                                                                  \
  {                                                                                                          \
    .struct_size = sizeof(coil_plugin_api), .abi_major = COIL_PLUGIN_ABI_MAJOR,                              \
    .abi_minor = COIL_PLUGIN_ABI_MINOR, .min_host_minor = 0, .name = "hip", .vendor = "The coil authors",    \
    .version = HIP_VERSION_STR, .features = (FEATURES) | COIL_FEATURE_PROGRAM_TEXT,                          \
    .wir_major = COIL_WIR_VERSION_MAJOR, .wir_min_minor = 0,                                                 \
    .wir_max_minor = COIL_WIR_VERSION_MINOR, .error_code = coil_sdk_error_code,                              \
    .error_message = coil_sdk_error_message, .error_free = coil_sdk_error_free, .create = create,            \
    .destroy = destroy, .supports = supports, .compile = compile, .load = LOAD, .run = RUN,                  \
    .artifact_free = FREE, .identity = identity,                                                             \
  }

static const coil_plugin_api executes =
    HIP_TABLE(COIL_FEATURE_EXECUTES | COIL_FEATURE_GRAPH_CAPTURE | COIL_FEATURE_AUTOTUNE, load, run, artifact_free);
static const coil_plugin_api emits = HIP_TABLE(COIL_FEATURE_EMITS_ONLY, NULL, NULL, NULL);

/* The table that runs where a runtime is (an AMD GPU's, or the CUDA driver for the NVIDIA
 * platform), found without initialising it (a host may fork after); emit-only elsewhere. */
COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor, (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "hip is built for plugin ABI 1.x";
    return NULL;
  }
  return hip_runtime_present(HIP_AMD) || hip_runtime_present(HIP_NVIDIA) ? &executes : &emits;
}
