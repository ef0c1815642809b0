/* cpu_plugin.c — the `cpu` plugin: C + OpenMP through the system C compiler, or LLVM.
 *
 * compile writes the generated source (kernels.c, with coil_cpu_math.h beside it), compiles it
 * into libkernels.so with the C compiler (an argument vector through posix_spawnp, never a shell
 * string; its messages go to cc.log), keeps program.wir for the library calls, and writes
 * manifest.json last, after checking that the library loads and has coil_cpu_entry (a compiler
 * that exits 0 without writing one is a compile error, not an artifact). load opens the
 * library without following a symlink, refuses one that others may write, and dlopens it
 * through /proc/self/fd of the descriptor it checked; run calls its coil_cpu_entry with the
 * tensors and a small run-time table: memory, library calls (cpu_extern.c), failures.
 *
 * Options ([plugin.cpu] in the ini file): cc (the compiler; default $CC, else cc), cflags
 * (extra flags, space separated), threads (OpenMP threads; default: all), portable (true: no
 * -march=native, for artifacts that move between machines), cc_timeout (seconds a compile may
 * take before the compiler is killed; default 600, 0: no limit), codegen (cc: the above; llvm:
 * kernels built through LLVM by cpu-llvm.so, beside this plugin, in its compile worker
 * coil-cpu-llvm (a process the plugin starts on first use and keeps: LLVM's fatal errors end
 * it, not the host; cpu_llvm.h); no C compiler runs. compile then writes kernels.o and
 * kernels.ll, load maps kernels.o itself where it can (cpu_elf.c: x86-64 Linux, built for this
 * CPU; else LLVM's JIT, in process), and run walks the program's lines (cpu_walk.c) instead of
 * calling a generated wrapper; auto, the default: llvm where cpu-llvm.so and the worker are
 * installed and no key of the C path is set, else cc where the C compiler is found, else llvm:
 * use_llvm). */
#define _GNU_SOURCE /* realpath, dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coil/coil_plugin.h"
#include "cpu.h"
#include "cpu_elf.h"
#include "cpu_extern.h"
#include "cpu_llvm.h"
#include "cpu_walk.h"

#define CPU_VERSION "0.1.0"

extern char **environ;

/* ---- options ---- */

typedef struct {
  char cc[256];
  char cflags[1024];
  int threads;
  bool portable;
  int cc_timeout; /* seconds; 0: no limit */
  int codegen;    /* CODEGEN_* */
  bool c_keys;    /* cc, cflags or cc_timeout given: the user asks for the C path */
} cpu_options;

enum { CODEGEN_AUTO, CODEGEN_CC, CODEGEN_LLVM };

static coil_error *
read_options(const coil_plugin_options *o, cpu_options *out)
{
  const char *env_cc = getenv("CC");
  snprintf(out->cc, sizeof out->cc, "%s", env_cc && *env_cc ? env_cc : "cc");
  out->cflags[0] = 0;
  out->threads = 0;
  out->portable = false;
  out->cc_timeout = 600;
  out->codegen = CODEGEN_AUTO;
  out->c_keys = false;
  size_t n = o && COIL_STRUCT_HAS(o, coil_plugin_options, values) ? o->count : 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = o->keys[i], *v = o->values[i];
    if (strncmp(k, "coil.", 5) == 0)
      continue;
    if (strcmp(k, "cc") == 0 || strcmp(k, "cflags") == 0 || strcmp(k, "cc_timeout") == 0)
      out->c_keys = true;
    if (strcmp(k, "cc") == 0) {
      if (!*v || strlen(v) >= sizeof out->cc)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option cc: '%s' is not a compiler command", v);
      snprintf(out->cc, sizeof out->cc, "%s", v);
    } else if (strcmp(k, "cflags") == 0) {
      if (strlen(v) >= sizeof out->cflags)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option cflags is too long");
      snprintf(out->cflags, sizeof out->cflags, "%s", v);
    } else if (strcmp(k, "threads") == 0) {
      char *end;
      long t = strtol(v, &end, 10);
      if (*end || t < 0 || t > 4096)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option threads: expected 0 (all) to 4096, got '%s'", v);
      out->threads = (int)t;
    } else if (strcmp(k, "portable") == 0) {
      if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option portable: expected true or false, got '%s'", v);
      out->portable = strcmp(v, "true") == 0;
    } else if (strcmp(k, "cc_timeout") == 0) {
      char *end;
      long t = strtol(v, &end, 10);
      if (!*v || *end || t < 0 || t > 86400)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option cc_timeout: expected 0 (no limit) to 86400 seconds, got '%s'", v);
      out->cc_timeout = (int)t;
    } else if (strcmp(k, "codegen") == 0) {
      if (strcmp(v, "cc") != 0 && strcmp(v, "llvm") != 0 && strcmp(v, "auto") != 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: option codegen: expected auto, cc or llvm, got '%s'", v);
      out->codegen = v[0] == 'a' ? CODEGEN_AUTO : v[0] == 'c' ? CODEGEN_CC : CODEGEN_LLVM;
    } else {
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: unknown option '%s' (cpu accepts cc, cflags, threads, portable, cc_timeout, codegen)", k);
    }
  }
  return NULL;
}

/* ---- the LLVM code path ---- */

static pthread_mutex_t llvm_lock = PTHREAD_MUTEX_INITIALIZER;
static const cpu_llvm_api *llvm_api;
static char llvm_why[4400];

/* cpu-llvm.so's path: beside this plugin */
static void
llvm_module_path(char *path, size_t size)
{
  Dl_info info;
  snprintf(path, size, "cpu-llvm.so");
  if (dladdr((void *)llvm_module_path, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    snprintf(path, size, "%s", info.dli_fname);
    snprintf(strrchr(path, '/') + 1, size - (size_t)(strrchr(path, '/') + 1 - path), "cpu-llvm.so");
  }
}

/* coil-cpu-llvm's path: beside this plugin too */
static void
llvm_worker_path(char *path, size_t size)
{
  llvm_module_path(path, size);
  char *slash = strrchr(path, '/');
  size_t at = slash ? (size_t)(slash + 1 - path) : 0;
  snprintf(path + at, size - at, "%s", CPU_LLVM_WORKER);
}

static void host_cpu(char out[17]);

/* "PATH size N mtime T" of a file, for the cache key; "PATH (missing)" */
static void
file_stamp(const char *path, char *out, size_t size)
{
  struct stat st;
  if (stat(path, &st) == 0)
    snprintf(out, size, "%.2000s size %lld mtime %lld", path, (long long)st.st_size, (long long)st.st_mtime);
  else
    snprintf(out, size, "%.2000s (missing)", path);
}

/* cpu-llvm.so from this plugin's directory, loaded once; NULL with *why when it cannot be. */
static const cpu_llvm_api *
llvm_module(const char **why)
{
  pthread_mutex_lock(&llvm_lock);
  if (!llvm_api && !llvm_why[0]) {
    char path[4200];
    llvm_module_path(path, sizeof path);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cpu_llvm_api_fn get = lib ? (cpu_llvm_api_fn)(uintptr_t)dlsym(lib, "coil_cpu_llvm_api") : NULL;
    const cpu_llvm_api *api = get ? get() : NULL;
    if (!lib)
      snprintf(llvm_why, sizeof llvm_why, "cannot load %s: %s (coil was built without LLVM 19, or libLLVM-19 is missing)",
               path, dlerror());
    else if (!api || api->version != CPU_LLVM_API_VERSION)
      snprintf(llvm_why, sizeof llvm_why, "%s is not this plugin's LLVM code path (version mismatch): reinstall coil", path);
    else
      llvm_api = api;
  }
  const cpu_llvm_api *api = llvm_api;
  *why = llvm_why;
  pthread_mutex_unlock(&llvm_lock);
  return api;
}

/* The C compiler's file: cc itself when it names a path, else the first match on $PATH; "" when
 * there is none. */
static void
find_cc(const char *cc, char *path, size_t size)
{
  path[0] = 0;
  if (strchr(cc, '/')) {
    snprintf(path, size, "%s", cc);
    return;
  }
  const char *env = getenv("PATH");
  char dirs[8192];
  snprintf(dirs, sizeof dirs, "%s", env ? env : "/usr/bin:/bin");
  char *save = NULL;
  for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    snprintf(path, size, "%s/%s", dir, cc);
    if (access(path, X_OK) == 0)
      return;
    path[0] = 0;
  }
}

