/* ref.h — internals of the reference interpreter shared by ref.c (the driver, pointwise ops,
 * reductions) and ref_ops.c (views, data movement, library-class ops). */
#ifndef COIL_REF_H
#define COIL_REF_H

#include "graph.h"
#include "ops.h"

typedef struct rctx {
  const coil_graph *g;
  const coil_node *n;        /* the node being run */
  coil_diag *d;
  const coil_tensor **vals;  /* per value: inputs first, then nodes; tuples have several */
  int *nvals;
  int64_t *bind;             /* value of each size symbol */
} rctx;

int coil_ref_err(rctx *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The tensor bound to schema parameter i of the current node (NULL if None or a number). */
const coil_tensor *coil_ref_arg(rctx *r, int i);
const coil_tensor *coil_ref_param(rctx *r, const char *name);
const coil_lit *coil_ref_lit(rctx *r, const char *name);
int64_t coil_ref_stride(const coil_tensor *t, int dim);  /* contiguous stride in elements */
/* Element offsets into `t` for output multi-index walks: strides broadcast against out shape. */
void coil_ref_bstrides(const coil_tensor *t, int out_rank, const int64_t *out_shape, int64_t *st);
void coil_ref_unravel(int64_t i, int rank, const int64_t *shape, int64_t *idx);
/* Copies in[offset + sum idx[d]*strides[d]] to out for every index of out (same dtype). */
void coil_ref_strided_copy(const coil_tensor *in, coil_tensor *out, const int64_t *strides,
                           int64_t offset);
/* Copies element si of src to element di of dst, converting dtype the way torch's .to() does. */
void coil_ref_convert(const coil_tensor *src, int64_t si, coil_tensor *dst, int64_t di);

/* Runs one node of a rule family handled in ref_ops.c; outs are allocated to the node's
 * evaluated output shapes. */
int coil_ref_run_move(rctx *r, coil_tensor *outs);
int coil_ref_run_extern(rctx *r, coil_tensor *outs);
/* ref_backward.c: pooling and norm backward, sort, cdist and pdist */
int coil_ref_run_backward(rctx *r, coil_tensor *outs);

/* ref_math.c: the pointwise math section of ops.def (see there). */
double coil_ref_math_f(int ew, double x);
int64_t coil_ref_math_i(int ew, int64_t x);
bool coil_ref_math_binary_f(int ew, double a, double b, double *out);
int coil_ref_math_binary_i(int ew, int64_t a, int64_t b, int64_t *out);

/* ref_shapes.c: the shape, padding, resampling, normalisation and pooling ops of its section
 * of ops.def (and the 3-D pools) */
int coil_ref_run_shapes(rctx *r, coil_tensor *outs);

int coil_ref_run_scatter(rctx *r, coil_tensor *outs); /* ref_scatter.c */
/* In-place statement n has computed `now`: its first argument's name stands for it from here on,
 * and a base it is a slice or select of takes the new values there (new bases are kept in
 * *keep). ref_scatter.c */
int coil_ref_mutate(rctx *r, const coil_node *n, const coil_tensor *now, coil_tensor_list *keep);

#endif
