/* interp.h — the execution engine of the `interp` plugin: runs a Wrapper IR program in plain C,
 * line by line, interpreting each kernel's loop IR and running extern calls (mm, convolution,
 * pooling, topk, indexing) with the reference interpreter's numerics. Slow and obviously
 * correct: it is the simplest plugin and a second oracle for the others.
 *
 * What it checks while it runs (each failure is an error message, never a crash): inputs (count,
 * dtype, rank), every assert line, every size symbol a line or kernel needs (a symbol no symbol
 * line defined is named), buffer lifetimes (use after free, reuse of a live buffer), and every
 * load and store of a kernel or extern against the bounds of its buffer's storage.
 *
 * Uses only wrapper-ir headers: the plugin wraps it, the core never sees it. */
#ifndef COIL_INTERP_H
#define COIL_INTERP_H

#include <stdint.h>

#include "coil/base.h"
#include "coil/wir.h"

/* A run-time tensor as the engine sees it: borrowed pointers. */
typedef struct interp_tensor {
  void *data;                      /* element [0, ..., 0]; for outputs: malloc'd, owned by the
                                      caller (free(data)), never NULL (1 byte when empty) */
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK];
  int64_t strides[COIL_MAX_RANK];  /* in elements; outputs are contiguous (row-major) */
} interp_tensor;

/* Runs p on `inputs` (one per p->inputs, in order; read, and written only by copy_back lines).
 * On success returns 0 and sets *outs to a malloc'd array of *nouts tensors, one per buffer of
 * the output line, each a fresh contiguous copy; the caller frees each data and the array (or
 * calls interp_free_outputs). On error returns -1 with a message in d, *outs = NULL and
 * *nouts = 0; inputs may then have been partly written by a copy_back. Messages read
 * "interp: kernel_call coil_poi_0 (line 7): what", where line N counts p->lines from 1.
 *
 * Extern calls: aten.mm.default, aten.bmm.default, aten.bmm.dtype (into the output's dtype),
 * aten.addmm.default (beta, alpha),
 * aten.convolution.default, aten.max_pool2d_with_indices.default, aten.avg_pool2d.default,
 * aten.topk.default, aten.gather.default, aten.embedding.default, aten.index.Tensor. A call's
 * inputs are its line's args in ATen schema order with None tensors left out (convolution
 * without bias has 2 args); scalars are xparams by schema name, with ATen's defaults when
 * absent. aten.index.Tensor: args = self, then the index tensors that are not None; the xparam
 * `none_mask` (INTS) lists the positions of the indices list that are None (absent: none are).
 * Multi-output ops (topk, max_pool2d_with_indices) write out[0] and out[1]: either the line's
 * outs lists both, or it lists the first and a multi_output line (source = that first output,
 * element = 1) names the second; the engine reads ahead to find it. */
int interp_run(const coil_wir_program *p, const interp_tensor *inputs, int ninputs,
               interp_tensor **outs, int *nouts, coil_diag *d);

/* Frees what interp_run returned (each data, then the array). NULL is fine. */
void interp_free_outputs(interp_tensor *outs, int nouts);

#endif
