/* cuda_plugin.c — the `cuda` plugin: CUDA C++ kernels (coil-sdk's GPU emitter, coil/coil_gpu.h,
 * with the CUDA dialect of cuda_codegen.c) compiled by NVRTC into cubins, loaded and launched
 * through the driver API, with a wrapper in C (cuda_run.c). NVRTC, the driver, cuBLAS and
 * cuBLASLt are dlopen'd (cuda_api.c). On a machine without a GPU driver the entry returns an
 * emit-only table: compile still runs NVRTC (CI compiles every kernel that way), load and run
 * are absent.
 *
 * Options ([plugin.cuda]): arch = sm_XY (default: the GPU's, or sm_90 without one); sync =
 * true|false (default true; false: a run whose inputs and outputs all live on the GPU returns
 * once its work is queued, ordered with the legacy default stream); attention_kernel and
 * attention_tile (coil.attention's kernels: cuda_attention.c; their defaults from
 * $COIL_CUDA_ATTENTION_KERNEL and $COIL_CUDA_ATTENTION_TILE where set); gemm = auto | library |
 * generated (mm lines through the generated wgmma GEMM with the next kernel folded in:
 * cuda_gemm.c; default from $COIL_CUDA_GEMM where set). From the host:
 * coil.graph_capture (mode reduce-overhead) captures runs into CUDA graphs (cuda_run.c),
 * coil.autotune (mode max-autotune) times candidate plans at compile, and with gemm = auto each
 * mm line's generated GEMM against the library (cuda_tune.c); other keys
 * starting with "coil." are accepted and ignored.
 *
 * An artifact: kernels.cu (every kernel, readable), k<i>.cubin per kernel, plans.txt (each
 * kernel's launch plan), program.wir, tuning.log with max-autotune, manifest.json; with
 * coil.attention lines attention.cu, attention.txt and a<i>.cubin per attention kernel; with
 * generated GEMMs gemm.cu, gemm.txt and g<i>.cubin per GEMM.
 *
 * Library ops: mm and bmm through cuBLASLt (cuBLAS where it is missing) on floats whose operands
 * have unit stride in one matrix dim, with a following bias/relu kernel folded in as an
 * epilogue, and bmm.dtype (decompose-K's f32 partials of f16, bf16 or f32 operands) the same
 * way; convolution through cuDNN where it loads; coil.attention (the fused attention the
 * core matches) with kernels of this plugin's own (cuda_attention.c), no library; other library
 * ops are refused at compile as not supported (issue [F5] leaves them for later: pooling,
 * index, gather, embedding, topk). */
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

#define CUDA_VERSION_STR "0.3.0"
/* NVRTC compiles kernels on this many threads at most: one per online CPU, at least 8 (a
 * compile waits on NVRTC's own work as much as on a core) */
#define COMPILE_THREADS 32

struct coil_plugin {
  cuda_options opt;   /* arch "" until first needed when not set by an option (finding the
                         GPU's initialises CUDA, which must not happen before a host forks) */
  const coil_host_api *host;
  char identity[160]; /* NVRTC version, arch (and the attention settings from the environment):
                         the compile cache's toolchain key */
  pthread_mutex_t lock; /* arch is decided once; compiles may ask from several threads */
};

/* ---- options ---- */

static bool
parse_bool(const char *v, bool *out)
{
  if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0)
    return *out = true, true;
  if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "off") == 0)
    return *out = false, true;
  return false;
}

/* attention_tile = BRxBCxWMxST[xMINB] (MINB 1 when left out) into t[5]. */
static bool
parse_tile(const char *v, int *t)
{
  int n = 0, x[5] = {0, 0, 0, 0, 1};
  for (const char *s = v;;) {
    char *end;
    long k = strtol(s, &end, 10);
    if (end == s || k < 1 || k > 4096 || n == 5)
      return false;
    x[n++] = (int)k;
    if (!*end)
      break;
    if (*end != 'x')
      return false;
    s = end + 1;
  }
  int br = x[0], bc = x[1], wm = x[2], st = x[3], minb = x[4];
  if (n < 4 || (wm != 1 && wm != 2) || br % (16 * wm) || br / (16 * wm) > 16 || bc % 16 || bc > 256 || st < 2 ||
      st > 4 || minb > 4)
    return false;
  memcpy(t, x, sizeof x);
  return true;
}

