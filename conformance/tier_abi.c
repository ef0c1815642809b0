/* tier_abi.c — the ABI tier: the contract of coil_plugin.h itself, which no op test reaches.
 * Each check is a case in its own process:
 *
 *   metadata           the loader's checks of the table (name, vendor, semver, features,
 *                      Wrapper IR range, required functions) pass
 *   reload             open/create/destroy/close three times; two opens of one file at once
 *   host_minor_older   the entry called with host minor 0 and a 1.0-sized host table
 *   host_minor_newer   the entry called with a newer minor and a larger host table
 *   host_major_other   the entry declines another major, with a reason
 *   struct_size        create/compile/load/run with every argument struct larger than the
 *                      plugin's (trailing bytes it must not need) and create args smaller
 *   no_log             a host table without log (optional functions may be NULL)
 *   errors             bad option, bad artifact directory, wrong tensors: each an error
 *                      object with a code and a message, never a crash
 *   threads            two threads compiling different programs on one instance at once
 *   reload_artifact    an artifact loaded after dlclose/dlopen of the plugin
 *   program_handoff    (1.3) compile from program_text alone, the program pointer garbage
 *   extensions         (1.3) get_extension of an unknown name is NULL
 *   devices            (1.4) device_count and device_info, and an index past the last refused
 *   device_memory      (1.4) allocations of 0, 1 and 1 MiB bytes, aligned; an exact round trip
 *                      host -> device -> device -> host at odd offsets; an absurd size is
 *                      COIL_ERR_OUT_OF_MEMORY
 *   device_run         (1.4) a program run on tensors placed in device memory, synchronously,
 *                      then queued on a stream (copies too) and waited for through an event
 *   device_async_error (1.4) an embedding with an index out of range, queued on a stream: the
 *                      error comes back (from the run or the sync) naming the kernel
 *
 * The checks that run a program use small f32 pointwise graphs; a plugin that does not claim
 * their ops gets those checks "not supported". */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifact.h"
#include "conf.h"
#include "graph.h"

static const char prog_a[] = "coil 1\ngraph abi_a(%x: f32[4, 5], %y: f32[4, 5]) {\n"
                             "  %z = aten.add.Tensor(%x, %y)\n  %o = aten.relu.default(%z)\n  return (%o)\n}\n";
static const char prog_e[] = "coil 1\ngraph abi_e(%w: f32[4, 3] param, %i: i64[5]) {\n"
                             "  %o = aten.embedding.default(%w, %i)\n  return (%o)\n}\n";
static const char prog_b[] = "coil 1\ngraph abi_b(%x: f32[6, 3], %y: f32[6, 3]) {\n"
                             "  %z = aten.mul.Tensor(%x, %y)\n  %o = aten.sub.Tensor(%z, %x)\n  return (%o)\n}\n";

#define PAD 64 /* bytes a "newer" struct has past what the plugin knows */

/* A zeroed block of sizeof(T) + PAD bytes whose tail is 0xff: a plugin reading past what it
 * knows (instead of checking struct_size) reads garbage. */
static void *
padded(size_t size)
{
  unsigned char *p = calloc(1, size + PAD);
  if (!p)
    abort();
  memset(p + size, 0xff, PAD);
  return p;
}

typedef struct {
  coil_loaded_plugin *lp;
  const coil_plugin_api *api; /* &lp->api */
  coil_graph *g;
  coil_wir_program *p;
  coil_tensor_list in, want;
} prog;

static int
prog_init(prog *pr, coil_loaded_plugin *lp, const coil_plugin *inst, const char *text, conf_result *r)
{
  memset(pr, 0, sizeof *pr);
  pr->lp = lp;
  pr->api = &lp->api;
  coil_diag d = {0};
  pr->g = coil_graph_parse("abi.coil", text, strlen(text), &d);
  coil_compile_options o = {.fuse = true, .verify = true};
  if (!pr->g || !(pr->p = coil_compile_graph(pr->g, &o, &d))) {
    snprintf(r->msg, sizeof r->msg, "the ABI test program does not compile: %.400s", d.msg);
    return -1;
  }
  char why[256];
  if (!conf_program_supported(lp, inst, pr->p, why, sizeof why)) {
    r->status = CONF_UNSUPPORTED;
    snprintf(r->msg, sizeof r->msg, "the ABI test program needs %s", why);
    return -1;
  }
  uint64_t seed = 7;
  for (int i = 0; i < pr->g->ninputs; i++) {
    coil_tensor t;
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < pr->g->inputs[i]->type.rank; k++)
      coil_sym_is_const(pr->g->inputs[i]->type.dims[k], &shape[k]);
    coil_tensor_init(&t, pr->g->inputs[i]->type.dtype, pr->g->inputs[i]->type.rank, shape, NULL);
    conf_random(&t, &seed, false, 0, 4); /* integers (prog_e's indices) in [0, 4) */
    coil_tensor_list_add(&pr->in, pr->g->inputs[i]->name, &t);
  }
  if (coil_ref_run(pr->g, &pr->in, &pr->want, &d)) {
    snprintf(r->msg, sizeof r->msg, "ref: %.400s", d.msg);
    return -1;
  }
  return 0;
}

static void
prog_free(prog *pr)
{
  coil_wir_free(pr->p);
  coil_graph_free(pr->g);
  coil_tensor_list_free(&pr->in);
  coil_tensor_list_free(&pr->want);
}

/* Takes a plugin error: its message into r (prefixed), freed through the plugin. Returns
 * -1 if e was an error. A NULL or empty message is itself a failure. */
