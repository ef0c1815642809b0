/* sym.h — symbolic integer expressions: sizes and (later) index expressions.
 *
 * An expression is an immutable tree in an arena, always in canonical form, so two expressions
 * that are equal after simplification are equal under coil_sym_cmp and print identically.
 * Operations: integer constants, named variables (size symbols like s0, or loop variables like
 * x0 with a known range), +, *, floor-division, modulo (Python semantics: the result of a % b has
 * b's sign), min, max. Variables carry a range [lo, hi] that simplification may use:
 *   (16*a + b) // 16  ->  a      and   (16*a + b) % 16  ->  b      when 0 <= b < 16 is known.
 * Printing has two syntaxes, C and Python, with the fewest parentheses that keep precedence:
 *   a + b*(c + d)  and  (a + b)*(c + d)  print differently.
 * Contexts are independent: two threads using two contexts never meet. */
#ifndef COIL_SYM_H
#define COIL_SYM_H

#include <stdbool.h>
#include <stdint.h>

#include "coil/arena.h"
#include "coil/base.h"
#include "coil/strbuf.h"

typedef enum coil_sym_kind {
  COIL_SYM_CONST,
  COIL_SYM_VAR,
  COIL_SYM_ADD,      /* n-ary sum, n >= 2 */
  COIL_SYM_MUL,      /* n-ary product, n >= 2 */
  COIL_SYM_FLOORDIV, /* a // b (floor) */
  COIL_SYM_MOD,      /* a % b (Python: floor modulo) */
  COIL_SYM_MIN,      /* n-ary */
  COIL_SYM_MAX,      /* n-ary */
} coil_sym_kind;

typedef struct coil_sym coil_sym;
struct coil_sym {
  coil_sym_kind kind;
  int64_t value;          /* CONST: the value */
  int var;                /* VAR: index into the context's variable table */
  int nargs;              /* ADD, MUL, FLOORDIV, MOD, MIN, MAX */
  const coil_sym **args;  /* arena-owned */
};

typedef struct coil_symctx coil_symctx;

/* The context owns nothing itself: its tables live in arena `a`. */
coil_symctx *coil_symctx_new(coil_arena *a);
coil_arena *coil_symctx_arena(const coil_symctx *c);

/* Variables. A name is interned: asking twice gives the same variable. New variables have
 * range [0, INT64_MAX] (sizes are non-negative). */
const coil_sym *coil_sym_var(coil_symctx *c, const char *name);
void coil_sym_set_range(coil_symctx *c, const coil_sym *var, int64_t lo, int64_t hi);
int coil_sym_nvars(const coil_symctx *c);
const char *coil_sym_var_name(const coil_symctx *c, int var);

const coil_sym *coil_sym_const(coil_symctx *c, int64_t v);
const coil_sym *coil_sym_add(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_sub(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_neg(coil_symctx *c, const coil_sym *a);
const coil_sym *coil_sym_mul(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_floordiv(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_mod(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_min(coil_symctx *c, const coil_sym *a, const coil_sym *b);
const coil_sym *coil_sym_max(coil_symctx *c, const coil_sym *a, const coil_sym *b);

bool coil_sym_is_const(const coil_sym *s, int64_t *value); /* value may be NULL */
/* s with each variable vars[i] replaced by repl[i], rebuilt (and so simplified) canonically. */
const coil_sym *coil_sym_subst(coil_symctx *c, const coil_sym *s, int n, const int *vars,
                               const coil_sym *const *repl);
/* s, an expression of context src, rebuilt in context dst: variables are matched by name
 * (created in dst on first use, with dst's ranges applying to the rebuilt expression). */
const coil_sym *coil_sym_import(coil_symctx *dst, const coil_symctx *src, const coil_sym *s);
/* Marks in used[v] (v < nvars) every variable s mentions. */
void coil_sym_vars_used(const coil_sym *s, bool *used, int nvars);
/* Total order on canonical expressions; 0 means equal. */
int coil_sym_cmp(const coil_sym *a, const coil_sym *b);
/* Known bounds of s from variable ranges (conservative: may be wider than the truth). */
void coil_sym_bounds(const coil_symctx *c, const coil_sym *s, int64_t *lo, int64_t *hi);

/* Evaluate under a binding: values[v] for variable v (v < nvalues). Errors (unbound variable,
 * division or modulo by zero, overflow) return -1 with a message. */
int coil_sym_eval(const coil_symctx *c, const coil_sym *s, const int64_t *values, int nvalues,
                  int64_t *out, coil_diag *d);

typedef enum { COIL_SYM_C_SYNTAX, COIL_SYM_PY_SYNTAX } coil_sym_syntax;
/* C: floordiv/mod print as `a / b`, `a % b` when both sides are provably non-negative and as
 * coil_floordiv(a, b) / coil_mod(a, b) otherwise; min/max as coil_min(a, b) / coil_max(a, b).
 * Python: a // b, a % b, min(a, b), max(a, b). */
void coil_sym_print(const coil_symctx *c, const coil_sym *s, coil_sym_syntax syn, coil_strbuf *out);
/* Convenience: print into an arena string (Python syntax is the canonical text form). */
const char *coil_sym_str(coil_symctx *c, const coil_sym *s, coil_sym_syntax syn);

/* Parse the Python syntax back (integers, names, + - * // %, min(...), max(...), parentheses).
 * Unknown names become variables. Returns NULL with a message naming the column on error. */
const coil_sym *coil_sym_parse(coil_symctx *c, const char *text, coil_diag *d);

#endif
