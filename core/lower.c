/* lower.c — lazy tensors and the lowering driver.
 *
 * A lazy tensor is an expression for one element (lexpr) over its dimension variables. Views
 * substitute index expressions into it, pointwise ops combine expressions, and realization
 * turns an expression into a buffer written by a scheduler node, after which the lazy tensor is
 * a load of that buffer. Contract of coil_lower: every graph output has a buffer with the
 * output's sizes, dense in row-major order (L->outputs): a buffer of its own, or a view of the
 * buffer it reads when that buffer holds it densely at some offset (a reshape of a computed
 * value is handed back without a copy); buffers that outputs read are marked is_output; every
 * node's body and store index mention only its own dvars and program
 * size symbols; buffers of graph inputs come first, in input order. */
#include "lower.h"
#include "attention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value read by more than one statement is realized when its expression has more nodes. */
#define REALIZE_SIZE 12
/* Any value whose expression has more nodes is realized: a kernel's expression, and the depth of
 * every pass that walks it (here and in the plugins), stay bounded however long a chain of
 * pointwise statements is; one more store and load per this many ops costs nothing measurable. */
#define REALIZE_MAX_SIZE 1000

/* Growable arrays in the arena (old copies stay until the compile's arena goes). */
static void *
grow(coil_arena *a, void *arr, int n, int *cap, size_t elem)
{
  if (n < *cap)
    return arr;
  int ncap = *cap ? 2 * *cap : 32;
  void *fresh = coil_arena_alloc(a, elem * (size_t)ncap);
  if (n)
    memcpy(fresh, arr, elem * (size_t)n);
  *cap = ncap;
  return fresh;
}

static const coil_sym *
K(lowering *L, int64_t v)
{
  return coil_sym_const(L->sym, v);
}

/* ---- expressions ---- */

static lexpr *
lx_alloc(lowering *L, lx_kind kind, coil_dtype dt)
{
  lexpr *e = coil_arena_alloc(L->arena, sizeof *e);
  e->kind = kind;
  e->dtype = dt;
  e->size = 1;
  e->origin = L->cur_origin;
  return e;
}

/* The ATen ops an expression came from, producers first, space separated. */
static void
collect_origins(const lexpr *e, const char **seen, int *n, int cap)
{
  for (int i = 0; i < e->nargs; i++)
    collect_origins(e->args[i], seen, n, cap);
  if ((e->kind != LX_OP && e->kind != LX_INDIRECT) || !e->origin || strcmp(e->origin, "output") == 0)
    return;
  for (int i = 0; i < *n; i++)
    if (seen[i] == e->origin || strcmp(seen[i], e->origin) == 0)
      return;
  if (*n < cap)
    seen[(*n)++] = e->origin;
}

static const char *
origins_of(lowering *L, const lexpr *e)
{
  const char *seen[32];
  int n = 0;
  collect_origins(e, seen, &n, 32);
  if (n == 0)
    return L->cur_origin;
  coil_strbuf b = {0};
  for (int i = 0; i < n; i++)
    coil_strbuf_printf(&b, "%s%s", i ? " " : "", seen[i]);
  const char *r = coil_arena_strdup(L->arena, b.s);
  coil_strbuf_free(&b);
  return r;
}

const lexpr *
lx_load(lowering *L, int buffer, const coil_sym *index)
{
  lexpr *e = lx_alloc(L, LX_LOAD, L->bufs[buffer].dtype);
  e->buffer = buffer;
  e->index = index;
  return e;
}

/* The integer expression e as an index expression over dims, when it is one (index values and
 * integer constants under add, sub, mul, neg and integer casts: arange's values, say); else NULL. */
