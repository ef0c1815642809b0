/* sym.c — symbolic integer expressions, built in canonical form.
 *
 * Every constructor returns a canonical tree, so structural comparison (coil_sym_cmp) is equality
 * after simplification. In short: a sum is a flat list of terms coef*rest with like terms combined,
 * sorted by rest, one constant last; a product is a flat list of factors sorted by coil_sym_cmp
 * with one constant coefficient first (never 0 or 1), and sums among its factors carry no common
 * integer content (a*(2*b + 2*c) is 2*a*(b + c)); a constant times a single sum is distributed, so
 * a linear expression has exactly one form. Floor-division and modulo by a positive constant k pull
 * out the terms k divides and use variable ranges to finish what is provably in [0, k).
 * Every rewrite is an identity of exact integer arithmetic, so where the old and the new tree
 * both evaluate without overflow they agree. Whenever a fold would overflow int64 the node is kept
 * as written instead: still correct, only less simplified (and then the printed text need not
 * parse back to the identical tree), and coil_sym_eval reports the overflow. Ranges are read at
 * construction time: changing a range later does not re-simplify trees built before. */
#include "coil/sym.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A VAR node carries its name so that coil_sym_cmp, which has no context, can order variables by
 * name: printed order then does not depend on the order in which variables were created. */
typedef struct varnode {
  coil_sym sym;     /* first member: a varnode is a coil_sym */
  const char *name; /* the context's interned copy */
} varnode;

typedef struct symvar {
  const char *name;     /* arena copy */
  int64_t lo, hi;       /* range used by simplification and bounds */
  const coil_sym *node; /* the one VAR node for this variable */
} symvar;

struct coil_symctx {
  coil_arena *arena;
  symvar *vars; /* arena array, grown by copying */
  int nvars, cap;
  int *slots;   /* name hash -> variable + 1 (0 = empty); open addressing, power-of-two size */
  int nslots;
};

static uint64_t
name_hash(const char *s, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* The slot holding name, or the empty slot where it would go. */
static int *
var_slot(coil_symctx *c, const char *name, size_t n)
{
  size_t mask = (size_t)c->nslots - 1;
  for (size_t i = name_hash(name, n) & mask;; i = (i + 1) & mask) {
    int v = c->slots[i] - 1;
    if (v < 0 || (strncmp(c->vars[v].name, name, n) == 0 && c->vars[v].name[n] == 0))
      return &c->slots[i];
  }
}

/* ---- integer helpers: Python floor semantics ---- */

/* Requires b != 0 and not (a == INT64_MIN && b == -1). */
static int64_t
floor_div(int64_t a, int64_t b)
{
  int64_t q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0))
    q--;
  return q;
}

