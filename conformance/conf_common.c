/* conf_common.c — what every tier shares: the process pool that runs cases, opening the plugin,
 * the capability check of a program, comparison by NMSE and random inputs. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "artifact.h"
#include "conf.h"

const char *
conf_status_name(conf_status s)
{
  static const char *const names[] = {"pass", "FAIL", "not supported", "skipped"};
  return (unsigned)s < 4 ? names[s] : "?";
}

void
conf_case_id(const conf_result *r, char *out, size_t n)
{
  snprintf(out, n, "%s/%s/%s/%s", r->tier, r->name, r->dtype, r->shape);
}

bool
conf_selected(const conf_ctx *c, const char *tier, const char *name, const char *dtype, const char *shape)
{
  if (!c->has_filter && !c->exact_id)
    return true;
  char id[256];
  snprintf(id, sizeof id, "%s/%s/%s/%s", tier, name, dtype, shape);
  if (c->exact_id)
    return strcmp(id, c->exact_id) == 0;
  return regexec(&c->filter, id, 0, NULL, 0) == 0;
}

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the process pool ---- */

typedef struct {
  pid_t pid;
  int fd;       /* read end of the child's result pipe */
  int index;    /* the case */
  double start;
  bool killed;
  FILE *err;    /* the child's stderr, NULL when it is ours (--repro) */
} slot;

#define ERR_TAIL 4096 /* the last this many bytes of a case's stderr are kept */

/* The end of what a child wrote to its stderr file, or NULL if nothing. */
static char *
err_tail(FILE *f)
{
  if (!f)
    return NULL;
  fflush(f);
  long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *s = NULL;
  if (end > 0) {
    long from = end > ERR_TAIL ? end - ERR_TAIL : 0;
    s = malloc((size_t)(end - from) + 1);
    size_t n = s && fseek(f, from, SEEK_SET) == 0 ? fread(s, 1, (size_t)(end - from), f) : 0;
    if (s) {
      s[n] = 0;
      for (size_t i = n; i > 0 && s[i - 1] == '\n'; i--) /* the final newlines */
        s[i - 1] = 0;
    }
    if (s && !s[0])
      free(s), s = NULL;
  }
  fclose(f);
  return s;
}

