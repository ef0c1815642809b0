/* cpu_walk.h — the wrapper of an LLVM-compiled program as a walk over its lines (cpu_walk.c). */
#ifndef COIL_CPU_WALK_H
#define COIL_CPU_WALK_H

#include "cpu.h"
#include "cpu_llvm.h"

typedef struct cpu_walk cpu_walk;

/* The walk of p calling fns[k] for kernel k (both must outlive it); NULL when out of memory. */
cpu_walk *cpu_walk_new(const coil_wir_program *p, const cpu_llvm_kernel_fn *fns);
void cpu_walk_free(cpu_walk *w);
/* One run, with coil_cpu_entry_fn's arguments and results. */
int cpu_walk_run(const cpu_walk *w, const coil_cpu_rt *rt, void *const *in, const int64_t *const *in_sizes,
                 const int64_t *const *in_strides, void *const *out);

#endif