/* Requires b != 0. The result has b's sign. */
static int64_t
floor_mod(int64_t a, int64_t b)
{
  if (b == -1)
    return 0; /* INT64_MIN % -1 is undefined in C */
  int64_t r = a % b;
  if (r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

static uint64_t
gcd(uint64_t a, uint64_t b)
{
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static uint64_t
abs_u64(int64_t v)
{
  return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* ---- context and nodes ---- */

coil_symctx *
coil_symctx_new(coil_arena *a)
{
  coil_symctx *c = coil_arena_alloc(a, sizeof *c);
  c->arena = a;
  return c;
}

static coil_sym *
node(coil_symctx *c, coil_sym_kind kind, int nargs)
{
  coil_sym *s = coil_arena_alloc(c->arena, sizeof *s);
  s->kind = kind;
  s->nargs = nargs;
  if (nargs)
    s->args = COIL_ARENA_ARRAY(c->arena, const coil_sym *, nargs);
  return s;
}

/* An unsimplified binary node, used where folding is impossible (a zero divisor, an overflow).
 * The constant of a raw product still goes first and of a raw sum last, as printing expects. */
static const coil_sym *
raw(coil_symctx *c, coil_sym_kind kind, const coil_sym *a, const coil_sym *b)
{
  bool swap = (kind == COIL_SYM_MUL && b->kind == COIL_SYM_CONST && a->kind != COIL_SYM_CONST) ||
              (kind == COIL_SYM_ADD && a->kind == COIL_SYM_CONST && b->kind != COIL_SYM_CONST);
  coil_sym *s = node(c, kind, 2);
  s->args[0] = swap ? b : a;
  s->args[1] = swap ? a : b;
  return s;
}

const coil_sym *
coil_sym_const(coil_symctx *c, int64_t v)
{
  coil_sym *s = node(c, COIL_SYM_CONST, 0);
  s->value = v;
  return s;
}

/* The variable named by the n bytes at name, created on first use. */
static const coil_sym *
intern(coil_symctx *c, const char *name, size_t n)
{
  if (2 * (c->nvars + 1) > c->nslots) { /* rehash into twice the slots (old ones stay in the arena) */
    int nslots = c->nslots ? 2 * c->nslots : 64;
    c->slots = COIL_ARENA_ARRAY(c->arena, int, nslots);
    c->nslots = nslots;
    for (int i = 0; i < c->nvars; i++)
      *var_slot(c, c->vars[i].name, strlen(c->vars[i].name)) = i + 1;
  }
  int *slot = var_slot(c, name, n);
  if (*slot)
    return c->vars[*slot - 1].node;
  if (c->nvars == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    symvar *vars = COIL_ARENA_ARRAY(c->arena, symvar, cap);
    if (c->nvars)
      memcpy(vars, c->vars, sizeof *vars * (size_t)c->nvars);
    c->vars = vars;
    c->cap = cap;
  }
  varnode *v = coil_arena_alloc(c->arena, sizeof *v);
  v->sym.kind = COIL_SYM_VAR;
  v->sym.var = c->nvars;
  v->name = coil_arena_strndup(c->arena, name, n);
  c->vars[c->nvars++] = (symvar){v->name, 0, INT64_MAX, &v->sym};
  *slot = c->nvars;
  return &v->sym;
}

const coil_sym *
coil_sym_var(coil_symctx *c, const char *name)
{
  return intern(c, name, strlen(name));
}

/* The caller keeps lo <= hi. Ignored for anything but a variable of this context. */
void
coil_sym_set_range(coil_symctx *c, const coil_sym *var, int64_t lo, int64_t hi)
{
  if (var->kind != COIL_SYM_VAR || var->var < 0 || var->var >= c->nvars)
    return;
  c->vars[var->var].lo = lo;
  c->vars[var->var].hi = hi;
}

int
coil_sym_nvars(const coil_symctx *c)
{
  return c->nvars;
}

const char *
coil_sym_var_name(const coil_symctx *c, int var)
{
  return var >= 0 && var < c->nvars ? c->vars[var].name : NULL;
}

bool
coil_sym_is_const(const coil_sym *s, int64_t *value)
{
  if (s->kind != COIL_SYM_CONST)
    return false;
  if (value)
    *value = s->value;
  return true;
}

/* Kinds first (CONST < VAR < ADD < MUL < FLOORDIV < MOD < MIN < MAX), then values, names,
 * argument counts and arguments left to right. */
int
coil_sym_cmp(const coil_sym *a, const coil_sym *b)
{
  if (a == b)
    return 0;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->kind == COIL_SYM_CONST)
    return (a->value > b->value) - (a->value < b->value);
  if (a->kind == COIL_SYM_VAR) {
    int r = strcmp(((const varnode *)a)->name, ((const varnode *)b)->name);
    return r ? (r > 0) - (r < 0) : (a->var > b->var) - (a->var < b->var);
  }
  if (a->nargs != b->nargs)
    return a->nargs < b->nargs ? -1 : 1;
  for (int i = 0; i < a->nargs; i++) {
    int r = coil_sym_cmp(a->args[i], b->args[i]);
    if (r)
      return r;
  }
  return 0;
}

static int
cmp_ptr(const void *x, const void *y)
{
  return coil_sym_cmp(*(const coil_sym *const *)x, *(const coil_sym *const *)y);
}

/* A growable list of nodes, malloc'd for the duration of one constructor. */
typedef struct vec {
  const coil_sym **v;
  int n, cap;
} vec;

static void
vec_push(vec *v, const coil_sym *s)
{
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 8;
    v->v = coil_xrealloc(v->v, sizeof *v->v * (size_t)v->cap);
  }
  v->v[v->n++] = s;
}

/* ---- linear combinations: sums and their terms ---- */

typedef struct term {
  int64_t coef;
  const coil_sym *rest; /* non-constant, not a sum; NULL for the constant term */
} term;

typedef struct lin {
  term *t;
  int n, cap;
  bool overflow; /* a coefficient did not fit in int64: the caller keeps the node as written */
} lin;

static void
lin_push(lin *l, int64_t coef, const coil_sym *rest)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->t = coil_xrealloc(l->t, sizeof *l->t * (size_t)l->cap);
  }
  l->t[l->n++] = (term){coef, rest};
}

/* Whether a term of a sum carries an explicit coefficient: a constant, or a product whose
 * first factor is its constant coefficient. */
static bool
has_coef(const coil_sym *s)
{
  return s->kind == COIL_SYM_CONST || (s->kind == COIL_SYM_MUL && s->args[0]->kind == COIL_SYM_CONST);
}

/* The coefficient of a term as it appears in a canonical sum. */
static int64_t
term_coef(const coil_sym *s)
{
  if (!has_coef(s))
    return 1;
  return s->kind == COIL_SYM_CONST ? s->value : s->args[0]->value;
}

/* A product without its coefficient; shares the argument array. */
static const coil_sym *
mul_rest(coil_symctx *c, const coil_sym *s)
{
  if (s->nargs == 2)
    return s->args[1];
  coil_sym *r = coil_arena_alloc(c->arena, sizeof *r);
  r->kind = COIL_SYM_MUL;
  r->nargs = s->nargs - 1;
  r->args = s->args + 1;
  return r;
}

/* Adds k*s to l, flattening sums and splitting coefficients off products. */
static void
lin_collect(coil_symctx *c, lin *l, const coil_sym *s, int64_t k)
{
  int64_t v;
  if (s->kind == COIL_SYM_ADD) {
    for (int i = 0; i < s->nargs; i++)
      lin_collect(c, l, s->args[i], k);
  } else if (has_coef(s)) {
    if (__builtin_mul_overflow(term_coef(s), k, &v))
      l->overflow = true;
    lin_push(l, v, s->kind == COIL_SYM_CONST ? NULL : mul_rest(c, s));
  } else {
    lin_push(l, k, s);
  }
}