static void
finish(conf_result *r, slot *s, int status)
{
  conf_result got;
  ssize_t n = read(s->fd, &got, sizeof got);
  close(s->fd);
  if (n == (ssize_t)sizeof got) {
    *r = got;
    return;
  }
  r->status = CONF_FAIL;
  r->nmse = -1;
  if (s->killed)
    snprintf(r->msg, sizeof r->msg, "timed out (killed after the time limit)");
  else if (WIFSIGNALED(status))
    snprintf(r->msg, sizeof r->msg, "crashed: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(r->msg, sizeof r->msg, "the case's process exited with status %d and no result",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* err's lines, each after prefix. */
static void
print_indented(FILE *f, const char *prefix, const char *err)
{
  while (err && *err) {
    size_t n = strcspn(err, "\n");
    fprintf(f, "%s%.*s\n", prefix, (int)n, err);
    err += n + (err[n] == '\n');
  }
}

void
conf_record_err(conf_ctx *c, const conf_result *r, const char *err)
{
  if (c->nresults == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 256;
    c->results = realloc(c->results, sizeof *c->results * (size_t)c->cap);
    c->errs = realloc(c->errs, sizeof *c->errs * (size_t)c->cap);
    if (!c->results || !c->errs)
      abort();
  }
  c->errs[c->nresults] = err ? strdup(err) : NULL;
  c->results[c->nresults++] = *r;
  if (c->verbose) {
    char id[256];
    conf_case_id(r, id, sizeof id);
    fprintf(stderr, "%-60s %s%s%s\n", id, conf_status_name(r->status), r->msg[0] ? ": " : "", r->msg);
    print_indented(stderr, "      | ", err);
  }
}

void
conf_results_free(conf_ctx *c)
{
  for (int i = 0; i < c->nresults; i++)
    free(c->errs[i]);
  free(c->errs);
  free(c->results);
  c->errs = NULL, c->results = NULL, c->nresults = c->cap = 0;
}

void
conf_record(conf_ctx *c, const conf_result *r)
{
  conf_record_err(c, r, NULL);
}

void
conf_print_err(FILE *f, const char *err)
{
  print_indented(f, "      | ", err);
}

void
conf_run_cases(conf_ctx *c, int n, conf_case_fn fn, void *user, conf_result *results)
{
  if (c->list_only) {
    for (int i = 0; i < n; i++) {
      char id[256];
      conf_case_id(&results[i], id, sizeof id);
      printf("%s\n", id);
    }
    return;
  }
  int jobs = c->jobs > 0 ? c->jobs : 1, next = 0, running = 0, done = 0;
  slot *slots = calloc((size_t)jobs, sizeof *slots);
  char **errs = calloc((size_t)n, sizeof *errs);
  if (!slots || !errs)
    abort();
  double last_progress = now();
  fflush(stdout), fflush(stderr);
  while (done < n) {
    for (int j = 0; j < jobs && next < n; j++) {
      if (slots[j].pid)
        continue;
      int fds[2];
      if (pipe(fds) != 0) {
        perror("coil-conformance: pipe");
        exit(2);
      }
      FILE *err = c->repro ? NULL : tmpfile(); /* the case's stderr, shown with its result */
      pid_t pid = fork();
      if (pid < 0) {
        perror("coil-conformance: fork");
        exit(2);
      }
      if (pid == 0) {
        close(fds[0]);
        if (err)
          dup2(fileno(err), 2);
        conf_result r = results[next];
        double t0 = now();
        fn(c, next, user, &r);
        r.seconds = now() - t0;
        fflush(stdout), fflush(stderr); /* _exit flushes nothing */
        ssize_t w = write(fds[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
      }
      close(fds[1]);
      slots[j] = (slot){pid, fds[0], next, now(), false, err};
      next++, running++;
    }
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
      for (int j = 0; j < jobs; j++)
        if (slots[j].pid && !slots[j].killed && now() - slots[j].start > c->timeout_s) {
          kill(slots[j].pid, SIGKILL);
          slots[j].killed = true;
        }
      continue;
    }
    for (int j = 0; j < jobs; j++)
      if (slots[j].pid == pid) {
        conf_result *r = &results[slots[j].index];
        finish(r, &slots[j], status);
        errs[slots[j].index] = err_tail(slots[j].err);
        if (slots[j].killed)
          r->seconds = now() - slots[j].start;
        slots[j].pid = 0;
        running--, done++;
      }
    if (!c->verbose && now() - last_progress > 5) { /* a progress line on long runs */
      fprintf(stderr, "coil-conformance: %s tier: %d of %d cases\n", results[0].tier, done, n);
      last_progress = now();
    }
  }
  for (int i = 0; i < n; i++) {
    conf_record_err(c, &results[i], errs[i]);
    free(errs[i]);
  }
  free(errs);
  free(slots);
}

/* ---- the plugin ---- */

coil_plugin_options
conf_options(const conf_ctx *c)
{
  return (coil_plugin_options){.struct_size = sizeof(coil_plugin_options), .count = (size_t)c->noptions,
                               .keys = c->option_keys, .values = c->option_values};
}

int
conf_open(const conf_ctx *c, coil_loaded_plugin **lp, coil_plugin **inst, conf_result *r)
{
  coil_diag d = {0};
  coil_plugin_options o = conf_options(c);
  *inst = NULL;
  if (coil_plugin_open(c->plugin, (const char *const *)c->dirs.dirs, c->dirs.n, lp, &d) ||
      coil_plugin_create(*lp, &o, inst, &d)) {
    r->status = CONF_FAIL;
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
    coil_plugin_close(*lp);
    *lp = NULL;
    return -1;
  }
  return 0;
}

void
conf_close(coil_loaded_plugin *lp, coil_plugin *inst)
{
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
}

coil_wir_program *
conf_compile(const conf_ctx *c, const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_graph *g,
             coil_diag *d)
{
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options o = {.fuse = true, .verify = true};
  coil_backend_compile_options(lp, inst, c->convolution, c->attention, c->matmul, claims, &o);
  o.decompose_k = coil_backend_decompose_k(c->decompose_k);
  return coil_compile_graph(g, &o, d);
}

/* Adds "what" to the list in why unless it is there; counts what did not fit. */
static void
miss(char *why, size_t n, int *more, const char *what)
{
  size_t len = strlen(why), w = strlen(what);
  for (const char *s = why; (s = strstr(s, what)) != NULL; s += w)
    if ((s == why || s[-2] == ',') && (s[w] == 0 || s[w] == ','))
      return;
  if (len + w + 2 + 16 >= n) { /* room for ", " and " (+N more)" */
    (*more)++;
    return;
  }
  snprintf(why + len, n - len, "%s%s", len ? ", " : "", what);
}

/* Every distinct thing p needs that the plugin does not claim, as a list in why. */
bool
conf_program_supported(const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_wir_program *p,
                       char *why, size_t n)
{
  int more = 0;
  char what[160];
  why[0] = 0;
  for (int k = 0; k < p->nkernels; k++)
    for (int i = 0; i < p->kernels[k].ninsts; i++) {
      const coil_kinst *in = &p->kernels[k].insts[i];
      const char *op = coil_kop_name(in->op);
      if (coil_plugin_supports(lp, inst, op, in->dtype) != COIL_SUPPORTED) {
        snprintf(what, sizeof what, "kernel op '%s' on %s", op, coil_dtype_name(in->dtype));
        miss(why, n, &more, what);
      }
      char name[64] = "";
      if (in->op == COIL_KOP_STORE && in->mode != COIL_STORE_PLAIN)
        snprintf(name, sizeof name, "store.%s", coil_store_mode_name(in->mode));
      if (in->op == COIL_KOP_REDUCE || in->op == COIL_KOP_SCAN)
        snprintf(name, sizeof name, "%s.%s", coil_kop_name(in->op), coil_reduction_name(in->red));
      if (name[0] && coil_plugin_supports(lp, inst, name, in->dtype) != COIL_SUPPORTED) {
        snprintf(what, sizeof what, "'%s' on %s", name, coil_dtype_name(in->dtype));
        miss(why, n, &more, what);
      }
    }
  for (int l = 0; l < p->nlines; l++) { /* the statement query (ABI 1.4), where the plugin has it */
    const coil_line *ln = &p->lines[l];
    if ((ln->kind == COIL_LINE_KERNEL_CALL || ln->kind == COIL_LINE_EXTERN_CALL) &&
        !coil_claim_stmt(lp, inst, p, ln)) {
      snprintf(what, sizeof what, "statement %s (supports_stmt)",
               ln->kind == COIL_LINE_KERNEL_CALL ? p->kernels[ln->kernel].name : ln->op);
      miss(why, n, &more, what);
    }
  }
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    if (ln->kind != COIL_LINE_EXTERN_CALL)
      continue;
    coil_dtype t = ln->nouts > 0 ? p->buffers[ln->outs[0]].dtype : COIL_F32;
    if (coil_plugin_supports(lp, inst, ln->op, t) != COIL_SUPPORTED) {
      snprintf(what, sizeof what, "library op '%s' on %s", ln->op, coil_dtype_name(t));
      miss(why, n, &more, what);
    }
  }
  if (more) {
    size_t len = strlen(why);
    snprintf(why + len, n - len, " (+%d more)", more);
  }
  return why[0] == 0;
}

/* Whether supports() was asked about everything in p. Its kernels' instructions are, but views,
 * reuses, multi-output and copy-back lines have no query yet; a library call is asked by op and
 * dtype alone (a plugin may refuse its shapes or strides in compile); and a buffer's dtype is
 * asked only through an instruction of that dtype (a kernel may load bf16 into f32 math). */
static bool
fully_asked(const coil_wir_program *p)
{
  bool asked[COIL_DTYPE_COUNT] = {0};
  for (int k = 0; k < p->nkernels; k++)
    for (int i = 0; i < p->kernels[k].ninsts; i++)
      if ((unsigned)p->kernels[k].insts[i].dtype < COIL_DTYPE_COUNT)
        asked[p->kernels[k].insts[i].dtype] = true;
  for (int b = 0; b < p->nbuffers; b++)
    if ((unsigned)p->buffers[b].dtype >= COIL_DTYPE_COUNT || !asked[p->buffers[b].dtype])
      return false;
  for (int l = 0; l < p->nlines; l++)
    switch (p->lines[l].kind) {
    case COIL_LINE_COMMENT: case COIL_LINE_SYMBOL: case COIL_LINE_ASSERT: case COIL_LINE_ALLOC:
    case COIL_LINE_FREE: case COIL_LINE_KERNEL_CALL: case COIL_LINE_OUTPUT:
      break;
    default:
      return false;
    }
  return true;
}

int
conf_prepare(const conf_ctx *c, const coil_graph *g, const char *what, conf_prepared *x, conf_result *r)
{
  coil_diag d = {0};
  memset(x, 0, sizeof *x);
  r->status = CONF_FAIL;
  if (conf_open(c, &x->lp, &x->inst, r))
    return -1;
  if (!(x->p = conf_compile(c, x->lp, x->inst, g, &d))) {
    snprintf(r->msg, sizeof r->msg, "the core cannot compile the %s: %.400s", what, d.msg);
    return -1;
  }
  char why[400];
  if (!(x->lp->api.features & COIL_FEATURE_EXECUTES)) {
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "skipped: the plugin only emits (the emit tier checks its code)");
    return -1;
  }
  if (!conf_program_supported(x->lp, x->inst, x->p, why, sizeof why)) {
    r->status = CONF_UNSUPPORTED;
    snprintf(r->msg, sizeof r->msg, "not claimed: %s", why);
    return -1;
  }
  snprintf(x->dir, sizeof x->dir, "/tmp/coil-conformance-XXXXXX");
  if (!mkdtemp(x->dir)) {
    x->dir[0] = 0;
    snprintf(r->msg, sizeof r->msg, "cannot create a temporary directory: %s", strerror(errno));
    return -1;
  }
  coil_plugin_options o = conf_options(c);
  int rc = coil_plugin_compile(x->lp, x->inst, x->p, x->dir, &o, &d);
  if (rc == -COIL_ERR_UNSUPPORTED && fully_asked(x->p)) { /* it said yes to all of it */
    snprintf(r->msg, sizeof r->msg, "supports() claimed everything this %s needs, but compile refused it: %.340s",
             what, d.msg);
    return -1;
  }
  if (rc == -COIL_ERR_UNSUPPORTED) {
    r->status = CONF_UNSUPPORTED;
    snprintf(r->msg, sizeof r->msg, "compile: %.400s", d.msg);
    return -1;
  }
  if (rc || coil_plugin_load(x->lp, x->inst, x->dir, &o, &x->art, &d)) {
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
    return -1;
  }
  return 0;
}

void
conf_release(conf_prepared *x)
{
  if (x->art)
    coil_plugin_artifact_free(x->lp, x->art);
  if (x->lp)
    conf_close(x->lp, x->inst);
  if (x->dir[0])
    coil_artifact_remove(x->dir);
  coil_wir_free(x->p);
  memset(x, 0, sizeof *x);
}

/* ---- comparison ---- */

double
conf_nmse_max(coil_dtype t)
{
  switch (t) {
  case COIL_F64: return 1e-20;
  case COIL_F32: return 1e-7; /* ggml's default: f32 sums of 2^20 values drift to ~1e-9 */
  case COIL_F16: return 1e-5;
  case COIL_BF16: return 1e-4;
  default: return 0;
  }
}

/* v for printing: a NaN without its sign ("nan", never "-nan"). */
static double
shown(double v)
{
  return isnan(v) ? fabs(v) : v;
}

/* Ranks a before b: a special mismatch first, then the larger absolute error. */
static bool
worse(const conf_elem *a, const conf_elem *b)
{
  if (a->special != b->special)
    return a->special;
  return a->abs > b->abs || (a->abs == b->abs && a->index < b->index);
}

int
conf_worst(const coil_tensor *got, const coil_tensor *want, int k, conf_elem *out)
{
  int n = 0;
  int64_t numel = coil_tensor_numel(want);
  bool fl = coil_dtype_is_float(want->dtype);
  for (int64_t e = 0; e < numel && k > 0; e++) {
    conf_elem x = {.index = e};
    if (fl) {
      x.got = coil_tensor_get_f64(got, e), x.want = coil_tensor_get_f64(want, e);
      bool gs = isnan(x.got) || isinf(x.got), ws = isnan(x.want) || isinf(x.want);
      if (gs || ws) {
        if ((isnan(x.got) && isnan(x.want)) || (isinf(x.want) && x.got == x.want))
          continue;
        x.special = true;
        x.abs = INFINITY;
      } else {
        x.abs = fabs(x.got - x.want);
      }
    } else {
      int64_t g = coil_tensor_get_i64(got, e), w = coil_tensor_get_i64(want, e);
      if (g == w)
        continue;
      x.got = (double)g, x.want = (double)w, x.special = true;
      x.abs = fabs(x.got - x.want);
    }
    if (x.abs == 0 && !x.special)
      continue;
    x.rel = x.special && isinf(x.abs) ? INFINITY : x.abs / fmax(fabs(x.want), 1e-30);
    if (n == k && !worse(&x, &out[n - 1]))
      continue;
    int at = n < k ? n++ : k - 1; /* insertion into the sorted top k */
    while (at > 0 && worse(&x, &out[at - 1])) {
      out[at] = out[at - 1];
      at--;
    }
    out[at] = x;
  }
  return n;
}

void
conf_index_text(const coil_tensor *t, int64_t flat, char *out, size_t n)
{
  int64_t idx[COIL_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->shape[d] ? flat % t->shape[d] : 0;
    flat = t->shape[d] ? flat / t->shape[d] : 0;
  }
  size_t at = (size_t)snprintf(out, n, "[");
  for (int d = 0; d < t->rank && at < n; d++)
    at += (size_t)snprintf(out + at, n - at, "%s%lld", d ? ", " : "", (long long)idx[d]);
  if (at < n)
    snprintf(out + at, n - at, "]");
}

/* "got X, want Y" in the dtype's own terms. */
static void
pair_text(const coil_tensor *t, const conf_elem *x, char *out, size_t n)
{
  if (coil_dtype_is_float(t->dtype))
    snprintf(out, n, "got %.9g, want %.9g", shown(x->got), shown(x->want));
  else
    snprintf(out, n, "got %lld, want %lld", (long long)x->got, (long long)x->want);
}

void
conf_print_worst(FILE *f, const coil_tensor *got, const coil_tensor *want, int k)
{
  conf_elem w[16];
  k = k > 16 ? 16 : k;
  bool same = got->dtype == want->dtype && got->rank == want->rank;
  for (int d = 0; same && d < got->rank; d++)
    same = got->shape[d] == want->shape[d];
  if (!same) {
    fprintf(f, "    the shapes or dtypes differ: no elements to compare\n");
    return;
  }
  int n = conf_worst(got, want, k, w);
  if (n == 0) {
    fprintf(f, "    every element agrees exactly\n");
    return;
  }
  fprintf(f, "    %-20s %10s %18s %18s %12s %12s\n", "index", "flat", "got", "want", "abs err", "rel err");
  for (int i = 0; i < n; i++) {
    char idx[96];
    conf_index_text(want, w[i].index, idx, sizeof idx);
    fprintf(f, "    %-20s %10lld %18.9g %18.9g %12.3g %12.3g\n", idx, (long long)w[i].index, shown(w[i].got), shown(w[i].want),
            w[i].abs, w[i].rel);
  }
}

bool
conf_compare(const coil_tensor *got, const coil_tensor *want, double *nmse, char *msg, size_t n)
{
  *nmse = 0;
  if (got->dtype != want->dtype || got->rank != want->rank) {
    snprintf(msg, n, "got %s of rank %d, expected %s of rank %d", coil_dtype_name(got->dtype), got->rank,
             coil_dtype_name(want->dtype), want->rank);
    return false;
  }
  for (int i = 0; i < got->rank; i++)
    if (got->shape[i] != want->shape[i]) {
      snprintf(msg, n, "size %lld in dimension %d, expected %lld", (long long)got->shape[i], i,
               (long long)want->shape[i]);
      return false;
    }
  int64_t numel = coil_tensor_numel(want);
  conf_elem w;
  char idx[96], pair[96];
  if (!coil_dtype_is_float(want->dtype)) {
    if (conf_worst(got, want, 1, &w) == 0)
      return true;
    int64_t bad = 0;
    for (int64_t e = 0; e < numel; e++)
      bad += coil_tensor_get_i64(got, e) != coil_tensor_get_i64(want, e);
    conf_index_text(want, w.index, idx, sizeof idx);
    pair_text(want, &w, pair, sizeof pair);
    snprintf(msg, n, "%lld of %lld %s elements differ (integers compare exactly); first at %s (flat %lld): %s",
             (long long)bad, (long long)numel, coil_dtype_name(want->dtype), idx, (long long)w.index, pair);
    *nmse = 1;
    return false;
  }
  double err = 0, ref = 0;
  for (int64_t e = 0; e < numel; e++) {
    double g = coil_tensor_get_f64(got, e), v = coil_tensor_get_f64(want, e);
    if (isnan(v) || isinf(v) || isnan(g) || isinf(g)) {
      bool same = (isnan(v) && isnan(g)) || (isinf(v) && g == v);
      if (!same) {
        conf_index_text(want, e, idx, sizeof idx);
        snprintf(msg, n, "%s (flat %lld) is %g, expected %g (NaN and Inf positions must match)", idx, (long long)e, shown(g), shown(v));
        *nmse = 1;
        return false;
      }
      continue;
    }
    err += (g - v) * (g - v);
    ref += v * v;
  }
  *nmse = ref > 0 ? err / ref : err;
  if (*nmse > conf_nmse_max(want->dtype)) {
    conf_worst(got, want, 1, &w);
    conf_index_text(want, w.index, idx, sizeof idx);
    pair_text(want, &w, pair, sizeof pair);
    snprintf(msg, n, "NMSE %.3g above %.0e, the limit for an %s output; worst at %s (flat %lld): %s", *nmse,
             conf_nmse_max(want->dtype), coil_dtype_name(want->dtype), idx, (long long)w.index, pair);
    return false;
  }
  return true;
}

/* ---- inputs ---- */

static double
uniform(uint64_t *s)
{
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

void
conf_random(coil_tensor *t, uint64_t *seed, bool positive, int64_t lo, int64_t hi)
{
  int64_t numel = coil_tensor_numel(t);
  for (int64_t e = 0; e < numel; e++) {
    double u1 = uniform(seed), u2 = uniform(seed);
    if (t->dtype == COIL_BOOL)
      coil_tensor_set_i64(t, e, u1 < 0.5);
    else if (!coil_dtype_is_float(t->dtype))
      coil_tensor_set_i64(t, e, lo + (int64_t)(u1 * (double)(hi - lo)));
    else if (positive)
      coil_tensor_set_f64(t, e, 0.25 + 2 * u1);
    else
      coil_tensor_set_f64(t, e, sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
  }
}