/* whether o's C compiler is found */
static bool
have_cc(const cpu_options *o)
{
  char path[4096];
  find_cc(o->cc, path, sizeof path);
  return path[0] != 0;
}

/* codegen = auto: LLVM where cpu-llvm.so and its compile worker are installed beside the plugin
 * and no key of the C path (cc, cflags, cc_timeout) is set; else the C compiler where one is
 * found; else LLVM (which then says what is missing). Decided from files alone: a run that hits
 * the cache must not start LLVM to learn its cache key. compile_program falls back to cc when
 * the files are there but the worker does not start (libLLVM missing, or unmappable under
 * ulimit -v). */
static bool
use_llvm(const cpu_options *o)
{
  if (o->codegen != CODEGEN_AUTO)
    return o->codegen == CODEGEN_LLVM;
  char path[4200], worker_path[4200];
  if (!o->c_keys) {
    llvm_module_path(path, sizeof path);
    llvm_worker_path(worker_path, sizeof worker_path);
    if (access(path, R_OK) == 0 && access(worker_path, X_OK) == 0)
      return true;
  }
  return !have_cc(o);
}

/* ---- instances ---- */

struct coil_plugin {
  const coil_host_api *host;
  cpu_options opts;
  bool llvm;                 /* compiles through LLVM (codegen = llvm, or auto: use_llvm) */
  char identity[4096];       /* the compiler (resolved path, size, mtime) and fixed flags */
};

/* The memory pool of an artifact: blocks the program freed, kept by size for the next alloc
 * of that size (this run's or the next's). The memory plan gives buffers of few distinct sizes,
 * so after the first run the pool holds what the plan needs at its peak and a run allocates
 * nothing from the system. */
typedef struct pool_block {
  struct pool_block *next;
  size_t size;
  void *mem;
} pool_block;

#define POOL_MAX_BYTES ((size_t)1 << 30) /* blocks beyond this many idle bytes go back */

struct coil_artifact {
  void *lib;                 /* dlopen handle */
  pool_block *free_blocks;   /* idle blocks (a run's release puts them here) */
  pool_block *spare;         /* list nodes to reuse */
  size_t idle_bytes;
  struct block_header *live; /* blocks handed out and not yet released */
  coil_cpu_entry_fn entry;
  void *llvm;                /* codegen = llvm: the object as LLVM's JIT loaded it (cpu_llvm_api.load) */
  cpu_elf *elf;              /* or as coil loaded it, without LLVM (cpu_elf.c) */
  cpu_llvm_kernel_fn *fns;   /* its kernels */
  cpu_walk *walk;            /* and the walk that calls them */
  coil_wir_program *program; /* for library calls and messages */
  int threads;
  char error[2100];          /* the last run's failure */
};

static coil_error *
create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return coil_sdk_out_of_memory();
  coil_error *e = read_options(args->options, &p->opts);
  if (e) {
    free(p);
    return e;
  }
  p->host = COIL_STRUCT_HAS(args, coil_plugin_create_args, host) ? args->host : NULL;
  /* the compiler by its file: a stat is cheap where running `cc --version` on every run is not */
  char path[4096] = "";
  struct stat st = {0};
  const char *cc = p->opts.cc;
  find_cc(cc, path, sizeof path);
  char real[4096];
  if (path[0] && realpath(path, real) && stat(real, &st) == 0)
    snprintf(path, sizeof path, "%s", real);
  /* -march=native is the CPU it resolves to: an entry shared through a remote cache must not
   * reach a machine whose CPU lacks what the code uses */
  char native[17] = "", cpu[32] = "";
  if (!p->opts.portable) {
    host_cpu(native);
    snprintf(cpu, sizeof cpu, "(cpu %s) ", native);
  }
  snprintf(p->identity, sizeof p->identity, "cpu " CPU_VERSION "; cc %.2000s size %lld mtime %lld; flags %s%s%.1000s",
           path[0] ? path : cc, (long long)st.st_size, (long long)st.st_mtime, p->opts.portable ? "portable " : "-march=native ",
           cpu, p->opts.cflags);
  p->llvm = use_llvm(&p->opts);
  if (p->llvm) {
    /* the code depends on cpu-llvm.so, the libLLVM it links and the CPU, not on cc: all three
     * known without loading LLVM, which a run that hits the cache never does (cpu_elf.c) */
    char module[4200], mstamp[2100], lstamp[2100], host[17] = "";
    llvm_module_path(module, sizeof module);
    file_stamp(module, mstamp, sizeof mstamp);
#ifdef COIL_CPU_LIBLLVM
    file_stamp(COIL_CPU_LIBLLVM, lstamp, sizeof lstamp);
#else
    snprintf(lstamp, sizeof lstamp, "none");
#endif
    host_cpu(host);
    snprintf(p->identity, sizeof p->identity, "cpu " CPU_VERSION "; codegen llvm; %.1900s; libLLVM %.1900s; cpu %s", mstamp,
             lstamp, p->opts.portable ? "portable" : host);
  }
  *out = p;
  return NULL;
}

static const char *
identity(coil_plugin *self)
{
  return self->identity;
}

static void
destroy(coil_plugin *self)
{
  free(self);
}

static coil_support
supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  (void)self;
  if ((unsigned)dtype >= COIL_DTYPE_COUNT)
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
  static const char *const externs[] = {
      "aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.convolution.default",
      "aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default", "aten.topk.default",
      "aten.gather.default", "aten.embedding.default", "aten.index.Tensor"};
  for (size_t i = 0; i < sizeof externs / sizeof *externs; i++)
    if (strcmp(op, externs[i]) == 0)
      return COIL_SUPPORTED;
  return COIL_UNSUPPORTED;
}

/* ---- compile ---- */


/* Runs argv (argv[0] looked up on PATH) with stdout and stderr into log: 0 once it has ended
 * (*status says how), else an errno: ETIMEDOUT when it ran past timeout seconds (0: no limit)
 * and was killed, so a hanging compiler cannot hang coil. */