static int
cmp_term(const void *x, const void *y)
{
  const term *a = x, *b = y;
  if (!a->rest || !b->rest)
    return !a->rest - !b->rest; /* the constant sorts last */
  int r = coil_sym_cmp(a->rest, b->rest);
  return r ? r : (a->coef > b->coef) - (a->coef < b->coef);
}

/* Sorts, combines like terms and drops zero terms. */
static void
lin_normalize(lin *l)
{
  if (l->n > 1)
    qsort(l->t, (size_t)l->n, sizeof *l->t, cmp_term);
  int n = 0;
  for (int i = 0; i < l->n; i++) {
    term *last = n ? &l->t[n - 1] : NULL;
    const coil_sym *rest = l->t[i].rest;
    bool same = last && (last->rest == rest ||
                         (last->rest && rest && coil_sym_cmp(last->rest, rest) == 0));
    if (!same)
      l->t[n++] = l->t[i];
    else if (__builtin_add_overflow(last->coef, l->t[i].coef, &last->coef))
      l->overflow = true;
  }
  l->n = 0;
  for (int i = 0; i < n; i++)
    if (l->t[i].coef)
      l->t[l->n++] = l->t[i];
}

static const coil_sym *
mk_term(coil_symctx *c, int64_t coef, const coil_sym *rest)
{
  if (!rest)
    return coil_sym_const(c, coef);
  if (coef == 1)
    return rest;
  bool flat = rest->kind == COIL_SYM_MUL && rest->args[0]->kind != COIL_SYM_CONST;
  coil_sym *s = node(c, COIL_SYM_MUL, flat ? rest->nargs + 1 : 2);
  s->args[0] = coil_sym_const(c, coef);
  for (int i = 1; i < s->nargs; i++)
    s->args[i] = flat ? rest->args[i - 1] : rest;
  return s;
}

/* The canonical node of a normalized combination. */
static const coil_sym *
lin_build(coil_symctx *c, const lin *l)
{
  if (l->n == 0)
    return coil_sym_const(c, 0);
  if (l->n == 1)
    return mk_term(c, l->t[0].coef, l->t[0].rest);
  coil_sym *s = node(c, COIL_SYM_ADD, l->n);
  for (int i = 0; i < l->n; i++)
    s->args[i] = mk_term(c, l->t[i].coef, l->t[i].rest);
  return s;
}

/* k*s in canonical form, or NULL on overflow. Divides instead when div is set (k must then
 * divide every coefficient). */
static const coil_sym *
scaled(coil_symctx *c, const coil_sym *s, int64_t k, bool div)
{
  lin l = {0};
  lin_collect(c, &l, s, div ? 1 : k);
  for (int i = 0; div && i < l.n; i++) {
    if (l.t[i].coef == INT64_MIN && k == -1)
      l.overflow = true;
    else
      l.t[i].coef /= k;
  }
  lin_normalize(&l);
  const coil_sym *r = l.overflow ? NULL : lin_build(c, &l);
  coil_xfree(l.t);
  return r;
}

/* k*b*(a // b) + k*(a % b) is k*a for a constant b != 0 (floor division and modulo): folds one
 * such pair of normalized terms, re-normalizing; false when there is none. Indices that split a
 * flat position into two and join them again (a merged loop dim) come back affine. */
static bool
lin_fold_divmod(coil_symctx *c, lin *l)
{
  for (int i = 0; i < l->n; i++) {
    const coil_sym *m = l->t[i].rest;
    if (!m || m->kind != COIL_SYM_MOD || m->args[1]->kind != COIL_SYM_CONST || !m->args[1]->value)
      continue;
    int64_t b = m->args[1]->value, want;
    if (__builtin_mul_overflow(l->t[i].coef, b, &want))
      continue;
    for (int j = 0; j < l->n; j++) {
      const coil_sym *d = l->t[j].rest;
      if (j == i || !d || d->kind != COIL_SYM_FLOORDIV || l->t[j].coef != want || d->args[1]->kind != COIL_SYM_CONST || d->args[1]->value != b ||
          coil_sym_cmp(d->args[0], m->args[0]) != 0)
        continue;
      int64_t k = l->t[i].coef;
      l->t[i].coef = l->t[j].coef = 0; /* dropped by the normalization */
      lin_collect(c, l, m->args[0], k);
      lin_normalize(l);
      return true;
    }
  }
  return false;
}

const coil_sym *
coil_sym_add(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  lin l = {0};
  lin_collect(c, &l, a, 1);
  lin_collect(c, &l, b, 1);
  lin_normalize(&l);
  for (int guard = 0; guard < 8 && !l.overflow && lin_fold_divmod(c, &l); guard++)
    ;
  const coil_sym *r = l.overflow ? raw(c, COIL_SYM_ADD, a, b) : lin_build(c, &l);
  coil_xfree(l.t);
  return r;
}