static const coil_sym *
static_index(lowering *L, const lexpr *e)
{
  if (e->kind == LX_INDEX)
    return e->index;
  if (e->kind == LX_CONST && !coil_dtype_is_float(e->dtype) && e->dtype != COIL_BOOL)
    return coil_sym_const(L->sym, e->i);
  if (e->kind != LX_OP || e->dtype != COIL_I64)
    return NULL;
  const coil_sym *a = e->nargs > 0 ? static_index(L, e->args[0]) : NULL;
  const coil_sym *b = e->nargs > 1 ? static_index(L, e->args[1]) : NULL;
  switch (e->op) {
  case COIL_KOP_CAST: return a;
  case COIL_KOP_NEG: return a ? coil_sym_mul(L->sym, a, coil_sym_const(L->sym, -1)) : NULL;
  case COIL_KOP_ADD: return a && b ? coil_sym_add(L->sym, a, b) : NULL;
  case COIL_KOP_SUB: return a && b ? coil_sym_add(L->sym, a, coil_sym_mul(L->sym, b, coil_sym_const(L->sym, -1))) : NULL;
  case COIL_KOP_MUL: return a && b ? coil_sym_mul(L->sym, a, b) : NULL;
  default: return NULL;
  }
}

const lexpr *
lx_load_at(lowering *L, int buffer, const coil_sym *index, int n, const lexpr *const *indirect)
{
  /* an index value computed from the dims alone that provably lies in [0, bound) (a lookup of
   * arange's positions) needs no indirect load: its expression goes into the index, which then
   * stays affine (vector loads, no run-time check) */
  const lexpr *keep[3];
  int nkeep = 0;
  for (int i = 0; i < n && i < 3; i++) {
    const coil_sym *s = static_index(L, indirect[i]->args[0]);
    int64_t lo, hi, blo, bhi;
    if (s) {
      coil_sym_bounds(L->sym, s, &lo, &hi);
      coil_sym_bounds(L->sym, indirect[i]->bound, &blo, &bhi);
    }
    if (s && lo >= 0 && hi < blo) {
      int var = indirect[i]->index->var;
      index = coil_sym_subst(L->sym, index, 1, &var, &s);
    } else {
      keep[nkeep++] = indirect[i];
    }
  }
  lexpr *e = (lexpr *)lx_load(L, buffer, index);
  for (int i = 0; i < nkeep; i++) {
    e->args[e->nargs++] = keep[i];
    e->size += keep[i]->size;
  }
  return e;
}

const lexpr *
lx_indirect(lowering *L, const lexpr *v, const coil_sym *bound)
{
  lexpr *e = lx_alloc(L, LX_INDIRECT, COIL_I64);
  char name[32];
  snprintf(name, sizeof name, "q%d", L->ndvars++);
  e->index = coil_sym_var(L->sym, name);
  int64_t hi;
  coil_sym_set_range(L->sym, e->index, 0, coil_sym_is_const(bound, &hi) && hi > 0 ? hi - 1 : INT64_MAX);
  e->bound = bound;
  e->args[e->nargs++] = v;
  e->size += v->size;
  return e;
}

const lexpr *
lx_const(lowering *L, coil_dtype dt, double f, int64_t i)
{
  lexpr *e = lx_alloc(L, LX_CONST, dt);
  if (coil_dtype_is_float(dt))
    e->f = f;
  else
    e->i = dt == COIL_BOOL ? i != 0 : i;
  return e;
}

const lexpr *
lx_index(lowering *L, const coil_sym *index)
{
  lexpr *e = lx_alloc(L, LX_INDEX, COIL_I64);
  e->index = index;
  return e;
}

const lexpr *
lx_op(lowering *L, coil_kop op, coil_dtype dt, const lexpr *a, const lexpr *b, const lexpr *c)
{
  lexpr *e = lx_alloc(L, LX_OP, dt);
  e->op = op;
  const lexpr *args[3] = {a, b, c};
  for (int i = 0; i < 3 && args[i]; i++) {
    e->args[e->nargs++] = args[i];
    e->size += args[i]->size;
  }
  return e;
}