static int
take(const coil_plugin_api *api, coil_error *e, const char *what, conf_result *r)
{
  if (!e)
    return 0;
  const char *m = api->error_message(e);
  snprintf(r->msg, sizeof r->msg, "%s: [%d] %s", what, (int)api->error_code(e), m && *m ? m : "(no message)");
  api->error_free(e);
  return -1;
}

/* Compiles into a fresh directory (*dir, to remove) with raw calls and padded structs, as the
 * host does: the program's text, and the program itself unless the plugin reads only the text;
 * program, when not NULL, is what the program pointer is set to instead (a decoy). */
static int
raw_compile_as(const prog *pr, coil_plugin *inst, size_t pad, const void *program, char *dir, conf_result *r)
{
  strcpy(dir, "/tmp/coil-conformance-XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(r->msg, sizeof r->msg, "mkdtemp: %s", strerror(errno));
    return -1;
  }
  coil_plugin_compile_args *a = padded(sizeof *a);
  char *text = coil_wir_print(pr->p);
  a->struct_size = sizeof *a + pad;
  a->program = program ? program : (pr->api->features & COIL_FEATURE_PROGRAM_TEXT) ? NULL : pr->p;
  a->artifact_dir = dir;
  a->program_text = text;
  a->program_text_len = strlen(text);
  int rc = take(pr->api, pr->api->compile(inst, a), "compile", r);
  free(text);
  free(a);
  return rc;
}

static int
raw_compile(const prog *pr, coil_plugin *inst, size_t pad, char *dir, conf_result *r)
{
  return raw_compile_as(pr, inst, pad, NULL, dir, r);
}

/* Loads dir and runs the program once with raw calls (structs padded by pad bytes); compares
 * with ref. */
static int
raw_load_run(const prog *pr, coil_plugin *inst, const char *dir, size_t pad, conf_result *r)
{
  const coil_plugin_api *api = pr->api;
  if (!(api->features & COIL_FEATURE_EXECUTES))
    return 0;
  coil_plugin_load_args *la = padded(sizeof *la);
  la->struct_size = sizeof *la + pad;
  la->artifact_dir = dir;
  coil_artifact *art = NULL;
  int rc = take(api, api->load(inst, la, &art), "load", r);
  free(la);
  if (rc)
    return -1;
  int nin = pr->p->ninputs;
  const coil_line *ol = &pr->p->lines[pr->p->nlines - 1];
  int nout = ol->nargs;
  coil_plugin_tensor *ts[16];
  const coil_plugin_tensor *tin[8], *tout[8];
  int64_t strides[16][COIL_MAX_RANK];
  coil_tensor outs[8];
  for (int i = 0; i < nin + nout && i < 16; i++) {
    coil_plugin_tensor *t = ts[i] = padded(sizeof *t);
    if (i < nin) {
      const coil_tensor *x = coil_tensor_list_find(&pr->in, pr->p->inputs[i].label);
      coil_plugin_tensor_wrap(x, strides[i], t);
      tin[i] = t;
    } else {
      const coil_buffer *b = &pr->p->buffers[ol->args[i - nin]];
      int64_t shape[COIL_MAX_RANK];
      for (int k = 0; k < b->rank; k++)
        coil_sym_is_const(b->sizes[k], &shape[k]);
      coil_tensor_init(&outs[i - nin], b->dtype, b->rank, shape, NULL);
      coil_plugin_tensor_wrap(&outs[i - nin], strides[i], t);
      tout[i - nin] = t;
    }
    t->struct_size = sizeof *t + pad;
  }
  /* A plugin whose device the host cannot touch (ABI 1.4) gets its tensors in device memory. */
  coil_device_info info = {0};
  coil_diag d = {{0}};
  void *mem[16] = {0};
  bool on_device = coil_plugin_has_devices(pr->lp) &&
                   !coil_plugin_device_info(pr->lp, inst, 0, &info, &d) &&
                   !(info.flags & COIL_DEVICE_HOST_VISIBLE);
  for (int i = 0; on_device && !rc && i < nin + nout && i < 16; i++) {
    size_t bytes = 1;
    for (int k = 0; k < ts[i]->rank; k++)
      bytes *= (size_t)ts[i]->sizes[k];
    bytes *= coil_dtype_size((coil_dtype)ts[i]->dtype);
    if (coil_plugin_mem_alloc(pr->lp, inst, 0, bytes, &mem[i], &d) ||
        coil_plugin_mem_copy(pr->lp, inst, COIL_COPY_HOST_TO_DEVICE, 0, mem[i], ts[i]->data, bytes, NULL, &d)) {
      snprintf(r->msg, sizeof r->msg, "placing tensor %d on the device: %.400s", i, d.msg);
      rc = -1;
    }
    ts[i]->data = mem[i];
    ts[i]->device_type = info.device_type;
    ts[i]->device_index = info.device_index;
  }
  coil_plugin_run_args *ra = padded(sizeof *ra);
  ra->struct_size = sizeof *ra + pad;
  ra->ninputs = (size_t)nin;
  ra->inputs = tin;
  ra->noutputs = (size_t)nout;
  ra->outputs = tout;
  if (!rc)
    rc = take(api, api->run(art, ra), "run", r);
  free(ra);
  for (int i = 0; on_device && !rc && i < nout; i++) {
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(outs[i].dtype);
    if (coil_plugin_mem_copy(pr->lp, inst, COIL_COPY_DEVICE_TO_HOST, 0, outs[i].data, mem[nin + i], bytes, NULL, &d)) {
      snprintf(r->msg, sizeof r->msg, "copying output %d back: %.400s", i, d.msg);
      rc = -1;
    }
  }
  for (int i = 0; i < 16; i++)
    coil_plugin_mem_free(pr->lp, inst, 0, mem[i]);
  for (int i = 0; i < nout && !rc; i++) {
    double nmse;
    char m[256];
    if (!conf_compare(&outs[i], &pr->want.tensors[i], &nmse, m, sizeof m)) {
      snprintf(r->msg, sizeof r->msg, "wrong output: %s", m);
      rc = -1;
    }
  }
  for (int i = 0; i < nin + nout && i < 16; i++)
    free(ts[i]);
  for (int i = 0; i < nout; i++)
    coil_tensor_free(&outs[i]);
  api->artifact_free(art);
  return rc;
}