const coil_sym *
coil_sym_neg(coil_symctx *c, const coil_sym *a)
{
  return coil_sym_mul(c, coil_sym_const(c, -1), a);
}

const coil_sym *
coil_sym_sub(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  return coil_sym_add(c, a, coil_sym_neg(c, b));
}

/* ---- products ---- */

/* A zero factor makes the product 0 even when folding the other constants overflowed. */
static void
mul_collect(vec *f, int64_t *coef, bool *overflow, const coil_sym *s)
{
  if (s->kind == COIL_SYM_CONST) {
    if (s->value == 0) {
      *coef = 0;
      *overflow = false;
    } else if (*coef != 0 && __builtin_mul_overflow(*coef, s->value, coef))
      *overflow = true;
  } else if (s->kind == COIL_SYM_MUL) {
    for (int i = 0; i < s->nargs; i++)
      mul_collect(f, coef, overflow, s->args[i]);
  } else {
    vec_push(f, s);
  }
}

/* The gcd of a sum's coefficients, signed like its first term, so that dividing it out leaves
 * a sum whose first term is positive with coprime coefficients. */
static int64_t
content(const coil_sym *sum)
{
  uint64_t g = 0;
  for (int i = 0; i < sum->nargs; i++)
    g = gcd(g, abs_u64(term_coef(sum->args[i])));
  if (g == 0 || g > INT64_MAX)
    return 1;
  return term_coef(sum->args[0]) < 0 ? -(int64_t)g : (int64_t)g;
}

/* coef times the non-constant factors f, nonzero coef. */
static const coil_sym *
mul_build(coil_symctx *c, int64_t coef, vec *f)
{
  if (f->n == 0)
    return coil_sym_const(c, coef);
  if (f->n == 1 && coef == 1)
    return f->v[0];
  if (f->n == 1 && f->v[0]->kind == COIL_SYM_ADD) {
    const coil_sym *r = scaled(c, f->v[0], coef, false); /* 2*(a + b) -> 2*a + 2*b */
    return r ? r : raw(c, COIL_SYM_MUL, coil_sym_const(c, coef), f->v[0]);
  }
  for (int i = 0; i < f->n; i++) {
    int64_t g = f->v[i]->kind == COIL_SYM_ADD ? content(f->v[i]) : 1;
    int64_t ncoef;
    const coil_sym *q;
    if (g != 1 && !__builtin_mul_overflow(coef, g, &ncoef) && (q = scaled(c, f->v[i], g, true)) &&
        q->kind == COIL_SYM_ADD) { /* a raw sum of constants could fold to one: keep it */
      coef = ncoef;
      f->v[i] = q;
    }
  }
  qsort(f->v, (size_t)f->n, sizeof *f->v, cmp_ptr);
  int k = coef != 1;
  coil_sym *s = node(c, COIL_SYM_MUL, f->n + k);
  if (k)
    s->args[0] = coil_sym_const(c, coef);
  for (int i = 0; i < f->n; i++)
    s->args[i + k] = f->v[i];
  return s;
}

const coil_sym *
coil_sym_mul(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  vec f = {0};
  int64_t coef = 1;
  bool overflow = false;
  mul_collect(&f, &coef, &overflow, a);
  mul_collect(&f, &coef, &overflow, b);
  const coil_sym *r;
  if (overflow)
    r = raw(c, COIL_SYM_MUL, a, b);
  else if (coef == 0)
    r = coil_sym_const(c, 0);
  else
    r = mul_build(c, coef, &f);
  coil_xfree(f.v);
  return r;
}

/* ---- floor division and modulo ---- */

/* Splits s = k*q + r for k > 0: q gets the terms k divides and the constant's quotient, r the
 * rest and the constant's remainder in [0, k). Returns gcd(k, coefficients of r). */
static int64_t
split(coil_symctx *c, const coil_sym *s, int64_t k, lin *q, lin *r)
{
  lin l = {0};
  lin_collect(c, &l, s, 1);
  lin_normalize(&l);
  q->overflow = r->overflow = l.overflow;
  for (int i = 0; i < l.n; i++) {
    term t = l.t[i];
    if (!t.rest) {
      lin_push(q, floor_div(t.coef, k), NULL);
      lin_push(r, floor_mod(t.coef, k), NULL);
    } else if (t.coef % k == 0) {
      lin_push(q, t.coef / k, t.rest);
    } else {
      lin_push(r, t.coef, t.rest);
    }
  }
  coil_xfree(l.t);
  lin_normalize(q);
  lin_normalize(r);
  uint64_t g = (uint64_t)k;
  for (int i = 0; i < r->n; i++)
    g = gcd(g, abs_u64(r->t[i].coef));
  return (int64_t)g;
}

/* Finds the largest m with 1 < m < k, m dividing k, such that s = m*q + r with r provably in
 * [0, m): then s // k == q // (k/m) and s % k == m*(q % (k/m)) + r (the low part r never
 * carries into q). This is the shape of a flat index unravelled over other sizes:
 * (56*a + 8*b + c) // 224 is a // 4 when 8*b + c < 56. */