static int
spawn(char *const *argv, const char *log, int timeout, int *status)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return rc;
  struct timespec start, now, nap = {0, 1000000}; /* polled from 1 ms, doubling to 64 ms */
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    pid_t r = waitpid(pid, status, timeout > 0 ? WNOHANG : 0);
    if (r == pid)
      return 0;
    if (r < 0 && errno != EINTR)
      return errno;
    if (r != 0)
      continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= timeout) {
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
      return ETIMEDOUT;
    }
    nanosleep(&nap, NULL);
    if (nap.tv_nsec < 64000000)
      nap.tv_nsec *= 2;
  }
}


extern const char coil_cpu_math_source[]; /* coil_cpu_math.h, embedded at build time */

/* Opens dir/libkernels.so without following a symlink, checks the file opened (a regular file
 * owned by this user or root that nobody else may write to: it is code), and dlopens it
 * through /proc/self/fd of that descriptor, so the file loaded is the file checked. *entry:
 * its coil_cpu_entry. On failure returns NULL and writes why into `why`. */
static void *
open_library(const char *dir, coil_cpu_entry_fn *entry, char *why, size_t size)
{
  char path[4200], via[64];
  snprintf(path, sizeof path, "%s/libkernels.so", dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int fd = dfd < 0 ? -1 : openat(dfd, "libkernels.so", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int e = errno;
  if (dfd >= 0)
    close(dfd);
  struct stat st;
  if (fd < 0) {
    snprintf(why, size, "cannot open %s: %s", path, e == ELOOP ? "it is a symlink (not followed)" : strerror(e));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) ||
      (st.st_mode & 022)) {
    snprintf(why, size, "%s is not a library coil may load: it must be a regular file of this user's "
                        "(or root's) that nobody else may write to (uid %ld, mode %03o)",
             path, (long)st.st_uid, (unsigned)(st.st_mode & 0777));
    close(fd);
    return NULL;
  }
  /* The loader knows a library by the name it was opened with and hands back the loaded one for
   * that name without looking at the file. An artifact loaded earlier, still loaded, may have
   * been opened as /proc/self/fd/N with an N that is free again and is ours now: then the name
   * is taken, and the descriptor is duplicated to the next number until one is not. */
  int fds[64], nfds = 0, cur = fd;
  snprintf(via, sizeof via, "/proc/self/fd/%d", cur);
  for (void *taken; nfds < 64 && (taken = dlopen(via, RTLD_LAZY | RTLD_NOLOAD));) {
    dlclose(taken); /* the reference RTLD_NOLOAD added */
    if ((cur = fcntl(cur, F_DUPFD_CLOEXEC, cur + 1)) < 0)
      break;
    fds[nfds++] = cur;
    snprintf(via, sizeof via, "/proc/self/fd/%d", cur);
  }
  struct stat check;
  const char *name = cur >= 0 && nfds < 64 && stat(via, &check) == 0 && check.st_ino == st.st_ino ? via : path;
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  close(fd); /* the mapping outlives the descriptors */
  for (int i = 0; i < nfds; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (!lib) {
    snprintf(why, size, "cannot load %s: %s", path, dlerror());
    return NULL;
  }
  *(void **)entry = dlsym(lib, "coil_cpu_entry");
  if (!*entry) {
    snprintf(why, size, "%s has no coil_cpu_entry", path);
    dlclose(lib);
    return NULL;
  }
  return lib;
}

/* This machine's CPU as the kernel describes it, without LLVM: a hash of the first processor's
 * "model name" and "flags" in /proc/cpuinfo ("" when unreadable). An LLVM-built artifact for the
 * host CPU records it, and a load on a machine with the same one needs no LLVM to check the
 * target. */
static void make_tag(const char *const *s, char out[17]);

static char host_cpu_id[17];
static pthread_once_t host_cpu_once = PTHREAD_ONCE_INIT;

static void
read_host_cpu(void)
{
  char *out = host_cpu_id;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[8192], model[8192] = "", flags[8192] = "";
  while (fgets(line, sizeof line, f) && !(model[0] && flags[0])) {
    if (!model[0] && strncmp(line, "model name", 10) == 0)
      memcpy(model, line, sizeof model);
    else if (!flags[0] && strncmp(line, "flags", 5) == 0)
      memcpy(flags, line, sizeof flags);
  }
  fclose(f);
  if (!flags[0])
    return;
  const char *parts[] = {model, flags, NULL};
  make_tag(parts, out);
}

/* read once a process: /proc/cpuinfo is large on a many-core machine, and every load asks */
static void
host_cpu(char out[17])
{
  pthread_once(&host_cpu_once, read_host_cpu);
  memcpy(out, host_cpu_id, 17);
}

/* FNV-1a, 64 bits, of the strings in s (NULL-terminated): an artifact's tag. */
static void
make_tag(const char *const *s, char out[17])
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    for (const unsigned char *c = (const unsigned char *)*s;; c++) {
      h = (h ^ *c) * 0x100000001b3ull;
      if (!*c)
        break;
    }
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static coil_error *
write_binary(const char *dir, const char *name, const void *data, size_t size)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, size, f) == size;
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok)
    return coil_sdk_error(COIL_ERR_IO, "cpu: cannot write %s: %s", path, strerror(errno));
  return NULL;
}

/* A directory under $TMPDIR (else /tmp) for what a failed compile leaves to read, or "". */
static void
kept_dir(char *out, size_t size)
{
  const char *tmp = getenv("TMPDIR");
  snprintf(out, size, "%s/coil-cpu-failed-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(out))
    out[0] = 0;
}

/* ---- codegen = llvm: the compile worker (cpu_llvm.h) ---- */

#define LLVM_WORKER_START_S 60   /* to load libLLVM and say hello */
#define LLVM_WORKER_TIMEOUT_S 600 /* a compile, as cc_timeout's default: one that long is stuck */

/* One worker a process, compiles one at a time (worker_lock). owner: the process that started
 * it; in a fork of the host, which has a copy of this but no child, the fork starts its own. */
static struct {
  pid_t pid, owner;
  int fd;                    /* the socket, -1: none */
  int err_fd, ir_fd;         /* its stderr and its IR, memory files shared with it */
  cpu_llvm_hello hello;
} worker = {0, 0, -1, -1, -1, {0}};
static pthread_mutex_t worker_lock = PTHREAD_MUTEX_INITIALIZER;

/* A memory file (memfd, close-on-exec) numbered 10 or more, or -1. */
static int
mem_file(const char *name)
{
  int fd = (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */);
  if (fd < 0 || fd >= 10)
    return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 10); /* spawn's dup2 onto 2, 3, 4 never meets itself */
  close(fd);
  return high;
}

/* Up to size - 1 bytes of file fd from its start, as a string. */
static void
read_mem_file(int fd, char *out, size_t size)
{
  ssize_t n = fd >= 0 ? pread(fd, out, size - 1, 0) : -1;
  out[n > 0 ? n : 0] = 0;
}

/* Waits until fd has data or the deadline (monotonic seconds) passes; false on the deadline. */
static bool
wait_readable(int fd, double deadline)
{
  for (;;) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double left = deadline - ((double)t.tv_sec + (double)t.tv_nsec / 1e9);
    if (left <= 0)
      return false;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int n = poll(&pf, 1, left > 1e6 ? 1000000000 : (int)(left * 1e3) + 1);
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return true; /* let the read say what is wrong */
  }
}

static double
deadline_in(int seconds)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9 + seconds;
}

