/* attention.c — finding scaled dot-product attention in a graph.
 *
 * The match starts at a bmm whose left operand is, through batch views, a softmax over the last
 * dim, and walks back from there:
 *
 *   scores = bmm(Q, KT)            Q = view(expand(q)), KT = view(expand(kt)), batch dims merged
 *   x = view(scores) [* c] [+ mask]   in that order (a mask added before the scale is not taken)
 *   p = _softmax(x, -1)            [guarded: where(not any(x != -inf), 0, p)]
 *   out = bmm(view(expand(p)), V)
 *
 * Every value between the first bmm and the second is read only by the chain (the guard reads x
 * and p too), so the chain dies when the second bmm becomes the fused call. A scalar multiply of q
 * or of kt read only there folds into the scale too, which real exports use (the scale split as
 * √c on each side). Matching is purely structural; shapes come from the graph's types. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "ops.h"

typedef struct finder {
  const coil_graph *g;
  int *readers;              /* per value slot: statement arguments and graph outputs reading it */
} finder;

static int
slot(const finder *f, const coil_value *v)
{
  return v->kind == COIL_VAL_NODE ? f->g->ninputs + v->index : v->index;
}

/* The node that made v, or NULL for an input. */
static const coil_node *
def(const finder *f, const coil_value *v)
{
  return v && v->kind == COIL_VAL_NODE ? &f->g->nodes[v->index] : NULL;
}

static bool
is(const coil_node *n, const char *op)
{
  return n && strcmp(n->op->name, op) == 0;
}

static const coil_value *
arg(const coil_node *n, int i)
{
  return n->bound[i].kind == COIL_LIT_VALUE ? n->bound[i].v : NULL;
}

static bool
number(const coil_lit *l, double *x)
{
  if (l->kind == COIL_LIT_FLOAT)
    *x = l->f;
  else if (l->kind == COIL_LIT_INT)
    *x = (double)l->i;
  else
    return false;
  return true;
}

static bool
same_dim(const coil_sym *a, const coil_sym *b)
{
  return coil_sym_cmp(a, b) == 0;
}

static const coil_sym *
batch_numel(const finder *f, const coil_type *t)
{
  const coil_sym *n = coil_sym_const(f->g->sym, 1);
  for (int d = 0; d < t->rank - 2; d++)
    n = coil_sym_mul(f->g->sym, n, t->dims[d]);
  return n;
}

/* A view, reshape or clone of a tensor of rank >= 3 that keeps the last two dims and the
 * number of elements: only batch dims merge or split, so element (n, i, j) stays itself in
 * row-major batch order. An expand that changes nothing counts as well. */
static bool
batch_view(const finder *f, const coil_node *n)
{
  if (!n || !(is(n, "aten.view.default") || is(n, "aten.reshape.default") || is(n, "aten._unsafe_view.default") ||
              is(n, "aten.clone.default") || is(n, "aten.expand.default")))
    return false;
  const coil_value *in = arg(n, 0);
  const coil_type *a = &in->type, *b = &n->out->type;
  if (a->kind != COIL_TYPE_TENSOR || b->kind != COIL_TYPE_TENSOR || a->rank < 3 || b->rank < 3 ||
      !same_dim(a->dims[a->rank - 1], b->dims[b->rank - 1]) || !same_dim(a->dims[a->rank - 2], b->dims[b->rank - 2]))
    return false;
  if (is(n, "aten.expand.default")) {
    if (a->rank != b->rank)
      return false;
    for (int d = 0; d < a->rank; d++)
      if (!same_dim(a->dims[d], b->dims[d]))
        return false;
  }
  (void)f;
  return same_dim(batch_numel(f, a), batch_numel(f, b));
}

/* An operand of a bmm ([N, X, Y]) as a tensor of the scores' batch sizes B (rank r): through a
 * batch view from [*B, X, Y], then an optional expand from a tensor whose batch dims are B's or
 * 1. A rank-3 chain is its own answer. NULL when it is none of these. */
