/* cpu_extern_int.h — internals of the cpu plugin's library calls shared by cpu_extern.c (element
 * access, checks, parameters, the op table, matmul and convolution) and cpu_extern_index.c
 * (pooling, topk, gather, embedding, index). Private: nothing outside these two files includes
 * it. */
#ifndef COIL_CPU_EXTERN_INT_H
#define COIL_CPU_EXTERN_INT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cpu_extern.h"

/* Loops over fewer elements than this run on one thread. */
#define PAR_MIN 4096
/* For loop bodies called with a constant dtype: inlined, each dtype gets its own loop. */
#define ALWAYS_INLINE __attribute__((always_inline))

/* One library call: its arguments as cpu_extern_run received them (already checked: counts,
 * ranks, dtypes, data present, outputs contiguous). */
typedef struct xcall {
  const char *op;
  const cpu_tensor *in, *out;
  int nin, nout;
  const coil_xparam *xp;
  int nxp;
  coil_diag *d;
} xcall;

/* Writes "cpu: <op>: <message>" into x->d; returns -1. */
int cpux_err(xcall *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- elements: loads, stores and conversions with the numerics of core/tensor.c ---- */

static inline double
load_f(const void *base, coil_dtype t, int64_t off)
{
  switch (t) {
  case COIL_F64: return ((const double *)base)[off];
  case COIL_F32: return ((const float *)base)[off];
  case COIL_F16: return coil_f16_to_f32(((const uint16_t *)base)[off]);
  case COIL_BF16: return coil_bf16_to_f32(((const uint16_t *)base)[off]);
  case COIL_I64: return (double)((const int64_t *)base)[off];
  case COIL_I32: return ((const int32_t *)base)[off];
  case COIL_I16: return ((const int16_t *)base)[off];
  case COIL_I8: return ((const int8_t *)base)[off];
  default: return ((const uint8_t *)base)[off]; /* u8, bool */
  }
}

/* Float to integer: truncation toward zero, NaN to 0, saturating at the int64 range. */
static int64_t
trunc_i64(double v)
{
  if (isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return (int64_t)v;
}

static inline int64_t
load_i(const void *base, coil_dtype t, int64_t off)
{
  switch (t) {
  case COIL_I64: return ((const int64_t *)base)[off];
  case COIL_I32: return ((const int32_t *)base)[off];
  case COIL_I16: return ((const int16_t *)base)[off];
  case COIL_I8: return ((const int8_t *)base)[off];
  case COIL_U8:
  case COIL_BOOL: return ((const uint8_t *)base)[off];
  default: return trunc_i64(load_f(base, t, off));
  }
}

/* Stores integer v into dtype t, wrapping to integer dtypes; to f32/f16/bf16 it rounds once
 * through float, as a C cast. */
static inline void
store_i(void *base, coil_dtype t, int64_t off, int64_t v)
{
  switch (t) {
  case COIL_F64: ((double *)base)[off] = (double)v; break;
  case COIL_F32: ((float *)base)[off] = (float)v; break;
  case COIL_F16: ((uint16_t *)base)[off] = coil_f32_to_f16((float)v); break;
  case COIL_BF16: ((uint16_t *)base)[off] = coil_f32_to_bf16((float)v); break;
  case COIL_I64: ((int64_t *)base)[off] = v; break;
  case COIL_I32: ((int32_t *)base)[off] = (int32_t)(uint32_t)v; break;
  case COIL_I16: ((int16_t *)base)[off] = (int16_t)(uint16_t)v; break;
  case COIL_I8: ((int8_t *)base)[off] = (int8_t)(uint8_t)v; break;
  case COIL_U8: ((uint8_t *)base)[off] = (uint8_t)v; break;
  default: ((uint8_t *)base)[off] = v != 0; break;
  }
}

/* Stores a computed value v into dtype t: rounded to float dtypes, truncated to integers. */
static inline void
store_f(void *base, coil_dtype t, int64_t off, double v)
{
  switch (t) {
  case COIL_F64: ((double *)base)[off] = v; break;
  case COIL_F32: ((float *)base)[off] = (float)v; break;
  case COIL_F16: ((uint16_t *)base)[off] = coil_f32_to_f16((float)v); break;
  case COIL_BF16: ((uint16_t *)base)[off] = coil_f32_to_bf16((float)v); break;
  case COIL_BOOL: ((uint8_t *)base)[off] = v != 0; break; /* NaN is true */
  default: store_i(base, t, off, trunc_i64(v)); break;
  }
}

/* dst[doff] = src[soff] converted as torch's .to(); same dtypes copy the bytes. */
static inline void
convert(void *dst, coil_dtype dt, int64_t doff, const void *src, coil_dtype st, int64_t soff)
{
  if (dt == st) {
    size_t es = coil_dtype_size(dt);
    memcpy((char *)dst + (size_t)doff * es, (const char *)src + (size_t)soff * es, es);
  } else if (coil_dtype_is_float(st)) {
    store_f(dst, dt, doff, load_f(src, st, soff));
  } else {
    store_i(dst, dt, doff, load_i(src, st, soff));
  }
}

/* ---- tensors, checks and scalar parameters (cpu_extern.c) ---- */

int64_t cpux_numel(const cpu_tensor *t);
/* Storage offset of the element with row-major index i over the first `rank` dims of t. */
int64_t cpux_offset_of(const cpu_tensor *t, int rank, int64_t i);
void cpux_unravel(int64_t i, int rank, const int64_t *sizes, int64_t *idx);
/* Output k must have these sizes; the tensor-argument count must lie in [lo, hi]. */
int cpux_want_out(xcall *x, int k, int rank, const int64_t *sizes);
int cpux_want_nin(xcall *x, int lo, int hi);
int cpux_want_index_dtype(xcall *x, const cpu_tensor *t);
/* Parameter `name`, or NULL when absent or of kind NONE. */
const coil_xparam *cpux_param(const xcall *x, const char *name);
/* An integer (or bool) parameter; absent gives dflt, or an error when required. */
int cpux_get_int(xcall *x, const char *name, bool required, int64_t dflt, int64_t *out);
int cpux_get_num(xcall *x, const char *name, double dflt, double *out);
/* n integers: a list of n, or of 1 (or one integer) repeated; absent or [] gives dflt each,
 * with *given false. */
int cpux_get_ints(xcall *x, const char *name, int n, int64_t dflt, int64_t *out, bool *given);
/* Dimension d of a tensor of rank `rank`, negative counting from the end. */
int cpux_wrap_dim(xcall *x, int64_t d, int rank, int *out);

/* ---- the ops of cpu_extern_index.c ---- */

int cpux_pool(xcall *x, bool is_max);
int cpux_topk(xcall *x);
int cpux_gather(xcall *x);
int cpux_embedding(xcall *x);
int cpux_index(xcall *x);

#endif