/* Applies o over *opt (which holds the instance's values, or the defaults). */
static coil_error *
parse_options(const coil_plugin_options *o, cuda_options *opt)
{
  size_t n = o && COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = o->keys[i], *v = o->values[i];
    if (strcmp(k, "coil.graph_capture") == 0) {
      if (!parse_bool(v, &opt->graphs))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: option coil.graph_capture: expected true or false, got '%s'", v);
      continue;
    }
    if (strcmp(k, "coil.autotune") == 0) {
      if (!parse_bool(v, &opt->autotune))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: option coil.autotune: expected true or false, got '%s'", v);
      continue;
    }
    if (strncmp(k, "coil.", 5) == 0)
      continue;
    if (strcmp(k, "arch") == 0) {
      bool ok = strncmp(v, "sm_", 3) == 0 && strlen(v) >= 5 && strlen(v) < sizeof opt->arch;
      for (const char *s = v + 3; ok && *s; s++)
        ok = (*s >= '0' && *s <= '9') || (*s == 'a' && !s[1]);
      if (!ok)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: option arch: expected sm_XY (e.g. sm_90), got '%s'", v);
      snprintf(opt->arch, sizeof opt->arch, "%s", v);
      continue;
    }
    if (strcmp(k, "sync") == 0) {
      if (!parse_bool(v, &opt->sync))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: option sync: expected true or false, got '%s'", v);
      continue;
    }
    if (strcmp(k, "attention_kernel") == 0) {
      if (strcmp(v, "auto") != 0 && strcmp(v, "simt") != 0 && strcmp(v, "mma") != 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT,
                              "cuda: option attention_kernel: expected auto, mma or simt, got '%s'", v);
      opt->attn_simt = strcmp(v, "simt") == 0;
      opt->attn_mma = strcmp(v, "mma") == 0;
      continue;
    }
    if (strcmp(k, "gemm") == 0) {
      int g = strcmp(v, "auto") == 0 ? CUDA_GEMM_AUTO : strcmp(v, "library") == 0 ? CUDA_GEMM_LIBRARY
            : strcmp(v, "generated") == 0 ? CUDA_GEMM_GENERATED : -1;
      if (g < 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: option gemm: expected auto, library or generated, got '%s'", v);
      opt->gemm = g;
      continue;
    }
    if (strcmp(k, "attention_tile") == 0) {
      if (!parse_tile(v, opt->attn_tile))
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT,
                              "cuda: option attention_tile: expected BRxBCxWMxST[xMINB] (query rows a block, a multiple "
                              "of 16 WM, at most 16 warps; keys a step, a multiple of 16 up to 256; m16 tiles a warp, 1 "
                              "or 2; 2 to 4 stages; 1 to 4 blocks an SM), e.g. 128x64x1x2x2, got '%s'", v);
      continue;
    }
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT,
                          "cuda: unknown option '%s' (known: arch, sync, attention_kernel, attention_tile, gemm)", k);
  }
  return NULL;
}

/* The GPU's arch, or sm_90 without one. */
static void
default_arch(char *arch, size_t n)
{
  snprintf(arch, n, "sm_90");
  const cuda_driver *cu = cuda_driver_get(NULL);
  CUdevice d;
  int ma = 0, mi = 0;
  if (cu && !cu->DeviceGet(&d, 0) && !cu->DeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) &&
      !cu->DeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) && ma > 0)
    snprintf(arch, n, "sm_%d%d", ma, mi);
}

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return coil_sdk_out_of_memory();
  p->opt.sync = true;
  /* $COIL_CUDA_ATTENTION_KERNEL, $COIL_CUDA_ATTENTION_TILE and $COIL_CUDA_GEMM: attention_kernel,
   * attention_tile and gemm where the options do not set them (for measuring through tools that
   * create the plugin without options, as coil bench does); named in identity(), so the compile
   * cache keeps their artifacts apart */
  const char *env_keys[3], *env_values[3];
  size_t nenv = 0;
  static const char *const envs[][2] = {{"COIL_CUDA_ATTENTION_KERNEL", "attention_kernel"},
                                        {"COIL_CUDA_ATTENTION_TILE", "attention_tile"}, {"COIL_CUDA_GEMM", "gemm"}};
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(envs[i][0]);
    if (v && *v)
      env_keys[nenv] = envs[i][1], env_values[nenv++] = v;
  }
  coil_plugin_options env = {.struct_size = sizeof env, .count = nenv, .keys = env_keys, .values = env_values};
  coil_error *e = nenv ? parse_options(&env, &p->opt) : NULL;
  if (!e)
    e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_create_args, options) ? args->options : NULL, &p->opt);
  if (e) {
    free(p);
    return e;
  }
  p->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  pthread_mutex_init(&p->lock, NULL);
  *out = p;
  return NULL;
}

/* The arch to compile for: the option's, else the GPU's (decided once per instance). */
static const char *
arch_of(coil_plugin *self)
{
  pthread_mutex_lock(&self->lock);
  if (!self->opt.arch[0])
    default_arch(self->opt.arch, sizeof self->opt.arch);
  pthread_mutex_unlock(&self->lock);
  return self->opt.arch;
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
  const cuda_nvrtc *nv = cuda_nvrtc_get(NULL);
  int ma = 0, mi = 0;
  if (nv)
    nv->Version(&ma, &mi);
  const char *k = getenv("COIL_CUDA_ATTENTION_KERNEL"), *t = getenv("COIL_CUDA_ATTENTION_TILE");
  const char *g = getenv("COIL_CUDA_GEMM"), *c = getenv("COIL_GPU_TUNE_CANDIDATE"); /* c: coil_gpu_tune.h */
  snprintf(self->identity, sizeof self->identity, "nvrtc %d.%d %s%s%s%s%s%s%.32s%s%.8s", ma, mi, arch_of(self),
           k && *k ? " attention " : "", k && *k ? k : "", t && *t ? " tile " : "", t && *t ? t : "", g && *g ? " gemm " : "",
           g && *g ? g : "", c && *c ? " tune-candidate " : "", c && *c ? c : "");
  return self->identity;
}

