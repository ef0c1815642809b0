/* tune_main.c — coil-cuda-tune, the cuda plugin's autotuning worker (mode max-autotune): coil-sdk's
 * worker (coil/coil_gpu_tune.h: the spec, the timing loop, what it prints) over the CUDA driver.
 *
 *   coil-cuda-tune SPEC FIRST
 *
 * A spec whose first line is `graphs PLUGIN` times whole artifacts instead (cuda_tune.c's GEMM
 * choice): the plugin at PLUGIN is opened through its entry, as a host would, and each
 * `artifact DIR` line (`artifact -`: one that did not compile) is loaded and run on the same
 * inputs (`in DTYPE RANK SIZES... STRIDES...` lines, standard normal values) into the same
 * outputs (`out` lines), on the legacy stream, measured as coil bench and triton's do_bench
 * measure: `result I MS` is the median of 41 runs, each after a 256 MiB L2 flush and alone
 * between two events. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_tune.h"
#include "cuda_api.h"

static const cuda_driver *cu;
static CUmodule mod;
static CUevent e0, e1;
static CUdeviceptr flush_buf;                   /* written before each timed run */
#define FLUSH_BYTES ((size_t)256 << 20) /* as triton's do_bench: more than any GPU's L2 */

static const char *
init(const char *path)
{
  const char *why = NULL;
  CUdevice dev;
  CUcontext ctx;
  if (!(cu = cuda_driver_get(&why)))
    return why;
  if (cu->DeviceGet(&dev, 0) || cu->DevicePrimaryCtxRetain(&ctx, dev) || cu->CtxSetCurrent(ctx) ||
      (path && cu->ModuleLoad(&mod, path)) || cu->EventCreate(&e0, 0) || cu->EventCreate(&e1, 0))
    return "cannot set up the GPU or load the candidates";
  return NULL;
}

static int
function(const char *name, void **fn)
{
  return cu->ModuleGetFunction((CUfunction *)fn, mod, name);
}

static int
alloc_fill(size_t bytes, unsigned char byte, uint64_t *ptr)
{
  unsigned char *h = malloc(bytes);
  CUdeviceptr p = 0;
  int r = !h || cu->MemAlloc(&p, bytes);
  if (!r) {
    memset(h, byte, bytes);
    r = cu->MemcpyHtoDAsync(p, h, bytes, NULL) || cu->StreamSynchronize(NULL);
  }
  free(h);
  *ptr = p;
  return r;
}

static int
launch(void *fn, unsigned grid, unsigned block, void **params)
{
  return cu->LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}

static int
sync(void)
{
  return cu->StreamSynchronize(NULL);
}

static int
time_launches(void *fn, unsigned grid, unsigned block, void **params, int launches, float *ms)
{
  int r = cu->EventRecord(e0, NULL);
  for (int i = 0; i < launches && !r; i++)
    r = launch(fn, grid, block, params);
  if (!r)
    r = cu->EventRecord(e1, NULL);
  if (!r)
    r = cu->EventSynchronize(e1);
  return r ? r : cu->EventElapsedTime(ms, e0, e1);
}

/* The L2 flush before a timed launch, on the legacy stream the launches take; its buffer is
 * allocated on first use. A different byte each time, so no write can be elided. */
static int
flush(void)
{
  static unsigned char byte;
  int r = flush_buf ? 0 : cu->MemAlloc(&flush_buf, FLUSH_BYTES);
  return r ? r : cu->MemsetD8Async(flush_buf, byte++, FLUSH_BYTES, NULL);
}

/* ---- whole artifacts ---- */

#define MAXT 4096 /* inputs and outputs: a model's params are inputs */
#define MAXA 32   /* artifacts: cuda_tune.c times at most 16 */
#define RUNS 41 /* timed runs of an artifact: the median is its time */

typedef struct {
  coil_plugin_tensor t;
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  size_t bytes;
} tensor;

/* Standard normal values (Box-Muller on xorshift64), as torch.randn and coil bench draw them: a
 * GEMM's power, and so its clock, depends on its data's bits. Zero for integers and bools
 * (indices in range). */
