/* cpu.h — internals of the cpu plugin shared by its files (never seen by the core). */
#ifndef COIL_CPU_H
#define COIL_CPU_H

#include "coil/coil_sdk.h"
#include "coil/wir.h"

/* The run-time interface between the plugin and the generated library: the generated
 * coil_cpu_entry calls back through it for memory, library calls and failures. The generated
 * source declares the same struct; both come from one plugin version (the manifest says which). */
#define COIL_CPU_RT_DECL                                                                         \
  "typedef struct coil_cpu_rt {\n"                                                               \
  "  void *ctx;\n"                                                                               \
  "  int threads;\n"                                                                             \
  "  void *(*alloc)(void *ctx, int64_t bytes);\n"                                                \
  "  void (*release)(void *ctx, void *p);\n"                                                     \
  "  int (*extern_call)(void *ctx, int line, void *const *ptrs, const int64_t *symv);\n"        \
  "  int (*fail)(void *ctx, int line, const char *what);\n"                                      \
  "} coil_cpu_rt;\n"

typedef struct coil_cpu_rt {
  void *ctx;
  int threads;
  void *(*alloc)(void *ctx, int64_t bytes);
  void (*release)(void *ctx, void *p);
  int (*extern_call)(void *ctx, int line, void *const *ptrs, const int64_t *symv);
  int (*fail)(void *ctx, int line, const char *what);
} coil_cpu_rt;

typedef int (*coil_cpu_entry_fn)(const coil_cpu_rt *rt, void *const *in,
                                 const int64_t *const *in_sizes,
                                 const int64_t *const *in_strides, void *const *out);

/* The C source of program p: its kernels and the wrapper function coil_cpu_entry.
 * with_math: the source includes coil_cpu_math.h (written beside it) for vectorised math. */
int cpu_codegen(const coil_wir_program *p, bool with_math, coil_strbuf *out, coil_diag *d);

#endif
