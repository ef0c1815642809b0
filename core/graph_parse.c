/* graph_parse.c — the .coil reader: a lexer, a recursive-descent parser over the grammar in
 * docs/graph-format.md, and the checks that run while building the graph (names defined once
 * and before use, ops in the table, arguments bound and typed by infer.c, annotations equal to
 * the inferred types). Input is untrusted: every path ends in a message with file:line:col,
 * recursion is bounded, and integers are range-checked. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

#define MAX_NAME 256   /* longest accepted name */
#define MAX_DEPTH 32   /* deepest nesting of lists in an argument */

typedef enum { T_EOF, T_NL, T_NAME, T_VAR, T_INT, T_FLOAT, T_STR, T_PUNCT } tok_kind;

typedef struct {
  tok_kind kind;
  const char *s;   /* NAME, VAR (without '%'): points into the text; STR: arena copy */
  size_t n;
  int64_t i;
  double f;
  char c;          /* PUNCT */
  int line, col;
  size_t off;      /* offset of the token's first byte in the text */
} tok;

typedef struct {
  const char *file, *text;
  size_t len, pos;
  int line, col;
  int depth;       /* open ( and [: newlines inside them are spaces, as in Python */
  tok t;           /* current token */
  coil_graph *g;
  coil_diag *d;
  /* name -> value: open addressing, power-of-two capacity */
  coil_value **slots;
  size_t nslots, nused;
} parser;

static int
err_at(parser *p, int line, int col, const char *fmt, const char *a, const char *b)
{
  char what[sizeof p->d->msg]; /* as long as a message can be: types in messages can be long */
  snprintf(what, sizeof what, fmt, a, b);
  return coil_diag_at(p->d, p->file, line, col, "%s", what);
}

static int
err(parser *p, const char *fmt, const char *a)
{
  return err_at(p, p->t.line, p->t.col, fmt, a, "");
}

static const char *
tok_desc(const tok *t, char *buf, size_t cap)
{
  switch (t->kind) {
  case T_EOF: return "end of file";
  case T_NL: return "end of line";
  case T_NAME: snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s); return buf;
  case T_VAR: snprintf(buf, cap, "'%%%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s); return buf;
  case T_INT: return "an integer";
  case T_FLOAT: return "a number";
  case T_STR: return "a string";
  case T_PUNCT: snprintf(buf, cap, "'%c'", t->c); return buf;
  }
  return "?";
}

static int
expected(parser *p, const char *what)
{
  char buf[64];
  char msg[160];
  snprintf(msg, sizeof msg, "expected %s, found %s", what, tok_desc(&p->t, buf, sizeof buf));
  return err(p, "%s", msg);
}

/* ---- lexer ---- */

static int
peekc(parser *p, size_t ahead)
{
  return p->pos + ahead < p->len ? (unsigned char)p->text[p->pos + ahead] : -1;
}

static void
advance(parser *p, size_t n)
{
  while (n-- && p->pos < p->len) {
    if (p->text[p->pos] == '\n') {
      p->line++;
      p->col = 1;
    } else {
      p->col++;
    }
    p->pos++;
  }
}

static int
lex_number(parser *p)
{
  size_t start = p->pos, k = 0;
  bool is_float = false;
  if (peekc(p, 0) == '-')
    k++;
  if (!isdigit(peekc(p, k)))
    return err(p, "%s", "expected a digit after '-'");
  while (isdigit(peekc(p, k)))
    k++;
  if (peekc(p, k) == '.') {
    is_float = true;
    k++;
    while (isdigit(peekc(p, k)))
      k++;
  }
  if (peekc(p, k) == 'e' || peekc(p, k) == 'E') {
    size_t e = k + 1;
    if (peekc(p, e) == '+' || peekc(p, e) == '-')
      e++;
    if (isdigit(peekc(p, e))) {
      is_float = true;
      k = e;
      while (isdigit(peekc(p, k)))
        k++;
    }
  }
  if (isalpha(peekc(p, k)) || peekc(p, k) == '_')
    return err(p, "%s", "malformed number");
  char buf[128];
  if (k >= sizeof buf)
    return err(p, "%s", "number literal too long");
  memcpy(buf, p->text + start, k);
  buf[k] = 0;
  errno = 0;
  if (is_float) {
    p->t.kind = T_FLOAT;
    p->t.f = strtod(buf, NULL);
  } else {
    p->t.kind = T_INT;
    p->t.i = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
      return err(p, "integer %s does not fit in 64 bits", buf);
  }
  advance(p, k);
  return 0;
}

