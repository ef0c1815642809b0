/* sym_text.c — the two text forms of symbolic expressions: printing in C or Python syntax with
 * the fewest parentheses that keep precedence, and parsing the Python form back. Works only
 * through sym.h, so the canonical forms of sym.c are all it relies on. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/sym.h"

/* ---- printing ---- */

enum { PREC_ANY, PREC_SUM, PREC_PROD, PREC_ATOM };

typedef struct printer {
  const coil_symctx *c;
  coil_sym_syntax syn;
  coil_strbuf *out;
} printer;

static void print(const printer *p, const coil_sym *s, int minprec);

static void
print_const(const printer *p, int64_t v)
{
  if (p->syn == COIL_SYM_PY_SYNTAX || (v >= INT32_MIN && v <= INT32_MAX))
    coil_strbuf_printf(p->out, "%lld", (long long)v);
  else if (v == INT64_MIN) /* -9223372036854775808LL would negate an out-of-range literal */
    coil_strbuf_puts(p->out, "(-9223372036854775807LL - 1)");
  else
    coil_strbuf_printf(p->out, "%lldLL", (long long)v);
}

/* C prints floor-division and modulo with / and % only where they agree with floor semantics. */
static bool
c_infix(const printer *p, const coil_sym *s)
{
  int64_t alo, ahi, blo, bhi;
  coil_sym_bounds(p->c, s->args[0], &alo, &ahi);
  coil_sym_bounds(p->c, s->args[1], &blo, &bhi);
  return alo >= 0 && blo >= 0;
}

static int
prec(const printer *p, const coil_sym *s)
{
  switch (s->kind) {
  case COIL_SYM_ADD:
    return PREC_SUM;
  case COIL_SYM_MUL:
    return PREC_PROD;
  case COIL_SYM_FLOORDIV:
  case COIL_SYM_MOD:
    return p->syn == COIL_SYM_PY_SYNTAX || c_infix(p, s) ? PREC_PROD : PREC_ATOM;
  default:
    return PREC_ATOM;
  }
}

/* coef * f[0] * ... * f[n-1], the coefficient first: `2*a*b`, `-a`, `-(a // 4)`. With coef 1
 * and one factor the factor stands alone, at product level (a term after " - "). */
static void
print_product(const printer *p, int64_t coef, const coil_sym *const *f, int n)
{
  if (coef == 1 && n == 1) {
    print(p, f[0], PREC_PROD);
    return;
  }
  if (coef == -1) {
    coil_strbuf_puts(p->out, "-");
  } else if (coef != 1) {
    print_const(p, coef);
    coil_strbuf_puts(p->out, "*");
  }
  for (int i = 0; i < n; i++) {
    if (i)
      coil_strbuf_puts(p->out, "*");
    print(p, f[i], PREC_ATOM);
  }
}

/* The constant coefficient of a term of a canonical sum: the constant itself, or the first
 * factor of a product that has one; *has says whether there is one. */
static int64_t
leading_coef(const coil_sym *t, bool *has)
{
  *has = true;
  if (t->kind == COIL_SYM_CONST)
    return t->value;
  if (t->kind == COIL_SYM_MUL && t->args[0]->kind == COIL_SYM_CONST)
    return t->args[0]->value;
  *has = false;
  return 1;
}

/* A term with a negative coefficient prints as subtraction (except INT64_MIN, which has no
 * positive counterpart and prints as `+ -9223372036854775808`). */
static void
print_sum(const printer *p, const coil_sym *s)
{
  for (int i = 0; i < s->nargs; i++) {
    const coil_sym *t = s->args[i];
    bool has;
    int64_t coef = leading_coef(t, &has);
    if (i > 0 && has && coef < 0 && coef != INT64_MIN) {
      coil_strbuf_puts(p->out, " - ");
      if (t->kind == COIL_SYM_CONST)
        print_const(p, -coef);
      else
        print_product(p, -coef, t->args + 1, t->nargs - 1);
    } else {
      if (i > 0)
        coil_strbuf_puts(p->out, " + ");
      print(p, t, PREC_PROD);
    }
  }
}