static bool recv_late; /* the last recv_until failed on its deadline (worker_lock held) */

static bool
recv_until(int fd, void *buf, size_t n, double deadline)
{
  recv_late = false;
  for (char *p = buf; n > 0;) {
    if (!wait_readable(fd, deadline))
      return !(recv_late = true);
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

/* Ends the worker (killed if it still runs) and says in `how` how it ended, with the last
 * lines it wrote to stderr (LLVM's reason for a fatal error). worker_lock held. */
static int
worker_end(bool kill_it, char *how, size_t size)
{
  if (worker.fd >= 0)
    close(worker.fd);
  worker.fd = -1;
  int st = 0;
  pid_t w = -1;
  if (worker.pid > 0) {
    if (kill_it)
      kill(worker.pid, SIGKILL);
    do
      w = waitpid(worker.pid, &st, 0);
    while (w < 0 && errno == EINTR);
  }
  char said[1600];
  read_mem_file(worker.err_fd, said, sizeof said);
  for (size_t i = strlen(said); i > 0 && (said[i - 1] == '\n' || said[i - 1] == ' '); i--)
    said[i - 1] = 0;
  for (char *c = said; *c; c++)
    if (*c == '\n')
      *c = ' ';
  char end[96];
  if (kill_it)
    snprintf(end, sizeof end, "did not answer in time and was killed");
  else if (w == worker.pid && WIFSIGNALED(st))
    snprintf(end, sizeof end, "was ended by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (w == worker.pid && WIFEXITED(st))
    snprintf(end, sizeof end, "exited with status %d", WEXITSTATUS(st));
  else
    snprintf(end, sizeof end, "ended");
  snprintf(how, size, "%s%s%s", end, said[0] ? ": " : "", said);
  worker.pid = 0;
  return !kill_it && w > 0 && WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

/* Starts the worker when this process has none; false with why. worker_lock held. */
static bool
worker_start(char *why, size_t size)
{
  if (worker.fd >= 0 && worker.owner == getpid()) {
    int st;
    if (waitpid(worker.pid, &st, WNOHANG) == 0)
      return true;
    close(worker.fd); /* it ended between compiles (killed, say): a new one for this compile */
    worker.fd = -1;
    worker.pid = 0;
  }
  if (worker.fd >= 0) { /* a fork of the host: the worker is the parent's */
    close(worker.fd);
    worker.fd = -1;
    worker.pid = 0;
  }
  char path[4200];
  llvm_worker_path(path, sizeof path);
  if (worker.err_fd < 0 || worker.owner != getpid()) {
    if (worker.err_fd >= 0)
      close(worker.err_fd), close(worker.ir_fd);
    worker.err_fd = mem_file("coil-cpu-llvm-stderr");
    worker.ir_fd = mem_file("coil-cpu-llvm-ir");
  }
  int sv[2] = {-1, -1};
  if (worker.err_fd < 0 || worker.ir_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(why, size, "cannot set up the LLVM compile worker: %s", strerror(errno));
    return false;
  }
  for (int i = 0; i < 2; i++)
    if (sv[i] < 10) { /* spawn's dup2 onto 3 must not meet itself */
      int high = fcntl(sv[i], F_DUPFD_CLOEXEC, 10);
      close(sv[i]);
      sv[i] = high;
    }
  /* empty, from the start (the worker's fd 2 shares the offset): what it says is its own */
  for (int i = 0; i < 2; i++) {
    int f = i ? worker.ir_fd : worker.err_fd;
    if (ftruncate(f, 0) == 0)
      lseek(f, 0, SEEK_SET);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, worker.err_fd, 2);
  posix_spawn_file_actions_adddup2(&fa, sv[1], CPU_LLVM_WORKER_SOCKET);
  posix_spawn_file_actions_adddup2(&fa, worker.ir_fd, CPU_LLVM_WORKER_IR);
  posix_spawn_file_actions_addclosefrom_np(&fa, CPU_LLVM_WORKER_IR + 1); /* none of the host's files */
  char *argv[] = {(char *)CPU_LLVM_WORKER, NULL};
  extern char **environ;
  pid_t pid;
  int rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    snprintf(why, size, "cannot start %s: %s", path, strerror(rc));
    return false;
  }
  worker.pid = pid;
  worker.owner = getpid();
  worker.fd = sv[0];
  if (!recv_until(worker.fd, &worker.hello, sizeof worker.hello, deadline_in(LLVM_WORKER_START_S)) ||
      worker.hello.magic != CPU_LLVM_WORKER_MAGIC || worker.hello.api_version != CPU_LLVM_API_VERSION) {
    char how[2000];
    worker_end(recv_late, how, sizeof how);
    snprintf(why, size, "the LLVM compile worker %.2000s %.2000s", path, how);
    return false;
  }
  worker.hello.llvm_version[sizeof worker.hello.llvm_version - 1] = 0;
  worker.hello.target[0][sizeof worker.hello.target[0] - 1] = 0;
  worker.hello.target[1][sizeof worker.hello.target[1] - 1] = 0;
  return true;
}

/* Whether the worker runs (starting it); *why says why not. For codegen = auto's fallback. */
static bool
worker_ready(char *why, size_t size)
{
  pthread_mutex_lock(&worker_lock);
  bool ok = worker_start(why, size);
  pthread_mutex_unlock(&worker_lock);
  return ok;
}

/* codegen = llvm: the worker compiles p (from its text, wir) into an object; this writes
 * kernels.o, the IR beside it (kernels.ll), program.wir for the walk, and the manifest last,
 * with what the object was built for. */
static coil_error *
compile_llvm(const cpu_options *o, coil_wir_program *p, const char *wir, const char *dir)
{
  char why[4400];
  pthread_mutex_lock(&worker_lock);
  if (!worker_start(why, sizeof why)) {
    pthread_mutex_unlock(&worker_lock);
    if (o->codegen == CODEGEN_AUTO)
      return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: no C compiler ('%s' is not on PATH; set [plugin.cpu] cc) "
                            "and no LLVM code path: %s", o->cc, why);
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: codegen = llvm: %s (or set [plugin.cpu] codegen = cc)", why);
  }
  /* copies: the worker (and its hello) may be replaced by another thread's compile once the
   * lock is released, and the manifest is written after that */
  char llvm_version[sizeof worker.hello.llvm_version], target[sizeof worker.hello.target[0]];
  snprintf(llvm_version, sizeof llvm_version, "%s", worker.hello.llvm_version);
  snprintf(target, sizeof target, "%s", worker.hello.target[o->portable ? 1 : 0]);
  char tag[17];
  const char *parts[] = {CPU_VERSION, llvm_version, target, wir, NULL};
  make_tag(parts, tag);
  cpu_llvm_request rq = {.magic = CPU_LLVM_WORKER_MAGIC, .portable = o->portable, .wir_len = strlen(wir)};
  snprintf(rq.tag, sizeof rq.tag, "%s", tag);
  cpu_llvm_reply rp; /* this thread's: read after worker_lock is released */
  char *ir = NULL, *obj = NULL, how[2000];
  bool ok = false;
  for (int attempt = 0; attempt < 2 && !ok; attempt++) {
    if (attempt && !worker_start(why, sizeof why)) {
      snprintf(how, sizeof how, "was killed, and a new one did not start: %.1900s", why);
      break;
    }
    memset(&rp, 0, sizeof rp);
    free(ir), free(obj);
    ir = obj = NULL;
    double deadline = deadline_in(LLVM_WORKER_TIMEOUT_S);
    recv_late = false;
    ok = cpu_llvm_send_all(worker.fd, &rq, sizeof rq) && cpu_llvm_send_all(worker.fd, wir, rq.wir_len) &&
         recv_until(worker.fd, &rp, sizeof rp, deadline) && rp.magic == CPU_LLVM_WORKER_MAGIC &&
         rp.ir_len < ((uint64_t)1 << 32) && rp.obj_len < ((uint64_t)1 << 32) &&
         (ir = malloc(rp.ir_len + 1)) && (obj = malloc(rp.obj_len + 1)) &&
         recv_until(worker.fd, ir, rp.ir_len, deadline) && recv_until(worker.fd, obj, rp.obj_len, deadline);
    /* killed from outside (the OOM killer, a person): not LLVM's doing, so once more with a new
     * worker; LLVM's own endings (exit 70, abort, a crash) and a hang are the compile's answer */
    if (!ok && worker_end(recv_late, how, sizeof how) != SIGKILL)
      break;
  }
  if (!ok) { /* LLVM ended the worker (or it hung): say how, keep what reproduces it */
    char kept[4200];
    kept_dir(kept, sizeof kept);
    bool kept_ir = false;
    if (kept[0]) { /* for a bug report: the program the plugin was given, and the IR LLVM had */
      coil_error *we = coil_sdk_write_file(kept, "program.wir", wir);
      off_t irn = we ? 0 : lseek(worker.ir_fd, 0, SEEK_END);
      char *text = irn > 0 ? malloc((size_t)irn + 1) : NULL;
      if (text) {
        read_mem_file(worker.ir_fd, text, (size_t)irn + 1);
        coil_error *ie = coil_sdk_write_file(kept, "kernels.ll", text);
        kept_ir = !ie;
        coil_sdk_error_free(ie);
        free(text);
      }
      if (we) {
        coil_sdk_error_free(we);
        kept[0] = 0;
      }
    }
    pthread_mutex_unlock(&worker_lock);
    free(ir);
    free(obj);
    char kernels[600] = "";
    for (int k = 0, at = 0; k < p->nkernels && k < 7 && at < (int)sizeof kernels - 80; k++)
      at += snprintf(kernels + at, sizeof kernels - (size_t)at, "%s%s", k ? ", " : "", k < 6 ? p->kernels[k].name : "...");
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED,
                          "cpu (llvm): internal error: LLVM's compile of program %s (kernels %s) failed: the compile "
                          "worker %.1700s%s%s%s",
                          p->name, kernels, how,
                          !kept[0] ? "" : kept_ir ? "\nthe Wrapper IR and LLVM's IR are kept in " : "\nthe Wrapper IR is kept in ",
                          kept, !kept[0] ? "" : kept_ir ? "/ (program.wir, kernels.ll)" : "/program.wir");
  }
  pthread_mutex_unlock(&worker_lock);
  ir[rp.ir_len] = 0;
  rp.msg[sizeof rp.msg - 1] = 0;
  rp.times[sizeof rp.times - 1] = 0;
  if (rp.rc) {
    char kept[4200] = "";
    if (rp.ir_len) { /* the host removes the failed artifact: keep the IR where a person can read it */
      kept_dir(kept, sizeof kept);
      coil_error *e = kept[0] ? coil_sdk_write_file(kept, "kernels.ll", ir) : NULL;
      if (e) {
        coil_sdk_error_free(e);
        kept[0] = 0;
      }
    }
    free(ir);
    free(obj);
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "%s%s%s%s", rp.msg, kept[0] ? "\nthe IR is kept in " : "", kept,
                          kept[0] ? "/kernels.ll" : "");
  }
  coil_error *e = coil_sdk_write_file(dir, "program.wir", wir);
  if (!e && rp.ir_len)
    e = coil_sdk_write_file(dir, "kernels.ll", ir);
  if (!e)
    e = write_binary(dir, "kernels.o", obj, rp.obj_len);
  free(ir);
  free(obj);
  if (e)
    return e;
  char manifest[4096], host[17];
  host_cpu(host);
  snprintf(manifest, sizeof manifest,
           "{\"plugin\": \"cpu\", \"plugin_version\": \"" CPU_VERSION "\", \"wir_version\": \"%d.%d\", "
           "\"program\": \"%s\", \"codegen\": \"llvm\", \"llvm\": \"%s\", \"tag\": \"%s\", \"host\": \"%s\", "
           "\"target\": \"%.2000s\", "
           "\"portable\": %s, \"times\": \"%s\", \"files\": [\"program.wir\", \"kernels.ll\", \"kernels.o\"]}\n",
           p->version_major, p->version_minor, p->name, llvm_version, tag, o->portable ? "" : host, target,
           o->portable ? "true" : "false", rp.times);
  return coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest);
}