static int
lex_string(parser *p)
{
  int q = peekc(p, 0);
  coil_strbuf b = {0};
  advance(p, 1);
  for (;;) {
    int c = peekc(p, 0);
    if (c < 0 || c == '\n') {
      coil_strbuf_free(&b);
      return err(p, "%s", "unterminated string");
    }
    if (c == 0) {
      coil_strbuf_free(&b);
      return err(p, "%s", "NUL byte in string");
    }
    if (c == q) {
      advance(p, 1);
      break;
    }
    if (c == '\\') {
      int e = peekc(p, 1);
      char ch;
      if (e == 'n') ch = '\n';
      else if (e == 't') ch = '\t';
      else if (e == '\\' || e == '\'' || e == '"') ch = (char)e;
      else if (e == 'x' && isxdigit(peekc(p, 2)) && isxdigit(peekc(p, 3))) {
        char hex[3] = {(char)peekc(p, 2), (char)peekc(p, 3), 0};
        ch = (char)strtol(hex, NULL, 16);
        advance(p, 2);
      } else {
        coil_strbuf_free(&b);
        return err(p, "%s", "unknown escape in string (use \\n \\t \\\\ \\' \\\" \\xNN)");
      }
      if (ch == 0) {
        coil_strbuf_free(&b);
        return err(p, "%s", "NUL byte in string");
      }
      coil_strbuf_putn(&b, &ch, 1);
      advance(p, 2);
      continue;
    }
    char ch = (char)c;
    coil_strbuf_putn(&b, &ch, 1);
    advance(p, 1);
  }
  p->t.kind = T_STR;
  p->t.n = b.len;
  p->t.s = coil_arena_strndup(p->g->arena, b.s ? b.s : "", b.len);
  coil_strbuf_free(&b);
  return 0;
}

/* Reads the next token into p->t. Skips spaces, comments, and newlines inside brackets;
 * collapses runs of blank lines into one T_NL. */
static int
next(parser *p)
{
  for (;;) {
    int c = peekc(p, 0);
    if (c == ' ' || c == '\t' || c == '\r') {
      advance(p, 1);
    } else if (c == '#') {
      while (peekc(p, 0) >= 0 && peekc(p, 0) != '\n')
        advance(p, 1);
    } else if (c == '\n' && p->depth > 0) {
      advance(p, 1);
    } else {
      break;
    }
  }
  p->t.line = p->line;
  p->t.col = p->col;
  p->t.off = p->pos;
  int c = peekc(p, 0);
  if (c < 0) {
    p->t.kind = T_EOF;
    return 0;
  }
  if (c == '\n') {
    p->t.kind = T_NL;
    /* swallow following blank and comment-only lines */
    while (peekc(p, 0) == '\n' || peekc(p, 0) == ' ' || peekc(p, 0) == '\t' || peekc(p, 0) == '\r' ||
           peekc(p, 0) == '#') {
      if (peekc(p, 0) == '#')
        while (peekc(p, 0) >= 0 && peekc(p, 0) != '\n')
          advance(p, 1);
      else
        advance(p, 1);
    }
    return 0;
  }
  if (isalpha(c) || c == '_') {
    size_t k = 0;
    while (isalnum(peekc(p, k)) || peekc(p, k) == '_' || peekc(p, k) == '.')
      k++;
    if (k > MAX_NAME)
      return err(p, "%s", "name longer than 256 characters");
    p->t.kind = T_NAME;
    p->t.s = p->text + p->pos;
    p->t.n = k;
    advance(p, k);
    return 0;
  }
  if (c == '%') {
    size_t k = 1;
    if (!isalpha(peekc(p, 1)) && peekc(p, 1) != '_')
      return err(p, "%s", "expected a name after '%' (names match [A-Za-z_][A-Za-z0-9_]*)");
    while (isalnum(peekc(p, k)) || peekc(p, k) == '_')
      k++;
    if (peekc(p, k) == '.')
      return err(p, "%s", "'.' in a name (names match [A-Za-z_][A-Za-z0-9_]*)");
    if (k - 1 > MAX_NAME)
      return err(p, "%s", "name longer than 256 characters");
    p->t.kind = T_VAR;
    p->t.s = p->text + p->pos + 1;
    p->t.n = k - 1;
    advance(p, k);
    return 0;
  }
  if (isdigit(c) || (c == '-' && isdigit(peekc(p, 1))))
    return lex_number(p);
  if (c == '-' && peekc(p, 1) == 'i' && peekc(p, 2) == 'n' && peekc(p, 3) == 'f' &&
      !isalnum(peekc(p, 4)) && peekc(p, 4) != '_') {
    p->t.kind = T_FLOAT;
    p->t.f = -INFINITY;
    advance(p, 4);
    return 0;
  }
  if (c == '\'' || c == '"')
    return lex_string(p);
  if (c && strchr("()[]{},:=", c)) {
    p->t.kind = T_PUNCT;
    p->t.c = (char)c;
    if (c == '(' || c == '[')
      p->depth++;
    else if ((c == ')' || c == ']') && p->depth > 0)
      p->depth--;
    advance(p, 1);
    return 0;
  }
  char shown[16];
  if (isprint(c))
    snprintf(shown, sizeof shown, "'%c'", c);
  else
    snprintf(shown, sizeof shown, "byte 0x%02x", c);
  return err(p, "unexpected character %s", shown);
}