static bool
split_block(coil_symctx *c, const coil_sym *s, int64_t k, int64_t *m_out, const coil_sym **q_out,
            const coil_sym **r_out)
{
  lin l = {0};
  lin_collect(c, &l, s, 1);
  lin_normalize(&l);
  int64_t best = 0;
  for (int i = 0; i < l.n && !l.overflow; i++) {
    if (!l.t[i].rest)
      continue;
    int64_t m = (int64_t)gcd((uint64_t)k, abs_u64(l.t[i].coef));
    if (m <= 1 || m >= k || m <= best)
      continue;
    lin q = {0}, r = {0};
    for (int j = 0; j < l.n; j++) {
      term t = l.t[j];
      if (!t.rest) {
        lin_push(&q, floor_div(t.coef, m), NULL);
        lin_push(&r, floor_mod(t.coef, m), NULL);
      } else if (t.coef % m == 0) {
        lin_push(&q, t.coef / m, t.rest);
      } else {
        lin_push(&r, t.coef, t.rest);
      }
    }
    lin_normalize(&q);
    lin_normalize(&r);
    int64_t lo, hi;
    const coil_sym *rs = lin_build(c, &r);
    coil_sym_bounds(c, rs, &lo, &hi);
    if (!q.overflow && !r.overflow && lo >= 0 && hi < m) {
      best = m;
      *q_out = lin_build(c, &q);
      *r_out = rs;
    }
    coil_xfree(q.t);
    coil_xfree(r.t);
  }
  coil_xfree(l.t);
  *m_out = best;
  return best > 0;
}

/* If s is known to lie in one interval [k*n, k*n + k), k > 0, returns true with *n. */
static bool
same_quotient(const coil_symctx *c, const coil_sym *s, int64_t k, int64_t *n)
{
  int64_t lo, hi, base;
  coil_sym_bounds(c, s, &lo, &hi);
  if (lo == INT64_MIN || hi == INT64_MAX)
    return false; /* unbounded on a side */
  *n = floor_div(lo, k);
  return *n == floor_div(hi, k) && !__builtin_mul_overflow(*n, k, &base);
}

/* Division by a zero constant and every overflowing fold stay unsimplified: eval reports them. */
const coil_sym *
coil_sym_floordiv(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  int64_t k, x, m, n;
  if (!coil_sym_is_const(b, &k) || k == 0)
    return raw(c, COIL_SYM_FLOORDIV, a, b);
  if (coil_sym_is_const(a, &x))
    return x == INT64_MIN && k == -1 ? raw(c, COIL_SYM_FLOORDIV, a, b)
                                     : coil_sym_const(c, floor_div(x, k));
  if (k == 1)
    return a;
  if (k == -1)
    return coil_sym_neg(c, a);
  if (k < 0)
    return raw(c, COIL_SYM_FLOORDIV, a, b);
  /* (a // m) // k == a // (m*k) for positive m, k */
  if (a->kind == COIL_SYM_FLOORDIV && coil_sym_is_const(a->args[1], &m) && m > 0 &&
      !__builtin_mul_overflow(m, k, &x))
    return coil_sym_floordiv(c, a->args[0], coil_sym_const(c, x));
  if (same_quotient(c, a, k, &n))
    return coil_sym_const(c, n);
  const coil_sym *bq, *br;
  if (split_block(c, a, k, &m, &bq, &br))
    return coil_sym_floordiv(c, bq, coil_sym_const(c, k / m));

  /* (k*q + r) // k == q + r // k, and r // k == (r/g) // (k/g). The remainder has no term that
   * k/g divides, so the recursion on it ends at once, after the rules above had their chance. */
  lin q = {0}, r = {0};
  int64_t g = split(c, a, k, &q, &r);
  const coil_sym *res = NULL, *rg;
  if (!r.overflow && (q.n > 0 || g > 1) && (rg = scaled(c, lin_build(c, &r), g, true)))
    res = coil_sym_add(c, lin_build(c, &q), coil_sym_floordiv(c, rg, coil_sym_const(c, k / g)));
  coil_xfree(q.t);
  coil_xfree(r.t);
  return res ? res : raw(c, COIL_SYM_FLOORDIV, a, b);
}

const coil_sym *
coil_sym_mod(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  int64_t k, x, m, n;
  if (!coil_sym_is_const(b, &k) || k == 0)
    return raw(c, COIL_SYM_MOD, a, b);
  if (coil_sym_is_const(a, &x))
    return coil_sym_const(c, floor_mod(x, k));
  if (k == 1 || k == -1)
    return coil_sym_const(c, 0);
  if (k < 0)
    return raw(c, COIL_SYM_MOD, a, b);
  /* (a % m) % k == a % k when k divides m */
  if (a->kind == COIL_SYM_MOD && coil_sym_is_const(a->args[1], &m) && m > 0 && m % k == 0)
    return coil_sym_mod(c, a->args[0], b);
  if (same_quotient(c, a, k, &n))
    return coil_sym_sub(c, a, coil_sym_const(c, n * k));
  const coil_sym *bq, *br;
  if (split_block(c, a, k, &m, &bq, &br))
    return coil_sym_add(c, coil_sym_mul(c, coil_sym_const(c, m), coil_sym_mod(c, bq, coil_sym_const(c, k / m))), br);

  /* (k*q + r) % k == r % k, and r % k == g * ((r/g) % (k/g)); the recursion ends as above. */
  lin q = {0}, r = {0};
  int64_t g = split(c, a, k, &q, &r);
  const coil_sym *res = NULL, *rg;
  if (!r.overflow && (q.n > 0 || g > 1) && (rg = scaled(c, lin_build(c, &r), g, true)))
    res = coil_sym_mul(c, coil_sym_const(c, g), coil_sym_mod(c, rg, coil_sym_const(c, k / g)));
  coil_xfree(q.t);
  coil_xfree(r.t);
  return res ? res : raw(c, COIL_SYM_MOD, a, b);
}