static void
print_call(const printer *p, const char *name, const coil_sym *const *args, int n)
{
  coil_strbuf_printf(p->out, "%s(", name);
  print(p, args[0], PREC_ANY);
  /* C's coil_min/coil_max take two arguments: nest the rest. */
  bool nest = p->syn == COIL_SYM_C_SYNTAX && n > 2;
  for (int i = 1; i < n && !nest; i++) {
    coil_strbuf_puts(p->out, ", ");
    print(p, args[i], PREC_ANY);
  }
  if (nest) {
    coil_strbuf_puts(p->out, ", ");
    print_call(p, name, args + 1, n - 1);
  }
  coil_strbuf_puts(p->out, ")");
}

static void
print_body(const printer *p, const coil_sym *s)
{
  bool py = p->syn == COIL_SYM_PY_SYNTAX;
  switch (s->kind) {
  case COIL_SYM_CONST:
    print_const(p, s->value);
    break;
  case COIL_SYM_VAR:
    coil_strbuf_puts(p->out, coil_sym_var_name(p->c, s->var));
    break;
  case COIL_SYM_ADD:
    print_sum(p, s);
    break;
  case COIL_SYM_MUL:
    if (s->args[0]->kind == COIL_SYM_CONST)
      print_product(p, s->args[0]->value, s->args + 1, s->nargs - 1);
    else
      print_product(p, 1, s->args, s->nargs);
    break;
  case COIL_SYM_FLOORDIV:
  case COIL_SYM_MOD:
    if (!py && !c_infix(p, s)) {
      print_call(p, s->kind == COIL_SYM_MOD ? "coil_mod" : "coil_floordiv", s->args, 2);
      break;
    }
    print(p, s->args[0], PREC_PROD);
    coil_strbuf_puts(p->out, s->kind == COIL_SYM_MOD ? " % " : py ? " // " : " / ");
    print(p, s->args[1], PREC_ATOM);
    break;
  case COIL_SYM_MIN:
    print_call(p, py ? "min" : "coil_min", s->args, s->nargs);
    break;
  case COIL_SYM_MAX:
    print_call(p, py ? "max" : "coil_max", s->args, s->nargs);
    break;
  }
}

static void
print(const printer *p, const coil_sym *s, int minprec)
{
  bool paren = prec(p, s) < minprec;
  if (paren)
    coil_strbuf_puts(p->out, "(");
  print_body(p, s);
  if (paren)
    coil_strbuf_puts(p->out, ")");
}

void
coil_sym_print(const coil_symctx *c, const coil_sym *s, coil_sym_syntax syn, coil_strbuf *out)
{
  printer p = {c, syn, out};
  print(&p, s, PREC_ANY);
}

const char *
coil_sym_str(coil_symctx *c, const coil_sym *s, coil_sym_syntax syn)
{
  coil_strbuf b = {0};
  coil_sym_print(c, s, syn, &b);
  const char *r = coil_arena_strdup(coil_symctx_arena(c), b.s ? b.s : "");
  coil_strbuf_free(&b);
  return r;
}

/* ---- parsing the Python syntax ---- */

enum { MAX_DEPTH = 200 }; /* so hostile input like "((((..." cannot exhaust the stack */

typedef struct parser {
  coil_symctx *c;
  const char *text;
  size_t pos;
  int depth;
  coil_diag *d;
} parser;

static const coil_sym *parse_sum(parser *p);

static const coil_sym *
parse_error(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const coil_sym *
parse_error(parser *p, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  coil_diag_set(p->d, "column %zu: %s", p->pos + 1, msg);
  return NULL;
}

/* The next non-blank character, 0 at the end. */
static char
peek(parser *p)
{
  while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n')
    p->pos++;
  return p->text[p->pos];
}

static bool
accept(parser *p, const char *tok)
{
  peek(p);
  size_t n = strlen(tok);
  if (strncmp(p->text + p->pos, tok, n) != 0)
    return false;
  p->pos += n;
  return true;
}

/* NAME := [A-Za-z_][A-Za-z0-9_]* */
static bool
is_name_char(char ch, bool first)
{
  return isalpha((unsigned char)ch) || ch == '_' || (!first && isdigit((unsigned char)ch));
}

/* INT := [0-9]+ ; negative when it follows a unary minus, so that INT64_MIN can be written. */
static const coil_sym *
parse_int(parser *p, bool negative)
{
  size_t start = p->pos;
  uint64_t v = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; isdigit((unsigned char)p->text[p->pos]); p->pos++) {
    unsigned digit = (unsigned)(p->text[p->pos] - '0');
    if (v > (limit - digit) / 10) {
      p->pos = start;
      return parse_error(p, "integer literal out of range");
    }
    v = v * 10 + digit;
  }
  return coil_sym_const(p->c, negative ? (int64_t)(0 - v) : (int64_t)v);
}

