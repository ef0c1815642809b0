/* test_sym.c — symbolic expressions: canonical forms, range-based simplification, bounds,
 * evaluation and its errors, printing in both syntaxes, and parsing (round trips and errors).
 * Expectations are inline: input text and the canonical text it must print as. */
#include <criterion/criterion.h>
#include <string.h>

#include "coil/sym.h"

static coil_arena *arena;
static coil_symctx *ctx;

static void
setup(void)
{
  arena = coil_arena_new();
  ctx = coil_symctx_new(arena);
}

static void
teardown(void)
{
  coil_arena_free(arena);
}

TestSuite(sym, .init = setup, .fini = teardown);

static const coil_sym *
V(const char *name)
{
  return coil_sym_var(ctx, name);
}

static const coil_sym *
K(int64_t v)
{
  return coil_sym_const(ctx, v);
}

/* Parses text that must be valid. */
static const coil_sym *
P(const char *text)
{
  coil_diag d = {0};
  const coil_sym *s = coil_sym_parse(ctx, text, &d);
  cr_assert(s, "parse of \"%s\" failed: %s", text, d.msg);
  return s;
}

static const char *
PY(const coil_sym *s)
{
  return coil_sym_str(ctx, s, COIL_SYM_PY_SYNTAX);
}

static const char *
C(const coil_sym *s)
{
  return coil_sym_str(ctx, s, COIL_SYM_C_SYNTAX);
}

static void
assert_prints(const coil_sym *s, const char *want)
{
  cr_assert_str_eq(PY(s), want);
}

/* ---- canonical forms ---- */

Test(sym, commutativity)
{
  const coil_sym *a = V("a"), *b = V("b");
  cr_assert_eq(coil_sym_cmp(coil_sym_add(ctx, a, b), coil_sym_add(ctx, b, a)), 0);
  cr_assert_eq(coil_sym_cmp(coil_sym_mul(ctx, a, b), coil_sym_mul(ctx, b, a)), 0);
  cr_assert_eq(coil_sym_cmp(coil_sym_min(ctx, a, b), coil_sym_min(ctx, b, a)), 0);
  cr_assert_neq(coil_sym_cmp(a, b), 0);
  cr_assert_eq(coil_sym_cmp(a, b), -coil_sym_cmp(b, a));
  assert_prints(coil_sym_add(ctx, b, a), "a + b");
}

Test(sym, variables_are_interned_and_ordered_by_name)
{
  const coil_sym *b = V("b"), *a = V("a");
  cr_assert_eq(V("b"), b);
  cr_assert_eq(coil_sym_nvars(ctx), 2);
  cr_assert_str_eq(coil_sym_var_name(ctx, b->var), "b");
  cr_assert_null(coil_sym_var_name(ctx, 7));
  /* b was created first, yet a sorts first: order follows names, not creation */
  assert_prints(coil_sym_add(ctx, b, a), "a + b");
  int64_t lo, hi;
  coil_sym_bounds(ctx, a, &lo, &hi);
  cr_assert(lo == 0 && hi == INT64_MAX, "default range is [0, INT64_MAX]");
}

Test(sym, like_terms_combine)
{
  const coil_sym *a = V("a"), *b = V("b");
  assert_prints(coil_sym_add(ctx, a, a), "2*a");
  const coil_sym *e = coil_sym_add(ctx, coil_sym_mul(ctx, K(2), a), coil_sym_mul(ctx, K(3), b));
  e = coil_sym_sub(ctx, e, a);
  e = coil_sym_sub(ctx, e, coil_sym_mul(ctx, b, K(3)));
  cr_assert_eq(coil_sym_cmp(e, a), 0, "2a + 3b - a - 3b is a, got %s", PY(e));
  cr_assert(coil_sym_is_const(coil_sym_sub(ctx, e, a), NULL));
  assert_prints(coil_sym_add(ctx, coil_sym_mul(ctx, a, b), coil_sym_mul(ctx, b, a)), "2*a*b");
}

