/* cpu_llvm.h — the interface between the cpu plugin and its LLVM code path, libcoil_cpu_llvm.so
 * (built beside the plugin when LLVM 19 is found; dlopen'd only when [plugin.cpu] codegen =
 * llvm, so that the C path never pays for loading libLLVM).
 *
 * The LLVM path compiles each kernel of a program to a function of one signature and leaves
 * the wrapper's work (binding sizes, guards, memory, library calls, copies) to the plugin,
 * which walks the program's lines (cpu_walk.c). A kernel runs the x points [lo, hi) of its
 * flattened x ranges; the plugin splits that range between threads. */
#ifndef COIL_CPU_LLVM_H
#define COIL_CPU_LLVM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "coil/coil_sdk.h"
#include "coil/wir.h"

/* bufs: the kernel's params in order; symv: every size symbol, indexed by its variable number;
 * oob: where a gather records the first index found out of range (INT64_MIN: none). */
typedef void (*cpu_llvm_kernel_fn)(char *const *bufs, const int64_t *symv, int64_t *oob, int64_t lo, int64_t hi);

#define CPU_LLVM_API_VERSION 2

typedef struct cpu_llvm_api {
  int version;               /* CPU_LLVM_API_VERSION */
  const char *llvm_version;  /* "19.1.7" */
  /* The target code is built for, "triple cpu features" (portable: the ISA's baseline). */
  void (*target)(bool portable, char *out, size_t size);
  /* Compiles p's kernels into an ELF object (*obj, malloc'd, *size bytes), their symbols named
   * "<kernel>_<tag>". ir: when not NULL, receives the module's IR before optimisation (malloc'd).
   * ir_fd: when >= 0, that IR is also written to this file before the optimiser runs, so that a
   * compile LLVM ends still leaves it. times: where the time went, one line. On failure returns
   * -1 with a message in d; when the failure is LLVM refusing the IR, *ir holds it even then. */
  int (*compile)(coil_wir_program *p, bool portable, const char *tag, void **obj, size_t *size, char **ir,
                 int ir_fd, char *times, size_t times_size, coil_diag *d);
  /* Readies the process for compile (LLVM's targets, a target machine kept for the first). */
  void (*prepare)(bool portable);
  /* For the compile worker (coil-cpu-llvm) only: a fatal error inside LLVM ends the process at
   * once (_exit(70)), with LLVM's reason on stderr. */
  void (*child)(void);
  /* Links an object from compile into the process (shared with every other load of the same
   * tag) and fills fns[k] for each kernel k of p. Returns a handle for unload, or NULL with d. */
  void *(*load)(const void *obj, size_t size, const char *tag, const coil_wir_program *p, cpu_llvm_kernel_fn *fns,
                coil_diag *d);
  void (*unload)(void *handle);
} cpu_llvm_api;

typedef const cpu_llvm_api *(*cpu_llvm_api_fn)(void);

/* ---- the compile worker ----
 * LLVM ends the process it runs in on a fatal error of its own (report_fatal_error: an
 * instruction it cannot select, out of memory inside LLVM), with no way back. So the plugin
 * never compiles in the host's process: it starts coil-cpu-llvm (cpu_llvm_worker.c, installed
 * beside it) once, and sends it each program over a socket; the worker loads cpu-llvm.so and
 * answers with the object. Where LLVM ends the worker, the compile fails with LLVM's reason and
 * the next compile starts a new one. The worker's file descriptors: */
#define CPU_LLVM_WORKER "coil-cpu-llvm"
#define CPU_LLVM_WORKER_SOCKET 3 /* the socket to the plugin */
#define CPU_LLVM_WORKER_IR 4     /* a memory file: each compile's IR before the optimiser (ir_fd) */
                                 /* (2, stderr: a memory file the plugin reads when the worker dies) */
#define CPU_LLVM_WORKER_MAGIC 0x766c6c63u /* "cllv" */

/* Sends the n bytes at buf on socket fd; false when the far end is gone (an error, never SIGPIPE). */
static inline bool
cpu_llvm_send_all(int fd, const void *buf, size_t n)
{
  for (const char *p = (const char *)buf; n > 0;) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

/* worker -> plugin, once, when ready */
typedef struct {
  uint32_t magic, api_version;
  char llvm_version[32];
  char target[2][2048];      /* api.target of the host CPU [0] and of portable = true [1] */
} cpu_llvm_hello;

/* plugin -> worker: a compile; wir_len bytes of the program's text follow */
typedef struct {
  uint32_t magic, portable;
  char tag[24];
  uint64_t wir_len;
} cpu_llvm_request;

/* worker -> plugin: its answer; ir_len bytes of IR, then obj_len of the object follow */
typedef struct {
  uint32_t magic;
  int32_t rc;                /* api.compile's */
  char msg[2048];            /* rc != 0: the error */
  char times[256];
  uint64_t ir_len, obj_len;
} cpu_llvm_reply;

#endif
