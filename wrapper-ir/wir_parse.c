/* wir_parse.c — the Wrapper IR text reader: a recursive-descent parser over the grammar in
 * docs/wrapper-ir.md (tokens come from wir_lex.c), building the program through the builder
 * (wir.c). The parser resolves names (buffers, kernels, params, values) and checks that the text
 * is well-formed; whether the program makes sense is coil_wir_verify's question. Every error is
 * "FILE:LINE:COL: error: what, expected what"; nothing recurses on the input (symbolic
 * expressions go to coil_sym_parse, which bounds its depth). */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wir_parse.h"

/* ---- buffers ---- */

static bool
is_buffer_name(const char *s, size_t n)
{
  size_t k = n > 3 && (memcmp(s, "arg", 3) == 0 || memcmp(s, "buf", 3) == 0) ? 3
             : n > 1 && s[0] == 'v'                                          ? 1
                                                                             : 0;
  if (k == 0)
    return false;
  for (; k < n; k++)
    if (!isdigit((unsigned char)s[k]))
      return false;
  return true;
}

/* A reference to a buffer defined above. */
static int
parse_buf_ref(parser *p, int *out)
{
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a buffer name (argN, bufN or vN)");
  const entry *e = wir_lookup(&p->buffers, p->t.s, p->t.n);
  if (!e)
    return err(p, "undefined buffer '%.*s'", (int)p->t.n, p->t.s);
  *out = e->index;
  return wir_next(p);
}

/* Whether the current token closes a list: `close`, or the end of the line when close is NULL. */
static bool
at_close(const parser *p, const char *close)
{
  return close ? wir_is_punct(p, close) : p->t.kind == T_NL || p->t.kind == T_EOF;
}

/* bufs := [BUF {"," BUF}], up to (not including) `close` (NULL: the end of the line) */
static int
parse_buf_list(parser *p, const char *close, int **out, int *n)
{
  int cap = 0;
  *n = 0;
  *out = NULL;
  while (!at_close(p, close)) {
    if (*n == cap) {
      int *grown = COIL_ARENA_ARRAY(p->arena, int, cap ? 2 * cap : 8);
      if (*n)
        memcpy(grown, *out, sizeof(int) * (size_t)*n);
      *out = grown;
      cap = cap ? 2 * cap : 8;
    }
    if (parse_buf_ref(p, &(*out)[(*n)++]))
      return -1;
    if (wir_is_punct(p, ",")) {
      if (wir_next(p))
        return -1;
      if (at_close(p, close))
        return wir_expected(p, "a buffer name after ','");
    } else if (!at_close(p, close)) {
      return wir_expected(p, close ? "',' or ')'" : "',' or end of line");
    }
  }
  return 0;
}

static int parse_dtype(parser *p, coil_dtype *out);

/* layout := DTYPE sizes "stride" sizes */
static int
parse_layout(parser *p, coil_buffer *b)
{
  int nstrides;
  if (parse_dtype(p, &b->dtype) || wir_sizes(p, "sizes", b->sizes, &b->rank) ||
      wir_expect_word(p, "stride"))
    return -1;
  int line = p->t.line, col = p->t.col;
  if (wir_sizes(p, "strides", b->strides, &nstrides))
    return -1;
  if (nstrides != b->rank)
    return wir_err_at(p, line, col, "%d strides for %d sizes, expected one stride per dimension",
                      nstrides, b->rank);
  return 0;
}

/* Defines the buffer named by the current token (a new name). */
static int
new_buffer(parser *p, coil_buffer *b)
{
  if (p->t.kind != T_NAME || !is_buffer_name(p->t.s, p->t.n))
    return wir_expected(p, "a new buffer name (argN, bufN or vN)");
  const entry *e = wir_lookup(&p->buffers, p->t.s, p->t.n);
  if (e)
    return err(p, "buffer %s is defined twice (first on line %d)", e->name, e->line);
  b->name = wir_name_str(p);
  b->base = -1;
  return wir_next(p);
}

static int
add_buffer(parser *p, coil_buffer *b, int line)
{
  int i = coil_wir_add_buffer(p->prog, b);
  wir_define(&p->buffers, p->prog->buffers[i].name, i, line);
  return i;
}

/* input := "input" BUF STR ["param"] ":" layout NL */
static int
parse_input(parser *p)
{
  int line = p->t.line;
  coil_buffer b = {.kind = COIL_BUF_INPUT};
  if (wir_next(p) || new_buffer(p, &b))
    return -1;
  if (p->t.kind != T_STR)
    return wir_expected(p, "the input's label in quotes ('x')");
  const char *label = p->t.s;
  if (wir_next(p))
    return -1;
  bool is_param = wir_is_word(p, "param");
  if ((is_param && wir_next(p)) || wir_expect_punct(p, ":") || parse_layout(p, &b))
    return -1;
  coil_wir_add_input(p->prog, add_buffer(p, &b, line), label, is_param);
  return wir_expect_eol(p);
}