Test(sym, constant_folding_and_identities)
{
  const coil_sym *a = V("a");
  int64_t v;
  cr_assert(coil_sym_is_const(coil_sym_add(ctx, K(2), K(3)), &v) && v == 5);
  cr_assert(coil_sym_is_const(coil_sym_mul(ctx, K(6), K(7)), &v) && v == 42);
  assert_prints(coil_sym_add(ctx, coil_sym_add(ctx, a, K(2)), K(3)), "a + 5");
  assert_prints(coil_sym_mul(ctx, coil_sym_mul(ctx, K(2), a), K(3)), "6*a");
  cr_assert_eq(coil_sym_add(ctx, a, K(0)), a);
  cr_assert_eq(coil_sym_mul(ctx, a, K(1)), a);
  cr_assert_eq(coil_sym_floordiv(ctx, a, K(1)), a);
  cr_assert(coil_sym_is_const(coil_sym_mul(ctx, a, K(0)), &v) && v == 0);
  cr_assert(coil_sym_is_const(coil_sym_mod(ctx, a, K(1)), &v) && v == 0);
  cr_assert(coil_sym_is_const(coil_sym_min(ctx, K(3), K(5)), &v) && v == 3);
  cr_assert(coil_sym_is_const(coil_sym_max(ctx, K(3), K(5)), &v) && v == 5);
}

Test(sym, floor_semantics_for_negatives)
{
  int64_t v;
  cr_assert(coil_sym_is_const(coil_sym_floordiv(ctx, K(-7), K(2)), &v) && v == -4);
  cr_assert(coil_sym_is_const(coil_sym_mod(ctx, K(-7), K(2)), &v) && v == 1);
  cr_assert(coil_sym_is_const(coil_sym_mod(ctx, K(7), K(-2)), &v) && v == -1);
  cr_assert(coil_sym_is_const(coil_sym_floordiv(ctx, K(7), K(-2)), &v) && v == -4);
  cr_assert(coil_sym_is_const(coil_sym_mod(ctx, K(INT64_MIN), K(-1)), &v) && v == 0);

  const coil_sym *e = P("a // b"), *m = P("a % b");
  int64_t vals[2] = {-7, 2};
  cr_assert_eq(coil_sym_eval(ctx, e, vals, 2, &v, NULL), 0);
  cr_assert_eq(v, -4);
  cr_assert_eq(coil_sym_eval(ctx, m, vals, 2, &v, NULL), 0);
  cr_assert_eq(v, 1);
  vals[0] = 7, vals[1] = -2;
  cr_assert_eq(coil_sym_eval(ctx, m, vals, 2, &v, NULL), 0);
  cr_assert_eq(v, -1);
}

Test(sym, constant_distributes_over_sum)
{
  const coil_sym *a = V("a"), *b = V("b");
  const coil_sym *e = coil_sym_mul(ctx, K(2), coil_sym_add(ctx, a, b));
  assert_prints(e, "2*a + 2*b");
  const coil_sym *f = coil_sym_add(ctx, coil_sym_mul(ctx, a, K(2)), coil_sym_mul(ctx, K(2), b));
  cr_assert_eq(coil_sym_cmp(e, f), 0);
  assert_prints(coil_sym_neg(ctx, coil_sym_sub(ctx, a, b)), "-a + b");
}

Test(sym, symbolic_products_of_sums_stay_factored)
{
  const coil_sym *a = V("a"), *b = V("b"), *c = V("c"), *d = V("d");
  const coil_sym *e = coil_sym_mul(ctx, coil_sym_add(ctx, c, d), coil_sym_add(ctx, a, b));
  assert_prints(e, "(a + b)*(c + d)");
  /* integer content moves to the coefficient, so all spellings agree */
  const coil_sym *x = coil_sym_mul(ctx, a, P("2*b + 2*c"));
  const coil_sym *y = coil_sym_mul(ctx, coil_sym_mul(ctx, K(2), a), coil_sym_add(ctx, b, c));
  cr_assert_eq(coil_sym_cmp(x, y), 0, "%s vs %s", PY(x), PY(y));
  assert_prints(x, "2*a*(b + c)");
  assert_prints(coil_sym_mul(ctx, a, P("-b - c")), "-a*(b + c)");
}

Test(sym, overflowing_folds_are_left_unsimplified)
{
  const coil_sym *e = coil_sym_add(ctx, K(INT64_MAX), K(1));
  cr_assert_not(coil_sym_is_const(e, NULL));
  assert_prints(e, "9223372036854775807 + 1");
  coil_diag d = {0};
  int64_t v;
  cr_assert_eq(coil_sym_eval(ctx, e, NULL, 0, &v, &d), -1);
  cr_assert(strstr(d.msg, "overflow"), "%s", d.msg);
  cr_assert_not(coil_sym_is_const(coil_sym_mul(ctx, K(INT64_MIN), K(-1)), NULL));
}