const lexpr *
lx_cast(lowering *L, const lexpr *a, coil_dtype dt)
{
  if (a->dtype == dt)
    return a;
  if (a->kind == LX_CONST) { /* fold: a constant in another dtype, converted as .to() would */
    double f = coil_dtype_is_float(a->dtype) ? a->f : (double)a->i;
    int64_t i = coil_dtype_is_float(a->dtype) ? coil_f64_to_i64(a->f) : a->i;
    if (dt == COIL_BOOL)
      i = coil_dtype_is_float(a->dtype) ? a->f != 0 : a->i != 0;
    if (!coil_dtype_is_float(dt) || coil_dtype_is_float(a->dtype) || (double)coil_f64_to_i64(f) == f)
      return lx_const(L, dt, f, i);
  }
  return lx_op(L, COIL_KOP_CAST, dt, a, NULL, NULL);
}

/* Pointer -> pointer memo for one substitution (open addressing). */
typedef struct {
  const lexpr **keys, **vals;
  size_t cap;
} memo;

static const lexpr **
memo_slot(memo *m, const lexpr *k)
{
  size_t h = ((uintptr_t)k >> 4) * 0x9e3779b97f4a7c15ull;
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
    if (!m->keys[i] || m->keys[i] == k)
      return &m->keys[i];
}

static const lexpr *
subst(lowering *L, memo *m, const lexpr *e, int n, const int *vars, const coil_sym *const *repl)
{
  const lexpr **slot = memo_slot(m, e);
  if (*slot)
    return m->vals[slot - m->keys];
  const lexpr *r = e;
  switch (e->kind) {
  case LX_LOAD: {
    const lexpr *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < e->nargs; i++)
      a[i] = subst(L, m, e->args[i], n, vars, repl);
    r = lx_load_at(L, e->buffer, coil_sym_subst(L->sym, e->index, n, vars, repl), e->nargs, a);
    break;
  }
  case LX_INDIRECT: { /* the same variable: each load names the node it takes it from */
    lexpr *c = lx_alloc(L, LX_INDIRECT, COIL_I64);
    *c = *e;
    c->args[0] = subst(L, m, e->args[0], n, vars, repl);
    c->size = 1 + c->args[0]->size;
    r = c;
    break;
  }
  case LX_INDEX:
    r = lx_index(L, coil_sym_subst(L->sym, e->index, n, vars, repl));
    break;
  case LX_CONST:
    break;
  case LX_OP: {
    const lexpr *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < e->nargs; i++)
      a[i] = subst(L, m, e->args[i], n, vars, repl);
    r = lx_op(L, e->op, e->dtype, a[0], a[1], a[2]);
    break;
  }
  }
  if (r != e)
    ((lexpr *)r)->origin = e->origin; /* fresh node: keeps the op it came from */
  *slot = e;
  m->vals[slot - m->keys] = r;
  return r;
}

const lexpr *
lx_subst(lowering *L, const lexpr *e, int n, const int *vars, const coil_sym *const *repl)
{
  memo m;
  m.cap = 64;
  while (m.cap < 4 * (size_t)e->size)
    m.cap *= 2;
  m.keys = coil_xcalloc(m.cap, sizeof *m.keys);
  m.vals = coil_xcalloc(m.cap, sizeof *m.vals);
  const lexpr *r = subst(L, &m, e, n, vars, repl);
  coil_xfree(m.keys);
  coil_xfree(m.vals);
  return r;
}

/* ---- lazy tensors ---- */

static const coil_sym *
fresh_dvar(lowering *L, const coil_sym *size)
{
  char name[32];
  snprintf(name, sizeof name, "d%d", L->ndvars++);
  const coil_sym *v = coil_sym_var(L->sym, coil_arena_strdup(L->arena, name));
  int64_t n;
  if (coil_sym_is_const(size, &n))
    coil_sym_set_range(L->sym, v, 0, n > 0 ? n - 1 : 0);
  return v;
}

lazy *
lz_new(lowering *L, coil_dtype dt, int rank, const coil_sym *const *sizes)
{
  lazy *z = coil_arena_alloc(L->arena, sizeof *z);
  z->dtype = dt;
  z->rank = rank;
  z->realized = -1;
  for (int i = 0; i < rank; i++) {
    z->sizes[i] = sizes[i];
    z->dvars[i] = fresh_dvar(L, sizes[i]);
  }
  return z;
}

