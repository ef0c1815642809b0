/* wir_print.c — the canonical text form of a Wrapper IR program (docs/wrapper-ir.md): header,
 * inputs, every kernel, then every line in order. Output is deterministic and is exactly what
 * wir_parse.c reads back: print(parse(print(p))) == print(p). The printer never dereferences an
 * index it has not checked, so an unverified program prints too ("?" marks what is broken). */
#include <string.h>

#include "coil/wir.h"

static const char *const kind_names[] = {"pointwise", "reduction", "persistent"};

static const char *
bufname(const coil_wir_program *p, int b)
{
  return b >= 0 && b < p->nbuffers && p->buffers[b].name ? p->buffers[b].name : "?";
}

static void
put_sym(const coil_wir_program *p, const coil_sym *s, coil_strbuf *out)
{
  if (s)
    coil_sym_print(p->sym, s, COIL_SYM_PY_SYNTAX, out);
  else
    coil_strbuf_puts(out, "?");
}

/* "a, b, c" */
static void
put_syms(const coil_wir_program *p, const coil_sym *const *v, int n, coil_strbuf *out)
{
  for (int i = 0; i < n; i++) {
    if (i)
      coil_strbuf_puts(out, ", ");
    put_sym(p, v[i], out);
  }
}

/* A quoted string: single quotes; \\ \' \n \t escaped, other control bytes as \xNN; bytes from
 * 0x80 up (UTF-8) as they are. */
static void
put_quoted(const char *s, coil_strbuf *out)
{
  coil_strbuf_puts(out, "'");
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '\\' || *c == '\'')
      coil_strbuf_printf(out, "\\%c", *c);
    else if (*c == '\n')
      coil_strbuf_puts(out, "\\n");
    else if (*c == '\t')
      coil_strbuf_puts(out, "\\t");
    else if (*c < 0x20 || *c == 0x7f)
      coil_strbuf_printf(out, "\\x%02x", *c);
    else
      coil_strbuf_putn(out, (const char *)c, 1);
  }
  coil_strbuf_puts(out, "'");
}

/* layout := DTYPE "[" sizes "]" "stride" "[" strides "]" */
static void
put_layout(const coil_wir_program *p, const coil_buffer *b, coil_strbuf *out)
{
  int rank = b->rank < 0 ? 0 : b->rank > COIL_MAX_RANK ? COIL_MAX_RANK : b->rank;
  coil_strbuf_printf(out, "%s[", coil_dtype_name(b->dtype));
  put_syms(p, b->sizes, rank, out);
  coil_strbuf_puts(out, "] stride [");
  put_syms(p, b->strides, rank, out);
  coil_strbuf_puts(out, "]");
}

/* source ops are names separated by single spaces, whatever separators (spaces, commas) the
 * writer of the program used */
static void
put_source(const char *s, coil_strbuf *out)
{
  coil_strbuf_puts(out, "  source");
  while (*s) {
    size_t skip = strspn(s, ", \t");
    s += skip;
    size_t n = strcspn(s, ", \t");
    if (n) {
      coil_strbuf_puts(out, " ");
      coil_strbuf_putn(out, s, n);
    }
    s += n;
  }
  coil_strbuf_puts(out, "\n");
}

static bool
has_source(const char *s)
{
  return s && s[strspn(s, ", \t")] != 0;
}

static void
put_inst(const coil_wir_program *p, const coil_kernel *k, int n, coil_strbuf *out)
{
  const coil_kinst *in = &k->insts[n];
  const char *param = in->param >= 0 && in->param < k->nparams && k->params[in->param].name
                          ? k->params[in->param].name
                          : "?";
  if (in->op == COIL_KOP_STORE) {
    coil_strbuf_printf(out, "  store %s[", param);
    put_sym(p, in->index, out);
    coil_strbuf_printf(out, "], %%%d", in->args[0]);
    if (in->mode != COIL_STORE_PLAIN)
      coil_strbuf_printf(out, ", %s", coil_store_mode_name(in->mode));
    coil_strbuf_puts(out, "\n");
    return;
  }
  coil_strbuf_printf(out, "  %%%d: %s = %s", n, coil_dtype_name(in->dtype), coil_kop_name(in->op));
  switch (in->op) {
  case COIL_KOP_LOAD:
    coil_strbuf_printf(out, " %s[", param);
    put_sym(p, in->index, out);
    coil_strbuf_puts(out, "]");
    break;
  case COIL_KOP_INDEX:
    coil_strbuf_puts(out, " ");
    put_sym(p, in->index, out);
    break;
  case COIL_KOP_INDIRECT:
    coil_strbuf_printf(out, " %%%d, ", in->args[0]);
    put_sym(p, in->index, out);
    break;
  case COIL_KOP_CONST:
    coil_strbuf_puts(out, " ");
    if ((unsigned)in->dtype < COIL_DTYPE_COUNT && coil_dtype_is_float(in->dtype))
      coil_strbuf_double(out, in->f);
    else if (in->dtype == COIL_BOOL)
      coil_strbuf_puts(out, in->i ? "True" : "False");
    else
      coil_strbuf_printf(out, "%lld", (long long)in->i);
    break;
  case COIL_KOP_REDUCE: case COIL_KOP_SCAN:
    coil_strbuf_printf(out, " %s %%%d", coil_reduction_name(in->red), in->args[0]);
    break;
  default:
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      coil_strbuf_printf(out, "%s%%%d", a ? ", " : " ", in->args[a]);
    break;
  }
  coil_strbuf_puts(out, "\n");
}

