/* tensor.c — dense host tensors and named lists of them. Elements are read and written through
 * f64 (floating) or i64 (integer, bool) so the reference interpreter can compute in wide types
 * and round to the storage type in one place. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coil/arena.h"
#include "coil/coil.h"

int
coil_tensor_init(coil_tensor *t, coil_dtype dt, int rank, const int64_t *shape, coil_diag *d)
{
  memset(t, 0, sizeof *t);
  if (rank < 0 || rank > COIL_MAX_RANK)
    return coil_diag_set(d, "tensor rank %d is outside 0..%d", rank, COIL_MAX_RANK);
  t->dtype = dt;
  t->rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return coil_diag_set(d, "tensor size %lld in dimension %d is negative", (long long)shape[i], i);
    t->shape[i] = shape[i];
    if (shape[i] && n > INT64_MAX / 16 / shape[i])
      return coil_diag_set(d, "tensor of %d dimensions is too large", rank);
    n *= shape[i];
  }
  /* 64-byte aligned, as PyTorch's CPU allocator: a vector load never straddles cache lines */
  size_t bytes = (size_t)n * coil_dtype_size(dt), padded = (bytes + 63) / 64 * 64;
  t->data = aligned_alloc(64, padded ? padded : 64);
  if (t->data)
    memset(t->data, 0, padded ? padded : 64);
  if (!t->data)
    return coil_diag_set(d, "out of memory allocating a tensor of %zu bytes", bytes);
  return 0;
}

void
coil_tensor_free(coil_tensor *t)
{
  free(t->data);
  t->data = NULL;
}

int64_t
coil_tensor_numel(const coil_tensor *t)
{
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->shape[i];
  return n;
}

size_t
coil_tensor_nbytes(const coil_tensor *t)
{
  return (size_t)coil_tensor_numel(t) * coil_dtype_size(t->dtype);
}

double
coil_tensor_get_f64(const coil_tensor *t, int64_t i)
{
  const unsigned char *p = (const unsigned char *)t->data;
  switch (t->dtype) {
  case COIL_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  case COIL_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
  case COIL_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return coil_f16_to_f32(v); }
  case COIL_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return coil_bf16_to_f32(v); }
  default: return (double)coil_tensor_get_i64(t, i);
  }
}

int64_t
coil_tensor_get_i64(const coil_tensor *t, int64_t i)
{
  const unsigned char *p = (const unsigned char *)t->data;
  switch (t->dtype) {
  case COIL_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
  case COIL_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case COIL_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case COIL_I8: return (int8_t)p[i];
  case COIL_U8: return p[i];
  case COIL_BOOL: return p[i] != 0;
  default: {
    /* float to integer: truncation toward zero, as a C cast and torch's .to(int) */
    return coil_f64_to_i64(coil_tensor_get_f64(t, i));
  }
  }
}

void
coil_tensor_set_f64(coil_tensor *t, int64_t i, double v)
{
  unsigned char *p = (unsigned char *)t->data;
  switch (t->dtype) {
  case COIL_F64: memcpy(p + 8 * i, &v, 8); return;
  case COIL_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); return; }
  /* PyTorch computes half types in f32 and rounds once to half; f64 -> f32 -> half matches that
   * for every result that f32 arithmetic would produce exactly. */
  case COIL_F16: { uint16_t h = coil_f32_to_f16((float)v); memcpy(p + 2 * i, &h, 2); return; }
  case COIL_BF16: { uint16_t h = coil_f32_to_bf16((float)v); memcpy(p + 2 * i, &h, 2); return; }
  case COIL_BOOL: p[i] = v != 0; return;
  default: {
    coil_tensor_set_i64(t, i, coil_f64_to_i64(v));
  }
  }
}

void
coil_tensor_set_i64(coil_tensor *t, int64_t i, int64_t v)
{
  unsigned char *p = (unsigned char *)t->data;
  switch (t->dtype) {
  case COIL_I64: memcpy(p + 8 * i, &v, 8); return;
  case COIL_I32: { int32_t x = (int32_t)(uint32_t)v; memcpy(p + 4 * i, &x, 4); return; }
  case COIL_I16: { int16_t x = (int16_t)(uint16_t)v; memcpy(p + 2 * i, &x, 2); return; }
  case COIL_I8: p[i] = (unsigned char)(int8_t)(uint8_t)v; return;
  case COIL_U8: p[i] = (unsigned char)v; return;
  case COIL_BOOL: p[i] = v != 0; return;
  default: coil_tensor_set_f64(t, i, (double)v); return;
  }
}

void
coil_tensor_list_free(coil_tensor_list *l)
{
  for (int i = 0; i < l->n; i++) {
    free(l->names[i]);
    coil_tensor_free(&l->tensors[i]);
  }
  free(l->names);
  free(l->tensors);
  memset(l, 0, sizeof *l);
}

void
coil_tensor_list_add(coil_tensor_list *l, const char *name, coil_tensor *t)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->names = coil_xrealloc(l->names, sizeof(char *) * (size_t)l->cap);
    l->tensors = coil_xrealloc(l->tensors, sizeof(coil_tensor) * (size_t)l->cap);
  }
  size_t n = strlen(name);
  l->names[l->n] = coil_xmalloc(n + 1);
  memcpy(l->names[l->n], name, n + 1);
  l->tensors[l->n] = *t;
  memset(t, 0, sizeof *t);
  l->n++;
}

coil_tensor *
coil_tensor_list_find(const coil_tensor_list *l, const char *name)
{
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->names[i], name) == 0)
      return &l->tensors[i];
  return NULL;
}
