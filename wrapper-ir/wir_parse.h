/* wir_parse.h — private to the Wrapper IR reader: the lexer's tokens and state, shared by
 * wir_lex.c (tokens, name tables, symbolic expressions) and wir_parse.c (the grammar). */
#ifndef COIL_WIR_PARSE_H
#define COIL_WIR_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coil/wir.h"

#define MAX_NAME 256 /* longest accepted name */

typedef enum { T_EOF, T_NL, T_NAME, T_VALUE, T_INT, T_FLOAT, T_STR, T_PUNCT, T_COMMENT } tok_kind;

typedef struct {
  tok_kind kind;
  const char *s; /* NAME: points into the text; STR, COMMENT: arena copy */
  size_t n;      /* length of s */
  int64_t i;     /* INT; VALUE: the value number */
  double f;      /* FLOAT */
  char punct[3]; /* PUNCT: one of ( ) [ ] { } , : = . -> == */
  int line, col;
  size_t off; /* offset of the token's first byte */
} tok;

/* name -> index, open addressing (names are arena strings of the program) */
typedef struct {
  const char *name;
  int index, line;
} entry;

typedef struct {
  entry *slots;
  size_t nslots, nused;
} table;

typedef struct {
  const char *file, *text;
  size_t len, pos;
  int line, col;
  bool line_start; /* the next token is the first of its line */
  tok t;
  coil_wir_program *prog;
  coil_arena *arena;
  coil_diag *d;
  table buffers, kernels;
} parser;

/* ---- messages: each returns -1 ---- */
int wir_err_at(parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define err(p, ...) wir_err_at((p), (p)->t.line, (p)->t.col, __VA_ARGS__)
/* "expected WHAT, found TOKEN" at the current token */
int wir_expected(parser *p, const char *what);
const char *wir_tok_desc(const parser *p, char *buf, size_t cap);

/* ---- lexer ---- */
int wir_peekc(const parser *p, size_t ahead); /* the byte `ahead` after pos, -1 at the end */
void wir_advance(parser *p, size_t n);        /* moves pos, keeping line and col */
int wir_next(parser *p);                      /* reads the next token into p->t */
bool wir_is_punct(const parser *p, const char *s);
bool wir_is_word(const parser *p, const char *w);
int wir_expect_punct(parser *p, const char *s); /* these three consume what they expect */
int wir_expect_word(parser *p, const char *w);
int wir_expect_eol(parser *p);
const char *wir_name_str(parser *p);                      /* the current NAME as an arena string */
int wir_small_int(parser *p, const char *what, int *out); /* an INT in [0, INT_MAX] */

/* ---- name tables ---- */
const entry *wir_lookup(const table *t, const char *s, size_t n);
void wir_define(table *t, const char *name, int index, int line);

/* ---- symbolic expressions (read raw from the text after the current token) ---- */
enum { STOP_BRACKET, STOP_LIST, STOP_EOL };
int wir_expr(parser *p, int stop, const char *what, const coil_sym **out);
/* "[" [EXPR {"," EXPR}] "]" with the current token "["; at most COIL_MAX_RANK */
int wir_sizes(parser *p, const char *what, const coil_sym **v, int *n);

#endif