/* The next character after the current token that is not a space (for keyword arguments). */
static int
peek_nonspace(parser *p)
{
  size_t k = 0;
  while (peekc(p, k) == ' ' || peekc(p, k) == '\t')
    k++;
  return peekc(p, k);
}

static bool
is_punct(parser *p, char c)
{
  return p->t.kind == T_PUNCT && p->t.c == c;
}

static bool
is_word(parser *p, const char *w)
{
  return p->t.kind == T_NAME && p->t.n == strlen(w) && memcmp(p->t.s, w, p->t.n) == 0;
}

static int
expect_punct(parser *p, char c)
{
  if (!is_punct(p, c)) {
    char what[8];
    snprintf(what, sizeof what, "'%c'", c);
    return expected(p, what);
  }
  return next(p);
}

/* Between the items of a bracketed list: a ',' (consumed) or the closing bracket (left). */
static int
expect_sep(parser *p, char close)
{
  if (is_punct(p, close))
    return 0;
  if (!is_punct(p, ',')) {
    char what[16];
    snprintf(what, sizeof what, "',' or '%c'", close);
    return expected(p, what);
  }
  return next(p);
}

static int
expect_nl(parser *p)
{
  if (p->t.kind != T_NL)
    return expected(p, "end of line");
  return next(p);
}

/* ---- name table ---- */