const lexpr *
lz_at(lowering *L, const lazy *z, const coil_sym *const *idx)
{
  int vars[COIL_MAX_RANK];
  bool same = true;
  for (int i = 0; i < z->rank; i++) {
    vars[i] = z->dvars[i]->var;
    same = same && idx[i] == z->dvars[i];
  }
  if (same) /* z at its own index: its expression (no copy; expressions are never changed) */
    return z->expr;
  return lx_subst(L, z->expr, z->rank, vars, idx);
}

/* Row-major offset of index idx in a tensor of these sizes. */
static const coil_sym *
contiguous_index(lowering *L, int rank, const coil_sym *const *sizes, const coil_sym *const *idx)
{
  const coil_sym *off = K(L, 0), *stride = K(L, 1);
  for (int i = rank - 1; i >= 0; i--) {
    off = coil_sym_add(L->sym, off, coil_sym_mul(L->sym, idx[i], stride));
    stride = coil_sym_mul(L->sym, stride, sizes[i]);
  }
  return off;
}

int
lbuf_new(lowering *L, coil_dtype dt, int rank, const coil_sym *const *sizes)
{
  L->bufs = grow(L->arena, L->bufs, L->nbufs, &L->capbufs, sizeof *L->bufs);
  lbuf *b = &L->bufs[L->nbufs];
  memset(b, 0, sizeof *b);
  b->kind = LB_COMPUTED;
  b->dtype = dt;
  b->rank = rank;
  b->node = -1;
  b->input = -1;
  b->wir = -1;
  b->value = -1;
  memcpy(b->sizes, sizes, sizeof(*sizes) * (size_t)rank);
  const coil_sym *s = K(L, 1);
  for (int i = rank - 1; i >= 0; i--) {
    b->strides[i] = s;
    s = coil_sym_mul(L->sym, s, sizes[i]);
  }
  return L->nbufs++;
}

int
lnode_new(lowering *L, lnode_kind kind, int out)
{
  L->nodes = grow(L->arena, L->nodes, L->nnodes, &L->capnodes, sizeof *L->nodes);
  lnode *n = &L->nodes[L->nnodes];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->out = out;
  n->group = -1;
  n->origins = L->cur_origin;
  if (out >= 0)
    L->bufs[out].node = L->nnodes;
  return L->nnodes++;
}

/* z becomes a contiguous load of buffer b. */
static void
lz_load_buffer(lowering *L, lazy *z, int b)
{
  z->expr = lx_load(L, b, contiguous_index(L, z->rank, z->sizes, z->dvars));
  z->realized = b;
}

int
lz_is_buffer(lowering *L, lazy *z)
{
  if (z->realized >= 0)
    return z->realized;
  const lexpr *e = z->expr;
  if (e->kind != LX_LOAD || e->nargs || e->dtype != z->dtype)
    return -1;
  const lbuf *b = &L->bufs[e->buffer];
  if (b->dtype != z->dtype || b->rank != z->rank)
    return -1;
  for (int i = 0; i < z->rank; i++)
    if (coil_sym_cmp(b->sizes[i], z->sizes[i]) != 0)
      return -1;
  if (coil_sym_cmp(e->index, contiguous_index(L, z->rank, z->sizes, z->dvars)) != 0)
    return -1;
  return z->realized = e->buffer;
}

int
lz_realize(lowering *L, lazy *z)
{
  if (z->realized >= 0)
    return z->realized;
  int b = lbuf_new(L, z->dtype, z->rank, z->sizes);
  int k = lnode_new(L, LN_POINTWISE, b); /* may move L->nodes */
  lnode *n = &L->nodes[k];
  n->rank = z->rank;
  memcpy(n->sizes, z->sizes, sizeof z->sizes);
  memcpy(n->dvars, z->dvars, sizeof z->dvars);
  n->body = z->expr;
  n->origins = origins_of(L, z->expr);
  n->store = contiguous_index(L, z->rank, z->sizes, z->dvars);
  lz_load_buffer(L, z, b);
  return b;
}

/* The node of a reduction (or scan) of z, its output buffer of orank dims (element oidx: over
 * z's dims), read back as a lazy tensor. */