/* ---- kernels ---- */

typedef struct {
  coil_kernel k;
  int cap_params, cap_insts, cap_syms;
  int line; /* where the kernel opens */
} kbuild;

#define GROW(arena, arr, n, cap)                                                                   \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      int ncap_ = (cap) ? 2 * (cap) : 16;                                                          \
      void *fresh_ = coil_arena_alloc((arena), sizeof(*(arr)) * (size_t)ncap_);                    \
      if (n)                                                                                       \
        memcpy(fresh_, (arr), sizeof(*(arr)) * (size_t)(n));                                       \
      (arr) = fresh_;                                                                              \
      (cap) = ncap_;                                                                               \
    }                                                                                              \
  } while (0)

/* OPNAME := NAME {"." [A-Za-z0-9_]+}, without spaces: aten._softmax.default */
static int
parse_opname(parser *p, const char **out)
{
  if (p->t.kind != T_NAME)
    return wir_expected(p, "an op name such as aten.mm.default");
  size_t k = 0;
  while (wir_peekc(p, k) == '.') {
    size_t part = ++k;
    while (isalnum(wir_peekc(p, k)) || wir_peekc(p, k) == '_')
      k++;
    if (k == part) {
      wir_advance(p, k);
      return wir_err_at(p, p->line, p->col, "expected a name after '.' in an op name");
    }
  }
  if (p->pos + k - p->t.off > MAX_NAME)
    return err(p, "op name longer than %d characters", MAX_NAME);
  *out = coil_arena_strndup(p->arena, p->text + p->t.off, p->pos + k - p->t.off);
  wir_advance(p, k);
  return wir_next(p);
}

static int
parse_dtype(parser *p, coil_dtype *out)
{
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a dtype");
  int dt = coil_dtype_from_name(p->t.s, p->t.n);
  if (dt < 0)
    return err(p, "unknown dtype '%.*s', expected one of f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool",
               (int)p->t.n, p->t.s);
  *out = (coil_dtype)dt;
  return wir_next(p);
}

/* A use of an earlier value: %N, the number of an instruction above that is not a store. */
static int
parse_operand(parser *p, const kbuild *kb, int *out)
{
  if (p->t.kind != T_VALUE)
    return wir_expected(p, "a value such as %0");
  if (p->t.i >= kb->k.ninsts)
    return err(p, "undefined value %%%lld (a value is defined above its uses)", (long long)p->t.i);
  if (kb->k.insts[p->t.i].op == COIL_KOP_STORE)
    return err(p, "%%%lld is a store, which has no value", (long long)p->t.i);
  *out = (int)p->t.i;
  return wir_next(p);
}

static int
parse_param_ref(parser *p, const kbuild *kb, int *out)
{
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a param name");
  for (int i = 0; i < kb->k.nparams; i++)
    if (strlen(kb->k.params[i].name) == p->t.n &&
        memcmp(kb->k.params[i].name, p->t.s, p->t.n) == 0) {
      *out = i;
      return wir_next(p);
    }
  return err(p, "undefined param '%.*s' in kernel %s", (int)p->t.n, p->t.s, kb->k.name);
}

/* CONST := FLOAT | INT | inf | nan  (floating dtypes) | INT (integers) | True | False (bool) */
static int
parse_const(parser *p, coil_kinst *in)
{
  if (in->dtype == COIL_BOOL) {
    if (!wir_is_word(p, "True") && !wir_is_word(p, "False"))
      return wir_expected(p, "True or False");
    in->i = wir_is_word(p, "True");
  } else if (coil_dtype_is_float(in->dtype)) {
    if (p->t.kind == T_FLOAT)
      in->f = p->t.f;
    else if (p->t.kind == T_INT)
      in->f = (double)p->t.i;
    else if (wir_is_word(p, "inf") || wir_is_word(p, "nan"))
      in->f = wir_is_word(p, "inf") ? INFINITY : NAN;
    else
      return wir_expected(p, "a number");
  } else {
    if (p->t.kind != T_INT)
      return wir_expected(p, "an integer");
    in->i = p->t.i;
  }
  return wir_next(p);
}

/* inst := VALUE ":" DTYPE "=" OP operands NL
 * operands := PARAM "[" EXPR "]"          load
 *           | CONST                       const
 *           | EXPR                        index (to the end of the line)
 *           | REDUCTION VALUE             reduce
 *           | [VALUE {"," VALUE}]         the op's arity of them */