/* ---- range-based simplification ---- */

Test(sym, range_simplifies_floordiv_and_mod)
{
  const coil_sym *a = V("a"), *b = V("b");
  coil_sym_set_range(ctx, a, 0, 1 << 30);
  coil_sym_set_range(ctx, b, 0, 15);
  const coil_sym *e = coil_sym_add(ctx, coil_sym_mul(ctx, K(16), a), b);
  cr_assert_eq(coil_sym_cmp(coil_sym_floordiv(ctx, e, K(16)), a), 0, "got %s",
               PY(coil_sym_floordiv(ctx, e, K(16))));
  cr_assert_eq(coil_sym_cmp(coil_sym_mod(ctx, e, K(16)), b), 0, "got %s",
               PY(coil_sym_mod(ctx, e, K(16))));
  /* a lone argument known in [0, k) */
  int64_t v;
  cr_assert(coil_sym_is_const(coil_sym_floordiv(ctx, b, K(16)), &v) && v == 0);
  cr_assert_eq(coil_sym_mod(ctx, b, K(16)), b);
  /* nested: ((16*a + b) // 4) % 4 == b // 4 */
  assert_prints(coil_sym_mod(ctx, coil_sym_floordiv(ctx, e, K(4)), K(4)), "b // 4");
}

Test(sym, range_unknown_keeps_remainder)
{
  const coil_sym *a = V("a"), *b = V("b"); /* b in [0, INT64_MAX]: not known < 16 */
  const coil_sym *e = coil_sym_add(ctx, coil_sym_mul(ctx, K(16), a), b);
  const coil_sym *q = coil_sym_floordiv(ctx, e, K(16)), *r = coil_sym_mod(ctx, e, K(16));
  cr_assert_neq(coil_sym_cmp(q, a), 0);
  cr_assert_neq(coil_sym_cmp(r, b), 0);
  assert_prints(q, "a + b // 16"); /* the exact identity still splits off 16*a */
  assert_prints(r, "b % 16");
  /* b only partly known: [0, 16] straddles the boundary */
  coil_sym_set_range(ctx, b, 0, 16);
  assert_prints(coil_sym_mod(ctx, e, K(16)), "b % 16");
}

Test(sym, nested_floordiv_and_mod)
{
  const coil_sym *a = V("a");
  assert_prints(coil_sym_floordiv(ctx, coil_sym_floordiv(ctx, a, K(4)), K(8)), "a // 32");
  assert_prints(coil_sym_mod(ctx, coil_sym_mod(ctx, a, K(8)), K(4)), "a % 4");
  /* 4*a + 2: the low part 2 never reaches the next multiple of 4, so it cannot carry */
  assert_prints(P("(4*a + 2) // 8"), "a // 2");
  assert_prints(P("(4*a + 2) % 8"), "4*(a % 2) + 2");
}

/* A flat index unravelled over other sizes: with 8*b + c < 56 the low part never carries. */
Test(sym, unravelled_blocks)
{
  const coil_sym *a = V("a"), *b = V("b"), *c = V("c");
  coil_sym_set_range(ctx, b, 0, 6);
  coil_sym_set_range(ctx, c, 0, 7);
  const coil_sym *flat = P("56*a + 8*b + c");
  assert_prints(coil_sym_floordiv(ctx, flat, K(224)), "a // 4");
  assert_prints(coil_sym_mod(ctx, flat, K(224)), "8*b + c + 56*(a % 4)");
  /* c unbounded: it may carry, and nothing simplifies */
  const coil_sym *d = V("d");
  assert_prints(coil_sym_floordiv(ctx, coil_sym_add(ctx, coil_sym_mul(ctx, K(56), a), d), K(224)), "(56*a + d) // 224");
  /* the identities hold at every point of the ranges */
  for (int64_t av = 0; av < 20; av++)
    for (int64_t bv = 0; bv <= 6; bv++)
      for (int64_t cv = 0; cv <= 7; cv++) {
        int64_t vals[64] = {0}, got, n = 56 * av + 8 * bv + cv;
        vals[a->var] = av, vals[b->var] = bv, vals[c->var] = cv;
        cr_assert_eq(coil_sym_eval(ctx, coil_sym_floordiv(ctx, flat, K(224)), vals, 64, &got, NULL), 0);
        cr_assert_eq(got, n / 224);
        cr_assert_eq(coil_sym_eval(ctx, coil_sym_mod(ctx, flat, K(224)), vals, 64, &got, NULL), 0);
        cr_assert_eq(got, n % 224);
      }
}