void
coil_wir_print_kernel(const coil_wir_program *p, const coil_kernel *k, coil_strbuf *out)
{
  unsigned kind = (unsigned)k->kind;
  int nx = k->nx < 0 ? 0 : k->nx > COIL_MAX_LOOP_DIMS ? COIL_MAX_LOOP_DIMS : k->nx;
  int nr = k->nr < 0 ? 0 : k->nr > COIL_MAX_LOOP_DIMS ? COIL_MAX_LOOP_DIMS : k->nr;
  coil_strbuf_printf(out, "kernel %s %s x[", k->name ? k->name : "?",
                     kind < 3 ? kind_names[kind] : "?");
  put_syms(p, k->xsize, nx, out);
  coil_strbuf_puts(out, "]");
  if (nr > 0 || k->kind != COIL_KERNEL_POINTWISE) {
    coil_strbuf_puts(out, " r[");
    put_syms(p, k->rsize, nr, out);
    coil_strbuf_puts(out, "]");
  }
  coil_strbuf_puts(out, " {\n");
  if (has_source(k->source_ops))
    put_source(k->source_ops, out);
  if (k->nsyms > 0) {
    coil_strbuf_puts(out, "  sizes ");
    put_syms(p, k->syms, k->nsyms, out);
    coil_strbuf_puts(out, "\n");
  }
  for (int i = 0; i < k->nparams; i++)
    coil_strbuf_printf(out, "  param %s: %s%s\n", k->params[i].name ? k->params[i].name : "?",
                       coil_dtype_name(k->params[i].dtype), k->params[i].is_output ? " out" : "");
  for (int i = 0; i < k->ninsts; i++)
    put_inst(p, k, i, out);
  coil_strbuf_puts(out, "}\n");
}

void
coil_wir_print_xparam_value(const coil_xparam *x, coil_strbuf *out)
{
  switch (x->kind) {
  case COIL_XP_NONE: coil_strbuf_puts(out, "None"); break;
  case COIL_XP_INT: coil_strbuf_printf(out, "%lld", (long long)x->i); break;
  case COIL_XP_FLOAT: coil_strbuf_double(out, x->f); break;
  case COIL_XP_BOOL: coil_strbuf_puts(out, x->i ? "True" : "False"); break;
  case COIL_XP_STR: put_quoted(x->s, out); break;
  case COIL_XP_INTS:
    coil_strbuf_puts(out, "[");
    for (int i = 0; i < x->n; i++)
      coil_strbuf_printf(out, "%s%lld", i ? ", " : "", (long long)x->ints[i]);
    coil_strbuf_puts(out, "]");
    break;
  default: coil_strbuf_puts(out, "?");
  }
}

static void
put_xparam(const coil_xparam *x, coil_strbuf *out)
{
  coil_strbuf_printf(out, "%s=", x->name ? x->name : "?");
  coil_wir_print_xparam_value(x, out);
}

/* "a, b, c" of buffer names */
static void
put_bufs(const coil_wir_program *p, const int *v, int n, coil_strbuf *out)
{
  for (int i = 0; i < n; i++)
    coil_strbuf_printf(out, "%s%s", i ? ", " : "", bufname(p, v[i]));
}

