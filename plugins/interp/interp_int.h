/* interp_int.h — internals of the interp engine shared by interp_exec.c (the driver: inputs,
 * symbols, asserts, buffer lifetimes, outputs), interp_kernel.c (loop IR) and interp_extern.c
 * (library ops). Private: nothing outside plugins/interp includes it. */
#ifndef COIL_INTERP_INT_H
#define COIL_INTERP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp.h"

/* One value of a kernel or extern: floating dtypes use f (f32/f16/bf16 values are held exactly
 * as the double of their rounded value), integer and bool dtypes use i (wrapped to the dtype;
 * bool is 0 or 1). */
typedef union ival {
  double f;
  int64_t i;
} ival;

/* Storage: the bytes behind one or more buffers. */
typedef struct rtstore {
  char *mem;          /* malloc'd by the engine, or NULL for an input's caller-owned memory */
  char *start;        /* element 0 of the storage: what view offsets count from */
  char *lo, *hi;      /* the bytes that may be read or written: [lo, hi) */
  bool freed;         /* released by a free line; any later access is an error */
} rtstore;

/* A buffer at run time. */
typedef struct rtbuf {
  char *ptr;                       /* element [0, ..., 0] */
  coil_dtype dtype;
  int rank;
  int64_t sizes[COIL_MAX_RANK];
  int64_t strides[COIL_MAX_RANK];  /* in elements */
  int store;                       /* index into ictx.stores; -1 before the buffer is defined */
  bool live;                       /* defined and not yet freed */
} rtbuf;

typedef struct ictx {
  const coil_wir_program *p;
  coil_diag *d;
  int line;                   /* index of the line running (-1 before the first) */
  int nvars;                  /* variables of p->sym: size symbols and loop variables */
  int64_t *bind;              /* value of each size symbol */
  bool *bound;                /* bound[v]: a symbol line defined variable v */
  bool *used;                 /* scratch for coil_sym_vars_used */
  rtbuf *bufs;                /* one per p->buffers */
  rtstore *stores;            /* at most one per buffer */
  int nstores;
} ictx;

/* Writes "interp: <what the current line is>: <message>" into c->d; returns -1. */
int interp_err(ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Evaluates a size expression under the symbol binding; an unbound symbol is an error naming
 * it, `what` says where the expression came from ("size 0 of buf3"). */
int interp_eval(ictx *c, const coil_sym *s, const char *what, int64_t *out);
/* Checks that every variable s mentions is a bound size symbol or has is_loop[v] set (is_loop
 * may be NULL). */
int interp_check_vars(ictx *c, const coil_sym *s, const bool *is_loop, const char *what);
/* The buffer as an argument of the current line: defined, not freed, storage alive. */
rtbuf *interp_use(ictx *c, int buffer);
/* The address of element `off` (counted in elements of b's dtype from b->ptr), or NULL when
 * that element does not lie wholly inside b's storage. */
char *interp_elem(const ictx *c, const rtbuf *b, int64_t off);
int64_t interp_numel(const rtbuf *b);

/* ---- element conversions (interp_kernel.c), the numerics of core/ref.c ---- */
ival interp_load(const char *p, coil_dtype t);   /* storage -> value */
void interp_store(char *p, coil_dtype t, ival v); /* value of dtype t -> storage */
double interp_round(coil_dtype t, double v);     /* v rounded to what float dtype t holds */
int64_t interp_wrap(coil_dtype t, int64_t v);    /* v wrapped to integer (or bool) dtype t */
ival interp_convert(ival v, coil_dtype from, coil_dtype to); /* torch's .to() */
double interp_as_f64(ival v, coil_dtype t);
ival interp_from_f64(double v, coil_dtype t);    /* as storing an f64 result into dtype t */

/* ---- lines ---- */
int interp_kernel_call(ictx *c, const coil_line *l);
/* Runs extern call l; outs[k] is output k of the op (nout of them, resolved by the caller). */
int interp_extern_call(ictx *c, const coil_line *l, rtbuf **outs, int nout);
/* How many outputs an extern op has, or 0 if interp does not support it. */
int interp_extern_nouts(const char *op);

#endif