static lazy *
reduction_node(lowering *L, const lazy *z, const bool *red, coil_reduction r, coil_dtype out_dtype, int orank,
               const coil_sym *const *osizes, const coil_sym *const *oidx, bool scan)
{
  int b = lbuf_new(L, out_dtype, orank, osizes);
  int k = lnode_new(L, LN_REDUCTION, b); /* may move L->nodes */
  lnode *n = &L->nodes[k];
  n->rank = z->rank;
  memcpy(n->sizes, z->sizes, sizeof z->sizes);
  memcpy(n->dvars, z->dvars, sizeof z->dvars);
  memcpy(n->red, red, sizeof(bool) * COIL_MAX_RANK);
  n->reduction = r;
  n->scan = scan;
  n->body = z->expr;
  /* the ops inlined into the body, and the reduction's own op */
  const char *body_ops = origins_of(L, z->expr);
  if (strstr(body_ops, L->cur_origin)) {
    n->origins = body_ops;
  } else {
    coil_strbuf ob = {0};
    coil_strbuf_printf(&ob, "%s %s", body_ops, L->cur_origin);
    n->origins = coil_arena_strdup(L->arena, ob.s);
    coil_strbuf_free(&ob);
  }
  n->store = contiguous_index(L, orank, osizes, oidx);
  lazy *out = lz_new(L, out_dtype, orank, osizes);
  lz_load_buffer(L, out, b);
  return out;
}

lazy *
lz_reduce(lowering *L, const lazy *z, const bool *red, bool keepdim, coil_reduction r,
          coil_dtype out_dtype)
{
  const coil_sym *osizes[COIL_MAX_RANK] = {0}, *oidx[COIL_MAX_RANK] = {0};
  int orank = 0;
  if (z->rank == 0) { /* a 0-dim tensor: reduced over an added dim of size 1, since a reduction
                         kernel needs an r range (the Wrapper IR verifier refuses one without) */
    const coil_sym *one = K(L, 1);
    lazy *z1 = lz_new(L, z->dtype, 1, &one);
    z1->expr = z->expr;
    bool all[COIL_MAX_RANK] = {true};
    return reduction_node(L, z1, all, r, out_dtype, 0, osizes, oidx, false);
  }
  for (int i = 0; i < z->rank; i++) {
    if (!red[i]) {
      oidx[orank] = z->dvars[i];
      osizes[orank++] = z->sizes[i];
    } else if (keepdim) {
      oidx[orank] = K(L, 0);
      osizes[orank++] = K(L, 1);
    }
  }
  return reduction_node(L, z, red, r, out_dtype, orank, osizes, oidx, false);
}

lazy *
lz_scan(lowering *L, const lazy *z, int dim, coil_reduction r, coil_dtype out_dtype)
{
  bool red[COIL_MAX_RANK] = {0};
  red[dim] = true;
  return reduction_node(L, z, red, r, out_dtype, z->rank, z->sizes, z->dvars, true);
}

/* If e is affine in the dims (offset + sum coef_i * d_i), fill offset and coefficients. */
static bool
affine(lowering *L, const lazy *z, const coil_sym *e, const coil_sym **offset, const coil_sym **coef)
{
  int vars[COIL_MAX_RANK];
  const coil_sym *zero[COIL_MAX_RANK], *unit[COIL_MAX_RANK];
  for (int i = 0; i < z->rank; i++) {
    vars[i] = z->dvars[i]->var;
    zero[i] = K(L, 0);
  }
  *offset = coil_sym_subst(L->sym, e, z->rank, vars, zero);
  const coil_sym *rebuilt = *offset;
  for (int i = 0; i < z->rank; i++) {
    memcpy(unit, zero, sizeof unit);
    unit[i] = K(L, 1);
    coef[i] = coil_sym_sub(L->sym, coil_sym_subst(L->sym, e, z->rank, vars, unit), *offset);
    rebuilt = coil_sym_add(L->sym, rebuilt, coil_sym_mul(L->sym, coef[i], z->dvars[i]));
  }
  return coil_sym_cmp(rebuilt, e) == 0;
}