/* A raw instance made with a given host table and create-args size. */
static int
raw_create(const coil_plugin_api *api, const coil_host_api *host, size_t args_size, coil_plugin **inst, conf_result *r)
{
  coil_plugin_create_args *a = padded(sizeof *a);
  a->struct_size = args_size;
  a->host = host;
  *inst = NULL;
  int rc = take(api, api->create(a, inst), "create", r);
  free(a);
  return rc;
}

/* ---- the checks ---- */

static int
check_metadata(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  snprintf(r->msg, sizeof r->msg, "%s %s by %s, ABI %u.%u (host minor >= %u), Wrapper IR %u.%u-%u, %s",
           lp->api.name, lp->api.version, lp->api.vendor, lp->api.abi_major, lp->api.abi_minor,
           lp->api.min_host_minor, lp->api.wir_major, lp->api.wir_min_minor, lp->api.wir_max_minor,
           lp->api.features & COIL_FEATURE_EXECUTES ? "executes" : "emits only");
  conf_close(lp, inst);
  return 0;
}

static int
check_reload(const conf_ctx *c, conf_result *r)
{
  for (int k = 0; k < 3; k++) {
    coil_loaded_plugin *lp;
    coil_plugin *inst;
    if (conf_open(c, &lp, &inst, r))
      return -1;
    conf_close(lp, inst);
  }
  coil_loaded_plugin *a, *b;
  coil_plugin *ia, *ib;
  if (conf_open(c, &a, &ia, r))
    return -1;
  if (conf_open(c, &b, &ib, r)) {
    conf_close(a, ia);
    return -1;
  }
  conf_close(a, ia); /* the first closed while the second is open */
  prog pr;
  int rc = prog_init(&pr, b, ib, prog_a, r);
  char dir[64] = "";
  if (!rc)
    rc = raw_compile(&pr, ib, 0, dir, r) || raw_load_run(&pr, ib, dir, 0, r);
  if (dir[0])
    coil_artifact_remove(dir);
  prog_free(&pr);
  conf_close(b, ib);
  return rc;
}

typedef struct {
  void *handle;
  coil_plugin_entry_fn *entry;
} raw_lib;

static int
raw_open(const conf_ctx *c, raw_lib *l, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  char path[1024];
  snprintf(path, sizeof path, "%s", lp->path);
  conf_close(lp, inst);
  l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  l->entry = l->handle ? (coil_plugin_entry_fn *)dlsym(l->handle, COIL_PLUGIN_ENTRY_SYMBOL) : NULL;
  if (!l->entry) {
    snprintf(r->msg, sizeof r->msg, "%.300s: %.170s", path, dlerror());
    return -1;
  }
  return 0;
}

static coil_host_api
host_table(size_t size)
{
  return (coil_host_api){.struct_size = size, .abi_major = COIL_PLUGIN_ABI_MAJOR, .abi_minor = COIL_PLUGIN_ABI_MINOR,
                         .wir_major = COIL_WIR_VERSION_MAJOR, .wir_minor = COIL_WIR_VERSION_MINOR,
                         .host_version = "0.1.0", .log = NULL};
}

static int
check_host_minor(const conf_ctx *c, bool newer, conf_result *r)
{
  raw_lib l;
  if (raw_open(c, &l, r))
    return -1;
  coil_host_api *host = padded(sizeof *host);
  *host = host_table(newer ? sizeof *host + PAD : COIL_HOST_API_SIZE_1_0);
  uint32_t minor = newer ? COIL_PLUGIN_ABI_MINOR + 3 : 0;
  host->abi_minor = minor;
  const char *why = NULL;
  const coil_plugin_api *api = l.entry(COIL_PLUGIN_ABI_MAJOR, minor, host, &why);
  int rc = 0;
  if (!api && newer) {
    snprintf(r->msg, sizeof r->msg, "declined host ABI %d.%u (a newer minor must be accepted): %s",
             COIL_PLUGIN_ABI_MAJOR, minor, why ? why : "(no reason)");
    rc = -1;
  } else if (!api && (!why || !*why)) {
    snprintf(r->msg, sizeof r->msg, "declined host ABI %d.0 without a reason", COIL_PLUGIN_ABI_MAJOR);
    rc = -1;
  } else if (!api) {
    snprintf(r->msg, sizeof r->msg, "declines host minor 0: %s", why);
  } else if (api->abi_major != COIL_PLUGIN_ABI_MAJOR || api->min_host_minor > minor) {
    snprintf(r->msg, sizeof r->msg, "accepted host ABI %d.%u but needs host minor %u", COIL_PLUGIN_ABI_MAJOR, minor,
             api->min_host_minor);
    rc = -1;
  } else { /* an instance made with that host table works */
    coil_plugin *inst;
    if (raw_create(api, host, sizeof(coil_plugin_create_args), &inst, r) == 0)
      api->destroy(inst);
    else
      rc = -1;
  }
  free(host);
  dlclose(l.handle);
  return rc;
}