static int
parse_inst(parser *p, kbuild *kb, coil_kinst *in)
{
  int n = kb->k.ninsts;
  if (p->t.i != n)
    return err(p,
               "expected %%%d here (values are numbered by their position in the kernel), "
               "found %%%lld",
               n, (long long)p->t.i);
  if (wir_next(p) || wir_expect_punct(p, ":") || parse_dtype(p, &in->dtype) ||
      wir_expect_punct(p, "="))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "an op such as add");
  int op = coil_kop_from_name(p->t.s, p->t.n);
  if (op < 0)
    return err(p, "unknown op '%.*s', expected a kernel op (docs/wrapper-ir.md lists them)",
               (int)p->t.n, p->t.s);
  if (op == COIL_KOP_STORE)
    return err(p, "a store has no value, expected 'store PARAM[INDEX], %%V' without '%%%d ='", n);
  in->op = (coil_kop)op;
  switch (in->op) {
  case COIL_KOP_LOAD:
    if (wir_next(p) || parse_param_ref(p, kb, &in->param) || !wir_is_punct(p, "["))
      return p->d->msg[0] ? -1 : wir_expected(p, "'['");
    if (wir_expr(p, STOP_BRACKET, "index expression", &in->index))
      return -1;
    return wir_expect_punct(p, "]");
  case COIL_KOP_INDEX: return wir_expr(p, STOP_EOL, "index expression", &in->index);
  case COIL_KOP_INDIRECT: { /* %N: i64 = indirect %v, BOUND: later indices may use iN */
    if (wir_next(p) || parse_operand(p, kb, &in->args[0]))
      return -1;
    if (!wir_is_punct(p, ","))
      return wir_expected(p, "','");
    if (wir_expr(p, STOP_EOL, "bound", &in->index)) /* the text after the ',' */
      return -1;
    int64_t hi;
    const coil_sym *iv = coil_wir_indirect_var(p->prog->sym, n);
    coil_sym_set_range(p->prog->sym, iv, 0, coil_sym_is_const(in->index, &hi) && hi > 0 ? hi - 1 : INT64_MAX);
    return 0;
  }
  case COIL_KOP_CONST: return wir_next(p) || parse_const(p, in) ? -1 : 0;
  case COIL_KOP_REDUCE: {
    if (wir_next(p))
      return -1;
    int r = p->t.kind == T_NAME ? coil_reduction_from_name(p->t.s, p->t.n) : -1;
    if (r < 0 && p->t.kind == T_NAME)
      return err(p, "unknown reduction '%.*s', expected one of sum prod max min argmax argmin any",
                 (int)p->t.n, p->t.s);
    if (r < 0)
      return wir_expected(p, "a reduction (sum prod max min argmax argmin any)");
    in->red = (coil_reduction)r;
    return wir_next(p) || parse_operand(p, kb, &in->args[0]) ? -1 : 0;
  }
  case COIL_KOP_SCAN: { /* (1.4) %N: T = scan KIND %a */
    if (wir_next(p))
      return -1;
    int r = p->t.kind == T_NAME ? coil_reduction_from_name(p->t.s, p->t.n) : -1;
    if (r != COIL_REDUCE_SUM && r != COIL_REDUCE_PROD && r != COIL_REDUCE_MAX && r != COIL_REDUCE_MIN)
      return p->t.kind == T_NAME ? err(p, "unknown scan '%.*s', expected one of sum prod max min", (int)p->t.n, p->t.s)
                                 : wir_expected(p, "a scan (sum prod max min)");
    in->red = (coil_reduction)r;
    return wir_next(p) || parse_operand(p, kb, &in->args[0]) ? -1 : 0;
  }
  default:
    if (wir_next(p))
      return -1;
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      if ((a && wir_expect_punct(p, ",")) || parse_operand(p, kb, &in->args[a]))
        return -1;
    return 0;
  }
}

/* store := "store" PARAM "[" EXPR "]" "," VALUE ["," MODE] NL   (MODE: add mul max min, 1.3) */
static int
parse_store(parser *p, kbuild *kb, coil_kinst *in)
{
  in->op = COIL_KOP_STORE;
  if (wir_next(p) || parse_param_ref(p, kb, &in->param))
    return -1;
  if (!wir_is_punct(p, "["))
    return wir_expected(p, "'['");
  if (wir_expr(p, STOP_BRACKET, "index expression", &in->index) || wir_expect_punct(p, "]") ||
      wir_expect_punct(p, ",") || parse_operand(p, kb, &in->args[0]))
    return -1;
  in->dtype = kb->k.insts[in->args[0]].dtype;
  if (!wir_is_punct(p, ","))
    return 0;
  if (wir_next(p))
    return -1;
  int m = p->t.kind == T_NAME ? coil_store_mode_from_name(p->t.s, p->t.n) : -1;
  if (m < 0)
    return wir_expected(p, "a store mode (add, mul, max, min)");
  in->mode = (coil_store_mode)m;
  return wir_next(p);
}

