/* Element types and host tensors: f16/bf16 conversions against their definitions, element
 * access with rounding and casting, tensor lists, and the tolerance comparison. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coil/coil.h"

Test(dtype, names_round_trip)
{
  for (int t = 0; t < COIL_DTYPE_COUNT; t++) {
    const char *n = coil_dtype_name((coil_dtype)t);
    cr_expect_eq(coil_dtype_from_name(n, strlen(n)), t, "%s", n);
    cr_expect_eq(coil_dtype_from_st_name(coil_dtype_st_name((coil_dtype)t)), t);
  }
  cr_expect_eq(coil_dtype_from_name("f33", 3), -1);
  cr_expect_eq(coil_dtype_from_st_name("F8_E4M3"), -1);
}

/* Every half value converts to f32 and back to itself (NaNs stay NaN). */
Test(dtype, f16_exhaustive_round_trip)
{
  for (uint32_t h = 0; h < 65536; h++) {
    float f = coil_f16_to_f32((uint16_t)h);
    if (isnan(f)) {
      cr_expect(isnan(coil_f16_to_f32(coil_f32_to_f16(f))));
      continue;
    }
    cr_assert_eq(coil_f32_to_f16(f), h, "half 0x%04x -> %g -> 0x%04x", h, (double)f, coil_f32_to_f16(f));
  }
}

Test(dtype, bf16_exhaustive_round_trip)
{
  for (uint32_t h = 0; h < 65536; h++) {
    float f = coil_bf16_to_f32((uint16_t)h);
    if (isnan(f))
      continue;
    cr_assert_eq(coil_f32_to_bf16(f), h, "bf16 0x%04x", h);
  }
}