/* b*(a // b) + a % b is a again (floor semantics, any a, b != 0): a split flat index joined back */
Test(sym, floordiv_and_mod_rejoin)
{
  const coil_sym *a = V("a");
  assert_prints(P("64*(a // 64) + a % 64"), "a");
  assert_prints(P("3712*x + 128*((a + 5) // 64) + 2*((a + 5) % 64)"), "2*a + 3712*x + 10");
  assert_prints(P("-64*(a // -64) + a % -64"), "a");
  /* not a pair: other coefficients, other divisors, other operands */
  assert_prints(P("32*(a // 64) + a % 64"), "32*(a // 64) + a % 64");
  assert_prints(P("64*(a // 64) + a % 32"), "64*(a // 64) + a % 32");
  assert_prints(P("64*(x // 64) + a % 64"), "64*(x // 64) + a % 64");
  for (int64_t av = -130; av < 130; av++) { /* and the identity holds for negative values too */
    int64_t vals[64] = {0}, got;
    vals[a->var] = av;
    cr_assert_eq(coil_sym_eval(ctx, coil_sym_add(ctx, coil_sym_mul(ctx, K(64), coil_sym_floordiv(ctx, a, K(64))),
                                                  coil_sym_mod(ctx, a, K(64))), vals, 64, &got, NULL), 0);
    cr_assert_eq(got, av);
  }
}

Test(sym, division_by_constant_zero_is_kept)
{
  const coil_sym *a = V("a");
  assert_prints(coil_sym_floordiv(ctx, a, K(0)), "a // 0");
  assert_prints(coil_sym_mod(ctx, K(5), K(0)), "5 % 0");
  cr_assert_not(coil_sym_is_const(coil_sym_floordiv(ctx, K(5), K(0)), NULL));
}

Test(sym, min_max_flatten_fold_and_drop_dominated)
{
  const coil_sym *a = V("a"), *b = V("b"), *c = V("c");
  const coil_sym *e = coil_sym_min(ctx, coil_sym_min(ctx, a, K(7)), coil_sym_min(ctx, b, K(2)));
  assert_prints(e, "min(a, b, 2)");
  assert_prints(coil_sym_max(ctx, a, a), "a");
  assert_prints(coil_sym_min(ctx, a, coil_sym_add(ctx, a, K(1))), "a");
  assert_prints(coil_sym_max(ctx, a, coil_sym_add(ctx, a, K(1))), "a + 1");
  coil_sym_set_range(ctx, b, 0, 10);
  coil_sym_set_range(ctx, c, 20, 30);
  assert_prints(coil_sym_min(ctx, c, b), "b");
  assert_prints(coil_sym_max(ctx, c, b), "c");
  assert_prints(coil_sym_max(ctx, b, K(-1)), "b");
  assert_prints(coil_sym_max(ctx, b, K(5)), "max(b, 5)");
}

/* ---- bounds ---- */

Test(sym, bounds_interval_arithmetic)
{
  const coil_sym *a = V("a"), *d = V("d");
  coil_sym_set_range(ctx, a, 0, 100);
  coil_sym_set_range(ctx, d, 1, 8);
  int64_t lo, hi;
  coil_sym_bounds(ctx, P("(a - 10) // 4"), &lo, &hi);
  cr_assert(lo == -3 && hi == 22, "[%lld, %lld]", (long long)lo, (long long)hi);
  coil_sym_bounds(ctx, P("3*a - 2*a*a"), &lo, &hi);
  cr_assert(lo == -20000 && hi == 300, "[%lld, %lld]", (long long)lo, (long long)hi);
  coil_sym_bounds(ctx, P("b % 16"), &lo, &hi);
  cr_assert(lo == 0 && hi == 15);
  coil_sym_bounds(ctx, P("a % d"), &lo, &hi);
  cr_assert(lo == 0 && hi == 7);
  coil_sym_bounds(ctx, P("a // d"), &lo, &hi);
  cr_assert(lo == 0 && hi == 100);
  coil_sym_bounds(ctx, P("min(a, d) + max(a, 200)"), &lo, &hi);
  cr_assert(lo == 200 && hi == 208);
}