/* param := "param" NAME ":" DTYPE ["out"] NL */
static int
parse_param(parser *p, kbuild *kb)
{
  if (wir_next(p))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a param name");
  for (int i = 0; i < kb->k.nparams; i++)
    if (strlen(kb->k.params[i].name) == p->t.n && memcmp(kb->k.params[i].name, p->t.s, p->t.n) == 0)
      return err(p, "param %s is defined twice in kernel %s", kb->k.params[i].name, kb->k.name);
  GROW(p->arena, kb->k.params, kb->k.nparams, kb->cap_params);
  coil_kparam *pr = &kb->k.params[kb->k.nparams];
  pr->name = wir_name_str(p);
  if (wir_next(p) || wir_expect_punct(p, ":") || parse_dtype(p, &pr->dtype))
    return -1;
  if (wir_is_word(p, "out")) {
    pr->is_output = true;
    if (wir_next(p))
      return -1;
  }
  kb->k.nparams++;
  return 0;
}

/* source := "source" OPNAME {OPNAME} NL   (kept as the names joined by single spaces) */
static int
parse_source(parser *p, kbuild *kb)
{
  coil_strbuf b = {0};
  int rc = wir_next(p);
  while (rc == 0 && p->t.kind == T_NAME) {
    const char *op;
    rc = parse_opname(p, &op);
    if (rc == 0) {
      coil_strbuf_puts(&b, b.len ? " " : "");
      coil_strbuf_puts(&b, op);
    }
  }
  if (rc == 0 && b.len == 0)
    rc = wir_expected(p, "the names of source ops");
  if (rc == 0)
    kb->k.source_ops = coil_arena_strdup(p->arena, b.s);
  coil_strbuf_free(&b);
  return rc;
}

/* sizes := "sizes" NAME {"," NAME} NL   (the size symbols the kernel takes) */
static int
parse_kernel_syms(parser *p, kbuild *kb)
{
  if (wir_next(p))
    return -1;
  for (;;) {
    if (p->t.kind != T_NAME)
      return wir_expected(p, "a size symbol such as s0");
    GROW(p->arena, kb->k.syms, kb->k.nsyms, kb->cap_syms);
    kb->k.syms[kb->k.nsyms++] = coil_sym_var(p->prog->sym, wir_name_str(p));
    if (wir_next(p))
      return -1;
    if (!wir_is_punct(p, ","))
      return 0;
    if (wir_next(p))
      return -1;
  }
}

/* Loop variables x0.. / r0..: range [0, size-1] for a constant size, else [0, INT64_MAX]. */
static void
make_loop_vars(parser *p, char prefix, int n, const coil_sym *const *sizes, const coil_sym **vars)
{
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "%c%d", prefix, i);
    vars[i] = coil_sym_var(p->prog->sym, name);
    int64_t v;
    bool known = coil_sym_is_const(sizes[i], &v) && v > 0;
    coil_sym_set_range(p->prog->sym, vars[i], 0, known ? v - 1 : INT64_MAX);
  }
}

static const char *const body_words[] = {"source", "sizes", "param"};

/* kernel := "kernel" NAME KIND "x" sizes ["r" sizes] "{" NL body "}" NL
 * KIND   := "pointwise" | "reduction" | "persistent"
 * body   := [source] [sizes] {param} {inst | store} */