/* ---- min and max ---- */

/* Whether y alone decides the result against x: y <= x for min, y >= x for max. */
static bool
dominates(coil_symctx *c, coil_sym_kind kind, const coil_sym *y, const coil_sym *x)
{
  int64_t ylo, yhi, xlo, xhi;
  coil_sym_bounds(c, y, &ylo, &yhi);
  coil_sym_bounds(c, x, &xlo, &xhi);
  if (kind == COIL_SYM_MIN ? yhi <= xlo : ylo >= xhi)
    return true;
  int64_t lo, hi; /* bounds of the difference see through shared terms: min(a, a + 1) */
  coil_sym_bounds(c, coil_sym_sub(c, y, x), &lo, &hi);
  return kind == COIL_SYM_MIN ? hi <= 0 : lo >= 0;
}

static const coil_sym *
minmax(coil_symctx *c, coil_sym_kind kind, const coil_sym *a, const coil_sym *b)
{
  vec v = {0};
  bool have_const = false;
  int64_t k = 0;
  const coil_sym *in[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    int n = in[i]->kind == kind ? in[i]->nargs : 1;
    for (int j = 0; j < n; j++) {
      const coil_sym *s = in[i]->kind == kind ? in[i]->args[j] : in[i];
      if (s->kind != COIL_SYM_CONST)
        vec_push(&v, s);
      else if (!have_const || (kind == COIL_SYM_MIN ? s->value < k : s->value > k))
        k = s->value;
      have_const |= s->kind == COIL_SYM_CONST;
    }
  }
  if (v.n > 1)
    qsort(v.v, (size_t)v.n, sizeof *v.v, cmp_ptr);
  int n = 0;
  for (int i = 0; i < v.n; i++)
    if (n == 0 || coil_sym_cmp(v.v[n - 1], v.v[i]) != 0)
      v.v[n++] = v.v[i];
  v.n = n;
  if (have_const)
    vec_push(&v, coil_sym_const(c, k));
  for (int i = 0; i < v.n && v.n > 1;) {
    bool drop = false;
    for (int j = 0; j < v.n && !drop; j++)
      drop = j != i && dominates(c, kind, v.v[j], v.v[i]);
    if (drop)
      memmove(&v.v[i], &v.v[i + 1], sizeof *v.v * (size_t)(--v.n - i));
    else
      i++;
  }
  const coil_sym *r = v.v[0];
  if (v.n > 1) {
    coil_sym *s = node(c, kind, v.n);
    memcpy(s->args, v.v, sizeof *v.v * (size_t)v.n);
    r = s;
  }
  coil_xfree(v.v);
  return r;
}

const coil_sym *
coil_sym_min(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  return minmax(c, COIL_SYM_MIN, a, b);
}

const coil_sym *
coil_sym_max(coil_symctx *c, const coil_sym *a, const coil_sym *b)
{
  return minmax(c, COIL_SYM_MAX, a, b);
}

/* ---- bounds ----
 * Bounds hold for the exact integer value of an expression, so they stay sound for expressions
 * that are only reasoned about, never evaluated (the difference in dominates()). INT64_MIN as a
 * lower bound means -inf and INT64_MAX as an upper bound +inf; both absorb. Inside, arithmetic is
 * exact in 128 bits; results are clamped to int64 outward (a lower bound down, an upper bound up)
 * or onto the infinity of their side. */

__extension__ typedef __int128 wide;
#define WIDE_INF ((wide)3 << 125) /* above every product of two int64 (at most 2^126) */

static wide
widen(int64_t v, bool upper)
{
  if (upper ? v == INT64_MAX : v == INT64_MIN)
    return upper ? WIDE_INF : -WIDE_INF;
  return v;
}

static int64_t
narrow(wide v)
{
  return v <= INT64_MIN ? INT64_MIN : v >= INT64_MAX ? INT64_MAX : (int64_t)v;
}

static bool
is_inf(wide v)
{
  return v == WIDE_INF || v == -WIDE_INF;
}

static wide
wide_mul(wide a, wide b)
{
  if (a == 0 || b == 0)
    return 0;
  if (is_inf(a) || is_inf(b))
    return (a < 0) != (b < 0) ? -WIDE_INF : WIDE_INF;
  return a * b;
}

/* floor(a / b), b != 0, either side possibly infinite. */
static wide
wide_div(wide a, wide b)
{
  if (is_inf(a))
    return (a < 0) != (b < 0) ? -WIDE_INF : WIDE_INF;
  if (is_inf(b)) /* a tiny quotient: 0, or -1 when its sign is negative */
    return a == 0 || (a < 0) == (b < 0) ? 0 : -1;
  wide q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0))
    q--;
  return q;
}

