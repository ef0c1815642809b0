/* mutation.c — in-place ops in a graph (docs/graph-format.md, Mutation), checked as the parser
 * reads each statement.
 *
 * `%r = aten.index_put_.default(%x, ...)` writes the tensor %x names: from then on %x and %r
 * are two names of one tensor and both read its latest contents (the first name, %x, is the
 * root of both). A write to a slice.Tensor or select.int result lands in its base too. Other
 * aliasing is not tracked: reading a view of a tensor that was written after the view was taken
 * is an error here, as is writing through a view other than a slice or a select, so the
 * reference interpreter and the lowering (which give each name its latest value) never compute
 * something PyTorch would not. */
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

const coil_value *
coil_value_root(const coil_value *v)
{
  return v->alias ? v->alias : v;
}

static int
fail(coil_graph *g, const coil_node *n, coil_diag *d, const char *fmt, const char *a, const char *b)
{
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  return coil_diag_at(d, g->file, n->line, n->col, "%s: %s", n->op->name, msg);
}

static int
fail3(coil_graph *g, const coil_node *n, coil_diag *d, const char *fmt, const char *a, const char *b)
{
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b, b);
  return coil_diag_at(d, g->file, n->line, n->col, "%s: %s", n->op->name, msg);
}

/* v is stale: a view whose base (or a base of it) was written after v got its contents. */
const coil_value *
coil_value_stale_base(const coil_value *v)
{
  for (const coil_value *b = v->view_of; b; b = b->view_of)
    if (coil_value_root(b)->written_at > v->made_at)
      return b;
  return NULL;
}

/* A write of statement n (index i) to w: every name of w's tensor, and of the bases it is a
 * slice or select of, then reads what n made; the bases' earlier views become stale.
 * (coil_lower_mutation and coil_ref_mutate follow the same path.) */

/* Every name of the tensor rooted at root reads what statement `at` made. */
static void
touch(coil_graph *g, const coil_value *root, int nnodes, coil_node *n, int at)
{
  for (int i = 0; i < g->ninputs; i++)
    if (coil_value_root(g->inputs[i]) == root)
      g->inputs[i]->made_at = at;
  for (int i = 0; i <= nnodes; i++) {
    coil_value *v = i < nnodes ? g->nodes[i].out : n->out;
    if (v && coil_value_root(v) == root)
      v->made_at = at;
  }
}

int
coil_graph_note_mutation(coil_graph *g, coil_node *n, int i, coil_diag *d)
{
  coil_schema s;
  if (coil_schema_parse(n->op, &s, d))
    return -1;
  for (int k = 0; k < s.nparams; k++) { /* reads of stale views */
    const coil_lit *l = &n->bound[k];
    int m = l->kind == COIL_LIT_LIST ? l->n : 1;
    for (int j = 0; j < m; j++) {
      const coil_lit *it = l->kind == COIL_LIT_LIST ? &l->items[j] : l;
      if (it->kind != COIL_LIT_VALUE)
        continue;
      const coil_value *b = coil_value_stale_base(it->v);
      if (b)
        return fail3(g, n, d, "reads %%%s, a view of %%%s taken before %%%s was written in place; "
                   "take the view after the write (aliases of views are not tracked)", it->v->name, b->name);
    }
  }
  coil_value *out = n->out;
  int at = i + 1;
  out->made_at = at;
  if (n->op->kind == COIL_OPK_VIEW && n->bound[0].kind == COIL_LIT_VALUE)
    out->view_of = n->bound[0].v;
  if (!coil_op_is_inplace(n->op))
    return 0;
  const coil_value *x = n->bound[0].v;
  out->alias = coil_value_root(x);
  out->view_of = x->view_of;
  for (const coil_value *w = x; w;) {
    const coil_value *root = coil_value_root(w);
    touch(g, root, i, n, at);
    ((coil_value *)root)->written_at = at;
    if (!w->view_of)
      break;
    const coil_node *vn = root->kind == COIL_VAL_NODE ? &g->nodes[root->index] : NULL; /* the view op */
    if (!vn || (vn->op->rule != COIL_RULE_SLICE && vn->op->rule != COIL_RULE_SELECT))
      return fail(g, n, d, "writes %%%s in place, a view made by %s: only writes through slice.Tensor and "
                  "select.int views are supported", w->name, vn ? vn->op->name : "?");
    w = w->view_of;
  }
  return 0;
}