static int
parse_kernel(parser *p)
{
  kbuild kb = {.line = p->t.line};
  coil_kernel *k = &kb.k;
  if (wir_next(p))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "the kernel's name");
  const entry *e = wir_lookup(&p->kernels, p->t.s, p->t.n);
  if (e)
    return err(p, "kernel %s is defined twice (first on line %d)", e->name, e->line);
  k->name = wir_name_str(p);
  if (wir_next(p))
    return -1;
  if (wir_is_word(p, "pointwise") || wir_is_word(p, "reduction") || wir_is_word(p, "persistent"))
    k->kind = wir_is_word(p, "pointwise")   ? COIL_KERNEL_POINTWISE
              : wir_is_word(p, "reduction") ? COIL_KERNEL_REDUCTION
                                            : COIL_KERNEL_PERSISTENT;
  else if (p->t.kind == T_NAME)
    return err(p, "unknown kernel kind '%.*s', expected pointwise, reduction or persistent",
               (int)p->t.n, p->t.s);
  else
    return wir_expected(p, "a kernel kind (pointwise, reduction or persistent)");
  if (wir_next(p) || wir_expect_word(p, "x") || wir_sizes(p, "loop sizes", k->xsize, &k->nx))
    return -1;
  if (wir_is_word(p, "r") && (wir_next(p) || wir_sizes(p, "loop sizes", k->rsize, &k->nr)))
    return -1;
  make_loop_vars(p, 'x', k->nx, k->xsize, k->xvars);
  make_loop_vars(p, 'r', k->nr, k->rsize, k->rvars);
  if (wir_expect_punct(p, "{") || p->t.kind != T_NL)
    return p->d->msg[0] ? -1 : wir_expected(p, "end of line after '{'");
  int stage = 0; /* 1 source, 2 sizes, 3 params, 4 instructions seen */
  for (;;) {
    if (wir_next(p))
      return -1;
    if (wir_is_punct(p, "}"))
      break;
    int word = -1;
    for (int w = 0; w < 3; w++)
      if (wir_is_word(p, body_words[w]))
        word = w;
    int rc;
    if (word >= 0) {
      if (stage > word + 1 || (stage == word + 1 && word < 2))
        return err(p,
                   "'%s' out of place in kernel %s, expected the order source, sizes, "
                   "params, instructions",
                   body_words[word], k->name);
      stage = word + 1;
      rc = word == 0   ? parse_source(p, &kb)
           : word == 1 ? parse_kernel_syms(p, &kb)
                       : parse_param(p, &kb);
    } else if (p->t.kind == T_VALUE || wir_is_word(p, "store")) {
      stage = 4;
      GROW(p->arena, k->insts, k->ninsts, kb.cap_insts);
      coil_kinst *in = &k->insts[k->ninsts];
      memset(in, 0, sizeof *in);
      in->param = -1;
      rc = p->t.kind == T_VALUE ? parse_inst(p, &kb, in) : parse_store(p, &kb, in);
      k->ninsts++;
    } else if (p->t.kind == T_EOF) {
      return err(p, "end of file inside kernel %s (opened on line %d), expected '}'", k->name,
                 kb.line);
    } else if (p->t.kind == T_COMMENT) {
      return err(p, "a comment inside kernel %s; comments are program lines, outside kernels",
                 k->name);
    } else {
      char buf[64];
      return err(p,
                 "expected an instruction, 'store', 'param' or '}' closing kernel %s (opened on "
                 "line %d), found %s",
                 k->name, kb.line, wir_tok_desc(p, buf, sizeof buf));
    }
    if (rc)
      return -1;
    if (p->t.kind != T_NL)
      return wir_expected(p, "end of line");
  }
  if (wir_next(p) || wir_expect_eol(p))
    return -1;
  int i = coil_wir_add_kernel(p->prog, k);
  wir_define(&p->kernels, p->prog->kernels[i].name, i, kb.line);
  return 0;
}

/* ---- lines ---- */

/* dimref := BUF "." ("size" | "stride") "(" INT ")" */
static int
parse_dimref(parser *p, coil_line *l, bool *is_stride)
{
  if (parse_buf_ref(p, &l->buffer) || wir_expect_punct(p, "."))
    return -1;
  if (!wir_is_word(p, "size") && !wir_is_word(p, "stride"))
    return wir_expected(p, "'size' or 'stride'");
  *is_stride = wir_is_word(p, "stride");
  if (wir_next(p) || wir_expect_punct(p, "(") ||
      wir_small_int(p, "a dimension (0 or more)", &l->dim))
    return -1;
  return wir_expect_punct(p, ")");
}

/* symbol := "symbol" NAME "=" dimref */
static int
parse_symbol(parser *p, coil_line *l)
{
  if (wir_next(p))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a size symbol such as s0");
  l->sym = coil_sym_var(p->prog->sym, wir_name_str(p));
  return wir_next(p) || wir_expect_punct(p, "=") || parse_dimref(p, l, &l->is_stride) ? -1 : 0;
}

/* assert := "assert" dimref "==" EXPR | "assert" BUF "aligned" INT */
static int
parse_assert(parser *p, coil_line *l)
{
  if (wir_next(p))
    return -1;
  size_t k = 0;
  while (wir_peekc(p, k) == ' ' || wir_peekc(p, k) == '\t')
    k++;
  if (wir_peekc(p, k) != '.') {
    l->assert_kind = COIL_ASSERT_ALIGNED;
    if (parse_buf_ref(p, &l->buffer) || wir_expect_word(p, "aligned"))
      return -1;
    if (p->t.kind != T_INT || p->t.i <= 0)
      return wir_expected(p, "an alignment in bytes (a positive integer)");
    l->align = p->t.i;
    return wir_next(p);
  }
  bool is_stride;
  if (parse_dimref(p, l, &is_stride))
    return -1;
  l->assert_kind = is_stride ? COIL_ASSERT_STRIDE : COIL_ASSERT_SIZE;
  if (!wir_is_punct(p, "=="))
    return wir_expected(p, "'=='");
  return wir_expr(p, STOP_EOL, "expected value", &l->value);
}