/* The range of f over the corners [alo, ahi] x [blo, bhi]: exact for products, and for floor
 * division by an interval on one side of 0, where a // b is monotone in each argument. */
static void
corners(wide (*f)(wide, wide), int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo,
        int64_t *hi)
{
  wide p[4] = {f(widen(alo, false), widen(blo, false)), f(widen(alo, false), widen(bhi, true)),
               f(widen(ahi, true), widen(blo, false)), f(widen(ahi, true), widen(bhi, true))};
  wide l = p[0], h = p[0];
  for (int i = 1; i < 4; i++) {
    l = p[i] < l ? p[i] : l;
    h = p[i] > h ? p[i] : h;
  }
  *lo = narrow(l);
  *hi = narrow(h);
}

/* a // b. A divisor interval touching 0 is narrowed to its nonzero side (eval fails on 0); one
 * spanning 0 still keeps |a // b| <= |a|. */
static void
div_bounds(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo, int64_t *hi)
{
  blo = blo == 0 ? 1 : blo;
  bhi = bhi == 0 ? -1 : bhi;
  if (blo > bhi) { /* b is 0: never evaluates */
    *lo = *hi = 0;
  } else if (blo < 0 && bhi > 0) {
    uint64_t m = abs_u64(alo) > abs_u64(ahi) ? abs_u64(alo) : abs_u64(ahi);
    *hi = alo == INT64_MIN || ahi == INT64_MAX || m > INT64_MAX ? INT64_MAX : (int64_t)m;
    *lo = *hi == INT64_MAX ? INT64_MIN : -*hi;
  } else {
    corners(wide_div, alo, ahi, blo, bhi, lo, hi);
  }
}

/* a % b has b's sign and is smaller than |b|; by a positive constant k, an a known to lie in one
 * [k*n, k*n + k) gives exactly a - k*n. */
static void
mod_bounds(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo, int64_t *hi)
{
  blo = blo == 0 ? 1 : blo;
  bhi = bhi == 0 ? -1 : bhi;
  int64_t n, base;
  if (blo > bhi) {
    *lo = *hi = 0;
  } else if (blo == bhi && blo > 0 && alo > INT64_MIN && ahi < INT64_MAX &&
             (n = floor_div(alo, blo)) == floor_div(ahi, blo) &&
             !__builtin_mul_overflow(n, blo, &base)) {
    *lo = alo - base;
    *hi = ahi - base;
  } else {
    *lo = blo > 0 ? 0 : blo == INT64_MIN ? INT64_MIN : blo + 1;
    *hi = bhi < 0 ? 0 : bhi == INT64_MAX ? INT64_MAX : bhi - 1;
    if (blo > 0 && alo >= 0 && ahi < *hi)
      *hi = ahi;
    if (bhi < 0 && ahi <= 0 && alo > *lo)
      *lo = alo;
  }
}

void
coil_sym_bounds(const coil_symctx *c, const coil_sym *s, int64_t *lo, int64_t *hi)
{
  int64_t alo, ahi, blo, bhi;
  switch (s->kind) {
  case COIL_SYM_CONST:
    *lo = *hi = s->value;
    return;
  case COIL_SYM_VAR:
    *lo = c->vars[s->var].lo;
    *hi = c->vars[s->var].hi;
    return;
  case COIL_SYM_FLOORDIV:
  case COIL_SYM_MOD:
    coil_sym_bounds(c, s->args[0], &alo, &ahi);
    coil_sym_bounds(c, s->args[1], &blo, &bhi);
    if (s->kind == COIL_SYM_FLOORDIV)
      div_bounds(alo, ahi, blo, bhi, lo, hi);
    else
      mod_bounds(alo, ahi, blo, bhi, lo, hi);
    return;
  case COIL_SYM_ADD: {
    wide l = 0, h = 0; /* nargs int64 values cannot overflow 128 bits */
    bool linf = false, hinf = false;
    for (int i = 0; i < s->nargs; i++) {
      coil_sym_bounds(c, s->args[i], &alo, &ahi);
      linf |= alo == INT64_MIN;
      hinf |= ahi == INT64_MAX;
      l += alo;
      h += ahi;
    }
    *lo = linf ? INT64_MIN : narrow(l);
    *hi = hinf ? INT64_MAX : narrow(h);
    return;
  }
  default:
    break;
  }
  coil_sym_bounds(c, s->args[0], lo, hi);
  for (int i = 1; i < s->nargs; i++) {
    coil_sym_bounds(c, s->args[i], &alo, &ahi);
    if (s->kind == COIL_SYM_MUL) {
      corners(wide_mul, *lo, *hi, alo, ahi, lo, hi);
    } else if (s->kind == COIL_SYM_MIN) {
      *lo = alo < *lo ? alo : *lo;
      *hi = ahi < *hi ? ahi : *hi;
    } else {
      *lo = alo > *lo ? alo : *lo;
      *hi = ahi > *hi ? ahi : *hi;
    }
  }
}

/* ---- evaluation ---- */