static int
check_host_major(const conf_ctx *c, conf_result *r)
{
  raw_lib l;
  if (raw_open(c, &l, r))
    return -1;
  coil_host_api host = host_table(sizeof host);
  int rc = 0;
  uint32_t majors[] = {COIL_PLUGIN_ABI_MAJOR + 1, COIL_PLUGIN_ABI_MAJOR - 1};
  for (int k = 0; k < 2 && !rc; k++) {
    host.abi_major = majors[k];
    const char *why = NULL;
    const coil_plugin_api *api = l.entry(majors[k], 0, &host, &why);
    if (api) {
      snprintf(r->msg, sizeof r->msg, "accepted a host of ABI major %u", majors[k]);
      rc = -1;
    } else if (!why || !*why) {
      snprintf(r->msg, sizeof r->msg, "declined ABI major %u without a reason in why_not", majors[k]);
      rc = -1;
    }
  }
  dlclose(l.handle);
  return rc;
}

/* Every struct larger than the plugin knows; create args also smaller (no host). */
static int
check_struct_size(const conf_ctx *c, const coil_host_api *host, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  const coil_plugin_api *api = &lp->api;
  coil_plugin *big = NULL, *small = NULL;
  prog pr;
  char dir[64] = "";
  int rc = prog_init(&pr, lp, inst, prog_a, r);
  if (!rc)
    rc = raw_create(api, host, sizeof(coil_plugin_create_args) + PAD, &big, r);
  if (!rc) /* a 1.0 host that knew only the options: host reads as NULL */
    rc = raw_create(api, host, COIL_STRUCT_SIZE_TO(coil_plugin_create_args, options), &small, r);
  if (!rc)
    rc = raw_compile(&pr, big, PAD, dir, r) || raw_load_run(&pr, big, dir, PAD, r);
  if (dir[0])
    coil_artifact_remove(dir);
  if (!rc && host && !host->log) /* the no_log check: a compile and run with small too */
    rc = raw_compile(&pr, small, 0, dir, r) || raw_load_run(&pr, small, dir, 0, r);
  if (dir[0])
    coil_artifact_remove(dir);
  if (big)
    api->destroy(big);
  if (small)
    api->destroy(small);
  prog_free(&pr);
  conf_close(lp, inst);
  return rc;
}

/* A call that must fail: an error object with a message. */
static int
expect_error(const coil_plugin_api *api, coil_error *e, const char *what, conf_result *r)
{
  if (!e) {
    snprintf(r->msg, sizeof r->msg, "%s: succeeded, expected an error", what);
    return -1;
  }
  const char *m = api->error_message(e);
  coil_error_code code = api->error_code(e);
  int bad = !m || !*m || code < COIL_ERR_INVALID_ARGUMENT || code > COIL_ERR_IO;
  if (bad)
    snprintf(r->msg, sizeof r->msg, "%s: error code %d, message '%s' (expected a known code and a message)", what,
             (int)code, m ? m : "(null)");
  api->error_free(e);
  return bad ? -1 : 0;
}

static int
check_errors(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  const coil_plugin_api *api = &lp->api;
  const char *k[] = {"no_such_option_xyz"}, *v[] = {"1"};
  coil_plugin_options bad = {.struct_size = sizeof bad, .count = 1, .keys = k, .values = v};
  coil_plugin_create_args ca = {.struct_size = sizeof ca, .options = &bad, .host = &lp->host};
  coil_plugin *x = NULL;
  int rc = expect_error(api, api->create(&ca, &x), "create with an unknown option", r);
  prog pr;
  char dir[64] = "";
  if (!rc)
    rc = prog_init(&pr, lp, inst, prog_a, r);
  else
    memset(&pr, 0, sizeof pr);
  if (!rc) {
    strcpy(dir, "/tmp/coil-conformance-XXXXXX");
    if (!mkdtemp(dir))
      dir[0] = 0, rc = -1;
  }
  if (!rc) {
    coil_plugin_compile_args a = {.struct_size = sizeof a, .program = pr.p, .artifact_dir = dir, .options = &bad};
    rc = expect_error(api, api->compile(inst, &a), "compile with an unknown option", r);
  }
  if (!rc && (api->features & COIL_FEATURE_EXECUTES)) {
    coil_artifact *art = NULL;
    coil_plugin_load_args la = {.struct_size = sizeof la, .artifact_dir = dir};
    rc = expect_error(api, api->load(inst, &la, &art), "load of an empty directory", r);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, COIL_ARTIFACT_MANIFEST);
    FILE *f = fopen(path, "w");
    if (f)
      fputs("{\"plugin\": 42, garbage", f), fclose(f);
    if (!rc)
      rc = expect_error(api, api->load(inst, &la, &art), "load of a garbage manifest", r);
    la.artifact_dir = "/nonexistent/coil-conformance";
    if (!rc)
      rc = expect_error(api, api->load(inst, &la, &art), "load of a missing directory", r);
    coil_artifact_remove(dir);
    dir[0] = 0;
    /* a good artifact, run with wrong tensors */
    if (!rc && !(rc = raw_compile(&pr, inst, 0, dir, r))) {
      la.artifact_dir = dir;
      rc = take(api, api->load(inst, &la, &art), "load", r);
    }
    if (!rc) {
      coil_tensor t;
      int64_t shape[2] = {4, 5}, wrong[2] = {4, 6}, st[COIL_MAX_RANK], st2[COIL_MAX_RANK];
      coil_tensor_init(&t, COIL_F32, 2, shape, NULL);
      coil_plugin_tensor a, b;
      coil_plugin_tensor_wrap(&t, st, &a);
      coil_plugin_tensor_wrap(&t, st2, &b);
      const coil_plugin_tensor *ins[2] = {&a, &b}, *outs[1] = {&b};
      coil_plugin_run_args ra = {.struct_size = sizeof ra, .ninputs = 1, .inputs = ins, .noutputs = 1, .outputs = outs};
      rc = expect_error(api, api->run(art, &ra), "run with one input of two", r);
      ra.ninputs = 2;
      a.dtype = COIL_I64;
      if (!rc)
        rc = expect_error(api, api->run(art, &ra), "run with an i64 input where f32 is expected", r);
      a.dtype = COIL_F32;
      a.sizes = wrong;
      if (!rc)
        rc = expect_error(api, api->run(art, &ra), "run with an input of the wrong size", r);
      coil_tensor_free(&t);
      api->artifact_free(art);
    }
  }
  if (dir[0])
    coil_artifact_remove(dir);
  prog_free(&pr);
  conf_close(lp, inst);
  return rc;
}