/* alloc := "alloc" BUF ":" layout
 * reuse := "reuse" BUF "=" BUF ":" layout
 * view  := "view" BUF "=" BUF ":" layout "offset" EXPR */
static int
parse_define(parser *p, coil_line *l, coil_buf_kind kind)
{
  coil_buffer b = {.kind = kind};
  int line = p->t.line;
  if (wir_next(p) || new_buffer(p, &b))
    return -1;
  if (kind != COIL_BUF_ALLOC && (wir_expect_punct(p, "=") || parse_buf_ref(p, &b.base)))
    return -1;
  if (wir_expect_punct(p, ":") || parse_layout(p, &b))
    return -1;
  if (kind == COIL_BUF_VIEW) {
    if (!wir_is_word(p, "offset"))
      return wir_expected(p, "'offset'");
    if (wir_expr(p, STOP_EOL, "offset", &b.offset))
      return -1;
  }
  l->buffer = add_buffer(p, &b, line);
  return 0;
}

/* kernel_call := "kernel_call" NAME "(" bufs ")" */
static int
parse_kernel_call(parser *p, coil_line *l)
{
  if (wir_next(p))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "a kernel name");
  const entry *e = wir_lookup(&p->kernels, p->t.s, p->t.n);
  if (!e)
    return err(p, "undefined kernel '%.*s' (kernels are defined above their calls)", (int)p->t.n,
               p->t.s);
  l->kernel = e->index;
  if (wir_next(p) || wir_expect_punct(p, "(") || parse_buf_list(p, ")", &l->args, &l->nargs))
    return -1;
  return wir_next(p);
}

/* xvalue := INT | FLOAT | inf | nan | True | False | None | STR | "[" [INT {"," INT}] "]" */
static int
parse_xvalue(parser *p, coil_xparam *x)
{
  if (p->t.kind == T_INT) {
    x->kind = COIL_XP_INT;
    x->i = p->t.i;
  } else if (p->t.kind == T_FLOAT || wir_is_word(p, "inf") || wir_is_word(p, "nan")) {
    x->kind = COIL_XP_FLOAT;
    x->f = p->t.kind == T_FLOAT ? p->t.f : wir_is_word(p, "inf") ? INFINITY : NAN;
  } else if (wir_is_word(p, "True") || wir_is_word(p, "False")) {
    x->kind = COIL_XP_BOOL;
    x->i = wir_is_word(p, "True");
  } else if (wir_is_word(p, "None")) {
    x->kind = COIL_XP_NONE;
  } else if (p->t.kind == T_STR) {
    x->kind = COIL_XP_STR;
    x->s = p->t.s;
  } else if (wir_is_punct(p, "[")) {
    x->kind = COIL_XP_INTS;
    int64_t *ints = NULL;
    int cap = 0;
    if (wir_next(p))
      return -1;
    while (!wir_is_punct(p, "]")) {
      if (p->t.kind != T_INT)
        return wir_expected(p, "an integer or ']'");
      GROW(p->arena, ints, x->n, cap);
      ints[x->n++] = p->t.i;
      if (wir_next(p))
        return -1;
      if (wir_is_punct(p, ",") && wir_next(p))
        return -1;
      else if (!wir_is_punct(p, "]") && p->t.kind != T_INT)
        return wir_expected(p, "',' or ']'");
    }
    x->ints = ints;
  } else {
    return wir_expected(p, "a value (an integer, a float, True, False, None, a string or a list)");
  }
  return wir_next(p);
}

/* extern_call := "extern_call" OPNAME "(" bufs ")" "->" "(" bufs ")"
 *                ["[" NAME "=" xvalue {"," NAME "=" xvalue} "]"] */