void
coil_wir_print_line(const coil_wir_program *p, const coil_line *l, coil_strbuf *out)
{
  const char *b = bufname(p, l->buffer);
  const coil_buffer *buf =
      l->buffer >= 0 && l->buffer < p->nbuffers ? &p->buffers[l->buffer] : NULL;
  static const coil_buffer none = {.name = "?", .dtype = COIL_DTYPE_COUNT, .base = -1};
  if (!buf)
    buf = &none;
  switch (l->kind) {
  case COIL_LINE_COMMENT:
    coil_strbuf_puts(out, l->text && l->text[0] ? "# " : "#");
    coil_strbuf_puts(out, l->text ? l->text : "");
    break;
  case COIL_LINE_SYMBOL:
    coil_strbuf_puts(out, "symbol ");
    put_sym(p, l->sym, out);
    coil_strbuf_printf(out, " = %s.%s(%d)", b, l->is_stride ? "stride" : "size", l->dim);
    break;
  case COIL_LINE_ASSERT:
    if (l->assert_kind == COIL_ASSERT_ALIGNED) {
      coil_strbuf_printf(out, "assert %s aligned %lld", b, (long long)l->align);
    } else {
      coil_strbuf_printf(out, "assert %s.%s(%d) == ", b,
                         l->assert_kind == COIL_ASSERT_STRIDE ? "stride" : "size", l->dim);
      put_sym(p, l->value, out);
    }
    break;
  case COIL_LINE_ALLOC:
    coil_strbuf_printf(out, "alloc %s: ", b);
    put_layout(p, buf, out);
    break;
  case COIL_LINE_FREE: coil_strbuf_printf(out, "free %s", b); break;
  case COIL_LINE_REUSE:
    coil_strbuf_printf(out, "reuse %s = %s: ", b, bufname(p, buf->base));
    put_layout(p, buf, out);
    break;
  case COIL_LINE_VIEW:
    coil_strbuf_printf(out, "view %s = %s: ", b, bufname(p, buf->base));
    put_layout(p, buf, out);
    coil_strbuf_puts(out, " offset ");
    put_sym(p, buf->offset, out);
    break;
  case COIL_LINE_KERNEL_CALL:
    coil_strbuf_printf(out, "kernel_call %s(",
                       l->kernel >= 0 && l->kernel < p->nkernels && p->kernels[l->kernel].name
                           ? p->kernels[l->kernel].name
                           : "?");
    put_bufs(p, l->args, l->nargs, out);
    coil_strbuf_puts(out, ")");
    break;
  case COIL_LINE_EXTERN_CALL:
    coil_strbuf_printf(out, "extern_call %s(", l->op ? l->op : "?");
    put_bufs(p, l->args, l->nargs, out);
    coil_strbuf_puts(out, ") -> (");
    put_bufs(p, l->outs, l->nouts, out);
    coil_strbuf_puts(out, ")");
    if (l->nxparams > 0) {
      coil_strbuf_puts(out, " [");
      for (int i = 0; i < l->nxparams; i++) {
        if (i)
          coil_strbuf_puts(out, ", ");
        put_xparam(&l->xparams[i], out);
      }
      coil_strbuf_puts(out, "]");
    }
    break;
  case COIL_LINE_MULTI_OUTPUT:
    coil_strbuf_printf(out, "multi_output %s = %s.%d", b, bufname(p, l->source), l->element);
    break;
  case COIL_LINE_COPY_BACK:
    coil_strbuf_printf(out, "copy_back %s = %s", b, bufname(p, l->source));
    break;
  case COIL_LINE_OUTPUT:
    coil_strbuf_puts(out, l->nargs ? "output " : "output");
    put_bufs(p, l->args, l->nargs, out);
    break;
  default: coil_strbuf_puts(out, "?");
  }
  coil_strbuf_puts(out, "\n");
}

char *
coil_wir_print(const coil_wir_program *p)
{
  coil_strbuf out = {0};
  coil_strbuf_printf(&out, "wir %d.%d\nprogram %s\n", p->version_major, p->version_minor,
                     p->name ? p->name : "?");
  if (p->peak_bytes >= 0)
    coil_strbuf_printf(&out, "peak %lld\n", (long long)p->peak_bytes);
  for (int i = 0; i < p->ninputs; i++) {
    const coil_wir_input *in = &p->inputs[i];
    coil_strbuf_printf(&out, "input %s ", bufname(p, in->buffer));
    put_quoted(in->label, &out);
    coil_strbuf_puts(&out, in->is_param ? " param: " : ": ");
    if (in->buffer >= 0 && in->buffer < p->nbuffers)
      put_layout(p, &p->buffers[in->buffer], &out);
    else
      coil_strbuf_puts(&out, "?");
    coil_strbuf_puts(&out, "\n");
  }
  for (int i = 0; i < p->nkernels; i++) {
    coil_strbuf_puts(&out, "\n");
    coil_wir_print_kernel(p, &p->kernels[i], &out);
  }
  if (p->nlines > 0)
    coil_strbuf_puts(&out, "\n");
  for (int i = 0; i < p->nlines; i++)
    coil_wir_print_line(p, &p->lines[i], &out);
  return coil_strbuf_take(&out);
}