/* A view of the buffer z loads, with z's sizes and these strides: -1 - its index. */
static int
view_of(lowering *L, const lazy *z, const coil_sym *off, const coil_sym *const *strides)
{
  L->views = grow(L->arena, L->views, L->nviews, &L->capviews, sizeof *L->views);
  lview *v = &L->views[L->nviews];
  v->buffer = z->expr->buffer;
  v->rank = z->rank;
  v->offset = off;
  for (int i = 0; i < z->rank; i++) {
    v->sizes[i] = z->sizes[i];
    v->strides[i] = strides[i];
  }
  return -1 - L->nviews++;
}

int
lz_as_view(lowering *L, lazy *z)
{
  if (z->realized >= 0)
    return z->realized;
  const coil_sym *off, *coef[COIL_MAX_RANK];
  if (z->expr->kind == LX_LOAD && !z->expr->nargs && z->expr->dtype == z->dtype &&
      affine(L, z, z->expr->index, &off, coef))
    return view_of(L, z, off, coef);
  return lz_realize(L, z);
}

int
coil_lower_buffer_of(lowering *L, lazy *x)
{
  int b = lz_is_buffer(L, x);
  return b >= 0 ? b : lz_realize(L, x);
}

int
lz_as_matrix_view(lowering *L, lazy *z)
{
  const coil_sym *off, *coef[COIL_MAX_RANK];
  if (z->realized < 0 && z->rank >= 2 && z->expr->kind == LX_LOAD && !z->expr->nargs &&
      z->expr->dtype == z->dtype && affine(L, z, z->expr->index, &off, coef)) {
    for (int d = z->rank - 2; d < z->rank; d++) {
      int64_t v;
      if ((coil_sym_is_const(coef[d], &v) && v == 1) || (coil_sym_is_const(z->sizes[d], &v) && v <= 1))
        return view_of(L, z, off, coef);
    }
    return lz_realize(L, z); /* strided in both matrix dims (a step slice): a dense copy */
  }
  return lz_as_view(L, z);
}

/* Does z have exactly the sizes of buffer b? */
static bool
same_sizes(lowering *L, const lbuf *b, const lazy *z)
{
  if (b->rank != z->rank)
    return false;
  for (int i = 0; i < z->rank; i++)
    if (coil_sym_cmp(b->sizes[i], z->sizes[i]) != 0)
      return false;
  (void)L;
  return true;
}

/* The buffer a graph output is handed back in: z's own buffer when z is one with z's sizes; a
 * view of the buffer z reads when it reads it densely in row-major order from some offset (a
 * reshape, squeeze or leading slice of a computed value: no copy, and never a kernel that copies
 * a buffer onto itself); else z realized by a kernel. Returns a buffer (>= 0) or -1 - view. */
static int
lz_output(lowering *L, lazy *z)
{
  if (lz_is_buffer(L, z) >= 0 && same_sizes(L, &L->bufs[z->realized], z))
    return z->realized;
  const coil_sym *off, *coef[COIL_MAX_RANK], *dense[COIL_MAX_RANK];
  if (z->expr->kind == LX_LOAD && !z->expr->nargs && z->expr->dtype == z->dtype &&
      L->bufs[z->expr->buffer].dtype == z->dtype && affine(L, z, z->expr->index, &off, coef)) {
    const coil_sym *stride = K(L, 1);
    bool is_dense = true;
    for (int i = z->rank - 1; i >= 0; i--) {
      int64_t n;
      bool unit = coil_sym_is_const(z->sizes[i], &n) && n == 1; /* any stride reads the same */
      is_dense = is_dense && (unit || coil_sym_cmp(coef[i], stride) == 0);
      dense[i] = stride;
      stride = coil_sym_mul(L->sym, stride, z->sizes[i]);
    }
    if (is_dense)
      return view_of(L, z, off, dense);
  }
  z->realized = -1; /* a buffer of other sizes: copied into one of z's own */
  return lz_realize(L, z);
}

/* ---- the driver ---- */