/* INT64_MIN as a lower bound means -inf, INT64_MAX as an upper bound +inf. */
Test(sym, bounds_saturate_to_infinity)
{
  int64_t lo, hi;
  coil_sym_bounds(ctx, P("a*b"), &lo, &hi);
  cr_assert(lo == 0 && hi == INT64_MAX);
  coil_sym_bounds(ctx, P("a + b + 1"), &lo, &hi);
  cr_assert(lo == 1 && hi == INT64_MAX);
  coil_sym_bounds(ctx, P("-a*b"), &lo, &hi);
  cr_assert(lo == INT64_MIN && hi == 0);
  coil_sym_bounds(ctx, P("-a"), &lo, &hi);
  cr_assert(lo == INT64_MIN && hi == 0);
  coil_sym_bounds(ctx, P("5 - a"), &lo, &hi);
  cr_assert(lo == INT64_MIN && hi == 5, "-inf + 5 is still -inf");
  coil_sym_bounds(ctx, P("a // 16"), &lo, &hi);
  cr_assert(lo == 0 && hi == INT64_MAX, "+inf stays infinite through division");
}

/* A saturated partial sum must not turn finite: a + b can exceed INT64_MAX, so a + b + INT64_MIN
 * is not known <= -1 (found by randomized testing; min() used to drop its 0). */
Test(sym, bounds_infinity_absorbs)
{
  const coil_sym *e = P("a + b - 9223372036854775807 - 1");
  int64_t lo, hi;
  coil_sym_bounds(ctx, e, &lo, &hi);
  cr_assert(lo == INT64_MIN && hi == INT64_MAX, "[%lld, %lld]", (long long)lo, (long long)hi);
  assert_prints(coil_sym_min(ctx, e, K(0)), "min(a + b + -9223372036854775808, 0)");
}

/* ---- evaluation ---- */

Test(sym, eval_under_binding)
{
  const coil_sym *e = P("(16*x + y) // 3 - max(x, y) + y % 5");
  int64_t vals[8] = {0};
  vals[V("x")->var] = 10;
  vals[V("y")->var] = 7;
  int64_t v;
  coil_diag d = {0};
  cr_assert_eq(coil_sym_eval(ctx, e, vals, 2, &v, &d), 0, "%s", d.msg);
  cr_assert_eq(v, (16 * 10 + 7) / 3 - 10 + 7 % 5);
}

Test(sym, eval_errors)
{
  int64_t v, vals[2] = {5, 0};
  coil_diag d = {0};
  const coil_sym *e = P("a // b");
  cr_assert_eq(coil_sym_eval(ctx, e, vals, 2, &v, &d), -1);
  cr_assert_str_eq(d.msg, "division by zero in `a // b`");

  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_sym_eval(ctx, P("a % b"), vals, 2, &v, &d), -1);
  cr_assert_str_eq(d.msg, "modulo by zero in `a % b`");

  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_sym_eval(ctx, P("a + b"), vals, 1, &v, &d), -1);
  cr_assert_str_eq(d.msg, "variable 'b' is unbound: only 1 values were given");

  memset(&d, 0, sizeof d);
  int64_t big[2] = {INT64_MAX / 2 + 1, 2};
  cr_assert_eq(coil_sym_eval(ctx, P("a*b"), big, 2, &v, &d), -1);
  cr_assert_str_eq(d.msg, "integer overflow in `a*b`");

  memset(&d, 0, sizeof d);
  big[1] = INT64_MAX;
  cr_assert_eq(coil_sym_eval(ctx, P("a + b"), big, 2, &v, &d), -1);
  cr_assert_str_eq(d.msg, "integer overflow in `a + b`");

  memset(&d, 0, sizeof d);
  int64_t minv[2] = {INT64_MIN, -1};
  cr_assert_eq(coil_sym_eval(ctx, P("a // b"), minv, 2, &v, &d), -1);
  cr_assert_str_eq(d.msg, "integer overflow in `a // b`");

  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_sym_eval(ctx, P("7 // 0"), NULL, 0, &v, &d), -1);
  cr_assert_str_eq(d.msg, "division by zero in `7 // 0`");
}