static const coil_value *
operand(const finder *f, const coil_value *x, const coil_type *scores)
{
  int r = scores->rank;
  if (r == 3 && x->type.rank == 3 && same_dim(x->type.dims[0], scores->dims[0]))
    return x;
  const coil_node *n = def(f, x);
  if (!n || !batch_view(f, n) || n->out->type.rank != 3)
    return NULL;
  const coil_value *y = arg(n, 0);
  if (y->type.rank != r)
    return NULL;
  for (int d = 0; d < r - 2; d++)
    if (!same_dim(y->type.dims[d], scores->dims[d]))
      return NULL;
  const coil_node *e = def(f, y);
  if (is(e, "aten.expand.default") && arg(e, 0)->type.rank == r) {
    const coil_value *z = arg(e, 0);
    for (int d = 0; d < r; d++) {
      int64_t one;
      bool bcast = d < r - 2 && coil_sym_is_const(z->type.dims[d], &one) && one == 1;
      if (!bcast && !same_dim(z->type.dims[d], y->type.dims[d]))
        return NULL;
    }
    return z;
  }
  return y;
}

/* x, or the tensor x multiplies by a number (folded into *scale) when x is read only once. */
static const coil_value *
unscaled(const finder *f, const coil_value *x, double *scale)
{
  const coil_node *n = def(f, x);
  double c;
  if ((is(n, "aten.mul.Scalar") || is(n, "aten.mul.Tensor")) && f->readers[slot(f, x)] == 1 && arg(n, 0) &&
      number(&n->bound[1], &c) && arg(n, 0)->type.dtype == x->type.dtype) {
    *scale *= c;
    return arg(n, 0);
  }
  return x;
}

/* where(logical_not(any(logical_not(eq(x, -inf)), -1, True)), full_like(p, 0), p): the guard
 * torch puts after a softmax p of x so that a row of all -inf gives 0. */
static bool
guard(const finder *f, const coil_node *w, const coil_value *p, const coil_value *x)
{
  if (!is(w, "aten.where.self") || arg(w, 2) != p || !arg(w, 0) || !arg(w, 1))
    return false;
  const coil_node *z = def(f, arg(w, 1)), *n1 = def(f, arg(w, 0));
  double zero;
  if (!is(z, "aten.full_like.default") || arg(z, 0) != p || !number(&z->bound[1], &zero) || zero != 0)
    return false;
  const coil_node *any = is(n1, "aten.logical_not.default") ? def(f, arg(n1, 0)) : NULL;
  const coil_node *n2 = is(any, "aten.any.dim") ? def(f, arg(any, 0)) : NULL;
  const coil_node *eq = is(n2, "aten.logical_not.default") ? def(f, arg(n2, 0)) : NULL;
  double inf;
  int64_t last = x->type.rank - 1;
  if (!is(any, "aten.any.dim") || any->bound[1].kind != COIL_LIT_INT || (any->bound[1].i != -1 && any->bound[1].i != last))
    return false;
  return is(eq, "aten.eq.Scalar") && arg(eq, 0) == x && number(&eq->bound[1], &inf) && inf == -INFINITY &&
         f->readers[slot(f, arg(w, 0))] == 1 && f->readers[slot(f, arg(w, 1))] == 1 &&
         f->readers[slot(f, arg(any, 0))] == 1 && f->readers[slot(f, n1->bound[0].v)] == 1 &&
         f->readers[slot(f, arg(eq, 0))] >= 1;
}

/* Whether n can be a link between the first bmm and the softmax. */
static bool
chain_link(const finder *f, const coil_node *n)
{
  return is(n, "aten.bmm.default") || batch_view(f, n) || is(n, "aten.mul.Tensor") || is(n, "aten.mul.Scalar") ||
         is(n, "aten.div.Tensor") || is(n, "aten.div.Scalar");
}

/* Tries the bmm at node index i as the second bmm of attention. Returns 1 on a match (into m),
 * 0 when it is not attention at all, -1 when it looks like attention but is not taken (why says
 * what failed). */