typedef struct {
  const prog *pr;
  coil_plugin *inst;
  char dir[64];
  conf_result r;
  int rc;
} compile_job;

static void *
compile_thread(void *arg)
{
  compile_job *j = arg;
  j->rc = raw_compile(j->pr, j->inst, 0, j->dir, &j->r);
  return NULL;
}

static int
check_threads(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  prog a, b;
  int rc = prog_init(&a, lp, inst, prog_a, r);
  if (!rc)
    rc = prog_init(&b, lp, inst, prog_b, r);
  else
    memset(&b, 0, sizeof b);
  compile_job ja = {.pr = &a, .inst = inst}, jb = {.pr = &b, .inst = inst};
  if (!rc) {
    pthread_t ta, tb;
    pthread_create(&ta, NULL, compile_thread, &ja);
    pthread_create(&tb, NULL, compile_thread, &jb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (ja.rc || jb.rc) {
      snprintf(r->msg, sizeof r->msg, "concurrent compile: %.440s", ja.rc ? ja.r.msg : jb.r.msg);
      rc = -1;
    }
  }
  if (!rc)
    rc = raw_load_run(&a, inst, ja.dir, 0, r) || raw_load_run(&b, inst, jb.dir, 0, r);
  if (ja.dir[0])
    coil_artifact_remove(ja.dir);
  if (jb.dir[0])
    coil_artifact_remove(jb.dir);
  prog_free(&a), prog_free(&b);
  conf_close(lp, inst);
  return rc;
}

static int
check_reload_artifact(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  prog pr;
  char dir[64] = "";
  int rc = prog_init(&pr, lp, inst, prog_a, r);
  if (!rc)
    rc = raw_compile(&pr, inst, 0, dir, r);
  prog_free(&pr);
  conf_close(lp, inst);
  if (!rc && !conf_open(c, &lp, &inst, r)) { /* a fresh dlopen: load what the last one wrote */
    rc = prog_init(&pr, lp, inst, prog_a, r) || raw_load_run(&pr, inst, dir, 0, r);
    prog_free(&pr);
    conf_close(lp, inst);
  } else if (!rc) {
    rc = -1;
  }
  if (dir[0])
    coil_artifact_remove(dir);
  return rc;
}

/* A plugin that reads the program as text (COIL_FEATURE_PROGRAM_TEXT) compiles and runs it
 * when the program pointer points at garbage: a host whose internal structs changed. */
static int
check_program_handoff(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  if (!(lp->api.features & COIL_FEATURE_PROGRAM_TEXT)) {
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "skipped: the plugin reads the host's structs (no COIL_FEATURE_PROGRAM_TEXT, ABI 1.3)");
    conf_close(lp, inst);
    return 0;
  }
  size_t n = 16 * sizeof(coil_wir_program);
  unsigned char *decoy = malloc(n); /* every field garbage: pointers, counts, versions */
  if (!decoy)
    abort();
  memset(decoy, 0x5a, n);
  prog pr;
  char dir[64] = "";
  int rc = prog_init(&pr, lp, inst, prog_a, r);
  if (!rc)
    rc = raw_compile_as(&pr, inst, 0, decoy, dir, r);
  if (!rc)
    rc = raw_load_run(&pr, inst, dir, 0, r);
  if (!rc)
    snprintf(r->msg, sizeof r->msg, "compiled from program_text alone (the program pointer was garbage) and ran right");
  prog_free(&pr);
  free(decoy);
  conf_close(lp, inst);
  if (dir[0])
    coil_artifact_remove(dir);
  return rc;
}

/* get_extension (ABI 1.3, optional): an unknown name gives NULL, asked twice. */
static int
check_extensions(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, r))
    return -1;
  int rc = 0;
  if (!lp->api.get_extension) {
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "skipped: the plugin has no get_extension (ABI 1.3, optional)");
  } else {
    const char *unknown = "coil-conformance.no-such-extension.v1";
    const void *a = lp->api.get_extension(inst, unknown), *b = lp->api.get_extension(inst, unknown);
    if (a || b) {
      snprintf(r->msg, sizeof r->msg, "get_extension(\"%s\") returned %p; expected NULL for a name it does not know",
               unknown, a ? a : b);
      rc = -1;
    }
  }
  conf_close(lp, inst);
  return rc;
}

/* ---- devices (ABI 1.4) ---- */