/* ---- printing ---- */

Test(sym, print_precedence_python)
{
  const coil_sym *a = V("a"), *b = V("b"), *c = V("c"), *d = V("d");
  const coil_sym *cd = coil_sym_add(ctx, c, d);
  assert_prints(coil_sym_add(ctx, a, coil_sym_mul(ctx, b, cd)), "a + b*(c + d)");
  assert_prints(coil_sym_mul(ctx, coil_sym_add(ctx, a, b), cd), "(a + b)*(c + d)");
  assert_prints(coil_sym_sub(ctx, a, coil_sym_mul(ctx, K(2), b)), "a - 2*b");
  assert_prints(coil_sym_sub(ctx, a, K(3)), "a - 3");
  assert_prints(coil_sym_mul(ctx, K(2), coil_sym_floordiv(ctx, a, K(4))), "2*(a // 4)");
  assert_prints(coil_sym_floordiv(ctx, a, coil_sym_mul(ctx, b, c)), "a // (b*c)");
  assert_prints(coil_sym_floordiv(ctx, coil_sym_add(ctx, a, b), c), "(a + b) // c");
  assert_prints(coil_sym_floordiv(ctx, coil_sym_mul(ctx, a, b), c), "a*b // c");
  assert_prints(coil_sym_mod(ctx, a, coil_sym_floordiv(ctx, b, c)), "a % (b // c)");
  assert_prints(coil_sym_neg(ctx, a), "-a");
  assert_prints(coil_sym_sub(ctx, b, a), "-a + b");
  assert_prints(coil_sym_neg(ctx, coil_sym_floordiv(ctx, a, K(2))), "-(a // 2)");
  assert_prints(coil_sym_sub(ctx, a, coil_sym_floordiv(ctx, b, K(2))), "a - b // 2");
  assert_prints(coil_sym_max(ctx, a, coil_sym_min(ctx, b, c)), "max(a, min(b, c))");
}

Test(sym, print_c_syntax)
{
  const coil_sym *a = V("a"), *b = V("b"), *c = V("c"), *n = V("n");
  coil_sym_set_range(ctx, n, -10, 10);
  cr_assert_str_eq(C(coil_sym_floordiv(ctx, a, K(4))), "a / 4");
  cr_assert_str_eq(C(coil_sym_mod(ctx, a, K(4))), "a % 4");
  cr_assert_str_eq(C(coil_sym_floordiv(ctx, n, K(4))), "coil_floordiv(n, 4)");
  cr_assert_str_eq(C(coil_sym_mod(ctx, n, K(4))), "coil_mod(n, 4)");
  cr_assert_str_eq(C(coil_sym_floordiv(ctx, a, coil_sym_mul(ctx, b, c))), "a / (b*c)");
  cr_assert_str_eq(C(coil_sym_mul(ctx, K(2), coil_sym_floordiv(ctx, a, K(4)))), "2*(a / 4)");
  cr_assert_str_eq(C(coil_sym_mul(ctx, K(2), coil_sym_floordiv(ctx, n, K(4)))),
                   "2*coil_floordiv(n, 4)");
  cr_assert_str_eq(C(P("a - 2*b")), "a - 2*b");
  cr_assert_str_eq(C(P("min(a, b)")), "coil_min(a, b)");
  cr_assert_str_eq(C(P("max(a, b, c)")), "coil_max(a, coil_max(b, c))");
  cr_assert_str_eq(C(P("5000000000*a + 2147483647")), "5000000000LL*a + 2147483647");
  cr_assert_str_eq(C(P("a - 2147483649")), "a - 2147483649LL");
  cr_assert_str_eq(C(K(INT64_MIN)), "(-9223372036854775807LL - 1)");
  cr_assert_str_eq(PY(P("max(a, b, c)")), "max(a, b, c)");
}

Test(sym, print_into_strbuf)
{
  coil_strbuf sb = {0};
  coil_sym_print(ctx, P("b + 2*a"), COIL_SYM_PY_SYNTAX, &sb);
  cr_assert_str_eq(sb.s, "2*a + b");
  coil_strbuf_free(&sb);
}