static double
normal(uint64_t *seed)
{
  double u[2];
  for (int k = 0; k < 2; k++) {
    *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
    u[k] = ((double)(*seed >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
  }
  return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* f32 to f16, rounded to nearest; magnitudes below f16's normal range become zero (timing
 * data only) */
static uint16_t
to_f16(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, m = x & 0x7fffffu;
  int e = (int)((x >> 23) & 0xff) - 127 + 15;
  if (e <= 0)
    return (uint16_t)sign;
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  uint32_t h = sign | (uint32_t)e << 10 | m >> 13;
  return (uint16_t)(h + ((m >> 12) & 1)); /* a carry into the exponent is still right */
}

static int
fill_random(tensor *x, uint64_t *seed)
{
  unsigned char *h = calloc(x->bytes ? x->bytes : 1, 1);
  if (!h)
    return 1;
  size_t es = coil_dtype_size((coil_dtype)x->t.dtype), n = x->bytes / (es ? es : 1);
  for (size_t i = 0; i < n && coil_dtype_is_float((coil_dtype)x->t.dtype); i++) {
    double v = normal(seed);
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t hv = x->t.dtype == COIL_F16 ? to_f16(f) : (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
    if (x->t.dtype == COIL_F64)
      memcpy(h + 8 * i, &v, 8);
    else if (es == 4)
      memcpy(h + 4 * i, &f, 4);
    else if (es == 2)
      memcpy(h + 2 * i, &hv, 2);
  }
  CUdeviceptr d = 0;
  int r = x->bytes && (cu->MemAlloc(&d, x->bytes) || cu->MemcpyHtoDAsync(d, h, x->bytes, NULL) || cu->StreamSynchronize(NULL));
  free(h);
  x->t.data = (void *)(uintptr_t)d;
  return r;
}

static bool
read_tensor(const char *line, tensor *x)
{
  int dt, rank, used;
  if (sscanf(line, "%*s %d %d%n", &dt, &rank, &used) != 2 || rank < 0 || rank > COIL_MAX_RANK)
    return false;
  line += used;
  int64_t hi = 0;
  bool empty = false;
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < rank; d++) {
      long long v;
      if (sscanf(line, "%lld%n", &v, &used) != 1 || v < 0)
        return false;
      line += used;
      (pass ? x->strides : x->sizes)[d] = v;
    }
  for (int d = 0; d < rank; d++)
    empty = empty || x->sizes[d] == 0, hi += (x->sizes[d] - 1) * x->strides[d];
  size_t es = coil_dtype_size((coil_dtype)dt);
  if (!es)
    return false;
  x->bytes = empty ? 0 : (size_t)(hi + 1) * es;
  x->t = (coil_plugin_tensor){.struct_size = sizeof x->t, .dtype = dt, .rank = rank, .sizes = x->sizes,
                              .strides = x->strides, .device_type = COIL_DEVICE_CUDA, .device_index = 0};
  return true;
}

static int
cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static int
graphs_main(FILE *f, const char *plugin_path, int first)
{
  static tensor ts[MAXT];
  static const coil_plugin_tensor *in[MAXT], *out[MAXT];
  static char dirs[MAXA][4096];
  int nin = 0, nout = 0, nart = 0;
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    bool is_in = strncmp(line, "in ", 3) == 0, is_out = strncmp(line, "out ", 4) == 0;
    tensor *x = &ts[nin + nout < MAXT ? nin + nout : 0];
    if ((is_in || is_out) && nin + nout < MAXT && read_tensor(line, x)) {
      if (is_in)
        in[nin++] = &x->t;
      else
        out[nout++] = &x->t;
      continue;
    }
    if (strncmp(line, "artifact ", 9) == 0 && nart < MAXA && strlen(line + 9) < sizeof dirs[0]) {
      strcpy(dirs[nart++], line + 9);
      continue;
    }
    fprintf(stderr, "coil-cuda-tune: cannot read spec line: %s\n", line);
    return 2;
  }
  const char *why = init(NULL);
  if (why) {
    printf("nogpu %s\n", why);
    return 1;
  }
  void *so = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  coil_plugin_entry_fn *entry = so ? (coil_plugin_entry_fn *)dlsym(so, "coil_plugin_entry") : NULL;
  static const coil_host_api host = {.struct_size = sizeof host, .abi_major = COIL_PLUGIN_ABI_MAJOR,
                                     .abi_minor = COIL_PLUGIN_ABI_MINOR, .wir_major = COIL_WIR_VERSION_MAJOR,
                                     .wir_minor = COIL_WIR_VERSION_MINOR, .host_version = "coil-cuda-tune"};
  const char *why_not = "no entry";
  const coil_plugin_api *api = entry ? entry(COIL_PLUGIN_ABI_MAJOR, COIL_PLUGIN_ABI_MINOR, &host, &why_not) : NULL;
  coil_plugin *pl = NULL;
  coil_plugin_create_args ca = {.struct_size = sizeof ca, .host = &host};
  if (!api || !api->load || api->create(&ca, &pl)) {
    printf("nogpu cannot open the plugin %s: %s\n", plugin_path, so ? why_not : dlerror());
    return 1;
  }
  if (!flush_buf && cu->MemAlloc(&flush_buf, FLUSH_BYTES)) {
    printf("nogpu cannot allocate the L2 flush's %d MiB\n", (int)(FLUSH_BYTES >> 20));
    return 1;
  }
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < nin + nout; i++)
    if (fill_random(&ts[i], &seed)) {
      printf("nogpu cannot allocate %zu bytes\n", ts[i].bytes);
      return 1;
    }
  coil_plugin_run_args ra = {.struct_size = sizeof ra, .ninputs = (size_t)nin, .inputs = in, .noutputs = (size_t)nout,
                             .outputs = out, .has_stream = 1, .stream = NULL};
  for (int c = first; c < nart; c++) {
    coil_artifact *a = NULL;
    coil_plugin_load_args la = {.struct_size = sizeof la, .artifact_dir = dirs[c]};
    coil_error *e = strcmp(dirs[c], "-") == 0 ? NULL : api->load(pl, &la, &a);
    if (!a) {
      printf("failed %d %s\n", c, e ? api->error_message(e) : "it did not compile");
      if (e)
        api->error_free(e);
      fflush(stdout);
      continue;
    }
    for (int w = 0; w < 3 && !e; w++)
      e = api->run(a, &ra);
    int r = e ? 0 : cu->StreamSynchronize(NULL);
    float t[RUNS];
    for (int k = 0; k < RUNS && !e && !r; k++) { /* each run after an L2 flush, alone between its events */
      if (!(r = cu->MemsetD8Async(flush_buf, (unsigned char)k, FLUSH_BYTES, NULL)))
        r = cu->EventRecord(e0, NULL);
      e = r ? NULL : api->run(a, &ra);
      if (!e && !r && !(r = cu->EventRecord(e1, NULL)) && !(r = cu->EventSynchronize(e1)))
        r = cu->EventElapsedTime(&t[k], e0, e1);
    }
    if (e || r) { /* the context may be poisoned: report and stop; the parent restarts us */
      if (e)
        printf("failed %d %s\n", c, api->error_message(e));
      else
        printf("failed %d GPU error %d\n", c, r);
      return 1;
    }
    api->artifact_free(a);
    qsort(t, RUNS, sizeof *t, cmp_float);
    printf("result %d %.6f\n", c, t[RUNS / 2]);
    fflush(stdout);
  }
  return 0;
}

int
main(int argc, char **argv)
{
  FILE *f = argc == 3 ? fopen(argv[1], "r") : NULL;
  char head[4200];
  if (f && fgets(head, sizeof head, f) && strncmp(head, "graphs ", 7) == 0) {
    head[strcspn(head, "\n")] = 0;
    int rc = graphs_main(f, head + 7, atoi(argv[2]));
    fclose(f);
    return rc;
  }
  if (f)
    fclose(f);
  static const coil_gpu_tune_runtime rt = {.name = "coil-cuda-tune", .init = init, .function = function,
                                           .alloc_fill = alloc_fill, .launch = launch, .sync = sync,
                                           .time = time_launches, .flush = flush};
  return coil_gpu_tune_worker_main(argc, argv, &rt);
}