static uint64_t
hash(const char *s, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static coil_value **
slot(parser *p, const char *s, size_t n)
{
  size_t mask = p->nslots - 1;
  for (size_t i = hash(s, n) & mask;; i = (i + 1) & mask) {
    coil_value *v = p->slots[i];
    if (!v || (strlen(v->name) == n && memcmp(v->name, s, n) == 0))
      return &p->slots[i];
  }
}

static coil_value *
lookup(parser *p, const char *s, size_t n)
{
  return p->nslots ? *slot(p, s, n) : NULL;
}

static void
define(parser *p, coil_value *v)
{
  if (2 * (p->nused + 1) > p->nslots) {
    coil_value **old = p->slots;
    size_t nold = p->nslots;
    p->nslots = nold ? 2 * nold : 64;
    p->slots = coil_xcalloc(p->nslots, sizeof *p->slots);
    for (size_t i = 0; i < nold; i++)
      if (old[i])
        *slot(p, old[i]->name, strlen(old[i]->name)) = old[i];
    coil_xfree(old);
  }
  *slot(p, v->name, strlen(v->name)) = v;
  p->nused++;
}

/* ---- grammar ---- */

/* A size expression that divides by zero (s0 // 0, s0 % 0) has no value for any s0. */
static bool
divides_by_zero(const coil_sym *s)
{
  if ((s->kind == COIL_SYM_FLOORDIV || s->kind == COIL_SYM_MOD) && s->args[1]->kind == COIL_SYM_CONST &&
      s->args[1]->value == 0)
    return true;
  for (int i = 0; i < s->nargs; i++)
    if (divides_by_zero(s->args[i]))
      return true;
  return false;
}

/* The most bytes one tensor may hold: 2^62. Offsets and byte counts computed from sizes then
 * stay within int64 everywhere (a tensor this large fits in no machine either). */
#define MAX_TENSOR_BYTES ((int64_t)1 << 62)

/* Refuses a type whose constant sizes make a tensor no machine can hold, so that no later stage
 * computes with an element or byte count that overflows. */
static int
check_extent(parser *p, int line, int col, const coil_type *t)
{
  if (t->kind == COIL_TYPE_TUPLE) {
    for (int i = 0; i < t->nelems; i++)
      if (check_extent(p, line, col, &t->elems[i]))
        return -1;
    return 0;
  }
  int64_t bytes = (int64_t)coil_dtype_size(t->dtype), v;
  bool over = false, zero = false;
  for (int i = 0; i < t->rank; i++) {
    if (!coil_sym_is_const(t->dims[i], &v))
      continue;
    zero = zero || v == 0;
    over = over || __builtin_mul_overflow(bytes, v, &bytes) || bytes > MAX_TENSOR_BYTES;
  }
  if (!over || zero)
    return 0;
  coil_strbuf b = {0};
  coil_type_print(p->g, t, &b);
  err_at(p, line, col, "%s is larger than a tensor may be (2^62 bytes)%s", b.s, "");
  coil_strbuf_free(&b);
  return -1;
}

/* dim := INT | SYMBOL | EXPR
 * EXPR is a size expression as coil_sym_print writes it (6*s0, (s0 + 1) // 2, min(s0, 5)), so
 * that the printed types of computed sizes parse back. It runs on one line up to the next ',' or
 * ']' outside parentheses. */
static int
parse_dim(parser *p, const coil_sym **out)
{
  size_t end = p->t.off;
  int nest = 0;
  for (; end < p->len && p->text[end] && p->text[end] != '\n' && p->text[end] != '#'; end++) {
    char ch = p->text[end];
    if (nest == 0 && (ch == ',' || ch == ']' || ch == ')'))
      break;
    nest += ch == '(' ? 1 : ch == ')' ? -1 : 0;
  }
  size_t tail = p->pos;
  while (tail < end && strchr(" \t\r", p->text[tail]))
    tail++;
  bool starts = p->t.kind == T_INT || p->t.kind == T_NAME || is_punct(p, '(');
  if (starts && tail < end) {
    coil_diag sd = {{0}};
    const char *text = coil_arena_strndup(p->g->arena, p->text + p->t.off, end - p->t.off);
    int64_t v;
    *out = coil_sym_parse(p->g->sym, text, &sd);
    if (!*out)
      return err_at(p, p->t.line, p->t.col, "bad size expression '%.100s': %.200s", text, sd.msg);
    if (coil_sym_is_const(*out, &v) && v < 0)
      return err(p, "%s", "a size must not be negative");
    if (divides_by_zero(*out))
      return err_at(p, p->t.line, p->t.col, "bad size expression '%.100s': %s", text, "division by zero");
    if (is_punct(p, '('))
      p->depth--; /* the lexer counted it; the expression's parentheses are skipped below */
    advance(p, end - p->pos);
    return next(p);
  }
  if (p->t.kind == T_INT) {
    if (p->t.i < 0)
      return err(p, "%s", "a size must not be negative");
    *out = coil_sym_const(p->g->sym, p->t.i);
    return next(p);
  }
  if (p->t.kind == T_NAME && memchr(p->t.s, '.', p->t.n) == NULL) {
    char *name = coil_arena_strndup(p->g->arena, p->t.s, p->t.n);
    *out = coil_sym_var(p->g->sym, name);
    return next(p);
  }
  return expected(p, "a size (an integer or a symbol)");
}

/* type := DTYPE "[" [dim {"," dim}] "]" | "(" type {"," type} ")" */
static int
parse_type(parser *p, coil_type *t, bool allow_tuple)
{
  memset(t, 0, sizeof *t);
  if (allow_tuple && is_punct(p, '(')) {
    if (next(p))
      return -1;
    coil_type *elems = NULL; /* any number: split and chunk make one element per piece */
    int n = 0, cap = 0;
    for (;;) {
      if (n == cap) {
        int ncap = cap ? 2 * cap : 16;
        coil_type *grown = COIL_ARENA_ARRAY(p->g->arena, coil_type, ncap);
        if (n)
          memcpy(grown, elems, sizeof(coil_type) * (size_t)n);
        elems = grown;
        cap = ncap;
      }
      if (parse_type(p, &elems[n++], false))
        return -1;
      if (is_punct(p, ')'))
        break;
      if (expect_sep(p, ')'))
        return -1;
    }
    t->kind = COIL_TYPE_TUPLE;
    t->nelems = n;
    t->elems = elems;
    return next(p);
  }
  int dt = p->t.kind == T_NAME ? coil_dtype_from_name(p->t.s, p->t.n) : -1;
  if (dt < 0)
    return expected(p, "a type (a dtype such as f32 followed by [sizes])");
  t->kind = COIL_TYPE_TENSOR;
  t->dtype = (coil_dtype)dt;
  if (next(p) || expect_punct(p, '['))
    return -1;
  while (!is_punct(p, ']')) {
    if (t->rank == COIL_MAX_RANK)
      return err(p, "%s", "more than 8 dimensions");
    if (parse_dim(p, &t->dims[t->rank++]))
      return -1;
    if (expect_sep(p, ']'))
      return -1;
  }
  return next(p);
}

static const char *const words[] = {"contiguous_format", "channels_last", "preserve_format",
                                    "strided", "cpu", "cuda"};

/* value := "%" NAME | INT | FLOAT | inf | -inf | nan | True | False | None | STRING | DTYPE
 *        | "[" [value {"," value}] "]" | contiguous_format | channels_last | preserve_format
 *        | strided | cpu | cuda[:N] */
static int
parse_value(parser *p, coil_lit *l, int depth)
{
  memset(l, 0, sizeof *l);
  l->line = p->t.line;
  l->col = p->t.col;
  if (depth > MAX_DEPTH)
    return err(p, "%s", "lists nested too deeply");
  switch (p->t.kind) {
  case T_VAR: {
    coil_value *v = lookup(p, p->t.s, p->t.n);
    if (!v) {
      char name[MAX_NAME + 1];
      snprintf(name, sizeof name, "%.*s", (int)p->t.n, p->t.s);
      return err(p, "%%%s is not defined (a value must be defined before it is used)", name);
    }
    l->kind = COIL_LIT_VALUE;
    l->v = v;
    return next(p);
  }
  case T_INT:
    l->kind = COIL_LIT_INT;
    l->i = p->t.i;
    return next(p);
  case T_FLOAT:
    l->kind = COIL_LIT_FLOAT;
    l->f = p->t.f;
    return next(p);
  case T_STR:
    l->kind = COIL_LIT_STR;
    l->s = p->t.s;
    return next(p);
  case T_NAME: {
    if (is_word(p, "True") || is_word(p, "False")) {
      l->kind = COIL_LIT_BOOL;
      l->i = is_word(p, "True");
      return next(p);
    }
    if (is_word(p, "None")) {
      l->kind = COIL_LIT_NONE;
      return next(p);
    }
    if (is_word(p, "inf") || is_word(p, "nan")) {
      l->kind = COIL_LIT_FLOAT;
      l->f = is_word(p, "inf") ? INFINITY : NAN;
      return next(p);
    }
    int dt = coil_dtype_from_name(p->t.s, p->t.n);
    if (dt >= 0) {
      l->kind = COIL_LIT_DTYPE;
      l->dtype = (coil_dtype)dt;
      return next(p);
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
      if (is_word(p, words[i])) {
        l->kind = COIL_LIT_WORD;
        l->s = words[i];
        l->i = -1;
        if (next(p))
          return -1;
        if (strcmp(words[i], "cuda") == 0 && is_punct(p, ':')) {
          if (next(p))
            return -1;
          if (p->t.kind != T_INT || p->t.i < 0 || p->t.i > 1024)
            return expected(p, "a device index after 'cuda:'");
          l->i = p->t.i;
          return next(p);
        }
        return 0;
      }
    char name[MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)p->t.n, p->t.s);
    return err(p, "unknown word '%s' (expected a value: %%name, a number, True, False, None, a "
                  "string, a dtype, a list, or a memory format, layout or device)", name);
  }
  case T_PUNCT:
    if (p->t.c == '[') {
      if (next(p))
        return -1;
      /* items grow in the arena by doubling; small stack frames keep deep nesting cheap */
      coil_lit *items = NULL;
      int n = 0, cap = 0;
      while (!is_punct(p, ']')) {
        if (n == 256)
          return err(p, "%s", "a list literal has at most 256 items");
        if (n == cap) {
          coil_lit *grown = COIL_ARENA_ARRAY(p->g->arena, coil_lit, cap ? 2 * cap : 4);
          if (n)
            memcpy(grown, items, sizeof(coil_lit) * (size_t)n);
          items = grown;
          cap = cap ? 2 * cap : 4;
        }
        if (parse_value(p, &items[n++], depth + 1))
          return -1;
        if (expect_sep(p, ']'))
          return -1;
      }
      l->kind = COIL_LIT_LIST;
      l->n = n;
      l->items = items;
      return next(p);
    }
    break;
  default:
    break;
  }
  return expected(p, "a value");
}

static int
new_name(parser *p, const char **out)
{
  if (p->t.kind != T_VAR)
    return expected(p, "a name such as %x");
  if (lookup(p, p->t.s, p->t.n)) {
    char name[MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)p->t.n, p->t.s);
    return err(p, "%%%s is defined twice", name);
  }
  *out = coil_arena_strndup(p->g->arena, p->t.s, p->t.n);
  return next(p);
}