/* The host's log, once a process: why codegen = auto compiles with the C compiler after all */
static void
fallback_note(const coil_host_api *host, const char *why)
{
  static atomic_flag said = ATOMIC_FLAG_INIT;
  if (!host || !COIL_STRUCT_HAS(host, coil_host_api, log) || !host->log || atomic_flag_test_and_set(&said))
    return;
  char line[4600];
  snprintf(line, sizeof line, "codegen = auto: compiling with the C compiler: %s", why);
  host->log(host, COIL_LOG_WARN, line);
}

/* Compiles p, the plugin's own parse of the program's text (compile below). */
static coil_error *
compile_program(coil_plugin *self, const coil_plugin_compile_args *args, const coil_wir_program *p,
                const char *wir)
{
  cpu_options o;
  coil_error *e = read_options(args->options, &o);
  if (e)
    return e;
  if (!args->options || !COIL_STRUCT_HAS(args->options, coil_plugin_options, values) || !args->options->count)
    o = self->opts; /* the instance's options when the compile brings none */
  const char *dir = args->artifact_dir;
  bool brought = args->options && COIL_STRUCT_HAS(args->options, coil_plugin_options, values) && args->options->count;
  if (brought ? use_llvm(&o) : self->llvm) {
    char why[4400];
    if (o.codegen == CODEGEN_LLVM || worker_ready(why, sizeof why) || !have_cc(&o))
      return compile_llvm(&o, (coil_wir_program *)p, wir, dir);
    /* auto chose LLVM by its file, and it does not load: the C compiler instead. The artifact
     * says which path built it (its manifest), which is all a load reads. */
    fallback_note(self->host, why);
  }
  coil_strbuf src = {0};
  coil_diag d = {0};
  if (cpu_codegen(p, coil_cpu_math_source[0] != 0, &src, &d)) {
    coil_strbuf_free(&src);
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "%s", d.msg);
  }
  if ((e = coil_sdk_write_file(dir, "kernels.c", src.s)) || (e = coil_sdk_write_file(dir, "coil_cpu_math.h", coil_cpu_math_source)) ||
      (e = coil_sdk_write_file(dir, "program.wir", wir))) {
    coil_strbuf_free(&src);
    return e;
  }
  coil_strbuf_free(&src);
  char source[4200], lib[4200], log[4200], inc[4300];
  snprintf(source, sizeof source, "%s/kernels.c", dir);
  snprintf(lib, sizeof lib, "%s/libkernels.so", dir);
  snprintf(log, sizeof log, "%s/cc.log", dir);
  snprintf(inc, sizeof inc, "-I%s", dir);
  char *argv[64];
  int n = 0;
  argv[n++] = o.cc;
  argv[n++] = "-std=gnu11";
  argv[n++] = "-O3";
  argv[n++] = "-fopenmp";
  argv[n++] = "-fPIC";
  argv[n++] = "-shared";
  argv[n++] = "-fno-math-errno";
  argv[n++] = "-w";
  if (!o.portable)
    argv[n++] = "-march=native";
  char flags[1024];
  snprintf(flags, sizeof flags, "%s", o.cflags);
  for (char *t = strtok(flags, " "); t && n < 56; t = strtok(NULL, " "))
    argv[n++] = t;
  argv[n++] = inc;
  argv[n++] = "-o";
  argv[n++] = lib;
  argv[n++] = source;
  argv[n++] = "-lm";
  argv[n] = NULL;
  int status = 0, rc = spawn(argv, log, o.cc_timeout, &status);
  if (rc == ETIMEDOUT)
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: the C compiler '%s' ran past cc_timeout (%d s) and was killed (set [plugin.cpu] cc_timeout; 0: no limit)",
                          o.cc, o.cc_timeout);
  if (rc)
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: cannot run the C compiler '%s': %s (set [plugin.cpu] cc)", o.cc,
                     strerror(rc));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    /* the host removes the failed artifact: keep the source and the log where a person can read them */
    char kept[4200], cmd[2048] = "";
    const char *tmp = getenv("TMPDIR");
    snprintf(kept, sizeof kept, "%s/coil-cpu-failed-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    static const char *const files[] = {"kernels.c", "coil_cpu_math.h", "cc.log"};
    bool have = mkdtemp(kept) != NULL, made = have;
    for (int i = 0; have && i < 3; i++) {
      char from[4300], to[4300];
      snprintf(from, sizeof from, "%s/%s", dir, files[i]);
      snprintf(to, sizeof to, "%s/%s", kept, files[i]);
      char *text = coil_sdk_read_file(from, 64u << 20, NULL);
      FILE *f = text ? fopen(to, "w") : NULL;
      have = f && fputs(text, f) >= 0;
      if (f && fclose(f) != 0)
        have = false;
      free(text);
    }
    for (int i = 0; made && !have && i < 3; i++) { /* a partial copy (a full disk) is not kept */
      char to[4300];
      snprintf(to, sizeof to, "%s/%s", kept, files[i]);
      remove(to);
    }
    if (made && !have)
      rmdir(kept);
    for (int i = 0; argv[i]; i++)
      snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
    char *text = coil_sdk_read_file(log, 1200, NULL);
    e = coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: the C compiler failed (%s %d): %s\n%s%s%s%s",
                  WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                  cmd, text && *text ? text : "(no output)\n", have ? "the source is kept in " : "",
                  have ? kept : "", have ? "/kernels.c" : "");
    free(text);
    return e;
  }
  /* The compiler said yes: check that it wrote what load needs (CC=true exits 0 and writes
   * nothing), so that no artifact or cache entry is installed that could never load. */
  char why[4400];
  coil_cpu_entry_fn entry;
  void *check = open_library(dir, &entry, why, sizeof why);
  if (!check)
    return coil_sdk_error(COIL_ERR_COMPILE_FAILED, "cpu: the C compiler '%s' exited 0 but wrote no "
                          "usable library: %s (set [plugin.cpu] cc or $CC to a C compiler)", o.cc, why);
  dlclose(check);
  char manifest[2048];
  snprintf(manifest, sizeof manifest,
           "{\"plugin\": \"cpu\", \"plugin_version\": \"" CPU_VERSION "\", \"wir_version\": \"%d.%d\", "
           "\"program\": \"%s\", \"compiler\": \"%s\", \"portable\": %s, "
           "\"files\": [\"kernels.c\", \"coil_cpu_math.h\", \"program.wir\", \"libkernels.so\", \"cc.log\"]}\n",
           p->version_major, p->version_minor, p->name, o.cc,
           o.portable ? "true" : "false");
  return coil_sdk_write_file(dir, COIL_ARTIFACT_MANIFEST, manifest);
}