/* Every kernel op and reduction on every dtype, mm and bmm on floats, coil.attention on floats,
 * convolution on floats where cuDNN 9 loads (a program compiled with it then needs cuDNN to run;
 * `[coil] convolution = generated` keeps convolutions in generated kernels). Nothing without
 * NVRTC. With `gemm = generated`, mm only in the dtypes the wgmma template takes (f16, bf16),
 * and only when the target is sm_90, the template's one arch, and no bmm: the core compiles the
 * others as its own loop nest ([coil] matmul = auto), so no product needs cuBLAS at compile (a
 * line the template's compile or run-time checks refuse, an odd K or a misaligned operand, still
 * takes cuBLASLt). */
static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  /* the arch is decided lazily, once per instance, under its lock: hence the cast */
  if (self && self->opt.gemm == CUDA_GEMM_GENERATED &&
      (strcmp(op, "aten.bmm.default") == 0 ||
       (strcmp(op, "aten.mm.default") == 0 &&
        ((dtype != COIL_F16 && dtype != COIL_BF16) || strcmp(arch_of((coil_plugin *)self), "sm_90") != 0))))
    return COIL_UNSUPPORTED;
  if ((unsigned)dtype >= COIL_DTYPE_COUNT || !cuda_nvrtc_get(NULL))
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
  if ((strcmp(op, "aten.mm.default") == 0 || strcmp(op, "aten.bmm.default") == 0) &&
      (dtype == COIL_F32 || dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F64))
    return COIL_SUPPORTED; /* cuBLAS, operands permitting (compile checks their layout) */
  if (strcmp(op, "aten.bmm.dtype") == 0 && (dtype == COIL_F32 || dtype == COIL_F16 || dtype == COIL_BF16))
    return COIL_SUPPORTED; /* decompose-K's f32 partial products of these operands (cuBLASLt) */
  if (strcmp(op, "coil.attention") == 0 &&
      (dtype == COIL_F32 || dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F64))
    return COIL_SUPPORTED; /* cuda_attention.c: every instance (the SIMT kernel takes any) */
  if (strcmp(op, "aten.convolution.default") == 0 &&
      (dtype == COIL_F32 || dtype == COIL_F16 || dtype == COIL_BF16 || dtype == COIL_F64) && cuda_cudnn_get(NULL))
    return COIL_SUPPORTED;
  return COIL_UNSUPPORTED;
}

/* ---- compile: one NVRTC program per kernel, several at once ---- */

typedef struct {
  const coil_wir_program *p;
  const coil_gpu_plan *plans; /* per kernel */
  const cuda_attn_build *attn; /* the attention kernels (NULL: none) */
  const cuda_gemm_build *gemm; /* the generated GEMMs (NULL: none) */
  bool *gemm_failed;    /* per generated GEMM: NVRTC refused it (its lines keep the library) */
  const coil_host_api *host;
  int total;            /* the attention kernels, the GEMMs, then the program's: the items to compile */
  const char *arch, *dir;
  int next;             /* the next kernel to take (under lock) */
  pthread_mutex_t lock;
  coil_error *err;      /* the first failure */
} compile_job;

coil_error *
cuda_nvrtc_compile(const char *src, const char *arch, const char *what, const char *dir, const char *path)
{
  const cuda_nvrtc *nv = cuda_nvrtc_get(NULL);
  nvrtcProgram prog;
  char opt_arch[48];
  snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
  const char *opts[] = {opt_arch, "--std=c++17", "-default-device", "-lineinfo"};
  if (nv->CreateProgram(&prog, src, "kernel.cu", 0, NULL, NULL))
    return coil_sdk_error(COIL_ERR_INTERNAL, "cuda: nvrtcCreateProgram failed for %s", what);
  nvrtcResult r = nv->CompileProgram(prog, 4, opts);
  coil_error *e = NULL;
  if (r) {
    size_t n = 0;
    nv->GetProgramLogSize(prog, &n);
    char *log = malloc(n + 1);
    if (log && !nv->GetProgramLog(prog, log)) {
      log[n] = 0;
      char *nl = strchr(log, '\n');
      if (nl && nl - log > 300)
        *nl = 0;
    }
    e = coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cuda: NVRTC (%s) rejected %s (source in %s/kernels.cu): %s: %.400s", arch,
                       what, dir, nv->GetErrorString(r), log ? log : "");
    free(log);
  } else {
    size_t n = 0;
    char *cubin = NULL;
    if (nv->GetCUBINSize(prog, &n) || !(cubin = malloc(n)) || nv->GetCUBIN(prog, cubin))
      e = coil_sdk_error(COIL_ERR_INTERNAL, "cuda: NVRTC gave no cubin for %s", what);
    else {
      char tmp[4200];
      snprintf(tmp, sizeof tmp, "%s.tmp", path);
      FILE *f = fopen(tmp, "wb");
      if (!f || fwrite(cubin, 1, n, f) != n || fclose(f) != 0 || rename(tmp, path) != 0)
        e = coil_sdk_error(COIL_ERR_IO, "cuda: cannot write %s", path);
    }
    free(cubin);
  }
  nv->DestroyProgram(&prog);
  return e;
}