/* Rounding to nearest, ties to even, overflow to infinity, subnormals. */
Test(dtype, half_rounding)
{
  cr_expect_eq(coil_f32_to_f16(65504.0f), 0x7bff);        /* largest half */
  cr_expect_eq(coil_f32_to_f16(65519.0f), 0x7bff);        /* rounds down */
  cr_expect_eq(coil_f32_to_f16(65520.0f), 0x7c00);        /* ties to even: infinity */
  cr_expect_eq(coil_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* halfway 1 and 1+2^-10: even 1 */
  cr_expect_eq(coil_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02); /* halfway, rounds up to even */
  cr_expect_eq(coil_f32_to_f16(5.9604645e-08f), 0x0001);  /* smallest subnormal 2^-24 */
  cr_expect_eq(coil_f32_to_f16(2.9802322e-08f), 0x0000);  /* 2^-25: tie to even zero */
  cr_expect_eq(coil_f32_to_f16(-0.0f), 0x8000);
  cr_expect_eq(coil_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* tie: 1.0 (even) */
  cr_expect_eq(coil_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82); /* tie: up to even */
  cr_expect_eq(coil_f32_to_bf16(3.4e38f), 0x7f80);            /* overflows to infinity */
  cr_expect(isnan(coil_bf16_to_f32(coil_f32_to_bf16(NAN))));
}

Test(dtype, promotion_table)
{
  cr_expect_eq(coil_dtype_promote(COIL_U8, COIL_I8), COIL_I16);
  cr_expect_eq(coil_dtype_promote(COIL_F16, COIL_BF16), COIL_F32);
  cr_expect_eq(coil_dtype_promote(COIL_BOOL, COIL_I32), COIL_I32);
  cr_expect_eq(coil_dtype_promote(COIL_I64, COIL_F16), COIL_F16);
  cr_expect_eq(coil_dtype_promote(COIL_F32, COIL_F64), COIL_F64);
  cr_expect_eq(coil_dtype_promote(COIL_U8, COIL_I64), COIL_I64);
  for (int a = 0; a < COIL_DTYPE_COUNT; a++)
    for (int b = 0; b < COIL_DTYPE_COUNT; b++)
      cr_expect_eq(coil_dtype_promote((coil_dtype)a, (coil_dtype)b),
                   coil_dtype_promote((coil_dtype)b, (coil_dtype)a), "promotion is symmetric");
}

Test(tensor, element_access_rounds_and_casts)
{
  coil_diag d = {0};
  int64_t shape[1] = {4};
  coil_tensor t;
  cr_assert_eq(coil_tensor_init(&t, COIL_I8, 1, shape, &d), 0);
  coil_tensor_set_f64(&t, 0, -2.9); /* truncation toward zero */
  coil_tensor_set_i64(&t, 1, 200);  /* wraps to -56 */
  coil_tensor_set_f64(&t, 2, NAN);  /* NaN to integer: 0 here (undefined in C, checked) */
  cr_expect_eq(coil_tensor_get_i64(&t, 0), -2);
  cr_expect_eq(coil_tensor_get_i64(&t, 1), -56);
  cr_expect_eq(coil_tensor_get_i64(&t, 2), 0);
  coil_tensor_free(&t);
  cr_assert_eq(coil_tensor_init(&t, COIL_BF16, 1, shape, &d), 0);
  coil_tensor_set_f64(&t, 0, 1.0 + 1.0 / 256);
  cr_expect_eq(coil_tensor_get_f64(&t, 0), 1.0);
  coil_tensor_free(&t);
  cr_assert_eq(coil_tensor_init(&t, COIL_BOOL, 1, shape, &d), 0);
  coil_tensor_set_f64(&t, 0, 0.5);
  cr_expect_eq(coil_tensor_get_i64(&t, 0), 1);
  coil_tensor_free(&t);
  int64_t bad[1] = {-1};
  cr_expect_eq(coil_tensor_init(&t, COIL_F32, 1, bad, &d), -1);
  cr_expect(strstr(d.msg, "negative") != NULL, "%s", d.msg);
}

Test(tensor, list_owns_and_finds)
{
  coil_diag d = {0};
  coil_tensor_list l = {0};
  for (int i = 0; i < 20; i++) {
    coil_tensor t;
    int64_t shape[1] = {i};
    cr_assert_eq(coil_tensor_init(&t, COIL_F32, 1, shape, &d), 0);
    char name[16];
    snprintf(name, sizeof name, "t%d", i);
    coil_tensor_list_add(&l, name, &t);
    cr_expect_null(t.data, "the list takes the data");
  }
  cr_expect_eq(l.n, 20);
  cr_expect_eq(coil_tensor_list_find(&l, "t13")->shape[0], 13);
  cr_expect_null(coil_tensor_list_find(&l, "t20"));
  coil_tensor_list_free(&l);
  cr_expect_eq(l.n, 0);
}

static coil_tensor
vec(coil_dtype dt, int n, const double *v)
{
  coil_tensor t;
  int64_t shape[1] = {n};
  coil_tensor_init(&t, dt, 1, shape, NULL);
  for (int i = 0; i < n; i++)
    coil_tensor_set_f64(&t, i, v[i]);
  return t;
}

Test(compare, tolerance_nan_inf_and_shape)
{
  double a[4] = {1.0, NAN, INFINITY, 100.0}, b[4] = {1.0 + 1e-7, NAN, INFINITY, 100.001};
  coil_tensor x = vec(COIL_F32, 4, a), y = vec(COIL_F32, 4, b);
  coil_compare c;
  cr_expect(coil_tensor_allclose(&x, &y, 1e-4, 1e-5, &c), "within rtol 1e-4");
  cr_expect_not(coil_tensor_allclose(&x, &y, 1e-6, 1e-6, &c), "outside rtol 1e-6");
  cr_expect_eq(c.mismatches, 1);
  cr_expect_eq(c.worst, 3);
  double e[4] = {1.0, 0.0, -INFINITY, 100.0};
  coil_tensor z = vec(COIL_F32, 4, e);
  cr_expect_not(coil_tensor_allclose(&x, &z, 1, 1, &c), "NaN vs 0 and inf vs -inf differ");
  cr_expect_eq(c.mismatches, 2);
  coil_tensor w = vec(COIL_F64, 4, a);
  cr_expect_not(coil_tensor_allclose(&x, &w, 1, 1, &c));
  cr_expect_not(c.same_shape, "dtype differs");
  double i1[2] = {3, 4}, i2[2] = {3, 5};
  coil_tensor p = vec(COIL_I64, 2, i1), q = vec(COIL_I64, 2, i2);
  cr_expect_not(coil_tensor_allclose(&p, &q, 0, 0, &c), "integers compare exactly");
  coil_tensor_free(&x), coil_tensor_free(&y), coil_tensor_free(&z), coil_tensor_free(&w);
  coil_tensor_free(&p), coil_tensor_free(&q);
}

Test(compare, default_tolerances)
{
  double r, a;
  coil_tolerance_default(COIL_F32, &r, &a);
  cr_expect(r == 1.3e-6 && a == 1e-5);
  coil_tolerance_default(COIL_BF16, &r, &a);
  cr_expect(r == 1.6e-2);
  coil_tolerance_default(COIL_I32, &r, &a);
  cr_expect(r == 0 && a == 0);
}

/* Float to integer as .to(torch.int64): truncation, saturation out of range, NaN to 0, never
 * the undefined C cast. */
Test(tensor, f64_to_i64)
{
  cr_expect_eq(coil_f64_to_i64(2.9), 2);
  cr_expect_eq(coil_f64_to_i64(-2.9), -2);
  cr_expect_eq(coil_f64_to_i64(INFINITY), INT64_MAX);
  cr_expect_eq(coil_f64_to_i64(-INFINITY), INT64_MIN);
  cr_expect_eq(coil_f64_to_i64(NAN), 0);
  cr_expect_eq(coil_f64_to_i64(9.2233720368547758e18), INT64_MAX);
  cr_expect_eq(coil_f64_to_i64(-9.2233720368547758e18), INT64_MIN);
  cr_expect_eq(coil_f64_to_i64(9.2233720368547748e18), 9223372036854774784);
}