static int
parse_extern_call(parser *p, coil_line *l)
{
  if (wir_next(p) || parse_opname(p, &l->op) || wir_expect_punct(p, "(") ||
      parse_buf_list(p, ")", &l->args, &l->nargs) || wir_next(p) || wir_expect_punct(p, "->") ||
      wir_expect_punct(p, "(") || parse_buf_list(p, ")", &l->outs, &l->nouts) || wir_next(p))
    return -1;
  if (!wir_is_punct(p, "["))
    return 0;
  int cap = 0;
  if (wir_next(p))
    return -1;
  for (;;) {
    if (p->t.kind != T_NAME)
      return wir_expected(p, "a parameter name");
    for (int i = 0; i < l->nxparams; i++)
      if (strlen(l->xparams[i].name) == p->t.n && memcmp(l->xparams[i].name, p->t.s, p->t.n) == 0)
        return err(p, "parameter %s is given twice", l->xparams[i].name);
    GROW(p->arena, l->xparams, l->nxparams, cap);
    coil_xparam *x = &l->xparams[l->nxparams++];
    memset(x, 0, sizeof *x);
    x->name = wir_name_str(p);
    if (wir_next(p) || wir_expect_punct(p, "=") || parse_xvalue(p, x))
      return -1;
    if (wir_is_punct(p, "]"))
      return wir_next(p);
    if (wir_expect_punct(p, ","))
      return -1;
  }
}

/* multi_output := "multi_output" BUF "=" BUF "." INT */
static int
parse_multi_output(parser *p, coil_line *l)
{
  return wir_next(p) || parse_buf_ref(p, &l->buffer) || wir_expect_punct(p, "=") ||
                 parse_buf_ref(p, &l->source) || wir_expect_punct(p, ".") ||
                 wir_small_int(p, "an output number", &l->element)
             ? -1
             : 0;
}

static const char *const line_words[] = {
    "symbol",      "assert",      "alloc",        "free",      "reuse",  "view",
    "kernel_call", "extern_call", "multi_output", "copy_back", "output",
};
static const coil_line_kind line_kinds[] = {
    COIL_LINE_SYMBOL,       COIL_LINE_ASSERT,    COIL_LINE_ALLOC,       COIL_LINE_FREE,
    COIL_LINE_REUSE,        COIL_LINE_VIEW,      COIL_LINE_KERNEL_CALL, COIL_LINE_EXTERN_CALL,
    COIL_LINE_MULTI_OUTPUT, COIL_LINE_COPY_BACK, COIL_LINE_OUTPUT,
};

/* line := COMMENT | symbol | assert | alloc | "free" BUF | reuse | view | kernel_call
 *       | extern_call | multi_output | "copy_back" BUF "=" BUF | "output" bufs   (then NL) */
static int
parse_line(parser *p)
{
  coil_line l = {.buffer = -1, .kernel = -1, .source = -1};
  if (p->t.kind == T_COMMENT) {
    l.kind = COIL_LINE_COMMENT;
    l.text = p->t.s;
    coil_wir_add_line(p->prog, &l);
    return wir_next(p) || wir_expect_eol(p);
  }
  int w = -1;
  for (int i = 0; i < (int)(sizeof line_words / sizeof *line_words); i++)
    if (wir_is_word(p, line_words[i]))
      w = i;
  if (w < 0 && p->t.kind == T_NAME && p->prog->version_minor > COIL_WIR_VERSION_MINOR) {
    /* a line added in a later minor version: ignorable by definition */
    while (wir_peekc(p, 0) >= 0 && wir_peekc(p, 0) != '\n')
      wir_advance(p, 1);
    return wir_next(p) || wir_expect_eol(p);
  }
  if (w < 0 && p->t.kind == T_NAME)
    return err(p,
               "unknown line '%.*s', expected kernel, symbol, assert, alloc, free, reuse, view, "
               "kernel_call, extern_call, multi_output, copy_back, output or a comment",
               (int)p->t.n, p->t.s);
  if (w < 0)
    return wir_expected(p, "a line (kernel, alloc, kernel_call, ...)");
  l.kind = line_kinds[w];
  int rc;
  switch (l.kind) {
  case COIL_LINE_SYMBOL: rc = parse_symbol(p, &l); break;
  case COIL_LINE_ASSERT: rc = parse_assert(p, &l); break;
  case COIL_LINE_ALLOC: rc = parse_define(p, &l, COIL_BUF_ALLOC); break;
  case COIL_LINE_REUSE: rc = parse_define(p, &l, COIL_BUF_REUSE); break;
  case COIL_LINE_VIEW: rc = parse_define(p, &l, COIL_BUF_VIEW); break;
  case COIL_LINE_FREE: rc = wir_next(p) || parse_buf_ref(p, &l.buffer); break;
  case COIL_LINE_KERNEL_CALL: rc = parse_kernel_call(p, &l); break;
  case COIL_LINE_EXTERN_CALL: rc = parse_extern_call(p, &l); break;
  case COIL_LINE_MULTI_OUTPUT: rc = parse_multi_output(p, &l); break;
  case COIL_LINE_COPY_BACK:
    rc = wir_next(p) || parse_buf_ref(p, &l.buffer) || wir_expect_punct(p, "=") ||
         parse_buf_ref(p, &l.source);
    break;
  default: rc = wir_next(p) || parse_buf_list(p, NULL, &l.args, &l.nargs); break;
  }
  if (rc)
    return -1;
  coil_wir_add_line(p->prog, &l);
  return wir_expect_eol(p);
}