static coil_error *
compile_one(compile_job *j, int k)
{
  coil_strbuf src = {0};
  char path[4096], what[600];
  const int na = cuda_attention_nkernels(j->attn);
  if (k < na) { /* an attention kernel (first: the largest compiles start early) */
    const cuda_attn_kernel *ak = cuda_attention_kernel(j->attn, k);
    char name[96];
    cuda_attention_kernel_name(ak, name, sizeof name);
    cuda_attention_module_source(ak, &src);
    snprintf(path, sizeof path, "%s/a%d.cubin", j->dir, k);
    snprintf(what, sizeof what, "attention kernel %s (source in attention.cu)", name);
    coil_error *e = cuda_nvrtc_compile(src.s, cuda_attention_arch(ak, j->arch), what, j->dir, path);
    coil_strbuf_free(&src);
    return e;
  }
  k -= na;
  const int ng = cuda_gemm_nkernels(j->gemm);
  if (k < ng) { /* a generated GEMM: where NVRTC refuses it, its lines keep cuBLAS (logged) */
    cuda_gemm_source(j->p, j->gemm, k, &src);
    snprintf(path, sizeof path, "%s/g%d.cubin", j->dir, k);
    snprintf(what, sizeof what, "generated GEMM %s (source in gemm.cu)", cuda_gemm_kernel_name(j->gemm, k));
    coil_error *e = cuda_nvrtc_compile(src.s, CUDA_GEMM_ARCH, what, j->dir, path);
    coil_strbuf_free(&src);
    if (e) {
      j->gemm_failed[k] = true;
      if (j->host && COIL_STRUCT_HAS(j->host, coil_host_api, log) && j->host->log) {
        char line[1200];
        snprintf(line, sizeof line, "%s: its mm lines run on cuBLAS", coil_sdk_error_message(e));
        j->host->log(j->host, COIL_LOG_WARN, line);
      }
      coil_sdk_error_free(e);
    }
    return NULL;
  }
  k -= ng;
  coil_gpu_kernel_source(&cuda_dialect, j->p, k, &j->plans[k], &src);
  snprintf(path, sizeof path, "%s/k%d.cubin", j->dir, k);
  snprintf(what, sizeof what, "kernel %s", j->p->kernels[k].name);
  coil_error *e = cuda_nvrtc_compile(src.s, j->arch, what, j->dir, path);
  coil_strbuf_free(&src);
  return e;
}

static void *
compile_worker(void *arg)
{
  compile_job *j = arg;
  for (;;) {
    pthread_mutex_lock(&j->lock);
    int k = j->err ? j->total : j->next++;
    pthread_mutex_unlock(&j->lock);
    if (k >= j->total)
      return NULL;
    coil_error *e = compile_one(j, k);
    if (e) {
      pthread_mutex_lock(&j->lock);
      if (!j->err)
        j->err = e;
      else
        coil_sdk_error_free(e);
      pthread_mutex_unlock(&j->lock);
    }
  }
}

