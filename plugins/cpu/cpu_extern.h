/* cpu_extern.h — the library-call runtime of the cpu plugin: fast CPU implementations of the
 * extern ops of the Wrapper IR (matmuls and convolution through OpenBLAS, pooling, topk and
 * indexing with OpenMP loops), with the semantics of the reference interpreter (core/ref_ops.c)
 * and the call encoding of the interp plugin (plugins/interp/interp.h):
 *
 *   - tensor arguments in ATen schema order, None tensors left out (convolution without a bias
 *     has 2 inputs); aten.index.Tensor takes self, then the index tensors that are not None, and
 *     the xparam `none_mask` (INTS) lists the positions of the indices list that are None;
 *   - scalars are xparams by schema name (stride, padding, dilation, groups, transposed, alpha,
 *     beta, kernel_size, ceil_mode, count_include_pad, divisor_override, k, dim, largest, ...),
 *     with ATen's defaults when absent; an xparam of kind NONE counts as absent;
 *   - multi-output ops (topk, max_pool2d_with_indices) write outs[0] (values) and outs[1]
 *     (indices).
 *
 * Numerics: float matmuls and convolutions accumulate in f32 (f64 for f64 operands) inside BLAS,
 * f16/bf16 operands are widened to f32 and the result is rounded once to the output dtype;
 * integer matmuls accumulate exactly in int64 (wrapping); pooling averages in f64; topk, gather,
 * embedding and index copy elements exactly (converting as torch's .to() where the output dtype
 * differs). Uses only wrapper-ir headers. */
#ifndef COIL_CPU_EXTERN_H
#define COIL_CPU_EXTERN_H

#include <stdint.h>

#include "coil/base.h"
#include "coil/wir.h"

/* A tensor handed to a library call: borrowed memory, described by sizes and strides. */
typedef struct cpu_tensor {
  void *data; /* element [0, ..., 0]; borrowed */
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK];
  int64_t strides[COIL_MAX_RANK]; /* in elements, any (views: transposed, stride 0 broadcast);
                                     outputs must be contiguous (row-major) */
} cpu_tensor;

/* Runs library op `op` (aten.mm.default, aten.bmm.default, aten.addmm.default,
 * aten.convolution.default, aten.max_pool2d_with_indices.default, aten.avg_pool2d.default,
 * aten.topk.default, aten.gather.default, aten.embedding.default, aten.index.Tensor) on `ins`,
 * writing `outs` (contiguous, preallocated by the caller with the op's result sizes, which are
 * checked). xp may be NULL when nxp is 0. Returns 0, or -1 with a message in d reading
 * "cpu: aten.mm.default: what" (unknown op, unsupported dtype, shapes that disagree, an index
 * out of range, out of memory); outputs may then be partly written. Thread-safe: no global
 * state; uses OpenMP and OpenBLAS threads inside. */
int cpu_extern_run(const char *op, const cpu_tensor *ins, int nins, const cpu_tensor *outs,
                   int nouts, const coil_xparam *xp, int nxp, coil_diag *d);

/* How many outputs op has (1 or 2), or 0 if cpu_extern_run does not know it. */
int cpu_extern_nouts(const char *op);

#endif