/* Opens the plugin; for one without devices, fills r as skipped and returns 1. */
static int
open_devices(const conf_ctx *c, coil_loaded_plugin **lp, coil_plugin **inst, conf_result *r)
{
  if (conf_open(c, lp, inst, r))
    return -1;
  if (coil_plugin_has_devices(*lp))
    return 0;
  r->status = CONF_SKIP;
  snprintf(r->msg, sizeof r->msg, "skipped: the plugin has no devices (ABI 1.4, optional)");
  conf_close(*lp, *inst);
  return 1;
}

static int
diag_fail(conf_result *r, const char *what, const coil_diag *d)
{
  snprintf(r->msg, sizeof r->msg, "%s: %.440s", what, d->msg);
  return -1;
}

static int
check_devices(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  int rc = open_devices(c, &lp, &inst, r);
  if (rc)
    return rc > 0 ? 0 : -1;
  int n = coil_plugin_device_count(lp, inst);
  coil_diag d = {{0}};
  coil_device_info info;
  if (n < 1) {
    snprintf(r->msg, sizeof r->msg, "device_count is %d; a plugin with devices has at least one", n);
    rc = -1;
  }
  for (int i = 0; !rc && i < n; i++) {
    if (coil_plugin_device_info(lp, inst, i, &info, &d))
      rc = diag_fail(r, "device_info", &d);
    else if (!strcmp(info.name, "(unnamed device)"))
      rc = (snprintf(r->msg, sizeof r->msg, "device %d has no name", i), -1);
    else if (i == 0)
      snprintf(r->msg, sizeof r->msg, "%d device(s); 0: %.200s, type %d:%d, %s, alignment %u", n,
               info.name, (int)info.device_type, (int)info.device_index,
               info.flags & COIL_DEVICE_HOST_VISIBLE ? "host-visible" : "not host-visible",
               info.alignment);
  }
  if (!rc) {
    int e = coil_plugin_device_info(lp, inst, n, &info, &d);
    if (e != -COIL_ERR_INVALID_ARGUMENT) {
      snprintf(r->msg, sizeof r->msg, "device_info(%d), one past the last device, %s; expected "
               "COIL_ERR_INVALID_ARGUMENT", n, e ? "failed with another code" : "succeeded");
      rc = -1;
    }
  }
  conf_close(lp, inst);
  return rc;
}

static int
check_device_memory(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  int rc = open_devices(c, &lp, &inst, r);
  if (rc)
    return rc > 0 ? 0 : -1;
  coil_diag d = {{0}};
  coil_device_info info;
  void *m[4] = {0};
  size_t sizes[4] = {0, 1, (size_t)1 << 20, (size_t)1 << 20};
  size_t n = 1000, hn = sizes[2] + n; /* the pattern: enough for n bytes, then a whole 1 MiB */
  unsigned char *host = malloc(hn), *back = calloc(1, sizes[2]);
  if (!host || !back)
    abort();
  for (size_t k = 0; k < hn; k++)
    host[k] = (unsigned char)(k * 131 + 7);
  rc = coil_plugin_device_info(lp, inst, 0, &info, &d) ? diag_fail(r, "device_info", &d) : 0;
  for (int k = 0; !rc && k < 4; k++) {
    if (coil_plugin_mem_alloc(lp, inst, 0, sizes[k], &m[k], &d))
      rc = diag_fail(r, "mem_alloc", &d);
    else if ((uintptr_t)m[k] % info.alignment)
      rc = (snprintf(r->msg, sizeof r->msg, "mem_alloc of %zu bytes gave %p, not aligned to the "
                     "device's %u", sizes[k], m[k], info.alignment), -1);
  }
  /* host -> a+3 (n bytes), host+n -> b (1 MiB), a+3 -> b+5 (n bytes), b -> host (1 MiB) */
  if (!rc && (coil_plugin_mem_copy(lp, inst, COIL_COPY_HOST_TO_DEVICE, 0, (char *)m[2] + 3, host, n, NULL, &d) ||
              coil_plugin_mem_copy(lp, inst, COIL_COPY_HOST_TO_DEVICE, 0, m[3], host + n, sizes[3], NULL, &d) ||
              coil_plugin_mem_copy(lp, inst, COIL_COPY_DEVICE_TO_DEVICE, 0, (char *)m[3] + 5, (char *)m[2] + 3, n, NULL, &d) ||
              coil_plugin_mem_copy(lp, inst, COIL_COPY_DEVICE_TO_HOST, 0, back, m[3], sizes[3], NULL, &d)))
    rc = diag_fail(r, "mem_copy", &d);
  for (size_t k = 0; !rc && k < sizes[3]; k++) {
    unsigned char want = k < 5 ? host[n + k] : k < 5 + n ? host[k - 5] : host[n + k];
    if (back[k] != want)
      rc = (snprintf(r->msg, sizeof r->msg, "after host -> device -> device -> host copies, byte "
                     "%zu is 0x%02x; expected 0x%02x", k, back[k], want), -1);
  }
  void *huge = NULL;
  if (!rc) {
    int e = coil_plugin_mem_alloc(lp, inst, 0, (size_t)1 << 62, &huge, &d);
    if (e != -COIL_ERR_OUT_OF_MEMORY)
      rc = (snprintf(r->msg, sizeof r->msg, "mem_alloc of 2^62 bytes %s; expected "
                     "COIL_ERR_OUT_OF_MEMORY", e ? "failed with another code" : "succeeded"), -1);
  }
  coil_plugin_mem_free(lp, inst, 0, huge);
  for (int k = 0; k < 4; k++)
    coil_plugin_mem_free(lp, inst, 0, m[k]);
  free(host), free(back);
  conf_close(lp, inst);
  return rc;
}