coil_error *
cuda_build(coil_plugin *self, const coil_wir_program *p, const cuda_options *o, const signed char *force,
           const char *dir, const char *tuned)
{
  const cuda_options opt = *o;
  const char *arch = opt.arch;
  coil_error *e;
  cuda_attn_build *attn = NULL;
  if ((e = cuda_attention_plan(p, &opt, arch, &attn)))
    return e;
  cuda_gemm_build *gemm = NULL;
  if ((e = cuda_gemm_plan(p, &opt, arch, force, &gemm))) {
    cuda_attention_build_free(attn);
    return e;
  }
  bool *gemm_failed = calloc((size_t)cuda_gemm_nkernels(gemm) + 1, sizeof *gemm_failed);
  const char *why = NULL;
  if (!gemm_failed || ((p->nkernels || attn || gemm) && !cuda_nvrtc_get(&why))) {
    cuda_attention_build_free(attn);
    cuda_gemm_build_free(gemm);
    free(gemm_failed);
    return gemm_failed ? coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cuda: %s", why) : coil_sdk_out_of_memory();
  }
  /* each kernel's plan: the default, or with max-autotune the fastest candidate on this GPU */
  coil_gpu_plan *plans = calloc((size_t)p->nkernels + 1, sizeof *plans);
  coil_strbuf tlog = {0}, ptext = {0};
  if (tuned)
    coil_strbuf_puts(&tlog, tuned);
  if (!plans) {
    cuda_attention_build_free(attn);
    cuda_gemm_build_free(gemm);
    free(gemm_failed);
    return coil_sdk_out_of_memory();
  }
  for (int k = 0; k < p->nkernels; k++) {
    if (opt.autotune)
      cuda_tune_kernel(p, k, arch, &plans[k], &tlog);
    else
      coil_gpu_plan_kernel(&cuda_dialect, p, &p->kernels[k], &plans[k]);
    const coil_gpu_plan *q = &plans[k];
    coil_gpu_plan_print(k, q, &ptext);
  }
  compile_job j = {.p = p, .plans = plans, .attn = attn, .gemm = gemm, .gemm_failed = gemm_failed, .host = self->host,
                   .total = p->nkernels + cuda_attention_nkernels(attn) + cuda_gemm_nkernels(gemm), .arch = arch,
                   .dir = dir};
  pthread_mutex_init(&j.lock, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = cpus > COMPILE_THREADS ? COMPILE_THREADS : cpus < 8 ? 8 : (int)cpus;
  nt = j.total < nt ? j.total : nt;
  pthread_t th[COMPILE_THREADS];
  int started = 0;
  for (int t = 1; t < nt; t++)
    if (pthread_create(&th[started], NULL, compile_worker, &j) == 0)
      started++;
  compile_worker(&j);
  for (int t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  pthread_mutex_destroy(&j.lock);
  coil_strbuf all = {0}, files = {0};
  coil_gpu_program_source(&cuda_dialect, p, plans, &all);
  free(plans);
  for (int k = 0; k < p->nkernels; k++)
    coil_strbuf_printf(&files, ", \"k%d.cubin\"", k);
  for (int k = 0; k < cuda_attention_nkernels(attn); k++)
    coil_strbuf_printf(&files, ", \"a%d.cubin\"", k);
  for (int k = 0; k < cuda_gemm_nkernels(gemm); k++)
    if (!gemm_failed[k])
      coil_strbuf_printf(&files, ", \"g%d.cubin\"", k);
  /* the sources (kept on failure too, for the message to point at), the program, the manifest */
  e = coil_sdk_write_file(dir, "kernels.cu", all.s ? all.s : "");
  coil_strbuf_free(&all);
  if (!e && attn) {
    e = cuda_attention_write(attn, dir);
    coil_strbuf_puts(&files, ", \"attention.cu\", \"attention.txt\"");
  }
  cuda_attention_build_free(attn);
  if (!e && gemm) {
    e = cuda_gemm_write(gemm, p, gemm_failed, dir);
    coil_strbuf_puts(&files, ", \"gemm.cu\", \"gemm.txt\"");
  }
  cuda_gemm_build_free(gemm);
  free(gemm_failed);
  if (!e && j.err)
    e = j.err;
  else if (j.err)
    coil_sdk_error_free(j.err);
  char *text = e ? NULL : coil_wir_print(p);
  if (!e)
    e = coil_sdk_write_file(dir, "program.wir", text);
  free(text);
  if (!e) /* the launch plans load reads (the tuned ones with max-autotune) */
    e = coil_sdk_write_file(dir, "plans.txt", ptext.s ? ptext.s : "");
  if (!e && opt.autotune) {
    e = coil_sdk_write_file(dir, "tuning.log", tlog.s ? tlog.s : "");
    coil_strbuf_puts(&files, ", \"tuning.log\"");
  }
  coil_strbuf_free(&ptext);
  coil_strbuf_free(&tlog);
  if (!e) {
    char *manifest = malloc(files.len + 512);
    if (!manifest)
      e = coil_sdk_out_of_memory();
    else {
      snprintf(manifest, files.len + 512,
               "{\"plugin\": \"cuda\", \"plugin_version\": \"" CUDA_VERSION_STR "\", \"wir_version\": \"%d.%d\", "
               "\"arch\": \"%s\", \"files\": [\"kernels.cu\", \"program.wir\", \"plans.txt\"%s]}\n",
               p->version_major, p->version_minor, arch, files.s ? files.s : "");
      e = coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest);
      free(manifest);
    }
  }
  coil_strbuf_free(&files);
  return e;
}

static coil_error *
compile_program(coil_plugin *self, const coil_plugin_compile_args *args, const coil_wir_program *p)
{
  cuda_options opt = self->opt;
  snprintf(opt.arch, sizeof opt.arch, "%s", arch_of(self));
  coil_error *e = parse_options(COIL_STRUCT_HAS(args, coil_plugin_compile_args, options) ? args->options : NULL, &opt);
  if (e)
    return e;
  for (int l = 0; l < p->nlines; l++) {
    char why_not[256];
    if (p->lines[l].kind == COIL_LINE_EXTERN_CALL && !cuda_blas_line_ok(p, &p->lines[l], why_not, sizeof why_not))
      return coil_sdk_error(COIL_ERR_UNSUPPORTED, "cuda: line %d: %s", l + 1, why_not);
  }
  /* max-autotune with gemm = auto: each mm line the generated GEMM could take, timed both ways */
  signed char *force = NULL;
  coil_strbuf glog = {0};
  if (opt.autotune && opt.gemm == CUDA_GEMM_AUTO)
    cuda_tune_gemm(self, p, &opt, &force, &glog);
  e = cuda_build(self, p, &opt, force, args->artifact_dir, glog.s);
  free(force);
  coil_strbuf_free(&glog);
  return e;
}

/* The program comes as text (ABI 1.3, COIL_FEATURE_PROGRAM_TEXT): parsed into a copy of our own,
 * which the emitter may change (loop ranges) without touching the host's. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  coil_wir_program *p = NULL;
  coil_error *e = coil_sdk_compile_program("cuda", args, &p);
  if (!e)
    e = compile_program(self, args, p);
  coil_wir_free(p);
  return e;
}

/* ---- load ---- */

static void
artifact_free(coil_artifact *a)
{
  if (!a)
    return;
  if (a->cu) {
    a->cu->CtxSetCurrent(a->ctx);
    if (a->caller_streams)
      a->cu->CtxSynchronize(); /* runs queued on a caller's stream may be in flight */
    else if (a->stream)
      a->cu->StreamSynchronize(a->stream); /* unsynchronized runs (sync = false) may be in flight */
    if (a->switch_event)
      a->cu->EventDestroy(a->switch_event);
    cuda_graph_free(a);
    cuda_attention_unload(a);
    cuda_gemm_unload(a);
    cuda_lt_plans_free(a);
    cuda_dnn_plans_free(a);
    free(a->dnn_plans);
    if (a->dnn_handle)
      a->dnn->Destroy(a->dnn_handle);
    if (a->lt_handle)
      a->lt->Destroy(a->lt_handle);
    if (a->blas_handle)
      a->blas->Destroy(a->blas_handle);
    if (a->blas_workspace)
      a->cu->MemFree(a->blas_workspace);
    if (a->oob)
      a->cu->MemFree(a->oob);
    for (int k = 0; k < a->nkernels; k++)
      if (a->modules[k])
        a->cu->ModuleUnload(a->modules[k]);
    if (a->stream)
      a->cu->StreamDestroy(a->stream);
    if (a->pool)
      a->cu->MemPoolDestroy(a->pool);
    if (a->ctx)
      a->cu->DevicePrimaryCtxRelease(a->dev);
  }
  free(a->modules);
  free(a->functions);
  free(a->unaligned);
  free(a->plans);
  free(a->lt_plans);
  free(a->epi);
  coil_wir_free(a->program);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  const char *why = NULL;
  const cuda_driver *cu = cuda_driver_get(&why);
  if (!cu)
    return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s", why);
  char path[4096];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/%s", args->artifact_dir, COIL_ARTIFACT_MANIFEST);
  char *manifest = coil_sdk_read_file(path, 1u << 20, &len);
  if (!manifest)
    return coil_sdk_error(COIL_ERR_IO, "cuda: no artifact in %s (manifest.json is missing)", args->artifact_dir);
  char want_arch[48];
  snprintf(want_arch, sizeof want_arch, "\"arch\": \"%s\"", arch_of(self));
  bool ours = strstr(manifest, "\"plugin\": \"cuda\"") && strstr(manifest, "\"plugin_version\": \"" CUDA_VERSION_STR "\"");
  bool arch_ok = strstr(manifest, want_arch) != NULL;
  free(manifest);
  if (!ours)
    return coil_sdk_error(COIL_ERR_VERSION, "cuda: %s was not written by this cuda plugin (" CUDA_VERSION_STR ")", path);
  if (!arch_ok)
    return coil_sdk_error(COIL_ERR_VERSION, "cuda: %s was compiled for another arch than %s: recompile", path, self->opt.arch);
  coil_wir_program *p;
  coil_error *pe = coil_sdk_read_program("cuda", args->artifact_dir, &p);
  if (pe)
    return pe;
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    coil_wir_free(p);
    return coil_sdk_out_of_memory();
  }
  a->program = p;
  a->nkernels = p->nkernels;
  a->host = self->host;
  a->opt = self->opt;
  pthread_mutex_init(&a->lock, NULL);
  coil_error *oe = parse_options(COIL_STRUCT_HAS(args, coil_plugin_load_args, options) ? args->options : NULL, &a->opt);
  if (oe) {
    artifact_free(a);
    return oe;
  }
  a->modules = calloc((size_t)p->nkernels + 1, sizeof *a->modules);
  a->functions = calloc((size_t)p->nkernels + 1, sizeof *a->functions);
  a->plans = calloc((size_t)p->nkernels + 1, sizeof *a->plans);
  a->unaligned = calloc((size_t)p->nkernels + 1, sizeof *a->unaligned);
  CUresult r;
  const char *call = "";
  if (!a->modules || !a->functions || !a->plans || !a->unaligned) {
    artifact_free(a);
    return coil_sdk_out_of_memory();
  }
  if ((r = cu->DeviceGet(&a->dev, 0)))
    call = "cuDeviceGet";
  else if ((r = cu->DevicePrimaryCtxRetain(&a->ctx, a->dev)))
    call = "cuDevicePrimaryCtxRetain";
  else
    a->cu = cu;
  if (!r && (r = cu->CtxSetCurrent(a->ctx)))
    call = "cuCtxSetCurrent";
  /* a blocking stream: ordered after work on the legacy default stream (where callers such
   * as PyTorch produce device inputs), and that stream's later work after ours */
  if (!r && (r = cu->StreamCreate(&a->stream, CU_STREAM_DEFAULT)))
    call = "cuStreamCreate";
  a->own_stream = a->last_stream = a->handles_stream = a->stream;
  if (!r && (r = cu->EventCreate(&a->switch_event, 0x2 /* CU_EVENT_DISABLE_TIMING */)))
    call = "cuEventCreate";
  if (!r) {
    cuda_mem_pool_props props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .locationType = CU_MEM_LOCATION_TYPE_DEVICE,
                                 .locationId = a->dev};
    unsigned long long keep = ~0ull;
    if ((r = cu->MemPoolCreate(&a->pool, &props)))
      call = "cuMemPoolCreate";
    else if ((r = cu->MemPoolSetAttribute(a->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep)))
      call = "cuMemPoolSetAttribute";
  }
  bool needs_blas = false; /* mm, bmm and convolution (cuDNN takes cuBLAS's workspace); not coil.attention */
  for (int l = 0; l < p->nlines; l++)
    needs_blas = needs_blas || (p->lines[l].kind == COIL_LINE_EXTERN_CALL &&
                                !(p->lines[l].op && strcmp(p->lines[l].op, "coil.attention") == 0));
  if (!r && needs_blas) {
    const char *bwhy = NULL;
    a->blas = cuda_cublas_get(&bwhy);
    /* its workspace given up front (32 MiB, as PyTorch on Hopper): a GEMM under graph capture
     * must not allocate */
    if (!a->blas || a->blas->Create(&a->blas_handle) || a->blas->SetStream(a->blas_handle, a->stream) ||
        cu->MemAlloc(&a->blas_workspace, CUDA_BLAS_WORKSPACE) ||
        a->blas->SetWorkspace(a->blas_handle, (void *)(uintptr_t)a->blas_workspace, CUDA_BLAS_WORKSPACE)) {
      artifact_free(a);
      return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s", bwhy ? bwhy : "cuBLAS setup (create, stream, workspace) failed");
    }
    /* cuBLASLt where it loads: a cached algorithm per GEMM line and folded epilogues; without it
     * the GEMMs go through cuBLAS alone */
    const cuda_cublaslt *lt = cuda_cublaslt_get(NULL);
    a->lt_plans = calloc((size_t)p->nlines + 1, sizeof *a->lt_plans);
    a->epi = calloc((size_t)p->nlines + 1, sizeof *a->epi);
    if (!a->lt_plans || !a->epi) {
      artifact_free(a);
      return coil_sdk_out_of_memory();
    }
    if (lt && !lt->Create(&a->lt_handle)) {
      a->lt = lt;
      coil_gpu_find_epilogues(p, a->epi);
    }
  }
  bool needs_dnn = false;
  for (int l = 0; l < p->nlines; l++)
    needs_dnn = needs_dnn || (p->lines[l].kind == COIL_LINE_EXTERN_CALL && p->lines[l].op &&
                              strcmp(p->lines[l].op, "aten.convolution.default") == 0);
  if (!r && needs_dnn) {
    const char *dwhy = NULL;
    a->dnn = cuda_cudnn_get(&dwhy);
    a->dnn_plans = calloc((size_t)p->nlines + 1, sizeof *a->dnn_plans);
    if (!a->dnn || !a->dnn_plans || a->dnn->Create(&a->dnn_handle) || a->dnn->SetStream(a->dnn_handle, a->stream)) {
      artifact_free(a);
      return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s (the program was compiled with convolutions as cuDNN calls)",
                            dwhy ? dwhy : "cuDNN setup (create, stream) failed");
    }
  }
  bool indirect = false;
  for (int k = 0; k < p->nkernels; k++)
    indirect = indirect || coil_kernel_has_indirect(&p->kernels[k]);
  if (!r && indirect &&
      (cu->MemAlloc(&a->oob, 2 * sizeof(long long)) ||
       cu->MemsetD8Async(a->oob, 0, 2 * sizeof(long long), a->stream) || cu->StreamSynchronize(a->stream))) {
    artifact_free(a);
    return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: cannot allocate the index check's 16 bytes");
  }
  snprintf(path, sizeof path, "%s/plans.txt", args->artifact_dir);
  char *plans = coil_sdk_read_file(path, 16u << 20, &len);
  if (!plans && p->nkernels) {
    artifact_free(a);
    return coil_sdk_error(COIL_ERR_IO, "cuda: cannot read %s", path);
  }
  for (int k = 0; !r && k < p->nkernels; k++) {
    snprintf(path, sizeof path, "%s/k%d.cubin", args->artifact_dir, k);
    char *cubin = coil_sdk_read_file(path, 512u << 20, &len);
    if (!cubin) {
      artifact_free(a);
      return coil_sdk_error(COIL_ERR_IO, "cuda: cannot read %s", path);
    }
    if (!coil_gpu_plan_read(plans, k, &a->plans[k]) || !coil_gpu_plan_valid(&cuda_dialect, p, &p->kernels[k], &a->plans[k])) {
      free(cubin), free(plans);
      artifact_free(a);
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: %s/plans.txt: no valid launch plan for kernel k%d (%s)",
                            args->artifact_dir, k, p->kernels[k].name);
    }
    if ((r = cu->ModuleLoadData(&a->modules[k], cubin)))
      call = "cuModuleLoadData";
    else if ((r = cu->ModuleGetFunction(&a->functions[k], a->modules[k], p->kernels[k].name)))
      call = "cuModuleGetFunction";
    else if (a->plans[k].vec > 1) {
      char uname[600];
      snprintf(uname, sizeof uname, "%s" COIL_GPU_UNALIGNED_SUFFIX, p->kernels[k].name);
      if ((r = cu->ModuleGetFunction(&a->unaligned[k], a->modules[k], uname)))
        call = "cuModuleGetFunction (the unaligned variant)";
    }
    free(cubin);
  }
  free(plans);
  if (r) {
    const char *s = NULL;
    cu->GetErrorString(r, &s);
    artifact_free(a);
    return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s failed: %s (%d)", call, s ? s : "?", r);
  }
  coil_error *ae = cuda_attention_load(a, args->artifact_dir);
  if (!ae)
    ae = cuda_gemm_load(a, args->artifact_dir);
  if (ae) {
    artifact_free(a);
    return ae;
  }
  *out = a;
  return NULL;
}