/* input := "%" NAME ":" type ["param" | "buffer"] */
static int
parse_input(parser *p, coil_value *v)
{
  if (new_name(p, &v->name) || expect_punct(p, ':'))
    return -1;
  int tline = p->t.line, tcol = p->t.col;
  if (parse_type(p, &v->type, false) || check_extent(p, tline, tcol, &v->type))
    return -1;
  v->kind = COIL_VAL_INPUT;
  if (is_word(p, "param") || is_word(p, "buffer")) {
    v->kind = is_word(p, "param") ? COIL_VAL_PARAM : COIL_VAL_BUFFER;
    if (next(p))
      return -1;
  }
  define(p, v);
  return 0;
}

/* _native_batch_norm_legit_no_training's second and third results (the statistics a backward
 * would save) are empty on the CPU and per-channel on CUDA, so a graph traced on a GPU says
 * f32[C] where the CPU's says f32[0]. Nothing in an inference graph reads them (coil makes them
 * zeros either way): the annotation decides which of the two sizes they have. */
static void
batch_norm_saved_stats(const coil_type *annot, coil_type *inferred)
{
  if (annot->kind != COIL_TYPE_TUPLE || inferred->kind != COIL_TYPE_TUPLE || annot->nelems != 3 ||
      inferred->nelems != 3 || inferred->elems[0].rank < 2)
    return;
  for (int k = 1; k < 3; k++) {
    const coil_type *a = &annot->elems[k];
    coil_type *t = &inferred->elems[k];
    if (a->kind == COIL_TYPE_TENSOR && a->dtype == t->dtype && a->rank == 1 && t->rank == 1 &&
        coil_sym_cmp(a->dims[0], inferred->elems[0].dims[1]) == 0)
      t->dims[0] = a->dims[0];
  }
}