static int
eval_fail(const coil_symctx *c, const coil_sym *s, const char *what, coil_diag *d)
{
  coil_strbuf b = {0};
  coil_sym_print(c, s, COIL_SYM_PY_SYNTAX, &b);
  coil_diag_set(d, "%s in `%s`", what, b.s ? b.s : "");
  coil_strbuf_free(&b);
  return -1;
}

int
coil_sym_eval(const coil_symctx *c, const coil_sym *s, const int64_t *values, int nvalues,
              int64_t *out, coil_diag *d)
{
  int64_t x, y;
  switch (s->kind) {
  case COIL_SYM_CONST:
    *out = s->value;
    return 0;
  case COIL_SYM_VAR:
    if (s->var >= nvalues)
      return coil_diag_set(d, "variable '%s' is unbound: only %d values were given",
                           coil_sym_var_name(c, s->var), nvalues);
    *out = values[s->var];
    return 0;
  case COIL_SYM_FLOORDIV:
  case COIL_SYM_MOD:
    if (coil_sym_eval(c, s->args[0], values, nvalues, &x, d) ||
        coil_sym_eval(c, s->args[1], values, nvalues, &y, d))
      return -1;
    if (y == 0)
      return eval_fail(c, s, s->kind == COIL_SYM_MOD ? "modulo by zero" : "division by zero", d);
    if (s->kind == COIL_SYM_MOD) {
      *out = floor_mod(x, y);
      return 0;
    }
    if (x == INT64_MIN && y == -1)
      return eval_fail(c, s, "integer overflow", d);
    *out = floor_div(x, y);
    return 0;
  default:
    break;
  }
  if (coil_sym_eval(c, s->args[0], values, nvalues, &x, d))
    return -1;
  for (int i = 1; i < s->nargs; i++) {
    if (coil_sym_eval(c, s->args[i], values, nvalues, &y, d))
      return -1;
    bool overflow = false;
    if (s->kind == COIL_SYM_ADD)
      overflow = __builtin_add_overflow(x, y, &x);
    else if (s->kind == COIL_SYM_MUL)
      overflow = __builtin_mul_overflow(x, y, &x);
    else if (s->kind == COIL_SYM_MIN)
      x = y < x ? y : x;
    else
      x = y > x ? y : x;
    if (overflow)
      return eval_fail(c, s, "integer overflow", d);
  }
  *out = x;
  return 0;
}

coil_arena *
coil_symctx_arena(const coil_symctx *c)
{
  return c->arena;
}

const coil_sym *
coil_sym_subst(coil_symctx *c, const coil_sym *s, int n, const int *vars,
               const coil_sym *const *repl)
{
  switch (s->kind) {
  case COIL_SYM_CONST:
    return s;
  case COIL_SYM_VAR:
    for (int i = 0; i < n; i++)
      if (vars[i] == s->var)
        return repl[i];
    return s;
  default:
    break;
  }
  const coil_sym *r = coil_sym_subst(c, s->args[0], n, vars, repl);
  for (int i = 1; i < s->nargs; i++) {
    const coil_sym *a = coil_sym_subst(c, s->args[i], n, vars, repl);
    switch (s->kind) {
    case COIL_SYM_ADD: r = coil_sym_add(c, r, a); break;
    case COIL_SYM_MUL: r = coil_sym_mul(c, r, a); break;
    case COIL_SYM_FLOORDIV: r = coil_sym_floordiv(c, r, a); break;
    case COIL_SYM_MOD: r = coil_sym_mod(c, r, a); break;
    case COIL_SYM_MIN: r = coil_sym_min(c, r, a); break;
    default: r = coil_sym_max(c, r, a); break;
    }
  }
  return r;
}

void
coil_sym_vars_used(const coil_sym *s, bool *used, int nvars)
{
  if (s->kind == COIL_SYM_VAR) {
    if (s->var < nvars)
      used[s->var] = true;
    return;
  }
  for (int i = 0; i < s->nargs; i++)
    coil_sym_vars_used(s->args[i], used, nvars);
}

const coil_sym *
coil_sym_import(coil_symctx *dst, const coil_symctx *src, const coil_sym *s)
{
  switch (s->kind) {
  case COIL_SYM_CONST:
    return coil_sym_const(dst, s->value);
  case COIL_SYM_VAR: {
    const char *name = coil_sym_var_name(src, s->var);
    return intern(dst, name, strlen(name));
  }
  default:
    break;
  }
  const coil_sym *r = coil_sym_import(dst, src, s->args[0]);
  for (int i = 1; i < s->nargs; i++) {
    const coil_sym *a = coil_sym_import(dst, src, s->args[i]);
    switch (s->kind) {
    case COIL_SYM_ADD: r = coil_sym_add(dst, r, a); break;
    case COIL_SYM_MUL: r = coil_sym_mul(dst, r, a); break;
    case COIL_SYM_FLOORDIV: r = coil_sym_floordiv(dst, r, a); break;
    case COIL_SYM_MOD: r = coil_sym_mod(dst, r, a); break;
    case COIL_SYM_MIN: r = coil_sym_min(dst, r, a); break;
    default: r = coil_sym_max(dst, r, a); break;
    }
  }
  return r;
}
