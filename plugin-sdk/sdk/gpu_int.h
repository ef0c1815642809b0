/* gpu_int.h — private to the GPU emitter (gpu_plan.c, gpu_emit.c, gpu_prelude.c): the index
 * analysis the plans are decided from, which the emitter reads again. Not installed. */
#ifndef COIL_GPU_INT_H
#define COIL_GPU_INT_H

#include "coil/coil_gpu.h"

/* Whether index expression s uses loop variable var. */
bool gpu_uses_var(const coil_sym *s, int var);
/* 1: index e is xi + (a multiple of v); 0: it ignores xi; -1: anything else. */
int gpu_index_kind(const coil_sym *e, int xi, int v);
/* Whether load instruction i goes through the shared-memory tile of a TRANSPOSE kernel. */
bool gpu_transposed_load(const coil_kernel *k, const coil_gpu_plan *pl, int i);
/* The r extent when every r size is a constant, else -1. */
int64_t gpu_fixed_rnumel(const coil_kernel *k);

/* log2 of the dialect's warp size: a thread's warp is its index >> this. */
int gpu_warp_shift(const coil_gpu_dialect *dl);

#endif
