/* base.h — what every layer of coil shares, the plugins included: diagnostics (errors as
 * values), element types with PyTorch's promotion, and f16/bf16 conversions. */
#ifndef COIL_BASE_H
#define COIL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COIL_MAX_RANK 8 /* most dimensions of a tensor */

/* ---- diagnostics: errors are values ---- */
typedef struct coil_diag {
  char msg[2048]; /* "FILE:LINE:COL: error: what, expected what"; empty when no error */
} coil_diag;

int coil_diag_set(coil_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int coil_diag_at(coil_diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- element types ---- */
typedef enum coil_dtype {
#define X(e, name, st, size, kind) COIL_##e,
#include "coil/dtypes.def"
#undef X
  COIL_DTYPE_COUNT
} coil_dtype;

const char *coil_dtype_name(coil_dtype t);          /* "f32" */
const char *coil_dtype_st_name(coil_dtype t);       /* "F32" (safetensors) */
int coil_dtype_from_name(const char *s, size_t n);   /* -1 if unknown */
int coil_dtype_from_st_name(const char *s);          /* -1 if unknown */
size_t coil_dtype_size(coil_dtype t);
bool coil_dtype_is_float(coil_dtype t);
bool coil_dtype_is_int(coil_dtype t);                /* signed or unsigned, not bool */
coil_dtype coil_dtype_promote(coil_dtype a, coil_dtype b); /* torch.promote_types */

/* f64 <-> storage conversions, rounding to nearest even as PyTorch does. */
uint16_t coil_f32_to_f16(float f);
float coil_f16_to_f32(uint16_t h);
uint16_t coil_f32_to_bf16(float f);
float coil_bf16_to_f32(uint16_t h);
/* f to an integer as torch's .to(torch.int64) gives it on x86 for finite values in range:
 * truncated toward zero. Out of range saturates to INT64_MIN/INT64_MAX, NaN gives 0 (a C cast
 * of those is undefined behaviour). */
int64_t coil_f64_to_i64(double f);

#endif