/* ---- the file ---- */

/* VERSION := INT "." INT, read from the text after "wir" */
static int
parse_version(parser *p)
{
  int v[2] = {0, 0};
  while (wir_peekc(p, 0) == ' ' || wir_peekc(p, 0) == '\t')
    wir_advance(p, 1);
  int line = p->line, col = p->col;
  for (int part = 0; part < 2; part++) {
    if (!isdigit(wir_peekc(p, 0)))
      return wir_err_at(p, line, col, "expected a version MAJOR.MINOR after 'wir', such as 1.0");
    for (; isdigit(wir_peekc(p, 0)); wir_advance(p, 1)) {
      if (v[part] > (INT_MAX - 9) / 10)
        return wir_err_at(p, line, col, "version number out of range");
      v[part] = v[part] * 10 + (wir_peekc(p, 0) - '0');
    }
    if (part == 0 && wir_peekc(p, 0) != '.')
      return wir_err_at(p, line, col, "expected a version MAJOR.MINOR after 'wir', such as 1.0");
    if (part == 0)
      wir_advance(p, 1);
  }
  if (v[0] != COIL_WIR_VERSION_MAJOR)
    return wir_err_at(p, line, col, "unsupported Wrapper IR version %d.%d, expected version %d.x",
                      v[0], v[1], COIL_WIR_VERSION_MAJOR);
  p->prog->version_major = v[0];
  p->prog->version_minor = v[1];
  return wir_next(p);
}

/* file   := {COMMENT | NL} header {input} {kernel | line} EOF
 * header := "wir" VERSION NL "program" NAME NL ["peak" INT NL] */
static int
parse_file(parser *p)
{
  if (wir_next(p))
    return -1;
  while (p->t.kind == T_NL || p->t.kind == T_COMMENT)
    if (wir_next(p))
      return -1;
  if (!wir_is_word(p, "wir"))
    return wir_expected(p, "'wir 1.0' on the first line");
  if (parse_version(p) || wir_expect_eol(p) || wir_expect_word(p, "program"))
    return -1;
  if (p->t.kind != T_NAME)
    return wir_expected(p, "the program's name");
  p->prog->name = wir_name_str(p);
  if (wir_next(p) || wir_expect_eol(p))
    return -1;
  if (wir_is_word(p, "peak")) {
    if (wir_next(p))
      return -1;
    if (p->t.kind != T_INT || p->t.i < 0)
      return wir_expected(p, "the peak memory in bytes (0 or more)");
    p->prog->peak_bytes = p->t.i;
    if (wir_next(p) || wir_expect_eol(p))
      return -1;
  }
  while (wir_is_word(p, "input"))
    if (parse_input(p))
      return -1;
  while (p->t.kind != T_EOF) {
    if (wir_is_word(p, "kernel")) {
      if (parse_kernel(p))
        return -1;
    } else if (wir_is_word(p, "input")) {
      return err(p, "an input after kernels or lines, expected inputs first (after the header)");
    } else if (wir_is_word(p, "program") || wir_is_word(p, "peak") || wir_is_word(p, "wir")) {
      return err(p, "'%.*s' belongs in the header at the top of the file", (int)p->t.n, p->t.s);
    } else if (parse_line(p)) {
      return -1;
    }
  }
  return 0;
}

coil_wir_program *
coil_wir_parse(const char *file, const char *text, size_t len, coil_diag *d)
{
  coil_diag local = {{0}};
  if (!file)
    file = "<wir>";
  if (len > INT_MAX / 2) {
    coil_diag_at(d, file, 0, 0, "file too large (%zu bytes)", len);
    return NULL;
  }
  coil_wir_program *prog = coil_wir_new("graph");
  parser p = {.file = file,
              .text = text ? text : "",
              .len = text ? len : 0,
              .line = 1,
              .col = 1,
              .line_start = true,
              .prog = prog,
              .arena = prog->arena,
              .d = &local};
  int rc = parse_file(&p);
  free(p.buffers.slots);
  free(p.kernels.slots);
  if (rc) {
    if (!local.msg[0])
      coil_diag_at(&local, file, p.t.line, p.t.col, "malformed Wrapper IR");
    coil_diag_set(d, "%s", local.msg);
    coil_wir_free(prog);
    return NULL;
  }
  return prog;
}
