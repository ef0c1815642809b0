/* dtype.c — element types: names, sizes, PyTorch's type promotion, and the f16/bf16 rounding
 * conversions (round to nearest, ties to even, as PyTorch's c10::Half and c10::BFloat16). */
#include <math.h>
#include <string.h>

#include "coil/base.h"

static const struct {
  const char *name, *st;
  size_t size;
  char kind;
} info[] = {
#define X(e, name, st, size, kind) {name, st, size, kind},
#include "coil/dtypes.def"
#undef X
};

const char *
coil_dtype_name(coil_dtype t)
{
  return (unsigned)t < COIL_DTYPE_COUNT ? info[t].name : "?";
}

const char *
coil_dtype_st_name(coil_dtype t)
{
  return (unsigned)t < COIL_DTYPE_COUNT ? info[t].st : "?";
}

int
coil_dtype_from_name(const char *s, size_t n)
{
  for (int i = 0; i < COIL_DTYPE_COUNT; i++)
    if (strlen(info[i].name) == n && memcmp(info[i].name, s, n) == 0)
      return i;
  return -1;
}

int
coil_dtype_from_st_name(const char *s)
{
  for (int i = 0; i < COIL_DTYPE_COUNT; i++)
    if (strcmp(info[i].st, s) == 0)
      return i;
  return -1;
}

size_t
coil_dtype_size(coil_dtype t)
{
  return info[t].size;
}

bool
coil_dtype_is_float(coil_dtype t)
{
  return info[t].kind == 'f';
}

bool
coil_dtype_is_int(coil_dtype t)
{
  return info[t].kind == 'i' || info[t].kind == 'u';
}

/* Category: bool < integer < floating. */
static int
category(coil_dtype t)
{
  return t == COIL_BOOL ? 0 : coil_dtype_is_float(t) ? 2 : 1;
}

coil_dtype
coil_dtype_promote(coil_dtype a, coil_dtype b)
{
  if (a == b)
    return a;
  if (category(a) != category(b))
    return category(a) > category(b) ? a : b;
  if (category(a) == 2) {
    if ((a == COIL_F16 && b == COIL_BF16) || (a == COIL_BF16 && b == COIL_F16))
      return COIL_F32;
    return info[a].size >= info[b].size ? a : b;
  }
  /* integers: u8 with a signed type needs the next wider signed type */
  if (a == COIL_U8 || b == COIL_U8) {
    coil_dtype s = a == COIL_U8 ? b : a;
    return s == COIL_I8 ? COIL_I16 : s;
  }
  return info[a].size >= info[b].size ? a : b;
}

int64_t
coil_f64_to_i64(double f)
{
  if (isnan(f))
    return 0;
  if (f >= 9.2233720368547758e18) /* 2^63 */
    return INT64_MAX;
  if (f <= -9.2233720368547758e18)
    return INT64_MIN;
  return (int64_t)f;
}

uint16_t
coil_f32_to_bf16(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f))
    return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, sign kept */
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return (uint16_t)((u + rounding) >> 16);
}

float
coil_bf16_to_f32(uint16_t h)
{
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t
coil_f32_to_f16(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t absu = u & 0x7fffffff;
  if (absu > 0x7f800000) /* NaN */
    return (uint16_t)(sign | 0x7e00);
  if (absu >= 0x477ff000) /* rounds to >= 65520: infinity */
    return (uint16_t)(sign | 0x7c00);
  if (absu < 0x38800000) { /* below the smallest normal half: subnormal or zero */
    /* value = absu as float; half subnormal unit is 2^-24 */
    float af;
    memcpy(&af, &absu, 4);
    float scaled = af * 16777216.0f; /* exact: multiply by 2^24 */
    /* round to nearest even integer */
    float r = nearbyintf(scaled);
    return (uint16_t)(sign | (uint32_t)r);
  }
  /* normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits, ties to even */
  uint32_t mant_odd = (absu >> 13) & 1;
  absu += 0xfff + mant_odd;
  absu -= (uint32_t)(127 - 15) << 23;
  return (uint16_t)(sign | (absu >> 13));
}

float
coil_f16_to_f32(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = ldexpf((float)mant, -24);
    return sign ? -f : f;
  }
  uint32_t u;
  if (exp == 31)
    u = sign | 0x7f800000 | (mant << 13);
  else
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  memcpy(&f, &u, 4);
  return f;
}