/* call := ("min"|"max") "(" sum {"," sum} ")"   (the name and "(" already consumed) */
static const coil_sym *
parse_call(parser *p, coil_sym_kind kind)
{
  const coil_sym *r = parse_sum(p);
  while (r && accept(p, ",")) {
    const coil_sym *s = parse_sum(p);
    r = !s ? NULL : kind == COIL_SYM_MIN ? coil_sym_min(p->c, r, s) : coil_sym_max(p->c, r, s);
  }
  if (r && !accept(p, ")"))
    return parse_error(p, "expected ',' or ')'");
  return r;
}

/* primary := INT | NAME | call | "(" sum ")" */
static const coil_sym *
parse_primary(parser *p)
{
  char ch = peek(p);
  if (isdigit((unsigned char)ch))
    return parse_int(p, false);
  if (is_name_char(ch, true)) {
    size_t start = p->pos;
    while (is_name_char(p->text[p->pos], false))
      p->pos++;
    size_t n = p->pos - start;
    bool is_min = n == 3 && strncmp(p->text + start, "min", 3) == 0;
    bool is_max = n == 3 && strncmp(p->text + start, "max", 3) == 0;
    if ((is_min || is_max) && accept(p, "("))
      return parse_call(p, is_min ? COIL_SYM_MIN : COIL_SYM_MAX);
    return coil_sym_var(p->c, coil_arena_strndup(coil_symctx_arena(p->c), p->text + start, n));
  }
  if (accept(p, "(")) {
    const coil_sym *s = parse_sum(p);
    if (s && !accept(p, ")"))
      return parse_error(p, "expected ')'");
    return s;
  }
  if (ch == 0)
    return parse_error(p, "expected an expression, got the end of the text");
  return parse_error(p, "expected an expression, got '%c'", ch);
}

/* unary := "-" unary | "+" unary | primary
 * A minus directly before an integer makes a negative literal, so INT64_MIN can be written; by
 * Python's precedence (-2)*a == -(2*a) and (-7) // 2 is what -7 // 2 means anyway. */
static const coil_sym *
parse_unary(parser *p)
{
  if (p->depth >= MAX_DEPTH)
    return parse_error(p, "expression nested too deeply");
  p->depth++;
  const coil_sym *r;
  if (accept(p, "-")) {
    if (isdigit((unsigned char)peek(p))) {
      r = parse_int(p, true);
    } else {
      r = parse_unary(p);
      r = r ? coil_sym_neg(p->c, r) : NULL;
    }
  } else if (accept(p, "+")) {
    r = parse_unary(p);
  } else {
    r = parse_primary(p);
  }
  p->depth--;
  return r;
}

/* product := unary {("*"|"//"|"%") unary} */
static const coil_sym *
parse_product(parser *p)
{
  const coil_sym *r = parse_unary(p);
  while (r) {
    const coil_sym *(*op)(coil_symctx *, const coil_sym *, const coil_sym *);
    if (accept(p, "//"))
      op = coil_sym_floordiv;
    else if (accept(p, "*"))
      op = coil_sym_mul;
    else if (accept(p, "%"))
      op = coil_sym_mod;
    else if (peek(p) == '/')
      return parse_error(p, "'/' is not an operator here; floor division is '//'");
    else
      break;
    const coil_sym *s = parse_unary(p);
    r = s ? op(p->c, r, s) : NULL;
  }
  return r;
}

/* sum := product {("+"|"-") product} */
static const coil_sym *
parse_sum(parser *p)
{
  const coil_sym *r = parse_product(p);
  while (r) {
    const coil_sym *(*op)(coil_symctx *, const coil_sym *, const coil_sym *);
    if (accept(p, "+"))
      op = coil_sym_add;
    else if (accept(p, "-"))
      op = coil_sym_sub;
    else
      break;
    const coil_sym *s = parse_product(p);
    r = s ? op(p->c, r, s) : NULL;
  }
  return r;
}

/* expr := sum END */
const coil_sym *
coil_sym_parse(coil_symctx *c, const char *text, coil_diag *d)
{
  parser p = {c, text, 0, 0, d};
  const coil_sym *r = parse_sum(&p);
  if (r && peek(&p) != 0)
    return parse_error(&p, "expected an operator or the end of the text, got '%c'", peek(&p));
  return r;
}