/* stmt := "%" NAME [":" type] "=" OP "(" [arg {"," arg}] ")" NL
 * arg  := value | NAME "=" value */
static int
parse_stmt(parser *p, coil_node *n, int index)
{
  coil_value *v = coil_arena_alloc(p->g->arena, sizeof *v);
  n->line = p->t.line;
  n->col = p->t.col;
  if (new_name(p, &v->name))
    return -1;
  v->kind = COIL_VAL_NODE;
  v->index = index;
  n->out = v;
  coil_type annot = {0};
  if (is_punct(p, ':')) {
    if (next(p) || parse_type(p, &annot, true))
      return -1;
    n->annotated = true;
  }
  if (expect_punct(p, '='))
    return -1;
  if (p->t.kind != T_NAME)
    return expected(p, "an op name such as aten.add.Tensor");
  char opname[MAX_NAME + 1];
  snprintf(opname, sizeof opname, "%.*s", (int)p->t.n, p->t.s);
  int opline = p->t.line, opcol = p->t.col;
  n->op = coil_op_lookup(opname);
  if (!n->op)
    return err_at(p, opline, opcol, "unknown op '%s' (not in the op table; see docs/ops.md)",
                  opname, "");
  if (next(p) || expect_punct(p, '('))
    return -1;
  coil_arg args[COIL_MAX_PARAMS + 4];
  int nargs = 0;
  while (!is_punct(p, ')')) {
    if (nargs == COIL_MAX_PARAMS + 4)
      return err(p, "too many arguments to %s", opname);
    coil_arg *a = &args[nargs++];
    a->name = NULL;
    if (p->t.kind == T_NAME && peek_nonspace(p) == '=') {
      a->name = coil_arena_strndup(p->g->arena, p->t.s, p->t.n);
      if (next(p) || expect_punct(p, '='))
        return -1;
    }
    if (parse_value(p, &a->lit, 0))
      return -1;
    if (expect_sep(p, ')'))
      return -1;
  }
  n->nargs = nargs;
  n->args = COIL_ARENA_ARRAY(p->g->arena, coil_arg, nargs);
  memcpy(n->args, args, sizeof(coil_arg) * (size_t)nargs);
  if (next(p))
    return -1;
  if (coil_infer_node(p->g, n, p->d) || coil_graph_note_mutation(p->g, n, (int)(n - p->g->nodes), p->d) ||
      check_extent(p, n->line, n->col, &v->type))
    return -1;
  if (n->annotated && n->op->rule == COIL_RULE_BATCH_NORM)
    batch_norm_saved_stats(&annot, &v->type);
  if (n->annotated && !coil_type_equal(&annot, &v->type)) {
    coil_strbuf want = {0}, got = {0};
    coil_type_print(p->g, &annot, &want);
    coil_type_print(p->g, &v->type, &got);
    err_at(p, n->line, n->col, "type annotation %s does not match the inferred type %s",
           want.s, got.s);
    coil_strbuf_free(&want);
    coil_strbuf_free(&got);
    return -1;
  }
  define(p, v);
  return expect_nl(p);
}

