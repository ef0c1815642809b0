/* gpu_tune.c — max-autotune for GPU plugins (coil/coil_gpu_tune.h): the parent side, which writes
 * the spec and runs the plugin's worker under a deadline, and the worker's main. Moved out of
 * the cuda plugin so hip tunes the same way. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coil/coil_gpu_tune.h"

#define MAX_CANDIDATES 16

extern char **environ;

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool
coil_gpu_tune_worker_beside(const void *symbol, const char *name, char *out, size_t n)
{
  Dl_info info;
  if (!dladdr(symbol, &info) || !info.dli_fname)
    return false;
  const char *slash = strrchr(info.dli_fname, '/');
  int dir = slash ? (int)(slash - info.dli_fname) : 1;
  snprintf(out, n, "%.*s/%s", dir, slash ? info.dli_fname : ".", name);
  return access(out, X_OK) == 0;
}

/* Runs the worker from candidate `first` on, until it exits or the deadline; fills ms[] for
 * the candidates it reports. Returns the number of candidates it accounted for (timed or
 * failed); the next one, if any, is the one it died or hung on. */
static int
run_worker(const char *worker, const char *spec, int first, int n, double *ms, coil_strbuf *log)
{
  int fd[2];
  if (pipe(fd) != 0)
    return 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  char first_s[16];
  snprintf(first_s, sizeof first_s, "%d", first);
  char *argv[] = {(char *)worker, (char *)spec, first_s, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, worker, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (rc != 0) {
    close(fd[0]);
    coil_strbuf_printf(log, "  cannot start %s: %s\n", worker, strerror(rc));
    return n - first; /* nothing more will run */
  }
  double deadline = now() + 20.0 + 2.0 * (n - first); /* CUDA's start, then each candidate */
  char buf[8192];
  size_t len = 0;
  int done = 0;
  bool timed_out = false;
  for (;;) {
    double left = deadline - now();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p = {fd[0], POLLIN, 0};
    int pr = poll(&p, 1, (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      continue;
    ssize_t got = read(fd[0], buf + len, sizeof buf - 1 - len);
    if (got <= 0)
      break;
    len += (size_t)got;
    buf[len] = 0;
    char *nl;
    while ((nl = strchr(buf, '\n'))) {
      *nl = 0;
      int i;
      double t;
      char why[256];
      if (strncmp(buf, "nogpu ", 6) == 0) {
        coil_strbuf_printf(log, "  no candidate timed: %s\n", buf + 6);
        done = n - first; /* no point in trying again */
      } else if (sscanf(buf, "result %d %lf", &i, &t) == 2 && i >= first && i < n) {
        ms[i] = t, done = i - first + 1;
      } else if (sscanf(buf, "failed %d %255[^\n]", &i, why) == 2 && i >= first && i < n) {
        coil_strbuf_printf(log, "  candidate %d failed: %s\n", i, why);
        done = i - first + 1;
      }
      size_t used = (size_t)(nl - buf) + 1;
      memmove(buf, nl + 1, len - used + 1);
      len -= used;
    }
  }
  close(fd[0]);
  if (timed_out)
    kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (first + done < n) {
    if (timed_out)
      coil_strbuf_printf(log, "  candidate %d discarded: the worker hung (killed at its deadline)\n", first + done);
    else if (WIFSIGNALED(st))
      coil_strbuf_printf(log, "  candidate %d discarded: the worker died (signal %d)\n", first + done, WTERMSIG(st));
    else
      coil_strbuf_printf(log, "  candidate %d discarded: the worker stopped (exit %d)\n", first + done,
                         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    done++;
  }
  return done;
}

void
coil_gpu_tune_run(const char *worker, const char *spec, int n, double *ms, coil_strbuf *log)
{
  for (int i = 0; i < n; i++)
    ms[i] = -1;
  for (int first = 0; first < n;)
    first += run_worker(worker, spec, first, n, ms, log);
}

static int64_t
const_product(int n, const coil_sym *const *s)
{
  int64_t p = 1, v;
  for (int i = 0; i < n; i++) {
    if (!coil_sym_is_const(s[i], &v))
      return -1;
    p *= v;
  }
  return p;
}

/* Removes the tuning directory and the files it writes there. */
static int
remove_tree(const char *dir)
{
  char path[4200];
  const char *files[] = {"spec", "cand.co"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    remove(path);
  }
  return rmdir(dir);
}

void
coil_gpu_tune_kernel(const coil_gpu_dialect *dl, const coil_wir_program *p, int k, const coil_gpu_tuner *t,
                     coil_gpu_plan *best, coil_strbuf *log)
{
  const coil_kernel *kn = &p->kernels[k];
  coil_gpu_plan_kernel(dl, p, kn, best);
  coil_strbuf_printf(log, "kernel %s:\n", kn->name);
  const coil_line *call = NULL;
  for (int l = 0; l < p->nlines && !call; l++)
    if (p->lines[l].kind == COIL_LINE_KERNEL_CALL && p->lines[l].kernel == k)
      call = &p->lines[l];
  int64_t xnumel = const_product(kn->nx, kn->xsize), rnumel = const_product(kn->nr, kn->rsize);
  if (!call || kn->nsyms || xnumel < 0 || rnumel < 0) {
    coil_strbuf_puts(log, "  default plan: symbolic sizes (tuning times the real sizes)\n");
    return;
  }
  const char *worker = t->worker;
  if (!worker || access(worker, X_OK) != 0) {
    coil_strbuf_printf(log, "  default plan: the %s plugin's tuning worker is not installed beside it\n", t->name);
    return;
  }
  coil_gpu_plan cands[MAX_CANDIDATES];
  int n = coil_gpu_plan_candidates(dl, p, kn, cands, MAX_CANDIDATES);
  if (n < 2) {
    coil_strbuf_puts(log, "  default plan: nothing else to try\n");
    return;
  }
  const char *force = getenv("COIL_GPU_TUNE_CANDIDATE"); /* testing: every tuned plan must compute right */
  if (force && *force) {
    char *end;
    long i = strtol(force, &end, 10), only = k;
    if (*end == '@')
      only = strtol(end + 1, &end, 10);
    if (*end || i < 0) {
      coil_strbuf_printf(log, "  default plan: COIL_GPU_TUNE_CANDIDATE=%s is not I or I@KERNEL\n", force);
      return;
    }
    if (only != k) {
      coil_strbuf_printf(log, "  default plan: COIL_GPU_TUNE_CANDIDATE=%s names another kernel\n", force);
      return;
    }
    int c = i < n ? (int)i : n - 1;
    *best = cands[c];
    coil_strbuf_printf(log, "  chosen: candidate %d of %d, forced by COIL_GPU_TUNE_CANDIDATE=%s (nothing timed)\n", c, n,
                       force);
    return;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/coil-%s-tune-XXXXXX", tmp && *tmp ? tmp : "/tmp", t->name);
  if (!mkdtemp(dir)) {
    coil_strbuf_puts(log, "  default plan: cannot create a temporary directory\n");
    return;
  }
  char module[4200], spec[4200];
  snprintf(module, sizeof module, "%s/cand.co", dir);
  snprintf(spec, sizeof spec, "%s/spec", dir);
  coil_strbuf src = {0}, text = {0};
  coil_gpu_candidates_source(dl, p, k, cands, n, &src);
  coil_error *e = src.s ? t->compile(t->user, src.s, kn->name, dir, module) : coil_sdk_out_of_memory();
  coil_strbuf_free(&src);
  if (e) {
    coil_strbuf_printf(log, "  default plan: the candidates did not compile: %s\n", coil_sdk_error_message(e));
    coil_sdk_error_free(e);
    remove_tree(dir);
    return;
  }
  coil_strbuf_printf(&text, "module %s\n", module);
  for (int i = 0; i < kn->nparams; i++) {
    const coil_buffer *b = &p->buffers[call->args[i]];
    int64_t hi = 0, sz, st;
    bool empty = false;
    for (int d = 0; d < b->rank; d++) {
      if (!coil_sym_is_const(b->sizes[d], &sz) || !coil_sym_is_const(b->strides[d], &st)) {
        coil_strbuf_puts(log, "  default plan: a buffer of symbolic layout\n");
        coil_strbuf_free(&text);
        remove_tree(dir);
        return;
      }
      empty = empty || sz == 0;
      hi += (sz - 1) * (st > 0 ? st : 0);
    }
    coil_strbuf_printf(&text, "param %lld %c\n", empty ? 0LL : (long long)((hi + 1) * (int64_t)coil_dtype_size(b->dtype)),
                       coil_dtype_is_float(b->dtype) ? 'f' : 'i');
  }
  if (coil_kernel_has_indirect(kn)) /* the index check's flag, last (zeroed: no index is out of range) */
    coil_strbuf_puts(&text, "param 16 i\n");
  for (int i = 0; i < n; i++) {
    unsigned threads = coil_gpu_block_threads(dl, &cands[i], rnumel);
    coil_strbuf_printf(&text, "cand %s__cand%d %u %u\n", kn->name, i,
                       coil_gpu_grid_blocks(&cands[i], cands[i].vec > 1, xnumel, threads), threads);
  }
  e = coil_sdk_write_file(dir, "spec", text.s);
  coil_strbuf_free(&text);
  if (e) {
    coil_sdk_error_free(e);
    remove_tree(dir);
    return;
  }
  double ms[MAX_CANDIDATES];
  coil_gpu_tune_run(worker, spec, n, ms, log);
  remove_tree(dir);
  int win = -1;
  for (int i = 0; i < n; i++) {
    const coil_gpu_plan *c = &cands[i];
    int per = c->kind == COIL_GPU_POINTWISE && c->vec > 1 ? c->vec_per_thread * c->vec : c->per_thread * c->vec;
    coil_strbuf_printf(log, "  candidate %d: %u threads, %d elements per thread%s%s: ", i, c->threads, per,
                       c->vec > 1 ? " in 16-byte vectors" : "", i == 0 ? " [default]" : "");
    if (ms[i] < 0)
      coil_strbuf_puts(log, "no time\n");
    else
      coil_strbuf_printf(log, "%.4f ms\n", ms[i]);
    if (ms[i] >= 0 && (win < 0 || ms[i] < ms[win]))
      win = i;
  }
  if (win < 0) {
    coil_strbuf_puts(log, "  default plan: no candidate was timed\n");
    return;
  }
  /* keep the default unless another is clearly faster (2 %: below that it is noise) */
  if (ms[0] >= 0 && ms[win] > 0.98 * ms[0])
    win = 0;
  *best = cands[win];
  coil_strbuf_printf(log, "  chosen: candidate %d\n", win);
}

/* ---- the worker ---- */

#define MAXP 64
#define MAXC 64

static int
cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int
coil_gpu_tune_worker_main(int argc, char **argv, const coil_gpu_tune_runtime *rt)
{
  if (argc != 3) {
    fprintf(stderr, "usage: %s SPEC FIRST\n", rt->name);
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open %s\n", rt->name, argv[1]);
    return 2;
  }
  char module[4096] = "", line[4096];
  size_t bytes[MAXP];
  char kinds[MAXP];
  int np = 0, nc = 0;
  char names[MAXC][512];
  unsigned grid[MAXC], block[MAXC];
  while (fgets(line, sizeof line, f)) {
    char kind;
    unsigned long long b;
    if (sscanf(line, "module %4095s", module) == 1)
      continue;
    if (sscanf(line, "param %llu %c", &b, &kind) == 2 && np < MAXP) {
      bytes[np] = (size_t)b, kinds[np++] = kind;
      continue;
    }
    if (nc < MAXC && sscanf(line, "cand %511s %u %u", names[nc], &grid[nc], &block[nc]) == 3) {
      nc++;
      continue;
    }
    fprintf(stderr, "%s: %s: cannot read line: %s", rt->name, argv[1], line);
    return 2;
  }
  fclose(f);
  int first = atoi(argv[2]);
  const char *why = rt->init(module);
  if (why) {
    printf("nogpu %s\n", why);
    return 1;
  }
  uint64_t ptr[MAXP];
  void *params[MAXP];
  for (int i = 0; i < np; i++) {
    size_t n = bytes[i] ? bytes[i] : 16;
    /* f32 0.186, f16 1.56, bf16 0.186: finite, nonzero */
    if (rt->alloc_fill(n, kinds[i] == 'i' ? 0 : 0x3e, &ptr[i])) {
      printf("nogpu cannot allocate %zu bytes\n", n);
      return 1;
    }
    params[i] = &ptr[i];
  }
  for (int c = first; c < nc; c++) {
    void *fn;
    if (rt->function(names[c], &fn)) {
      printf("failed %d no function %s\n", c, names[c]);
      fflush(stdout);
      continue;
    }
    int r = 0;
    for (int w = 0; w < 3 && !r; w++)
      r = rt->launch(fn, grid[c], block[c], params);
    if (!r)
      r = rt->sync();
    /* each launch after a flush, alone between its events (do_bench's method); without a flush,
     * batches of 10 back to back */
    enum { FLUSHED = 21, BATCHES = 5, BATCH = 10 };
    float t[FLUSHED];
    const int runs = rt->flush ? FLUSHED : BATCHES;
    for (int k = 0; k < runs && !r; k++) {
      if (rt->flush && (r = rt->flush()))
        break;
      r = rt->time(fn, grid[c], block[c], params, rt->flush ? 1 : BATCH, &t[k]);
      if (!rt->flush)
        t[k] /= BATCH;
    }
    if (r) { /* a failed launch poisons the context: report and stop; the parent restarts us */
      printf("failed %d GPU error %d\n", c, r);
      return 1;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_float);
    printf("result %d %.6f\n", c, t[runs / 2]);
    fflush(stdout);
  }
  return 0;
}