/* A graph size expression in the program's symbols. */
static const coil_sym *
convert(lowering *L, const coil_sym *s)
{
  switch (s->kind) {
  case COIL_SYM_CONST: return K(L, s->value);
  case COIL_SYM_VAR: return L->graph_syms[s->var];
  default: break;
  }
  const coil_sym *r = convert(L, s->args[0]);
  for (int i = 1; i < s->nargs; i++) {
    const coil_sym *a = convert(L, s->args[i]);
    switch (s->kind) {
    case COIL_SYM_ADD: r = coil_sym_add(L->sym, r, a); break;
    case COIL_SYM_MUL: r = coil_sym_mul(L->sym, r, a); break;
    case COIL_SYM_FLOORDIV: r = coil_sym_floordiv(L->sym, r, a); break;
    case COIL_SYM_MOD: r = coil_sym_mod(L->sym, r, a); break;
    case COIL_SYM_MIN: r = coil_sym_min(L->sym, r, a); break;
    default: r = coil_sym_max(L->sym, r, a); break;
    }
  }
  return r;
}

void
coil_lower_sizes(lowering *L, const coil_type *t, const coil_sym **out)
{
  for (int i = 0; i < t->rank; i++)
    out[i] = convert(L, t->dims[i]);
}

bool
coil_lower_is_library(const lowering *L, const char *op, coil_dtype dt)
{
  for (int i = 0; i < L->nlibrary; i++)
    if (strcmp(L->library[i].op, op) == 0 && (unsigned)dt < 32 && (L->library[i].dtypes >> dt & 1u))
      return true;
  return false;
}