static coil_error *
run(coil_artifact *a, const coil_plugin_run_args *args)
{
  return cuda_run(a, args);
}

/* The statement query (ABI 1.4): a coil.attention call only where the tensor-core kernel runs
 * it (cuda_attention_fast); the core then compiles the other chains as bmm, softmax, bmm.
 * Everything else as supports() says. */
static coil_support
supports_stmt(const coil_plugin *self, const coil_plugin_stmt *st)
{
  if (st->kind != COIL_STMT_EXTERN || !st->op || strcmp(st->op, "coil.attention") != 0)
    return COIL_SUPPORTED;
  const char *arch = arch_of((coil_plugin *)self); /* decided once, under the instance's lock */
  return cuda_attention_fast(st, &self->opt, atoi(arch + 3)) ? COIL_SUPPORTED : COIL_UNSUPPORTED;
}

/* ---- the tables and the entry ---- */

#define CUDA_TABLE(FEATURES, LOAD, RUN, FREE)                                                              \
  {                                                                                                        \
    .struct_size = sizeof(coil_plugin_api), .abi_major = COIL_PLUGIN_ABI_MAJOR,                            \
    .abi_minor = COIL_PLUGIN_ABI_MINOR, .min_host_minor = 0, .name = "cuda", .vendor = "The coil authors", \
    .version = CUDA_VERSION_STR, .features = (FEATURES) | COIL_FEATURE_PROGRAM_TEXT,                       \
    .wir_major = COIL_WIR_VERSION_MAJOR,                                                                   \
    .wir_min_minor = 0, .wir_max_minor = COIL_WIR_VERSION_MINOR, .error_code = coil_sdk_error_code,        \
    .error_message = coil_sdk_error_message, .error_free = coil_sdk_error_free, .create = create,          \
    .destroy = destroy, .supports = supports, .compile = compile, .load = LOAD, .run = RUN,                \
    .artifact_free = FREE, .identity = identity, .supports_stmt = supports_stmt,                           \
  }

static const coil_plugin_api executes =
    CUDA_TABLE(COIL_FEATURE_EXECUTES | COIL_FEATURE_GRAPH_CAPTURE | COIL_FEATURE_AUTOTUNE, load, run, artifact_free);
static const coil_plugin_api emits = CUDA_TABLE(COIL_FEATURE_EMITS_ONLY, NULL, NULL, NULL);

COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor, (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "cuda is built for plugin ABI 1.x";
    return NULL;
  }
  return cuda_driver_present() ? &executes : &emits; /* no GPU driver: compile (NVRTC) only */
}