/* ret := "return" "(" ["%" NAME {"," "%" NAME}] ")" NL */
static int
parse_return(parser *p)
{
  if (next(p) || expect_punct(p, '('))
    return -1;
  coil_value *outs[1024];
  int n = 0;
  while (!is_punct(p, ')')) {
    if (n == 1024)
      return err(p, "%s", "at most 1024 outputs");
    coil_lit l;
    int line = p->t.line, col = p->t.col;
    if (p->t.kind != T_VAR)
      return expected(p, "a returned value such as %x");
    if (parse_value(p, &l, 0))
      return -1;
    if (l.v->type.kind != COIL_TYPE_TENSOR)
      return err_at(p, line, col, "%%%s is not a tensor and cannot be returned (%s)", l.v->name,
                    l.v->type.kind == COIL_TYPE_TUPLE ? "use getitem" : "its op returns nothing");
    const coil_value *stale = coil_value_stale_base(l.v);
    if (stale) {
      char msg[512];
      snprintf(msg, sizeof msg, "returns %%%s, a view of %%%s taken before %%%s was written in place; take the view "
               "after the write (aliases of views are not tracked)", l.v->name, stale->name, stale->name);
      return err_at(p, line, col, "%s", msg, "");
    }
    outs[n++] = l.v;
    if (expect_sep(p, ')'))
      return -1;
  }
  p->g->noutputs = n;
  p->g->outputs = COIL_ARENA_ARRAY(p->g->arena, coil_value *, n);
  memcpy(p->g->outputs, outs, sizeof(coil_value *) * (size_t)n);
  if (next(p))
    return -1;
  return expect_nl(p);
}

/* file  := "coil" INT NL graph
 * graph := "graph" NAME "(" [input {"," input}] ")" "{" NL {stmt} ret "}" */
static int
parse_file(parser *p)
{
  coil_graph *g = p->g;
  if (next(p))
    return -1;
  if (p->t.kind == T_NL && next(p))
    return -1;
  if (!is_word(p, "coil"))
    return expected(p, "'coil 1' on the first line");
  if (next(p))
    return -1;
  if (p->t.kind != T_INT)
    return expected(p, "the format version after 'coil'");
  if (p->t.i != 1)
    return err(p, "%s", "unsupported format version (this coil reads version 1)");
  g->version = 1;
  if (next(p) || expect_nl(p))
    return -1;
  if (!is_word(p, "graph"))
    return expected(p, "'graph'");
  if (next(p))
    return -1;
  if (p->t.kind != T_NAME || memchr(p->t.s, '.', p->t.n))
    return expected(p, "the graph's name");
  g->name = coil_arena_strndup(g->arena, p->t.s, p->t.n);
  if (next(p) || expect_punct(p, '('))
    return -1;
  int cap = 16;
  g->inputs = coil_xmalloc(sizeof(coil_value *) * (size_t)cap);
  while (!is_punct(p, ')')) {
    if (g->ninputs == cap) {
      cap *= 2;
      g->inputs = coil_xrealloc(g->inputs, sizeof(coil_value *) * (size_t)cap);
    }
    coil_value *v = coil_arena_alloc(g->arena, sizeof *v);
    v->index = g->ninputs;
    g->inputs[g->ninputs++] = v;
    if (parse_input(p, v))
      return -1;
    if (expect_sep(p, ')'))
      return -1;
  }
  if (next(p) || expect_punct(p, '{') || expect_nl(p))
    return -1;
  int ncap = 64;
  g->nodes = coil_xmalloc(sizeof(coil_node) * (size_t)ncap);
  while (!is_word(p, "return")) {
    if (p->t.kind == T_EOF || is_punct(p, '}'))
      return expected(p, "a statement or 'return'");
    if (g->nnodes == ncap) {
      ncap *= 2;
      g->nodes = coil_xrealloc(g->nodes, sizeof(coil_node) * (size_t)ncap);
    }
    coil_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    if (parse_stmt(p, n, g->nnodes))
      return -1;
    g->nnodes++;
  }
  if (parse_return(p) || expect_punct(p, '}'))
    return -1;
  if (p->t.kind == T_NL && next(p))
    return -1;
  if (p->t.kind != T_EOF)
    return expected(p, "end of file after '}'");
  return 0;
}

