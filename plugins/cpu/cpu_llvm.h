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

#include <stddef.h>
#include <stdint.h>

#include "coil/coil_sdk.h"
#include "coil/wir.h"

/* bufs: the kernel's params in order; symv: every size symbol, indexed by its variable number;
 * oob: where a gather records the first index found out of range (INT64_MIN: none). */
typedef void (*cpu_llvm_kernel_fn)(char *const *bufs, const int64_t *symv, int64_t *oob, int64_t lo, int64_t hi);

#define CPU_LLVM_API_VERSION 1

typedef struct cpu_llvm_api {
  int version;               /* CPU_LLVM_API_VERSION */
  const char *llvm_version;  /* "19.1.7" */
  /* The target code is built for, "triple cpu features" (portable: the ISA's baseline). */
  void (*target)(bool portable, char *out, size_t size);
  /* Compiles p's kernels into an ELF object (*obj, malloc'd, *size bytes), their symbols named
   * "<kernel>_<tag>". ir: when not NULL, receives the module's IR before optimisation (malloc'd).
   * times: where the time went, one line. On failure returns -1 with a message in d; when the
   * failure is LLVM refusing the IR, *ir holds it even then. */
  int (*compile)(coil_wir_program *p, bool portable, const char *tag, void **obj, size_t *size, char **ir,
                 char *times, size_t times_size, coil_diag *d);
  /* Links an object from compile into the process (shared with every other load of the same
   * tag) and fills fns[k] for each kernel k of p. Returns a handle for unload, or NULL with d. */
  void *(*load)(const void *obj, size_t size, const char *tag, const coil_wir_program *p, cpu_llvm_kernel_fn *fns,
                coil_diag *d);
  void (*unload)(void *handle);
} cpu_llvm_api;

typedef const cpu_llvm_api *(*cpu_llvm_api_fn)(void);

#endif
