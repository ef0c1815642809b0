/* wir_lex.c — the Wrapper IR reader's lexer: tokens, messages with file:line:col, the name
 * tables that resolve buffers and kernels, and symbolic expressions read raw from the text and
 * handed to coil_sym_parse. The grammar is in wir_parse.c. Input is untrusted: numbers are
 * range-checked, strings and comments refuse control bytes, and nothing here recurses. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wir_parse.h"

/* ---- messages ---- */

int
wir_err_at(parser *p, int line, int col, const char *fmt, ...)
{
  char what[sizeof p->d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return coil_diag_at(p->d, p->file, line, col, "%s", what);
}

const char *
wir_tok_desc(const parser *p, char *buf, size_t cap)
{
  const tok *t = &p->t;
  switch (t->kind) {
  case T_EOF: return "end of file";
  case T_NL: return "end of line";
  case T_STR: return "a string";
  case T_COMMENT: return "a comment";
  case T_PUNCT: snprintf(buf, cap, "'%s'", t->punct); return buf;
  case T_VALUE: snprintf(buf, cap, "'%%%lld'", (long long)t->i); return buf;
  case T_NAME:
  case T_INT:
  case T_FLOAT: {
    size_t n = t->kind == T_NAME ? t->n : p->pos - t->off;
    snprintf(buf, cap, "'%.*s'", (int)(n > 40 ? 40 : n), p->text + t->off);
    return buf;
  }
  }
  return "?";
}

int
wir_expected(parser *p, const char *what)
{
  char buf[64];
  return err(p, "expected %s, found %s", what, wir_tok_desc(p, buf, sizeof buf));
}

/* ---- lexer ---- */

int
wir_peekc(const parser *p, size_t ahead)
{
  return p->pos + ahead < p->len ? (unsigned char)p->text[p->pos + ahead] : -1;
}

void
wir_advance(parser *p, size_t n)
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

static bool
is_control(int c)
{
  return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* NUMBER := ["-"] DIGITS ["." DIGITS] [("e"|"E") ["+"|"-"] DIGITS] | "-inf" */
static int
lex_number(parser *p)
{
  size_t k = 0;
  bool is_float = false;
  if (wir_peekc(p, 0) == '-')
    k++;
  while (isdigit(wir_peekc(p, k)))
    k++;
  if (wir_peekc(p, k) == '.' && isdigit(wir_peekc(p, k + 1))) {
    is_float = true;
    k++;
    while (isdigit(wir_peekc(p, k)))
      k++;
  }
  if (wir_peekc(p, k) == 'e' || wir_peekc(p, k) == 'E') {
    size_t e = k + 1;
    if (wir_peekc(p, e) == '+' || wir_peekc(p, e) == '-')
      e++;
    if (isdigit(wir_peekc(p, e))) {
      is_float = true;
      for (k = e; isdigit(wir_peekc(p, k));)
        k++;
    }
  }
  if (isalpha(wir_peekc(p, k)) || wir_peekc(p, k) == '_')
    return err(p, "malformed number");
  char buf[128];
  if (k >= sizeof buf)
    return err(p, "number literal too long");
  memcpy(buf, p->text + p->pos, k);
  buf[k] = 0;
  errno = 0;
  if (is_float) {
    p->t.kind = T_FLOAT;
    p->t.f = strtod(buf, NULL);
    if (errno == ERANGE && isinf(p->t.f))
      return err(p, "float literal %s is out of range (write inf or -inf)", buf);
  } else {
    p->t.kind = T_INT;
    p->t.i = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
      return err(p, "integer %s does not fit in 64 bits", buf);
  }
  wir_advance(p, k);
  return 0;
}

/* STR := "'" {CHAR | "\\" | "\'" | "\n" | "\t" | "\x" HEX HEX} "'"  (one line, no NUL) */
static int
lex_string(parser *p)
{
  coil_strbuf b = {0};
  int rc = 0;
  wir_advance(p, 1);
  for (;;) {
    int c = wir_peekc(p, 0);
    if (c < 0 || c == '\n') {
      rc = err(p, "unterminated string, expected a closing quote (')");
      break;
    }
    if (c == '\'') {
      wir_advance(p, 1);
      break;
    }
    if (is_control(c)) {
      rc = err(p, "control byte 0x%02x in a string, expected it escaped as \\x%02x", c, c);
      break;
    }
    if (c != '\\') {
      char ch = (char)c;
      coil_strbuf_putn(&b, &ch, 1);
      wir_advance(p, 1);
      continue;
    }
    int e = wir_peekc(p, 1);
    char ch = 0;
    size_t n = 2;
    if (e == 'n')
      ch = '\n';
    else if (e == 't')
      ch = '\t';
    else if (e == '\\' || e == '\'')
      ch = (char)e;
    else if (e == 'x' && isxdigit(wir_peekc(p, 2)) && isxdigit(wir_peekc(p, 3))) {
      char hex[3] = {(char)wir_peekc(p, 2), (char)wir_peekc(p, 3), 0};
      ch = (char)strtol(hex, NULL, 16);
      n = 4;
    } else {
      rc = err(p, "unknown escape in a string, expected \\\\ \\' \\n \\t or \\xNN");
      break;
    }
    if (ch == 0) {
      rc = err(p, "NUL byte in a string");
      break;
    }
    coil_strbuf_putn(&b, &ch, 1);
    wir_advance(p, n);
  }
  if (rc == 0) {
    p->t.kind = T_STR;
    p->t.n = b.len;
    p->t.s = coil_arena_strndup(p->arena, b.s ? b.s : "", b.len);
  }
  coil_strbuf_free(&b);
  return rc;
}

/* COMMENT := "#" [" "] TEXT, a whole line: TEXT runs to the end of the line */
static int
lex_comment(parser *p)
{
  if (!p->line_start)
    return err(p, "'#' after other text; a comment is a line of its own");
  wir_advance(p, 1);
  if (wir_peekc(p, 0) == ' ')
    wir_advance(p, 1);
  size_t k = 0;
  while (wir_peekc(p, k) >= 0 && wir_peekc(p, k) != '\n')
    k++;
  size_t n = k > 0 && wir_peekc(p, k - 1) == '\r' ? k - 1 : k;
  for (size_t i = 0; i < n; i++)
    if (is_control(wir_peekc(p, i))) {
      wir_advance(p, i);
      return err(p, "control byte 0x%02x in a comment", (unsigned)wir_peekc(p, 0));
    }
  p->t.kind = T_COMMENT;
  p->t.s = coil_arena_strndup(p->arena, p->text + p->pos, n);
  p->t.n = n;
  wir_advance(p, k);
  return 0;
}

/* Reads the next token into p->t. Newlines are tokens (runs of blank lines make one). */
int
wir_next(parser *p)
{
  bool first = p->line_start;
  while (wir_peekc(p, 0) == ' ' || wir_peekc(p, 0) == '\t' || wir_peekc(p, 0) == '\r')
    wir_advance(p, 1);
  p->line_start = false;
  p->t.line = p->line;
  p->t.col = p->col;
  p->t.off = p->pos;
  int c = wir_peekc(p, 0);
  if (c < 0) {
    p->t.kind = T_EOF;
    return 0;
  }
  if (c == '\n') {
    p->t.kind = T_NL;
    while (wir_peekc(p, 0) == '\n' || wir_peekc(p, 0) == ' ' || wir_peekc(p, 0) == '\t' ||
           wir_peekc(p, 0) == '\r')
      wir_advance(p, 1);
    p->line_start = true;
    return 0;
  }
  if (c == '#') {
    p->line_start = first;
    return lex_comment(p);
  }
  if (isalpha(c) || c == '_') {
    size_t k = 0;
    while (isalnum(wir_peekc(p, k)) || wir_peekc(p, k) == '_')
      k++;
    if (k > MAX_NAME)
      return err(p, "name longer than %d characters", MAX_NAME);
    p->t.kind = T_NAME;
    p->t.s = p->text + p->pos;
    p->t.n = k;
    wir_advance(p, k);
    return 0;
  }
  if (c == '%') {
    if (!isdigit(wir_peekc(p, 1)))
      return err(p, "expected a value number after '%%' (such as %%3)");
    int64_t v = 0;
    size_t k = 1;
    for (; isdigit(wir_peekc(p, k)); k++) {
      v = v * 10 + (wir_peekc(p, k) - '0');
      if (v > INT_MAX)
        return err(p, "value number out of range");
    }
    if (isalpha(wir_peekc(p, k)) || wir_peekc(p, k) == '_')
      return err(p, "malformed value number, expected %%N with N a number");
    p->t.kind = T_VALUE;
    p->t.i = v;
    wir_advance(p, k);
    return 0;
  }
  if (c == '-' && wir_peekc(p, 1) == 'i' && wir_peekc(p, 2) == 'n' && wir_peekc(p, 3) == 'f' &&
      !isalnum(wir_peekc(p, 4)) && wir_peekc(p, 4) != '_') {
    p->t.kind = T_FLOAT;
    p->t.f = -INFINITY;
    wir_advance(p, 4);
    return 0;
  }
  if (isdigit(c) || (c == '-' && isdigit(wir_peekc(p, 1))))
    return lex_number(p);
  if (c == '\'')
    return lex_string(p);
  if ((c == '-' && wir_peekc(p, 1) == '>') || (c == '=' && wir_peekc(p, 1) == '=')) {
    p->t.kind = T_PUNCT;
    p->t.punct[0] = (char)c;
    p->t.punct[1] = (char)wir_peekc(p, 1);
    p->t.punct[2] = 0;
    wir_advance(p, 2);
    return 0;
  }
  if (c && strchr("()[]{},:=.", c)) {
    p->t.kind = T_PUNCT;
    p->t.punct[0] = (char)c;
    p->t.punct[1] = 0;
    wir_advance(p, 1);
    return 0;
  }
  if (isprint(c))
    return err(p, "unexpected character '%c'", c);
  return err(p, "unexpected byte 0x%02x", (unsigned)c);
}

bool
wir_is_punct(const parser *p, const char *s)
{
  return p->t.kind == T_PUNCT && strcmp(p->t.punct, s) == 0;
}

bool
wir_is_word(const parser *p, const char *w)
{
  return p->t.kind == T_NAME && p->t.n == strlen(w) && memcmp(p->t.s, w, p->t.n) == 0;
}

int
wir_expect_punct(parser *p, const char *s)
{
  if (!wir_is_punct(p, s)) {
    char what[8];
    snprintf(what, sizeof what, "'%s'", s);
    return wir_expected(p, what);
  }
  return wir_next(p);
}

int
wir_expect_word(parser *p, const char *w)
{
  if (!wir_is_word(p, w)) {
    char what[32];
    snprintf(what, sizeof what, "'%s'", w);
    return wir_expected(p, what);
  }
  return wir_next(p);
}

/* Every line ends in a newline or the end of the file. */
int
wir_expect_eol(parser *p)
{
  if (p->t.kind == T_EOF)
    return 0;
  if (p->t.kind != T_NL)
    return wir_expected(p, "end of line");
  return wir_next(p);
}

/* The current NAME token as an arena string. */
const char *
wir_name_str(parser *p)
{
  return coil_arena_strndup(p->arena, p->t.s, p->t.n);
}

/* A non-negative int from the current INT token. */
int
wir_small_int(parser *p, const char *what, int *out)
{
  if (p->t.kind != T_INT || p->t.i < 0 || p->t.i > INT_MAX)
    return wir_expected(p, what);
  *out = (int)p->t.i;
  return wir_next(p);
}

/* ---- name tables ---- */

static uint64_t
hash(const char *s, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static entry *
slot(const table *t, const char *s, size_t n)
{
  size_t mask = t->nslots - 1;
  for (size_t i = hash(s, n) & mask;; i = (i + 1) & mask) {
    entry *e = &t->slots[i];
    if (!e->name || (strlen(e->name) == n && memcmp(e->name, s, n) == 0))
      return e;
  }
}

const entry *
wir_lookup(const table *t, const char *s, size_t n)
{
  if (!t->nslots)
    return NULL;
  const entry *e = slot(t, s, n);
  return e->name ? e : NULL;
}

void
wir_define(table *t, const char *name, int index, int line)
{
  if (2 * (t->nused + 1) > t->nslots) {
    entry *old = t->slots;
    size_t nold = t->nslots;
    t->nslots = nold ? 2 * nold : 64;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (!t->slots)
      abort();
    for (size_t i = 0; i < nold; i++)
      if (old[i].name)
        *slot(t, old[i].name, strlen(old[i].name)) = old[i];
    free(old);
  }
  *slot(t, name, strlen(name)) = (entry){name, index, line};
  t->nused++;
}

/* ---- symbolic expressions ---- */

/* EXPR: a symbolic integer expression in Python syntax (coil_sym_parse), read from the text
 * right after the current token up to a ']' (STOP_BRACKET), a ',' or ']' outside parentheses
 * (STOP_LIST), or the end of the line (STOP_EOL). Leaves the terminator as the current token. */
int
wir_expr(parser *p, int stop, const char *what, const coil_sym **out)
{
  size_t end = p->pos;
  int depth = 0;
  for (; end < p->len && p->text[end] != '\n'; end++) {
    char ch = p->text[end];
    if (is_control((unsigned char)ch) && ch != '\r') {
      wir_advance(p, end - p->pos);
      return wir_err_at(p, p->line, p->col, "control byte 0x%02x in %s", (unsigned char)ch, what);
    }
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (stop == STOP_BRACKET && ch == ']')
      break;
    if (stop == STOP_LIST && (ch == ']' || (depth <= 0 && ch == ',')))
      break;
  }
  if (stop != STOP_EOL && (end >= p->len || p->text[end] == '\n')) {
    size_t n = end - p->pos;
    wir_advance(p, n);
    return wir_err_at(p, p->line, p->col, "expected %s after %s, found end of line",
                      stop == STOP_LIST ? "',' or ']'" : "']'", what);
  }
  size_t last = end;
  while (last > p->pos && strchr(" \t\r", p->text[last - 1]))
    last--;
  while (p->pos < last && strchr(" \t", p->text[p->pos]))
    wir_advance(p, 1);
  if (p->pos == last) {
    wir_advance(p, end - p->pos);
    return wir_err_at(p, p->line, p->col, "missing %s, expected an expression", what);
  }
  int line = p->line, col = p->col;
  const char *text = coil_arena_strndup(p->arena, p->text + p->pos, last - p->pos);
  coil_diag sd = {{0}};
  *out = coil_sym_parse(p->prog->sym, text, &sd);
  if (!*out) {
    size_t at = 1;
    int skip = 0;
    if (sscanf(sd.msg, "column %zu: %n", &at, &skip) == 1 && skip > 0 && at <= last - p->pos + 1)
      return wir_err_at(p, line, col + (int)at - 1, "bad %s '%.80s': %s", what, text,
                        sd.msg + skip);
    return wir_err_at(p, line, col, "bad %s '%.80s': %s", what, text, sd.msg);
  }
  wir_advance(p, end - p->pos);
  return wir_next(p);
}

/* sizes := "[" [EXPR {"," EXPR}] "]"   (the current token is "["; at most COIL_MAX_RANK) */
int
wir_sizes(parser *p, const char *what, const coil_sym **v, int *n)
{
  if (!wir_is_punct(p, "["))
    return wir_expected(p, "'['");
  *n = 0;
  size_t k = 0;
  while (wir_peekc(p, k) == ' ' || wir_peekc(p, k) == '\t')
    k++;
  if (wir_peekc(p, k) == ']') {
    wir_advance(p, k);
    return wir_next(p) ? -1 : wir_next(p);
  }
  for (;;) {
    if (*n == COIL_MAX_RANK)
      return err(p, "more than %d %s", COIL_MAX_RANK, what);
    if (wir_expr(p, STOP_LIST, what, &v[(*n)++]))
      return -1;
    if (wir_is_punct(p, "]"))
      return wir_next(p);
    if (!wir_is_punct(p, ","))
      return wir_expected(p, "',' or ']'");
  }
}