/* Move malloc'd arrays into the arena so that the graph has one owner. */
static void
freeze(coil_graph *g)
{
  coil_value **in = COIL_ARENA_ARRAY(g->arena, coil_value *, g->ninputs);
  if (g->ninputs)
    memcpy(in, g->inputs, sizeof(coil_value *) * (size_t)g->ninputs);
  coil_xfree(g->inputs);
  g->inputs = in;
  coil_node *nodes = COIL_ARENA_ARRAY(g->arena, coil_node, g->nnodes);
  if (g->nnodes)
    memcpy(nodes, g->nodes, sizeof(coil_node) * (size_t)g->nnodes);
  coil_xfree(g->nodes);
  g->nodes = nodes;
}

static coil_graph *
parse_graph(const char *file, const char *text, size_t len, coil_diag *d)
{
  coil_arena *a = coil_arena_new();
  coil_graph *g = coil_arena_alloc(a, sizeof *g);
  g->arena = a;
  g->sym = coil_symctx_new(a);
  g->file = coil_arena_strdup(a, file);
  parser p = {.file = g->file, .text = text, .len = len, .line = 1, .col = 1, .g = g, .d = d};
  int rc = parse_file(&p);
  coil_xfree(p.slots);
  freeze(g);
  if (rc) {
    coil_graph_free(g);
    return NULL;
  }
  return g;
}

/* The parse inside an out-of-memory scope (arena.h): a graph too large for the memory there is
 * gets an error, and what the parse allocated is freed. */
coil_graph *
coil_graph_parse(const char *file, const char *text, size_t len, coil_diag *d)
{
  coil_oom_scope oom;
  if (!COIL_OOM_TRY(&oom)) {
    if (d)
      d->msg[0] = 0;
    coil_diag_at(d, file, 0, 0, "out of memory parsing the graph (a request of %zu bytes failed)",
                 oom.failed_bytes);
    return NULL;
  }
  coil_graph *g = parse_graph(file, text, len, d);
  coil_oom_end(&oom);
  return g;
}

coil_graph *
coil_graph_load(const char *path, coil_diag *d)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    coil_diag_at(d, path, 0, 0, "cannot open: %s", strerror(errno));
    return NULL;
  }
  /* read with plain realloc, checked: the parse's out-of-memory scope starts after this */
  char *text = NULL;
  size_t len = 0, cap = 0;
  bool bad = false, oom = false;
  for (;;) {
    if (cap - len < 65536) {
      char *grown = cap > ((size_t)-1 >> 2) ? NULL : realloc(text, cap ? 2 * cap : 65536 + 1);
      if (!grown) {
        oom = true;
        break;
      }
      text = grown;
      cap = cap ? 2 * cap : 65536 + 1;
    }
    size_t n = fread(text + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0) {
      bad = ferror(f) != 0;
      break;
    }
  }
  fclose(f);
  if (bad || oom) {
    free(text);
    coil_diag_at(d, path, 0, 0, "%s", oom ? "out of memory reading the file" : "read error");
    return NULL;
  }
  text[len] = 0;
  coil_graph *g = coil_graph_parse(path, text, len, d);
  free(text);
  return g;
}

void
coil_graph_free(coil_graph *g)
{
  if (g)
    coil_arena_free(g->arena);
}
