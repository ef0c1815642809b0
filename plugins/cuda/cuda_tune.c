/* cuda_tune.c — max-autotune: each kernel's candidate plans (coil_gpu_plan_candidates: block sizes,
 * elements per thread) compiled into one module and timed by coil-cuda-tune in a process of its
 * own, under a deadline; the fastest is compiled into the artifact and recorded in plans.txt
 * (with every time in tuning.log), so the compile cache keeps the winner with the cubins.
 *
 * The worker is restarted after a crash or a hang; the candidate it was timing is discarded.
 * Tuning needs constant sizes (it allocates the kernel's buffers at their real sizes) and a GPU;
 * otherwise the kernel keeps its default plan and tuning.log says why. */
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

#include "cuda.h"

#define MAX_CANDIDATES 16

extern char **environ;

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* coil-cuda-tune beside this library, or false. */
static bool
worker_path(char *out, size_t n)
{
  Dl_info info;
  if (!dladdr((void *)cuda_tune_kernel, &info) || !info.dli_fname)
    return false;
  const char *slash = strrchr(info.dli_fname, '/');
  int dir = slash ? (int)(slash - info.dli_fname) : 1;
  snprintf(out, n, "%.*s/coil-cuda-tune", dir, slash ? info.dli_fname : ".");
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
  const char *files[] = {"spec", "cand.cubin"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    remove(path);
  }
  return rmdir(dir);
}

void
cuda_tune_kernel(const coil_wir_program *p, int k, const char *arch, coil_gpu_plan *best, coil_strbuf *log)
{
  const coil_kernel *kn = &p->kernels[k];
  coil_gpu_plan_kernel(&cuda_dialect, p, kn, best);
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
  char worker[4096];
  if (!worker_path(worker, sizeof worker)) {
    coil_strbuf_puts(log, "  default plan: coil-cuda-tune is not installed beside the plugin\n");
    return;
  }
  coil_gpu_plan cands[MAX_CANDIDATES];
  int n = coil_gpu_plan_candidates(&cuda_dialect, p, kn, cands, MAX_CANDIDATES);
  if (n < 2) {
    coil_strbuf_puts(log, "  default plan: nothing else to try\n");
    return;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/coil-cuda-tune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    coil_strbuf_puts(log, "  default plan: cannot create a temporary directory\n");
    return;
  }
  char cubin[4200], spec[4200];
  snprintf(cubin, sizeof cubin, "%s/cand.cubin", dir);
  snprintf(spec, sizeof spec, "%s/spec", dir);
  coil_strbuf src = {0}, text = {0};
  coil_gpu_candidates_source(&cuda_dialect, p, k, cands, n, &src);
  coil_error *e = cuda_nvrtc_compile(src.s, arch, kn->name, dir, cubin);
  coil_strbuf_free(&src);
  if (e) {
    coil_strbuf_printf(log, "  default plan: the candidates did not compile: %s\n", coil_sdk_error_message(e));
    coil_sdk_error_free(e);
    remove_tree(dir);
    return;
  }
  coil_strbuf_printf(&text, "cubin %s\n", cubin);
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
    unsigned threads = coil_gpu_block_threads(&cuda_dialect, &cands[i], rnumel);
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
  for (int i = 0; i < n; i++)
    ms[i] = -1;
  for (int first = 0; first < n;)
    first += run_worker(worker, spec, first, n, ms, log);
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