/* The program comes as text (COIL_FEATURE_PROGRAM_TEXT): the SDK parses it into a copy of our
 * own, which code generation may change (loop ranges), and the text is kept verbatim as
 * program.wir. */
static coil_error *
compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  coil_wir_program *p = NULL;
  coil_error *e = coil_sdk_compile_program("cpu", args, &p);
  if (e)
    return e;
  char *wir = coil_sdk_compile_text(args);
  e = wir ? compile_program(self, args, p, wir) : coil_sdk_out_of_memory();
  free(wir);
  coil_wir_free(p);
  return e;
}

/* ---- load ---- */

/* The string value of "key" in the manifest (our own writing: no escapes), into out. */
static bool
manifest_str(const char *manifest, const char *key, char *out, size_t size)
{
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *at = strstr(manifest, pat), *end = at ? strchr(at + strlen(pat), '"') : NULL;
  if (!end || (size_t)(end - at - strlen(pat)) >= size)
    return false;
  at += strlen(pat);
  memcpy(out, at, (size_t)(end - at));
  out[end - at] = 0;
  return true;
}

/* kernels.o of an artifact: a regular file of this user's (or root's) that nobody else may
 * write, opened without following a symlink (the rules of libkernels.so). */
static void *
read_object(const char *dir, size_t *size, char *why, size_t wsize)
{
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int fd = dfd < 0 ? -1 : openat(dfd, "kernels.o", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int err = errno;
  if (dfd >= 0)
    close(dfd);
  struct stat st;
  if (fd < 0) {
    snprintf(why, wsize, "cannot open %s/kernels.o: %s", dir, err == ELOOP ? "it is a symlink (not followed)" : strerror(err));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022) ||
      st.st_size <= 0 || st.st_size > (1 << 30)) {
    snprintf(why, wsize, "%s/kernels.o is not an object coil may load: it must be a regular file of this user's "
             "(or root's) that nobody else may write to", dir);
    close(fd);
    return NULL;
  }
  char *buf = malloc((size_t)st.st_size);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  if (!buf || got != (size_t)st.st_size) {
    free(buf);
    snprintf(why, wsize, "cannot read %s/kernels.o", dir);
    return NULL;
  }
  *size = got;
  return buf;
}

static void artifact_free(coil_artifact *a);

/* The object loaded by coil itself (cpu_elf.c), without libLLVM, when the manifest says it was
 * built for this very CPU (or portably): 0, or -1 when the JIT must do it. */