static int
match(const finder *f, int i, coil_attention_match *m, const char **why)
{
  const coil_node *b2 = &f->g->nodes[i];
  const coil_value *a = arg(b2, 0), *v3 = arg(b2, 1);
  if (!a || !v3)
    return 0;
  /* back from the bmm's left operand to the softmax (or its guard) */
  const coil_node *n = def(f, a);
  while (batch_view(f, n) && f->readers[slot(f, n->out)] == 1)
    n = def(f, arg(n, 0));
  const coil_value *p = n ? n->out : NULL;
  const coil_node *sm = n, *w = NULL;
  if (is(n, "aten.where.self") && arg(n, 2))
    w = n, sm = def(f, arg(n, 2));
  if (!is(sm, "aten._softmax.default"))
    return 0;
  const coil_value *x = arg(sm, 0);
  const coil_type *st = &x->type;
  int64_t dim;
  if (!x || st->rank < 3 || sm->bound[1].kind != COIL_LIT_INT ||
      ((dim = sm->bound[1].i) != -1 && dim != st->rank - 1))
    return *why = "the softmax is not over the last dim", -1;
  if (sm->bound[2].kind == COIL_LIT_BOOL && sm->bound[2].i)
    return *why = "the softmax converts half to float", -1;
  bool zero_rows = false;
  if (w) {
    if (!guard(f, w, sm->out, x) || f->readers[slot(f, sm->out)] != 2)
      return *why = "the softmax is read by something other than its -inf guard", -1;
    zero_rows = true;
    if (f->readers[slot(f, p)] != 1)
      return *why = "the guarded softmax has other readers", -1;
  } else if (f->readers[slot(f, sm->out)] != 1) {
    return *why = "the softmax has other readers (an output, or attention weights returned)", -1;
  }
  if (f->readers[slot(f, x)] != (zero_rows ? 2 : 1))
    return *why = "the scores have other readers", -1;
  /* back from the scores to the first bmm: views of batch dims, a scale, a mask */
  double scale = 1;
  bool scaled = false;
  const coil_value *mask = NULL, *s = x;
  const coil_node *b1 = NULL;
  for (;;) {
    const coil_node *d = def(f, s);
    if (s != x && f->readers[slot(f, s)] != 1)
      return *why = "an intermediate of the scores has other readers", -1;
    double c;
    if (is(d, "aten.bmm.default")) {
      b1 = d;
      break;
    } else if (batch_view(f, d)) {
      s = arg(d, 0);
    } else if ((is(d, "aten.mul.Tensor") || is(d, "aten.mul.Scalar") || is(d, "aten.div.Tensor") ||
                is(d, "aten.div.Scalar")) && arg(d, 0) && number(&d->bound[1], &c)) {
      scaled = true;
      scale = strncmp(d->op->name, "aten.div", 8) == 0 ? scale / c : scale * c;
      s = arg(d, 0);
    } else if (is(d, "aten.add.Tensor") && !mask && arg(d, 0) && arg(d, 1) && number(&d->bound[2], &c) && c == 1) {
      if (scaled) /* walking back: the scale came after the mask */
        return *why = "the mask is added before the scale", -1;
      /* the scores' side has their shape; the mask may broadcast */
      const coil_value *l = arg(d, 0), *r = arg(d, 1);
      bool lfull = coil_type_equal(&l->type, &d->out->type), rfull = coil_type_equal(&r->type, &d->out->type);
      if (l == r || (!lfull && !rfull))
        return *why = "an add that is not scores plus a mask", -1;
      /* the side leading to the bmm: the full one, or when both are, the one made by a link
       * of the chain (the left if both are) */
      const coil_value *side = lfull ? l : r, *other = lfull ? r : l;
      if (lfull && rfull && !chain_link(f, def(f, l)) && chain_link(f, def(f, r)))
        side = r, other = l;
      if (other->type.rank > st->rank || other->type.dtype != st->dtype)
        return *why = "the mask's rank or dtype does not fit the scores", -1;
      mask = other;
      s = side;
    } else {
      return *why = "the softmax's input is not bmm(q, kᵀ) scaled and masked", -1;
    }
  }
  if (f->readers[slot(f, b1->out)] != 1)
    return *why = "the scores bmm has other readers", -1;
  const coil_value *q = arg(b1, 0) ? operand(f, arg(b1, 0), st) : NULL;
  const coil_value *kt = arg(b1, 1) ? operand(f, arg(b1, 1), st) : NULL;
  const coil_value *v = operand(f, v3, st);
  if (!q || !kt || !v)
    return *why = "q, k or v is not a batch view of the scores' batch dims", -1;
  if (q->type.dtype != st->dtype || kt->type.dtype != st->dtype || v->type.dtype != st->dtype)
    return *why = "q, k, v and the scores differ in dtype", -1;
  /* the mask broadcasts to the scores: each of its dims (right-aligned) 1 or the scores' */
  if (mask)
    for (int d = 0; d < mask->type.rank; d++) {
      int64_t one;
      const coil_sym *md = mask->type.dims[d], *sd = st->dims[st->rank - mask->type.rank + d];
      if (!(coil_sym_is_const(md, &one) && one == 1) && !same_dim(md, sd))
        return *why = "the mask does not broadcast to the scores", -1;
    }
  q = unscaled(f, q, &scale);
  kt = unscaled(f, kt, &scale);
  if (!isfinite(scale))
    return *why = "the scale is not finite", -1;
  *m = (coil_attention_match){.node = i, .q = q, .kt = kt, .v = v, .mask = mask, .scores = x,
                              .scale = scale, .zero_rows = zero_rows};
  return 1;
}