/* Runs art once with every tensor placed in device 0's memory: synchronously, or (on_stream)
 * with the copies and the run queued on a stream of the plugin's and waited for through an
 * event. compare: the outputs against pr->want. Returns 0, or -1 with r->msg; *code: the
 * plugin's error code when the run or a sync failed. */
static int
device_run(const prog *pr, coil_plugin *inst, coil_artifact *art, bool on_stream, bool compare,
           int *code, conf_result *r)
{
  const coil_loaded_plugin *lp = pr->lp;
  coil_diag d = {{0}};
  coil_device_info info;
  int nin = pr->p->ninputs;
  const coil_line *ol = &pr->p->lines[pr->p->nlines - 1];
  int nout = ol->nargs, n = nin + nout, rc = 0;
  coil_plugin_tensor ts[16];
  const coil_plugin_tensor *tp[16];
  int64_t strides[16][COIL_MAX_RANK];
  coil_tensor outs[8] = {0};
  void *mem[16] = {0};
  coil_stream *s = NULL;
  coil_event *ev = NULL;
  *code = 0;
  if (n > 16 || nout > 8)
    return (snprintf(r->msg, sizeof r->msg, "too many tensors"), -1);
  if (coil_plugin_device_info(lp, inst, 0, &info, &d))
    return diag_fail(r, "device_info", &d);
  if (on_stream && coil_plugin_stream_create(lp, inst, 0, &s, &d))
    return diag_fail(r, "stream_create", &d);
  for (int i = 0; !rc && i < n; i++) {
    const coil_tensor *x;
    if (i < nin) {
      x = coil_tensor_list_find(&pr->in, pr->p->inputs[i].label);
    } else {
      const coil_buffer *b = &pr->p->buffers[ol->args[i - nin]];
      int64_t shape[COIL_MAX_RANK];
      for (int k = 0; k < b->rank; k++)
        coil_sym_is_const(b->sizes[k], &shape[k]);
      coil_tensor_init(&outs[i - nin], b->dtype, b->rank, shape, NULL);
      memset(outs[i - nin].data, 0xff, (size_t)coil_tensor_numel(&outs[i - nin]) * coil_dtype_size(b->dtype));
      x = &outs[i - nin];
    }
    coil_plugin_tensor_wrap(x, strides[i], &ts[i]);
    ts[i].device_type = info.device_type;
    ts[i].device_index = info.device_index;
    size_t bytes = (size_t)coil_tensor_numel(x) * coil_dtype_size(x->dtype);
    if (coil_plugin_mem_alloc(lp, inst, 0, bytes, &mem[i], &d) ||
        coil_plugin_mem_copy(lp, inst, COIL_COPY_HOST_TO_DEVICE, 0, mem[i], x->data, bytes, s, &d))
      rc = diag_fail(r, "placing a tensor", &d);
    ts[i].data = mem[i];
    tp[i] = &ts[i];
  }
  if (!rc) {
    int e = coil_plugin_run_stream(lp, art, nin, tp, nout, tp + nin, s != NULL, s, &d);
    if (!e && s && !(e = coil_plugin_event_record(lp, inst, s, &ev, &d)))
      e = coil_plugin_event_sync(lp, inst, ev, &d);
    if (e) {
      *code = -e;
      rc = diag_fail(r, s ? "a run on a stream" : "a run on device memory", &d);
    }
  }
  for (int i = 0; !rc && i < nout; i++) {
    size_t bytes = (size_t)coil_tensor_numel(&outs[i]) * coil_dtype_size(outs[i].dtype);
    if (coil_plugin_mem_copy(lp, inst, COIL_COPY_DEVICE_TO_HOST, 0, outs[i].data, mem[nin + i], bytes, NULL, &d))
      rc = diag_fail(r, "copying an output back", &d);
    double nmse;
    char m[256];
    if (!rc && compare && !conf_compare(&outs[i], &pr->want.tensors[i], &nmse, m, sizeof m))
      rc = (snprintf(r->msg, sizeof r->msg, "wrong output%s: %s", s ? " (on a stream)" : "", m), -1);
  }
  coil_plugin_event_destroy(lp, inst, ev);
  coil_plugin_stream_destroy(lp, inst, s);
  for (int i = 0; i < n; i++)
    coil_plugin_mem_free(lp, inst, 0, mem[i]);
  for (int i = 0; i < nout; i++)
    coil_tensor_free(&outs[i]);
  return rc;
}

static void
device_teardown(coil_loaded_plugin *lp, coil_plugin *inst, prog *pr, const char *dir, coil_artifact *art)
{
  if (art)
    coil_plugin_artifact_free(lp, art);
  if (dir[0])
    coil_artifact_remove(dir);
  prog_free(pr);
  if (lp)
    conf_close(lp, inst);
}

/* Compiles and loads text's program on a fresh instance: 0; or, everything released, -1 (r
 * says why) or 1 (r is skipped or not supported: no devices, no execution, ops not claimed). */
static int
device_setup(const conf_ctx *c, const char *text, coil_loaded_plugin **lp, coil_plugin **inst,
             prog *pr, char *dir, coil_artifact **art, conf_result *r)
{
  memset(pr, 0, sizeof *pr);
  *art = NULL;
  dir[0] = 0;
  int rc = open_devices(c, lp, inst, r);
  if (rc)
    return rc;
  coil_diag d = {{0}};
  if (!((*lp)->api.features & COIL_FEATURE_EXECUTES)) {
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "skipped: the plugin does not execute");
    rc = 1;
  } else if (prog_init(pr, *lp, *inst, text, r)) {
    rc = r->status == CONF_UNSUPPORTED ? 1 : -1;
  } else if (raw_compile(pr, *inst, 0, dir, r)) {
    rc = -1;
  } else if (coil_plugin_load(*lp, *inst, dir, NULL, art, &d)) {
    rc = diag_fail(r, "load", &d);
  }
  if (rc)
    device_teardown(*lp, *inst, pr, dir, *art);
  return rc;
}