/* ---- parsing ---- */

static const struct {
  const char *in, *out;
} round_trips[] = {
    {"a + b", "a + b"},
    {"b + a", "a + b"},
    {"a + a", "2*a"},
    {"2*(a + b)", "2*a + 2*b"},
    {"a - 2*b", "a - 2*b"},
    {"a+b*(c+d)", "a + b*(c + d)"},
    {"(c + d)*(a + b)", "(a + b)*(c + d)"},
    {"2*(a // 4)", "2*(a // 4)"},
    {"a // (b*c)", "a // (b*c)"},
    {"3 - a", "-a + 3"},
    {"-(a - b)", "-a + b"},
    {"a*(2*b + 2*c)", "2*a*(b + c)"},
    {"a // 4 // 8", "a // 32"},
    {"(a + 3) // 2", "(a + 1) // 2 + 1"},
    {"(2*a + 2) % 4", "2*((a + 1) % 2)"},
    {"max(a, b, 3, 5)", "max(a, b, 5)"},
    {"min(a, a + 1)", "a"},
    {"-7 // 2 + 7 % -2", "-5"},
    {"x - -3", "x + 3"},
    {"a % 8 % 4", "a % 4"},
    {"(a + b) // 4 % 3", "(a + b) // 4 % 3"},
    {"-(a // 2)", "-(a // 2)"},
    {"a - b // 2", "a - b // 2"},
    {"a*b - b*a + 0", "0"},
    {"-9223372036854775808 + a", "a + -9223372036854775808"},
    {"a // 0", "a // 0"},
    {"  s0 *\t s1 + +x0 ", "x0 + s0*s1"},
    {"(a - b)*(b - a)", "-(a - b)*(a - b)"},
};

Test(sym, parse_round_trips)
{
  for (size_t i = 0; i < sizeof round_trips / sizeof round_trips[0]; i++) {
    const coil_sym *e = P(round_trips[i].in);
    const char *text = PY(e);
    cr_expect_str_eq(text, round_trips[i].out, "input \"%s\"", round_trips[i].in);
    const coil_sym *again = P(text);
    cr_expect_eq(coil_sym_cmp(e, again), 0, "reparse of \"%s\" differs", text);
    cr_expect_str_eq(PY(again), text, "print(parse(print(e))) != print(e)");
  }
}

Test(sym, parse_errors_name_the_column)
{
  static const struct {
    const char *in, *msg;
  } cases[] = {
      {"a + (b * c", "column 11: expected ')'"},
      {"a +", "column 4: expected an expression, got the end of the text"},
      {"", "column 1: expected an expression, got the end of the text"},
      {"a $ b", "column 3: expected an operator or the end of the text, got '$'"},
      {"a / b", "column 3: '/' is not an operator here; floor division is '//'"},
      {"1 + 99999999999999999999", "column 5: integer literal out of range"},
      {"min(a b)", "column 7: expected ',' or ')'"},
      {"2 * )", "column 5: expected an expression, got ')'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    coil_diag d = {0};
    cr_expect_null(coil_sym_parse(ctx, cases[i].in, &d), "\"%s\" parsed", cases[i].in);
    cr_expect_str_eq(d.msg, cases[i].msg, "input \"%s\"", cases[i].in);
  }
}

Test(sym, parse_rejects_deep_nesting)
{
  char text[2048];
  memset(text, '(', 1000);
  strcpy(text + 1000, "a");
  coil_diag d = {0};
  cr_assert_null(coil_sym_parse(ctx, text, &d));
  cr_assert(strstr(d.msg, "nested too deeply"), "%s", d.msg);
}

Test(sym, independent_contexts)
{
  coil_arena *other = coil_arena_new();
  coil_symctx *c2 = coil_symctx_new(other);
  const coil_sym *x2 = coil_sym_var(c2, "x");
  coil_sym_set_range(c2, x2, 0, 3);
  coil_sym_var(ctx, "x"); /* default range here */
  int64_t v;
  cr_assert(coil_sym_is_const(coil_sym_floordiv(c2, x2, coil_sym_const(c2, 4)), &v) && v == 0);
  assert_prints(P("x // 4"), "x // 4");
  coil_arena_free(other);
}