static void
count(finder *f, const coil_lit *l)
{
  if (l->kind == COIL_LIT_VALUE)
    f->readers[slot(f, l->v)]++;
  else if (l->kind == COIL_LIT_LIST)
    for (int k = 0; k < l->n; k++)
      count(f, &l->items[k]);
}

void
coil_attention_dump(const coil_graph *g, const coil_compile_options *o, coil_strbuf *out)
{
  coil_attention_match *m = calloc((size_t)g->nnodes + 1, sizeof *m);
  coil_strbuf why = {0};
  int n = m ? coil_attention_find(g, m, g->nnodes, &why) : 0;
  for (int i = 0; i < n; i++) {
    const coil_node *b2 = &g->nodes[m[i].node];
    coil_dtype t = b2->out->type.dtype;
    bool claimed = false;
    for (int c = 0; c < o->nlibrary; c++)
      claimed |= strcmp(o->library[c].op, "coil.attention") == 0 && (o->library[c].dtypes >> t & 1u);
    coil_strbuf_printf(out, "%s (line %d): attention of q %%%s, k %%%s (transposed), v %%%s, mask %s%s, scale ",
                       b2->out->name, b2->line, m[i].q->name, m[i].kt->name, m[i].v->name,
                       m[i].mask ? "%" : "", m[i].mask ? m[i].mask->name : "none");
    coil_strbuf_double(out, m[i].scale);
    coil_strbuf_printf(out, ", masked rows %s: %s\n", m[i].zero_rows ? "zero" : "nan",
                       claimed ? "one coil.attention call" : "not claimed for this dtype or refused by the plugin's statement query, compiled as written");
  }
  if (why.s)
    coil_strbuf_puts(out, why.s);
  if (!n && !why.s)
    coil_strbuf_puts(out, "no attention in this graph\n");
  coil_strbuf_free(&why);
  free(m);
}

int
coil_attention_find(const coil_graph *g, coil_attention_match *m, int cap, coil_strbuf *why)
{
  for (int i = 0; i < g->nnodes; i++) /* mutation makes "read once" a harder question: none */
    if (coil_op_is_inplace(g->nodes[i].op))
      return 0;
  finder f = {.g = g, .readers = calloc((size_t)(g->ninputs + g->nnodes + 1), sizeof(int))};
  if (!f.readers)
    return 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nargs; k++)
      count(&f, &g->nodes[i].args[k].lit);
  for (int i = 0; i < g->noutputs; i++)
    f.readers[slot(&f, g->outputs[i])]++;
  int n = 0;
  for (int i = 0; i < g->nnodes && n < cap; i++) {
    if (!is(&g->nodes[i], "aten.bmm.default"))
      continue;
    const char *reason = NULL;
    int rc = match(&f, i, &m[n], &reason);
    if (rc == 1)
      n++;
    else if (rc < 0 && why)
      coil_strbuf_printf(why, "%s (line %d): not fused attention: %s\n", g->nodes[i].out->name, g->nodes[i].line, reason);
  }
  free(f.readers);
  return n;
}