static int
check_device_run(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  prog pr;
  char dir[64];
  coil_artifact *art;
  int rc = device_setup(c, prog_a, &lp, &inst, &pr, dir, &art, r), code;
  if (rc)
    return rc > 0 ? 0 : -1;
  if (!rc)
    rc = device_run(&pr, inst, art, false, true, &code, r);
  if (!rc && coil_plugin_has_streams(lp))
    rc = device_run(&pr, inst, art, true, true, &code, r);
  if (!rc)
    snprintf(r->msg, sizeof r->msg, "%s", coil_plugin_has_streams(lp) ? "synchronously and on a stream"
             : "synchronously (the plugin has no streams)");
  device_teardown(lp, inst, &pr, dir, art);
  return rc;
}

static int
check_device_async_error(const conf_ctx *c, conf_result *r)
{
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  prog pr;
  char dir[64];
  coil_artifact *art;
  int rc = device_setup(c, prog_e, &lp, &inst, &pr, dir, &art, r), code = 0;
  if (rc)
    return rc > 0 ? 0 : -1;
  if (!rc && !coil_plugin_has_streams(lp)) {
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "skipped: the plugin has no streams (ABI 1.4, optional)");
    device_teardown(lp, inst, &pr, dir, art);
    return 0;
  }
  if (!rc) {
    coil_tensor *ids = (coil_tensor *)coil_tensor_list_find(&pr.in, "i");
    coil_tensor_set_i64(ids, 2, 99); /* the table has 4 rows */
    rc = device_run(&pr, inst, art, true, false, &code, r);
    const char *kname = pr.p->nkernels > 0 ? pr.p->kernels[0].name : "?";
    if (!rc)
      rc = (snprintf(r->msg, sizeof r->msg, "an embedding with index 99 into 4 rows ran and synced without an error"), -1);
    else if (code == 0)
      rc = -1; /* r->msg says what failed first */
    else if (!strstr(r->msg, kname)) {
      char got[sizeof r->msg];
      memcpy(got, r->msg, sizeof got);
      snprintf(r->msg, sizeof r->msg, "the error of the queued run does not name its kernel %.40s: %.380s", kname, got);
      rc = -1;
    } else {
      char got[sizeof r->msg];
      memcpy(got, r->msg, sizeof got);
      snprintf(r->msg, sizeof r->msg, "reported: %.440s", got);
      rc = 0;
    }
  }
  device_teardown(lp, inst, &pr, dir, art);
  return rc;
}

static void
quiet_log(const coil_host_api *host, coil_log_level level, const char *message)
{
  (void)host, (void)level, (void)message;
}

static const char *const checks[] = {"metadata", "reload", "host_minor_older", "host_minor_newer",
                                     "host_major_other", "struct_size", "no_log", "errors", "threads",
                                     "reload_artifact", "program_handoff", "extensions", "devices",
                                     "device_memory", "device_run", "device_async_error"};

static void
run_check(const conf_ctx *c, int i, void *user, conf_result *r)
{
  const int *which = user;
  int rc = -1;
  r->status = CONF_FAIL;
  r->nmse = -1;
  coil_host_api host = host_table(sizeof host);
  switch (which[i]) {
  case 0: rc = check_metadata(c, r); break;
  case 1: rc = check_reload(c, r); break;
  case 2: rc = check_host_minor(c, false, r); break;
  case 3: rc = check_host_minor(c, true, r); break;
  case 4: rc = check_host_major(c, r); break;
  case 5: host.log = quiet_log; rc = check_struct_size(c, &host, r); break;
  case 6: rc = check_struct_size(c, &host, r); break; /* host.log is NULL: the "small" instance runs */
  case 7: rc = check_errors(c, r); break;
  case 8: rc = check_threads(c, r); break;
  case 9: rc = check_reload_artifact(c, r); break;
  case 10: rc = check_program_handoff(c, r); break;
  case 11: rc = check_extensions(c, r); break;
  case 12: rc = check_devices(c, r); break;
  case 13: rc = check_device_memory(c, r); break;
  case 14: rc = check_device_run(c, r); break;
  case 15: rc = check_device_async_error(c, r); break;
  }
  if (r->status == CONF_UNSUPPORTED || (r->status == CONF_SKIP && !rc))
    return;
  r->status = rc ? CONF_FAIL : CONF_PASS;
  if (!rc && which[i] != 0 && which[i] != 2 && which[i] != 10 && which[i] != 12 && which[i] != 14 &&
      which[i] != 15)
    r->msg[0] = 0;
}

void
conf_tier_abi(conf_ctx *c)
{
  int n = 0, which[32];
  conf_result res[32];
  for (int k = 0; k < (int)(sizeof checks / sizeof *checks); k++) {
    if (!conf_selected(c, "abi", checks[k], "-", "-"))
      continue;
    memset(&res[n], 0, sizeof res[n]);
    snprintf(res[n].tier, sizeof res[n].tier, "abi");
    snprintf(res[n].name, sizeof res[n].name, "%s", checks[k]);
    snprintf(res[n].dtype, sizeof res[n].dtype, "-");
    snprintf(res[n].shape, sizeof res[n].shape, "-");
    which[n++] = k;
  }
  if (n)
    conf_run_cases(c, n, run_check, which, res);
}