static int
load_elf(coil_artifact *a, const char *dir, const char *manifest, const char *tag)
{
  char host[17], built[64];
  host_cpu(host);
  bool portable = strstr(manifest, "\"portable\": true") != NULL;
  if (!portable && (!host[0] || !manifest_str(manifest, "host", built, sizeof built) || strcmp(built, host) != 0))
    return -1;
  char why[4400];
  size_t size = 0;
  void *obj = read_object(dir, &size, why, sizeof why);
  cpu_elf *e = obj ? cpu_elf_load(obj, size, why, sizeof why) : NULL;
  free(obj);
  if (!e)
    return -1;
  const coil_wir_program *p = a->program;
  for (int k = 0; k < p->nkernels; k++) {
    char name[512];
    snprintf(name, sizeof name, "%s_%s", p->kernels[k].name, tag);
    if (!(a->fns[k] = (cpu_llvm_kernel_fn)(uintptr_t)cpu_elf_symbol(e, name))) {
      cpu_elf_free(e);
      return -1;
    }
  }
  a->elf = e;
  return 0;
}

static coil_error *
load_llvm(coil_plugin *self, const char *dir, const char *manifest, coil_artifact **out)
{
  char early_tag[64];
  if (manifest_str(manifest, "tag", early_tag, sizeof early_tag) && strlen(early_tag) == 16 &&
      strspn(early_tag, "0123456789abcdef") == 16) { /* without LLVM, where coil can */
    char path[4200];
    snprintf(path, sizeof path, "%s/program.wir", dir);
    char *text = coil_sdk_read_file(path, 64u << 20, NULL);
    coil_diag d = {0};
    coil_wir_program *p = text ? coil_wir_parse(path, text, strlen(text), &d) : NULL;
    free(text);
    coil_artifact *a = p ? calloc(1, sizeof *a) : NULL;
    if (a) {
      a->program = p;
      a->threads = self->opts.threads;
      a->fns = calloc((size_t)p->nkernels + 1, sizeof *a->fns);
      if (a->fns && load_elf(a, dir, manifest, early_tag) == 0 && (a->walk = cpu_walk_new(p, a->fns))) {
        *out = a;
        return NULL;
      }
      artifact_free(a);
    } else {
      coil_wir_free(p);
    }
  }
  const char *why;
  const cpu_llvm_api *api = llvm_module(&why);
  if (!api)
    return coil_sdk_error(COIL_ERR_VERSION, "cpu: %s holds LLVM-built kernels: %s", dir, why);
  char tag[64], version[64], target[2048], here[2048];
  if (!manifest_str(manifest, "tag", tag, sizeof tag) || strlen(tag) != 16 || strspn(tag, "0123456789abcdef") != 16 ||
      !manifest_str(manifest, "llvm", version, sizeof version) || !manifest_str(manifest, "target", target, sizeof target))
    return coil_sdk_error(COIL_ERR_VERSION, "cpu: %s/manifest.json lacks the tag, llvm or target of its kernels: recompile", dir);
  api->target(strstr(manifest, "\"portable\": true") != NULL, here, sizeof here);
  if (strcmp(version, api->llvm_version) != 0 || strcmp(target, here) != 0)
    return coil_sdk_error(COIL_ERR_VERSION, "cpu: %s was built by LLVM %s for %s; this is LLVM %s on %s: recompile "
                          "(portable = true makes artifacts that move between CPUs)", dir, version, target,
                          api->llvm_version, here);
  char path[4200];
  snprintf(path, sizeof path, "%s/program.wir", dir);
  char *text = coil_sdk_read_file(path, 64u << 20, NULL);
  if (!text)
    return coil_sdk_error(COIL_ERR_IO, "cpu: cannot read %s", path);
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse(path, text, strlen(text), &d);
  free(text);
  if (!p)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: %s", d.msg);
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    coil_wir_free(p);
    return coil_sdk_out_of_memory();
  }
  a->program = p;
  a->threads = self->opts.threads;
  char whyo[4400];
  size_t size = 0;
  void *obj = read_object(dir, &size, whyo, sizeof whyo);
  if (!obj) {
    artifact_free(a);
    return coil_sdk_error(COIL_ERR_IO, "cpu: %s", whyo);
  }
  a->fns = calloc((size_t)p->nkernels + 1, sizeof *a->fns);
  pthread_mutex_lock(&llvm_lock); /* not inside LLVM while another thread forks (compile_llvm) */
  a->llvm = a->fns ? api->load(obj, size, tag, p, a->fns, &d) : NULL;
  pthread_mutex_unlock(&llvm_lock);
  free(obj);
  if (!a->llvm) {
    artifact_free(a);
    return coil_sdk_error(COIL_ERR_IO, "%s", d.msg[0] ? d.msg : "cpu: out of memory");
  }
  if (!(a->walk = cpu_walk_new(p, a->fns))) {
    artifact_free(a);
    return coil_sdk_out_of_memory();
  }
  *out = a;
  return NULL;
}

static coil_error *
load(coil_plugin *self, const coil_plugin_load_args *args, coil_artifact **out)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", args->artifact_dir, COIL_ARTIFACT_MANIFEST);
  char *manifest = coil_sdk_read_file(path, 8192, NULL);
  if (!manifest)
    return coil_sdk_error(COIL_ERR_IO, "cpu: no artifact in %s (manifest.json is missing)", args->artifact_dir);
  bool ours = strstr(manifest, "\"plugin\": \"cpu\"") && strstr(manifest, "\"plugin_version\": \"" CPU_VERSION "\"");
  if (!ours) {
    free(manifest);
    return coil_sdk_error(COIL_ERR_VERSION, "cpu: %s was not written by cpu " CPU_VERSION ": recompile", path);
  }
  if (strstr(manifest, "\"codegen\": \"llvm\"")) {
    coil_error *e = load_llvm(self, args->artifact_dir, manifest, out);
    free(manifest);
    return e;
  }
  free(manifest);
  snprintf(path, sizeof path, "%s/program.wir", args->artifact_dir);
  char *text = coil_sdk_read_file(path, 64u << 20, NULL);
  if (!text)
    return coil_sdk_error(COIL_ERR_IO, "cpu: cannot read %s", path);
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse(path, text, strlen(text), &d);
  free(text);
  if (!p)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: %s", d.msg);
  char why[4400];
  coil_cpu_entry_fn entry;
  void *lib = open_library(args->artifact_dir, &entry, why, sizeof why);
  if (!lib) {
    coil_wir_free(p);
    return coil_sdk_error(COIL_ERR_IO, "cpu: %s", why);
  }
  coil_artifact *a = calloc(1, sizeof *a);
  if (!a) {
    dlclose(lib);
    coil_wir_free(p);
    return coil_sdk_out_of_memory();
  }
  a->entry = entry;
  a->lib = lib;
  a->program = p;
  a->threads = self->opts.threads;
  *out = a;
  return NULL;
}

/* ---- run ---- */

/* Each block is preceded by a 64-byte header holding its size (so that a release knows it: a
 * map from address to size would cost as much as malloc) and its links in the list of live
 * blocks, which a run drains after the program returns: a program that fails between an alloc
 * and its release (a library call's error, out of memory) leaks nothing. */
typedef struct block_header {
  size_t size;
  struct block_header *prev, *next; /* neighbouring live blocks */
} block_header;

static void
live_link(coil_artifact *a, block_header *h)
{
  *h = (block_header){h->size, NULL, a->live};
  if (a->live)
    a->live->prev = h;
  a->live = h;
}

static void
live_unlink(coil_artifact *a, block_header *h)
{
  if (h->prev)
    h->prev->next = h->next;
  else
    a->live = h->next;
  if (h->next)
    h->next->prev = h->prev;
}