int
coil_lower(lowering *L, const coil_graph *g, const coil_compile_options *o, coil_symctx *sym,
           coil_arena *a, coil_diag *d)
{
  memset(L, 0, sizeof *L);
  L->g = g;
  L->nlibrary = o->library ? o->nlibrary : 0;
  L->opts = o;
  L->library = o->library;
  L->arena = a;
  L->sym = sym;
  L->d = d;
  int nv = g->ninputs + g->nnodes;
  L->values = COIL_ARENA_ARRAY(a, lazy *, nv);
  L->tuples = COIL_ARENA_ARRAY(a, lazy **, nv);
  /* size symbols: s0, s1, ... in order of first appearance in the inputs */
  int ngs = coil_sym_nvars(g->sym), next = 0;
  L->graph_syms = COIL_ARENA_ARRAY(a, const coil_sym *, ngs);
  for (int i = 0; i < g->ninputs; i++)
    for (int k = 0; k < g->inputs[i]->type.rank; k++) {
      const coil_sym *s = g->inputs[i]->type.dims[k];
      if (s->kind == COIL_SYM_VAR && !L->graph_syms[s->var]) {
        char name[32];
        snprintf(name, sizeof name, "s%d", next++);
        L->graph_syms[s->var] = coil_sym_var(sym, coil_arena_strdup(a, name));
      }
    }
  for (int v = 0; v < ngs; v++)
    if (!L->graph_syms[v])
      return coil_diag_at(d, g->file, 0, 0, "size symbol %s does not appear in any input's type",
                          coil_sym_var_name(g->sym, v));
  for (int i = 0; i < g->ninputs; i++) {
    const coil_type *t = &g->inputs[i]->type;
    const coil_sym *sizes[COIL_MAX_RANK];
    coil_lower_sizes(L, t, sizes);
    int b = lbuf_new(L, t->dtype, t->rank, sizes);
    L->bufs[b].kind = LB_INPUT;
    L->bufs[b].input = i;
    lazy *z = lz_new(L, t->dtype, t->rank, sizes);
    lz_load_buffer(L, z, b);
    L->values[i] = z;
  }
  /* how many statements read each value: a value read by several whose expression is large is
   * realized once instead of recomputed in every reader (Inductor's realize heuristic) */
  int *readers = COIL_ARENA_ARRAY(a, int, nv);
  L->version = COIL_ARENA_ARRAY(a, int, nv);
  L->final_version = COIL_ARENA_ARRAY(a, int, nv);
  L->mutated = COIL_ARENA_ARRAY(a, bool, g->ninputs + 1);
  L->copy_back_input = COIL_ARENA_ARRAY(a, int, g->ninputs + 1);
  L->copy_back_buf = COIL_ARENA_ARRAY(a, int, g->ninputs + 1);
  for (int v = 0; v < nv; v++)
    L->version[v] = L->final_version[v] = v;
  for (int i = 0; i < g->nnodes; i++) {
    for (int k = 0; k < g->nodes[i].nargs; k++) {
      const coil_lit *l = &g->nodes[i].args[k].lit;
      int n = l->kind == COIL_LIT_LIST ? l->n : 1;
      for (int j = 0; j < n; j++) {
        const coil_lit *it = l->kind == COIL_LIT_LIST ? &l->items[j] : l;
        int ver = it->kind == COIL_LIT_VALUE ? L->final_version[it->v->kind == COIL_VAL_NODE ? g->ninputs + it->v->index : it->v->index] : -1;
        if (ver >= 0)
          readers[ver]++;
      }
    }
    if (coil_op_is_inplace(g->nodes[i].op)) { /* the names written stand for a new version */
      int ver = g->ninputs + i;
      for (const coil_value *w = g->nodes[i].bound[0].v; w; w = coil_value_root(w)->view_of, ver = -1) {
        const coil_value *root = coil_value_root(w); /* and the bases written through views */
        for (int v = 0; v < g->ninputs + i + 1; v++) {
          const coil_value *val = v < g->ninputs ? g->inputs[v] : g->nodes[v - g->ninputs].out;
          if (val && coil_value_root(val) == root)
            L->final_version[v] = ver;
        }
      }
    }
  }
  L->readers = readers;
  /* attention chains, fused into one library call where the target claims coil.attention for
   * their dtype (the second bmm becomes the call; lower_matmul asks) */
  if (coil_lower_is_library(L, "coil.attention", COIL_F16) || coil_lower_is_library(L, "coil.attention", COIL_BF16) ||
      coil_lower_is_library(L, "coil.attention", COIL_F32) || coil_lower_is_library(L, "coil.attention", COIL_F64)) {
    L->attention = COIL_ARENA_ARRAY(a, coil_attention_match, g->nnodes + 1);
    L->nattention = coil_attention_find(g, L->attention, g->nnodes, NULL);
  }
  for (int i = 0; i < g->nnodes; i++) {
    L->cur_origin = g->nodes[i].op->name;
    if (coil_lower_node(L, &g->nodes[i]))
      return -1;
    if (coil_op_is_inplace(g->nodes[i].op))
      coil_lower_mutation(L, &g->nodes[i]);
    lazy *z = L->values[g->ninputs + i];
    if (z && z->realized < 0 && z->expr &&
        (z->expr->size > REALIZE_MAX_SIZE || (readers[g->ninputs + i] > 1 && z->expr->size > REALIZE_SIZE)))
      lz_realize(L, z);
  }
  L->cur_origin = "output";
  L->outputs = COIL_ARENA_ARRAY(a, int, g->noutputs + 1);
  for (int i = 0; i < g->noutputs; i++) {
    const coil_value *v = g->outputs[i];
    lazy *z = L->values[v->kind == COIL_VAL_NODE ? g->ninputs + v->index : v->index];
    int ob = lz_output(L, z);
    L->outputs[i] = ob;
    L->bufs[ob >= 0 ? ob : L->views[-1 - ob].buffer].is_output = true;
  }
  for (int i = 0; i < g->ninputs; i++) { /* mutated inputs: their final values, copied back */
    if (!L->mutated[i])
      continue;
    lazy *z = L->values[i];
    int b = lz_is_buffer(L, z);
    if (b < 0 || !same_sizes(L, &L->bufs[b], z) || L->bufs[b].kind == LB_INPUT) {
      z->realized = -1;
      b = lz_realize(L, z);
    }
    L->bufs[b].is_output = true;
    L->copy_back_input[L->ncopy_backs] = i;
    L->copy_back_buf[L->ncopy_backs++] = b;
  }
  return 0;
}
