/* graph_print.c — the canonical text of a graph: every statement with its inferred type,
 * arguments as written, floats in their shortest round-trip form. What this prints parses back
 * to the same graph (tested), so `coil check` output is itself a valid .coil file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

bool
coil_type_equal(const coil_type *a, const coil_type *b)
{
  if (a->kind != b->kind)
    return false;
  if (a->kind == COIL_TYPE_TUPLE) {
    if (a->nelems != b->nelems)
      return false;
    for (int i = 0; i < a->nelems; i++)
      if (!coil_type_equal(&a->elems[i], &b->elems[i]))
        return false;
    return true;
  }
  if (a->kind == COIL_TYPE_NONE)
    return true;
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (coil_sym_cmp(a->dims[i], b->dims[i]) != 0)
      return false;
  return true;
}

void
coil_type_print(const coil_graph *g, const coil_type *t, coil_strbuf *b)
{
  if (t->kind == COIL_TYPE_TUPLE) {
    coil_strbuf_puts(b, "(");
    for (int i = 0; i < t->nelems; i++) {
      if (i)
        coil_strbuf_puts(b, ", ");
      coil_type_print(g, &t->elems[i], b);
    }
    coil_strbuf_puts(b, ")");
    return;
  }
  if (t->kind == COIL_TYPE_NONE) {
    coil_strbuf_puts(b, "()");
    return;
  }
  coil_strbuf_printf(b, "%s[", coil_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) {
    if (i)
      coil_strbuf_puts(b, ", ");
    /* a dim is read back as an expression that starts with a number, a name or '(': one
     * printed with a leading minus (-s1 + 1) goes in parentheses */
    coil_strbuf dim = {0};
    coil_sym_print(g->sym, t->dims[i], COIL_SYM_PY_SYNTAX, &dim);
    coil_strbuf_printf(b, dim.s && dim.s[0] == '-' ? "(%s)" : "%s", dim.s ? dim.s : "");
    coil_strbuf_free(&dim);
  }
  coil_strbuf_puts(b, "]");
}

static void
print_string(const char *s, coil_strbuf *b)
{
  coil_strbuf_puts(b, "'");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\\' || ch == '\'')
      coil_strbuf_printf(b, "\\%c", ch);
    else if (ch == '\n')
      coil_strbuf_puts(b, "\\n");
    else if (ch == '\t')
      coil_strbuf_puts(b, "\\t");
    else if (ch < 0x20 || ch == 0x7f)
      coil_strbuf_printf(b, "\\x%02x", ch);
    else
      coil_strbuf_putn(b, (const char *)&ch, 1);
  }
  coil_strbuf_puts(b, "'");
}

static void
print_lit(const coil_lit *l, coil_strbuf *b)
{
  switch (l->kind) {
  case COIL_LIT_NONE: coil_strbuf_puts(b, "None"); break;
  case COIL_LIT_INT: coil_strbuf_printf(b, "%lld", (long long)l->i); break;
  case COIL_LIT_FLOAT: coil_strbuf_double(b, l->f); break;
  case COIL_LIT_BOOL: coil_strbuf_puts(b, l->i ? "True" : "False"); break;
  case COIL_LIT_STR: print_string(l->s, b); break;
  case COIL_LIT_DTYPE: coil_strbuf_puts(b, coil_dtype_name(l->dtype)); break;
  case COIL_LIT_VALUE: coil_strbuf_printf(b, "%%%s", l->v->name); break;
  case COIL_LIT_WORD:
    coil_strbuf_puts(b, l->s);
    if (l->i >= 0)
      coil_strbuf_printf(b, ":%lld", (long long)l->i);
    break;
  case COIL_LIT_LIST:
    coil_strbuf_puts(b, "[");
    for (int i = 0; i < l->n; i++) {
      if (i)
        coil_strbuf_puts(b, ", ");
      print_lit(&l->items[i], b);
    }
    coil_strbuf_puts(b, "]");
    break;
  }
}

char *
coil_graph_print(const coil_graph *g)
{
  coil_strbuf b = {0};
  coil_strbuf_printf(&b, "coil %d\ngraph %s(", g->version, g->name);
  for (int i = 0; i < g->ninputs; i++) {
    const coil_value *v = g->inputs[i];
    coil_strbuf_printf(&b, "%s%%%s: ", i ? ", " : "", v->name);
    coil_type_print(g, &v->type, &b);
    if (v->kind == COIL_VAL_PARAM)
      coil_strbuf_puts(&b, " param");
    else if (v->kind == COIL_VAL_BUFFER)
      coil_strbuf_puts(&b, " buffer");
  }
  coil_strbuf_puts(&b, ") {\n");
  for (int i = 0; i < g->nnodes; i++) {
    const coil_node *n = &g->nodes[i];
    coil_strbuf_printf(&b, "  %%%s", n->out->name);
    if (n->out->type.kind != COIL_TYPE_NONE) {
      coil_strbuf_puts(&b, ": ");
      coil_type_print(g, &n->out->type, &b);
    }
    coil_strbuf_printf(&b, " = %s(", n->op->name);
    for (int k = 0; k < n->nargs; k++) {
      if (k)
        coil_strbuf_puts(&b, ", ");
      if (n->args[k].name)
        coil_strbuf_printf(&b, "%s=", n->args[k].name);
      print_lit(&n->args[k].lit, &b);
    }
    coil_strbuf_puts(&b, ")\n");
  }
  coil_strbuf_puts(&b, "  return (");
  for (int i = 0; i < g->noutputs; i++)
    coil_strbuf_printf(&b, "%s%%%s", i ? ", " : "", g->outputs[i]->name);
  coil_strbuf_puts(&b, ")\n}\n");
  return coil_strbuf_take(&b);
}