static void *
rt_alloc(void *ctx, int64_t bytes)
{
  coil_artifact *a = ctx;
  size_t n = (size_t)(bytes > 0 ? bytes : 1);
  n = (n + 63) & ~(size_t)63;
  for (pool_block **bp = &a->free_blocks; *bp; bp = &(*bp)->next)
    if ((*bp)->size == n) { /* the same size freed before: take it */
      pool_block *b = *bp;
      *bp = b->next;
      void *mem = b->mem;
      b->next = a->spare;
      a->spare = b;
      a->idle_bytes -= n;
      live_link(a, (block_header *)((char *)mem - 64));
      return mem;
    }
  char *mem = aligned_alloc(64, n + 64);
  if (!mem)
    return NULL;
  ((block_header *)mem)->size = n;
  live_link(a, (block_header *)mem);
  return mem + 64;
}

static void
rt_release(void *ctx, void *p)
{
  coil_artifact *a = ctx;
  if (!p)
    return;
  block_header *h = (block_header *)((char *)p - 64);
  size_t n = h->size;
  live_unlink(a, h);
  pool_block *b = a->spare ? a->spare : malloc(sizeof *b);
  if (!b || a->idle_bytes + n > POOL_MAX_BYTES) {
    free((char *)p - 64);
    return;
  }
  if (b == a->spare)
    a->spare = b->next;
  *b = (pool_block){a->free_blocks, n, p};
  a->free_blocks = b;
  a->idle_bytes += n;
}

static int
rt_fail(void *ctx, int line, const char *what)
{
  coil_artifact *a = ctx;
  snprintf(a->error, sizeof a->error, "cpu: line %d of the program: %s", line + 1, what);
  return -1;
}

/* A buffer of the program as a strided tensor at ptr, its sizes evaluated under symv. */
static int
describe(const coil_artifact *a, int buffer, void *ptr, const int64_t *symv, cpu_tensor *t)
{
  const coil_wir_program *p = a->program;
  const coil_buffer *b = &p->buffers[buffer];
  int nv = coil_sym_nvars(p->sym);
  t->data = ptr;
  t->dtype = b->dtype;
  t->rank = b->rank;
  for (int i = 0; i < b->rank; i++)
    if (coil_sym_eval(p->sym, b->sizes[i], symv, nv, &t->sizes[i], NULL) ||
        coil_sym_eval(p->sym, b->strides[i], symv, nv, &t->strides[i], NULL))
      return -1;
  return 0;
}

static int
rt_extern(void *ctx, int line, void *const *ptrs, const int64_t *symv)
{
  coil_artifact *a = ctx;
  const coil_line *l = &a->program->lines[line];
  cpu_tensor ins[64], outs[8];
  if (l->nargs > 64 || l->nouts > 8)
    return rt_fail(ctx, line, "too many tensors for a library call");
  for (int i = 0; i < l->nargs; i++)
    if (describe(a, l->args[i], ptrs[i], symv, &ins[i]))
      return rt_fail(ctx, line, "cannot evaluate an argument's sizes");
  for (int i = 0; i < l->nouts; i++)
    if (describe(a, l->outs[i], ptrs[l->nargs + i], symv, &outs[i]))
      return rt_fail(ctx, line, "cannot evaluate an output's sizes");
  coil_diag d = {0};
  if (cpu_extern_run(l->op, ins, l->nargs, outs, l->nouts, l->xparams, l->nxparams, &d)) {
    snprintf(a->error, sizeof a->error, "cpu: line %d (%.100s): %.1900s", line + 1, l->op, d.msg);
    return -1;
  }
  return 0;
}

static coil_error *
run(coil_artifact *a, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = a->program;
  if ((int)args->ninputs != p->ninputs)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: %zu inputs given, the program takes %d", args->ninputs, p->ninputs);
  void *in[256], *out[256];
  const int64_t *sizes[256], *strides[256];
  if (args->ninputs > 256 || args->noutputs > 256)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: at most 256 inputs and outputs");
  for (size_t i = 0; i < args->ninputs; i++) {
    const coil_plugin_tensor *t = args->inputs[i];
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    if (t->device_type != COIL_DEVICE_CPU || t->dtype != (int32_t)b->dtype || t->rank != b->rank)
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: input %zu (%s) must be a CPU tensor of %s with %d dimensions", i,
                       p->inputs[i].label, coil_dtype_name(b->dtype), b->rank);
    in[i] = t->data;
    sizes[i] = t->sizes;
    strides[i] = t->strides;
  }
  for (size_t i = 0; i < args->noutputs; i++) {
    const coil_plugin_tensor *t = args->outputs[i];
    int64_t expect = 1; /* outputs are written contiguously */
    for (int k = t->rank - 1; k >= 0; k--) {
      if (t->sizes[k] != 1 && t->strides[k] != expect)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cpu: output %zu must be contiguous", i);
      expect *= t->sizes[k];
    }
    out[i] = t->data;
  }
  coil_cpu_rt rt = {a, a->threads, rt_alloc, rt_release, rt_extern, rt_fail};
  a->error[0] = 0;
  int rc = a->walk ? cpu_walk_run(a->walk, &rt, in, sizes, strides, out) : a->entry(&rt, in, sizes, strides, out);
  while (a->live) /* what a failed program left allocated */
    rt_release(a, (char *)a->live + 64);
  if (rc != 0)
    return coil_sdk_error(COIL_ERR_RUNTIME, "%s", a->error[0] ? a->error : "cpu: the program failed");
  return NULL;
}

static void
artifact_free(coil_artifact *a)
{
  if (!a)
    return;
  for (pool_block *b = a->free_blocks, *next; b; b = next) {
    next = b->next;
    free((char *)b->mem - 64);
    free(b);
  }
  for (pool_block *b = a->spare, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  if (a->lib)
    dlclose(a->lib);
  cpu_walk_free(a->walk);
  if (a->llvm && llvm_api) {
    pthread_mutex_lock(&llvm_lock);
    llvm_api->unload(a->llvm);
    pthread_mutex_unlock(&llvm_lock);
  }
  cpu_elf_free(a->elf);
  free(a->fns);
  coil_wir_free(a->program);
  free(a);
}

static const coil_plugin_api api = {
    .struct_size = sizeof(coil_plugin_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR,
    .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .min_host_minor = 0,
    .name = "cpu",
    .vendor = "The coil authors",
    .version = CPU_VERSION,
    .features = COIL_FEATURE_EXECUTES | COIL_FEATURE_PROGRAM_TEXT, /* reads program_text only */
    .wir_major = COIL_WIR_VERSION_MAJOR,
    .wir_min_minor = 0,
    .wir_max_minor = COIL_WIR_VERSION_MINOR,
    .error_code = coil_sdk_error_code,
    .error_message = coil_sdk_error_message,
    .error_free = coil_sdk_error_free,
    .create = create,
    .destroy = destroy,
    .supports = supports,
    .compile = compile,
    .load = load,
    .run = run,
    .artifact_free = artifact_free,
    .identity = identity,
};

COIL_PLUGIN_EXPORT const coil_plugin_api *
coil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor, const coil_host_api *host, const char **why_not)
{
  (void)host_abi_minor;
  (void)host;
  if (host_abi_major != COIL_PLUGIN_ABI_MAJOR) {
    *why_not = "cpu is built for plugin ABI 1.x";
    return NULL;
  }
  return &api;
}
