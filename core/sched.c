/* sched.c — the scheduler: dead-code elimination, fusion and ordering, after Inductor's.
 *
 * Every live node starts in its own group. can_fuse(a, b) says whether two groups may become
 * one kernel: neither is a library call, their iteration spaces fit (equal sizes; or a
 * reduction's space with pointwise members over its full input or over its kept dims), every
 * buffer one member writes and another reads is read at exactly the index it is written (so no
 * program of the kernel reads another's element), and no path between them runs through a third
 * group (a cycle); a scatter node (lower_scatter.c) stays alone, so no reader of its destination
 * shares its kernel, and it comes after the node that wrote the buffer it starts from, which it
 * reads. score_fusion(a, b) is the bytes of memory traffic the merge saves, then
 * proximity; candidates are merged best first, repeated to a fixpoint (at most 10 rounds, at most
 * 64 nodes a group). requires: coil_lower's output; produces: groups in execution order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

#define MAX_ROUNDS 10
#define MAX_GROUP 64

/* ---- reads ---- */

typedef sched_ints ints;

static void
push(ints *s, int x)
{
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == x)
      return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->v = coil_xrealloc(s->v, sizeof(int) * (size_t)s->cap);
  }
  s->v[s->n++] = x;
}

static void
expr_reads(const lexpr *e, ints *out)
{
  if (e->kind == LX_LOAD)
    push(out, e->buffer);
  for (int i = 0; i < e->nargs; i++)
    expr_reads(e->args[i], out);
}

/* Buffers node n reads (a view counts as its base). */
static void
node_reads(const lowering *L, const lnode *n, ints *out)
{
  if (n->kind == LN_EXTERN) {
    for (int i = 0; i < n->nins; i++)
      push(out, n->ins[i] >= 0 ? n->ins[i] : L->views[-1 - n->ins[i]].buffer);
    return;
  }
  expr_reads(n->body, out);
  if (n->kind == LN_SCATTER) { /* its index values, and the buffer it starts from */
    for (int i = 0; i < n->nstore_ind; i++)
      expr_reads(n->store_ind[i], out);
    push(out, n->init);
  }
}

static void
node_writes(const lnode *n, ints *out)
{
  if (n->kind == LN_EXTERN)
    for (int i = 0; i < n->nouts; i++)
      push(out, n->outs[i]);
  else
    push(out, n->out);
}

/* ---- spaces ---- */

static bool
same_sizes(int r1, const coil_sym *const *a, int r2, const coil_sym *const *b)
{
  if (r1 != r2)
    return false;
  for (int i = 0; i < r1; i++)
    if (coil_sym_cmp(a[i], b[i]) != 0)
      return false;
  return true;
}

static bool
is_one(const coil_sym *s)
{
  int64_t v;
  return coil_sym_is_const(s, &v) && v == 1;
}

/* The flat row-major offset of a point of sizes[] given per-dim expressions. */
static const coil_sym *
flat(coil_symctx *c, int rank, const coil_sym *const *sizes, const coil_sym *const *idx)
{
  const coil_sym *off = coil_sym_const(c, 0), *stride = coil_sym_const(c, 1);
  for (int i = rank - 1; i >= 0; i--) {
    off = coil_sym_add(c, off, coil_sym_mul(c, idx[i], stride));
    stride = coil_sym_mul(c, stride, sizes[i]);
  }
  return off;
}

bool
coil_sched_map(const schedule *S, const sgroup *g, const lnode *n, const coil_sym *const *loopvars,
               const coil_sym **repl)
{
  coil_symctx *c = S->L->sym;
  const coil_sym *zero = coil_sym_const(c, 0);
  if (n->kind == LN_EXTERN)
    return false;
  if (n->kind == LN_REDUCTION) {
    if (!same_sizes(n->rank, n->sizes, g->rank, g->sizes))
      return false;
    for (int i = 0; i < g->rank; i++) {
      if (g->has_reduction && n->red[i] != g->red[i])
        return false;
      repl[i] = loopvars[i];
    }
    return true;
  }
  if (same_sizes(n->rank, n->sizes, g->rank, g->sizes)) { /* the full space, per element */
    for (int i = 0; i < n->rank; i++)
      repl[i] = loopvars[i];
    return true;
  }
  if (g->has_reduction && n->rank == g->rank) { /* kept dims; reduced dims kept as size 1 */
    bool ok = true;
    for (int i = 0; i < n->rank && ok; i++) {
      ok = g->red[i] ? is_one(n->sizes[i]) : coil_sym_cmp(n->sizes[i], g->sizes[i]) == 0;
      repl[i] = g->red[i] ? zero : loopvars[i];
    }
    if (ok)
      return true;
  }
  if (g->has_reduction) { /* kept dims only */
    int j = 0;
    bool ok = true;
    for (int i = 0; i < g->rank && ok; i++) {
      if (g->red[i])
        continue;
      ok = j < n->rank && coil_sym_cmp(n->sizes[j], g->sizes[i]) == 0;
      if (ok)
        repl[j++] = loopvars[i];
    }
    if (ok && j == n->rank)
      return true;
  }
  /* the same elements in another shape (a reshape): unravel the space's flat offset over n's
   * sizes; indices then simplify, or the load/store check rejects the fusion */
  const coil_sym *total_n = coil_sym_const(c, 1), *total_g = coil_sym_const(c, 1);
  for (int i = 0; i < n->rank; i++)
    total_n = coil_sym_mul(c, total_n, n->sizes[i]);
  for (int i = 0; i < g->rank; i++)
    total_g = coil_sym_mul(c, total_g, g->sizes[i]);
  if (coil_sym_cmp(total_n, total_g) != 0)
    return false;
  const coil_sym *f = flat(c, g->rank, g->sizes, loopvars), *stride = coil_sym_const(c, 1);
  for (int i = n->rank - 1; i >= 0; i--) {
    repl[i] = coil_sym_mod(c, coil_sym_floordiv(c, f, stride), n->sizes[i]);
    stride = coil_sym_mul(c, stride, n->sizes[i]);
  }
  return true;
}

/* Canonical variables c0..c7 for comparing indices of members of one space, with the space's
 * ranges so that simplification can use them. */
static void
canon(lowering *L, const sgroup *g, const coil_sym **vars)
{
  for (int i = 0; i < g->rank; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    vars[i] = coil_sym_var(L->sym, coil_arena_strdup(L->arena, name));
    int64_t n;
    coil_sym_set_range(L->sym, vars[i], 0, coil_sym_is_const(g->sizes[i], &n) ? (n > 0 ? n - 1 : 0) : INT64_MAX);
  }
}

static const coil_sym *
to_space(lowering *L, const lnode *n, const coil_sym *const *repl, const coil_sym *index)
{
  int vars[COIL_MAX_RANK];
  for (int i = 0; i < n->rank; i++)
    vars[i] = n->dvars[i]->var;
  return coil_sym_subst(L->sym, index, n->rank, vars, repl);
}

/* Every load of buffer b in e, in space coordinates, equals `want`. */
static bool
loads_match(lowering *L, const lnode *n, const coil_sym *const *repl, const lexpr *e, int b,
            const coil_sym *want)
{
  if (e->kind == LX_LOAD && e->buffer == b &&
      (e->nargs || coil_sym_cmp(to_space(L, n, repl, e->index), want) != 0))
    return false; /* an indirect load reads anywhere: its producer is never fused into it */
  for (int i = 0; i < e->nargs; i++)
    if (!loads_match(L, n, repl, e->args[i], b, want))
      return false;
  return true;
}

/* ---- groups ---- */

static void
group_init(schedule *S, sgroup *g, int node)
{
  const lnode *n = &S->L->nodes[node];
  memset(g, 0, sizeof *g);
  g->members = coil_xmalloc(sizeof(int));
  g->members[0] = node;
  g->nmembers = 1;
  g->is_extern = n->kind == LN_EXTERN;
  g->rank = n->rank;
  memcpy(g->sizes, n->sizes, sizeof g->sizes);
  if (n->kind == LN_REDUCTION) {
    memcpy(g->red, n->red, sizeof g->red);
    g->has_reduction = true;
  }
}

/* The space of a and b merged, if there is one. */
static bool
merged_space(const sgroup *a, const sgroup *b, sgroup *out)
{
  const sgroup *r = a->has_reduction ? a : b;
  *out = *r;
  if (a->has_reduction && b->has_reduction) {
    if (!same_sizes(a->rank, a->sizes, b->rank, b->sizes))
      return false;
    for (int i = 0; i < a->rank; i++)
      if (a->red[i] != b->red[i])
        return false;
  }
  return true;
}


/* Calls fn for every group that reads a buffer group g writes (repeats possible). */
static void
for_successors(const schedule *S, int g, void (*fn)(void *, int), void *user)
{
  const sgroup *gr = &S->groups[g];
  for (int m = 0; m < gr->nmembers; m++) {
    const ints *w = &S->writes[gr->members[m]];
    for (int i = 0; i < w->n; i++) {
      const ints *r = &S->readers[w->v[i]];
      for (int k = 0; k < r->n; k++) {
        int h = S->L->nodes[r->v[k]].group;
        if (h != g)
          fn(user, h);
      }
    }
  }
}

typedef struct {
  const schedule *S;
  char *seen;
  int *stack, sp;
  int skip;                  /* a start point not to take (the direct edge a -> b) */
  int horizon;               /* groups whose first node comes after this cannot reach the target */
} walk;

static void
visit(void *user, int h)
{
  walk *w = user;
  if (!w->seen[h] && h != w->skip && w->S->groups[h].members[0] <= w->horizon) {
    w->seen[h] = 1;
    w->stack[w->sp++] = h;
  }
}

/* Is there a path from -> X -> ... -> to through some group X other than from and to? Node
 * indices grow along every edge, so a group whose first node comes after the target's last node
 * leads nowhere near it: the walk stays inside that horizon. */
static bool
indirect_path(const schedule *S, int from, int to, char *seen, int *stack)
{
  memset(seen, 0, (size_t)S->ngroups);
  const sgroup *t = &S->groups[to];
  walk w = {S, seen, stack, 0, to, t->members[t->nmembers - 1]};
  seen[from] = 1;
  for_successors(S, from, visit, &w);
  w.skip = -1;
  while (w.sp) {
    int g = w.stack[--w.sp];
    if (g == to)
      return true;
    for_successors(S, g, visit, &w);
  }
  return false;
}

static bool
creates_cycle(const schedule *S, int a, int b)
{
  char *seen = coil_xmalloc((size_t)S->ngroups + 1);
  int *stack = coil_xmalloc(sizeof(int) * (size_t)(S->ngroups + 1) * 2);
  bool bad = indirect_path(S, a, b, seen, stack) || indirect_path(S, b, a, seen, stack);
  coil_xfree(seen);
  coil_xfree(stack);
  return bad;
}

static bool
has_scan(const schedule *S, const sgroup *g)
{
  for (int i = 0; i < g->nmembers; i++)
    if (S->L->nodes[g->members[i]].kind == LN_REDUCTION && S->L->nodes[g->members[i]].scan)
      return true;
  return false;
}

bool
coil_sched_can_fuse(schedule *S, int a, int b)
{
  sgroup *ga = &S->groups[a], *gb = &S->groups[b];
  if (a == b || ga->dead || gb->dead || ga->is_extern || gb->is_extern)
    return false;
  if (ga->nmembers + gb->nmembers > MAX_GROUP)
    return false;
  /* partial offload: a kernel runs on one backend */
  const coil_compile_options *o = S->L->opts;
  if (o && o->placement) {
    int na = ga->members[0], nb = gb->members[0];
    int pa = na < o->nplacement ? o->placement[na] : -1, pb = nb < o->nplacement ? o->placement[nb] : -1;
    if (pa != pb)
      return false;
  }
  /* a scatter stays alone: a reader of its destination in the same kernel would see elements
   * other points have not stored yet */
  for (int side = 0; side < 2; side++) {
    const sgroup *g = side ? gb : ga;
    for (int i = 0; i < g->nmembers; i++)
      if (S->L->nodes[g->members[i]].kind == LN_SCATTER)
        return false;
  }
  /* a scan shares its kernel with pointwise nodes only: a reduction beside it might reduce the
   * scan's values, which a kernel cannot do (a scan's values exist one r point at a time) */
  if ((has_scan(S, ga) && gb->has_reduction) || (has_scan(S, gb) && ga->has_reduction))
    return false;
  sgroup space;
  if (!merged_space(ga, gb, &space))
    return false;
  ints bufs = {0}; /* the merged kernel's parameters: at most every buffer read or written */
  for (int side = 0; side < 2; side++) {
    const sgroup *g = side ? gb : ga;
    for (int i = 0; i < g->nmembers; i++) {
      node_reads(S->L, &S->L->nodes[g->members[i]], &bufs);
      node_writes(&S->L->nodes[g->members[i]], &bufs);
    }
  }
  bool too_many = bufs.n > COIL_KERNEL_MAX_BUFFERS;
  coil_xfree(bufs.v);
  if (too_many)
    return false;
  /* every member maps onto the merged space */
  const coil_sym *maps[2 * MAX_GROUP][COIL_MAX_RANK], *cv[COIL_MAX_RANK];
  const lnode *mem[2 * MAX_GROUP];
  int nm = 0;
  canon(S->L, &space, cv);
  for (int side = 0; side < 2; side++) {
    const sgroup *g = side ? gb : ga;
    for (int i = 0; i < g->nmembers; i++) {
      mem[nm] = &S->L->nodes[g->members[i]];
      if (!coil_sched_map(S, &space, mem[nm], cv, maps[nm]))
        return false;
      nm++;
    }
  }
  /* a buffer written inside is read inside only at the index it is written */
  for (int w = 0; w < nm; w++) {
    if (mem[w]->kind == LN_EXTERN)
      return false;
    const coil_sym *written = to_space(S->L, mem[w], maps[w], mem[w]->store);
    for (int r = 0; r < nm; r++)
      if (r != w && !loads_match(S->L, mem[r], maps[r], mem[r]->body, mem[w]->out, written))
        return false;
  }
  return !creates_cycle(S, a, b);
}

/* Bytes of one element times elements, with symbolic sizes counted as 2^20 elements. */
static double
buffer_bytes(const lowering *L, int b)
{
  double n = 1;
  for (int i = 0; i < L->bufs[b].rank; i++) {
    int64_t v;
    n *= coil_sym_is_const(L->bufs[b].sizes[i], &v) ? (double)v : 1048576.0;
  }
  return n * (double)coil_dtype_size(L->bufs[b].dtype);
}

/* Memory traffic saved by fusing: buffers one writes and the other reads (the write may go
 * away, the read becomes a register), and buffers both read (read once instead of twice). */
static double
score_fusion(const schedule *S, int a, int b)
{
  ints wa = {0}, ra = {0}, wb = {0}, rb = {0};
  for (int side = 0; side < 2; side++) {
    const sgroup *g = &S->groups[side ? b : a];
    for (int i = 0; i < g->nmembers; i++) {
      int m = g->members[i];
      for (int k = 0; k < S->writes[m].n; k++)
        push(side ? &wb : &wa, S->writes[m].v[k]);
      for (int k = 0; k < S->reads[m].n; k++)
        push(side ? &rb : &ra, S->reads[m].v[k]);
    }
  }
  double s = 0;
  for (int i = 0; i < rb.n; i++) {
    bool written = false, read = false;
    for (int k = 0; k < wa.n; k++)
      written = written || wa.v[k] == rb.v[i];
    for (int k = 0; k < ra.n; k++)
      read = read || ra.v[k] == rb.v[i];
    if (written || read)
      s += buffer_bytes(S->L, rb.v[i]);
  }
  for (int i = 0; i < ra.n; i++)
    for (int k = 0; k < wb.n; k++)
      if (wb.v[k] == ra.v[i])
        s += buffer_bytes(S->L, ra.v[i]);
  coil_xfree(wa.v), coil_xfree(ra.v), coil_xfree(wb.v), coil_xfree(rb.v);
  return s;
}

static void
merge(schedule *S, int a, int b)
{
  sgroup *ga = &S->groups[a], *gb = &S->groups[b];
  sgroup space;
  merged_space(ga, gb, &space);
  int *m = coil_xmalloc(sizeof(int) * (size_t)(ga->nmembers + gb->nmembers));
  int i = 0, j = 0, k = 0;
  while (i < ga->nmembers || j < gb->nmembers) /* keep node order: a topological order */
    m[k++] = j >= gb->nmembers || (i < ga->nmembers && ga->members[i] < gb->members[j]) ? ga->members[i++]
                                                                                           : gb->members[j++];
  coil_xfree(ga->members);
  ga->members = m;
  ga->nmembers = k;
  ga->rank = space.rank;
  memcpy(ga->sizes, space.sizes, sizeof ga->sizes);
  memcpy(ga->red, space.red, sizeof ga->red);
  ga->has_reduction = space.has_reduction;
  for (int q = 0; q < gb->nmembers; q++)
    S->L->nodes[gb->members[q]].group = a;
  gb->dead = true;
  coil_xfree(gb->members);
  gb->members = NULL;
  gb->nmembers = 0;
  S->fusions++;
}

typedef struct {
  int a, b;
  double score;
  int distance;
} candidate;

static int
cmp_candidate(const void *x, const void *y)
{
  const candidate *p = x, *q = y;
  if (p->score != q->score)
    return p->score > q->score ? -1 : 1;
  if (p->distance != q->distance)
    return p->distance < q->distance ? -1 : 1;
  return p->a != q->a ? p->a - q->a : p->b - q->b;
}

static void
add_pair(ints *pairs, int a, int b)
{
  if (a == b)
    return;
  push(&pairs[a < b ? a : b], a < b ? b : a);
}

/* Candidate pairs: a producer and a consumer, or two readers of one buffer (neighbours in
 * program order only, so a buffer read by many groups adds pairs linearly). */
static void
related_pairs(const schedule *S, ints *pairs)
{
  for (int g = 0; g < S->ngroups; g++) {
    const sgroup *gr = &S->groups[g];
    if (gr->dead || gr->is_extern)
      continue;
    for (int m = 0; m < gr->nmembers; m++) {
      const ints *w = &S->writes[gr->members[m]];
      for (int i = 0; i < w->n; i++) {
        const ints *r = &S->readers[w->v[i]];
        for (int k = 0; k < r->n; k++)
          add_pair(pairs, g, S->L->nodes[r->v[k]].group);
      }
    }
  }
  for (int b = 0; b < S->L->nbufs; b++) {
    const ints *r = &S->readers[b];
    int prev = -1;
    for (int k = 0; k < r->n; k++) {
      int h = S->L->nodes[r->v[k]].group;
      if (S->groups[h].is_extern || h == prev)
        continue;
      if (prev >= 0)
        add_pair(pairs, prev, h);
      prev = h;
    }
  }
}

static void
fuse(schedule *S)
{
  for (int round = 0; round < MAX_ROUNDS; round++) {
    ints *pairs = coil_xcalloc((size_t)S->ngroups + 1, sizeof *pairs);
    related_pairs(S, pairs);
    int cap = 64, n = 0;
    candidate *c = coil_xmalloc(sizeof *c * (size_t)cap);
    for (int a = 0; a < S->ngroups; a++) {
      for (int k = 0; k < pairs[a].n; k++) {
        int b = pairs[a].v[k];
        if (S->groups[a].dead || S->groups[b].dead || S->groups[a].is_extern || S->groups[b].is_extern)
          continue;
        double sc = score_fusion(S, a, b);
        if (sc <= 0)
          continue;
        if (n == cap)
          c = coil_xrealloc(c, sizeof *c * (size_t)(cap *= 2));
        c[n++] = (candidate){a, b, sc, abs(S->groups[b].members[0] - S->groups[a].members[0])};
      }
      coil_xfree(pairs[a].v);
    }
    coil_xfree(pairs);
    qsort(c, (size_t)n, sizeof *c, cmp_candidate);
    int merged = 0;
    for (int i = 0; i < n; i++)
      if (coil_sched_can_fuse(S, c[i].a, c[i].b)) {
        merge(S, c[i].a, c[i].b);
        merged++;
      }
    coil_xfree(c);
    if (!merged)
      break;
  }
}

typedef struct {
  ints *succ;                /* per group: distinct successor groups */
  int *mark;                 /* per group: last group that listed it (for dedupe) */
  int cur;
} adjacency;

static void
add_succ(void *user, int h)
{
  adjacency *a = user;
  if (a->mark[h] != a->cur) {
    a->mark[h] = a->cur;
    ints *s = &a->succ[a->cur];
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 4;
      s->v = coil_xrealloc(s->v, sizeof(int) * (size_t)s->cap);
    }
    s->v[s->n++] = h;
  }
}

/* Kahn's algorithm over the group graph with a min-heap on each group's first node, so ties go
 * to the group that comes first in the program. */
static void
order_groups(schedule *S)
{
  int ng = S->ngroups;
  adjacency a = {coil_xcalloc((size_t)ng + 1, sizeof(ints)), coil_xmalloc(sizeof(int) * (size_t)(ng + 1)), 0};
  int *indeg = coil_xcalloc((size_t)ng + 1, sizeof(int)), *heap = coil_xmalloc(sizeof(int) * (size_t)(ng + 1));
  for (int g = 0; g < ng; g++)
    a.mark[g] = -1;
  for (int g = 0; g < ng; g++) {
    if (S->groups[g].dead)
      continue;
    a.cur = g;
    a.mark[g] = g; /* no self edges */
    for_successors(S, g, add_succ, &a);
    for (int i = 0; i < a.succ[g].n; i++)
      indeg[a.succ[g].v[i]]++;
  }
  int hn = 0;
#define KEY(x) (S->groups[x].members[0])
  for (int g = 0; g < ng; g++)
    if (!S->groups[g].dead && indeg[g] == 0) {
      int i = hn++;
      for (heap[i] = g; i > 0 && KEY(heap[(i - 1) / 2]) > KEY(heap[i]); i = (i - 1) / 2) {
        int t = heap[i];
        heap[i] = heap[(i - 1) / 2];
        heap[(i - 1) / 2] = t;
      }
    }
  S->order = coil_xmalloc(sizeof(int) * (size_t)(ng + 1));
  S->norder = 0;
  while (hn) {
    int best = heap[0];
    heap[0] = heap[--hn];
    for (int i = 0;;) { /* sift down */
      int l = 2 * i + 1, r = l + 1, m = i;
      if (l < hn && KEY(heap[l]) < KEY(heap[m]))
        m = l;
      if (r < hn && KEY(heap[r]) < KEY(heap[m]))
        m = r;
      if (m == i)
        break;
      int t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
    S->groups[best].order = S->norder;
    S->order[S->norder++] = best;
    for (int k = 0; k < a.succ[best].n; k++) {
      int g = a.succ[best].v[k];
      if (--indeg[g] == 0) {
        int i = hn++;
        for (heap[i] = g; i > 0 && KEY(heap[(i - 1) / 2]) > KEY(heap[i]); i = (i - 1) / 2) {
          int t = heap[i];
          heap[i] = heap[(i - 1) / 2];
          heap[(i - 1) / 2] = t;
        }
      }
    }
  }
#undef KEY
  for (int g = 0; g < ng; g++)
    coil_xfree(a.succ[g].v);
  coil_xfree(a.succ), coil_xfree(a.mark), coil_xfree(indeg), coil_xfree(heap);
}

int
coil_sched_build(schedule *S, lowering *L, bool do_fuse, coil_diag *d)
{
  memset(S, 0, sizeof *S);
  S->L = L;
  /* dead-code elimination: live = writes an output, or writes what a live node reads */
  for (int k = L->nnodes - 1; k >= 0; k--) {
    lnode *n = &L->nodes[k];
    ints w = {0};
    node_writes(n, &w);
    for (int i = 0; i < w.n; i++)
      n->live = n->live || L->bufs[w.v[i]].is_output;
    coil_xfree(w.v);
    if (!n->live)
      continue;
    ints r = {0};
    node_reads(L, n, &r);
    for (int i = 0; i < r.n; i++)
      if (L->bufs[r.v[i]].kind == LB_COMPUTED && L->bufs[r.v[i]].node >= 0)
        L->nodes[L->bufs[r.v[i]].node].live = true;
    coil_xfree(r.v);
  }
  S->reads = coil_xcalloc((size_t)L->nnodes + 1, sizeof *S->reads);
  S->writes = coil_xcalloc((size_t)L->nnodes + 1, sizeof *S->writes);
  S->readers = coil_xcalloc((size_t)L->nbufs + 1, sizeof *S->readers);
  for (int k = 0; k < L->nnodes; k++) {
    if (!L->nodes[k].live)
      continue;
    node_reads(L, &L->nodes[k], &S->reads[k]);
    node_writes(&L->nodes[k], &S->writes[k]);
    for (int i = 0; i < S->reads[k].n; i++) {
      L->bufs[S->reads[k].v[i]].users++;
      push(&S->readers[S->reads[k].v[i]], k);
    }
  }
  S->groups = coil_xcalloc((size_t)L->nnodes + 1, sizeof *S->groups);
  for (int k = 0; k < L->nnodes; k++) {
    if (!L->nodes[k].live)
      continue;
    L->nodes[k].group = S->ngroups;
    group_init(S, &S->groups[S->ngroups++], k);
  }
  if (do_fuse)
    fuse(S);
  order_groups(S);
  int live = 0;
  for (int g = 0; g < S->ngroups; g++)
    live += !S->groups[g].dead;
  if (S->norder != live)
    return coil_diag_set(d, "internal: the fused groups have a cycle (%d of %d ordered)", S->norder, live);
  return 0;
}

void
coil_sched_free(schedule *S)
{
  for (int g = 0; g < S->ngroups; g++)
    coil_xfree(S->groups[g].members);
  for (int k = 0; S->reads && k < S->L->nnodes; k++) {
    coil_xfree(S->reads[k].v);
    coil_xfree(S->writes[k].v);
  }
  for (int b = 0; S->readers && b < S->L->nbufs; b++)
    coil_xfree(S->readers[b].v);
  coil_xfree(S->reads);
  coil_xfree(S->writes);
  coil_xfree(S->readers);
  coil_xfree(S->groups);
  coil_xfree(S->order);
}

/* ---- dumps ---- */

static void
dump_expr(const lowering *L, const lexpr *e, coil_strbuf *b, int depth)
{
  if (depth > 12) {
    coil_strbuf_puts(b, "...");
    return;
  }
  switch (e->kind) {
  case LX_LOAD:
    coil_strbuf_printf(b, "load(t%d[", e->buffer);
    coil_sym_print(L->sym, e->index, COIL_SYM_PY_SYNTAX, b);
    coil_strbuf_puts(b, "]");
    for (int i = 0; i < e->nargs; i++) { /* the indirect values its index uses */
      coil_strbuf_puts(b, ", ");
      dump_expr(L, e->args[i], b, depth + 1);
    }
    coil_strbuf_puts(b, ")");
    return;
  case LX_INDIRECT:
    coil_strbuf_puts(b, "indirect(");
    coil_sym_print(L->sym, e->index, COIL_SYM_PY_SYNTAX, b);
    coil_strbuf_puts(b, " = ");
    dump_expr(L, e->args[0], b, depth + 1);
    coil_strbuf_puts(b, " < ");
    coil_sym_print(L->sym, e->bound, COIL_SYM_PY_SYNTAX, b);
    coil_strbuf_puts(b, ")");
    return;
  case LX_INDEX:
    coil_strbuf_puts(b, "index(");
    coil_sym_print(L->sym, e->index, COIL_SYM_PY_SYNTAX, b);
    coil_strbuf_puts(b, ")");
    return;
  case LX_CONST:
    if (coil_dtype_is_float(e->dtype))
      coil_strbuf_double(b, e->f);
    else
      coil_strbuf_printf(b, "%lld", (long long)e->i);
    return;
  case LX_OP:
    coil_strbuf_printf(b, "%s%s%s(", coil_kop_name(e->op), e->op == COIL_KOP_CAST ? "." : "",
                       e->op == COIL_KOP_CAST ? coil_dtype_name(e->dtype) : "");
    for (int i = 0; i < e->nargs; i++) {
      if (i)
        coil_strbuf_puts(b, ", ");
      dump_expr(L, e->args[i], b, depth + 1);
    }
    coil_strbuf_puts(b, ")");
    return;
  }
}

static void
dump_node(const lowering *L, int k, coil_strbuf *b)
{
  const lnode *n = &L->nodes[k];
  ints r = {0};
  node_reads(L, n, &r);
  if (n->kind == LN_EXTERN) {
    coil_strbuf_printf(b, "node %d: extern %s -> t%d", k, n->op, n->out);
  } else {
    coil_strbuf_printf(b, "node %d: %s", k, n->kind == LN_POINTWISE ? "pointwise" : n->kind == LN_SCATTER ? "scatter"
                                                     : n->scan ? "scan " : "reduction ");
    if (n->kind == LN_SCATTER && n->mode != COIL_STORE_PLAIN)
      coil_strbuf_printf(b, " %s", coil_store_mode_name(n->mode));
    if (n->kind == LN_REDUCTION)
      coil_strbuf_puts(b, coil_reduction_name(n->reduction));
    coil_strbuf_printf(b, " -> t%d, sizes [", n->out);
    for (int i = 0; i < n->rank; i++) {
      if (i)
        coil_strbuf_puts(b, ", ");
      if (n->kind == LN_REDUCTION && n->red[i])
        coil_strbuf_puts(b, "r:");
      coil_sym_print(L->sym, n->sizes[i], COIL_SYM_PY_SYNTAX, b);
    }
    coil_strbuf_puts(b, "]");
  }
  coil_strbuf_puts(b, ", reads");
  for (int i = 0; i < r.n; i++)
    coil_strbuf_printf(b, " t%d", r.v[i]);
  if (!r.n)
    coil_strbuf_puts(b, " nothing");
  coil_strbuf_printf(b, "  (%s)\n", n->origins ? n->origins : "");
  coil_xfree(r.v);
  if (n->kind != LN_EXTERN) {
    coil_strbuf_puts(b, "    ");
    dump_expr(L, n->body, b, 0);
    coil_strbuf_puts(b, "\n    store at ");
    coil_sym_print(L->sym, n->store, COIL_SYM_PY_SYNTAX, b);
    for (int i = 0; n->kind == LN_SCATTER && i < n->nstore_ind; i++) {
      coil_strbuf_puts(b, ", ");
      dump_expr(L, n->store_ind[i], b, 1);
    }
    if (n->kind == LN_SCATTER)
      coil_strbuf_printf(b, " (starting from t%d)", n->init);
    coil_strbuf_puts(b, "\n");
  }
}

void
coil_sched_dump(const schedule *S, bool groups, coil_strbuf *out)
{
  const lowering *L = S->L;
  /* t0, t1, ... are the lowering's tensors; the graph's inputs come first */
  for (int b = 0; b < L->nbufs; b++)
    if (L->bufs[b].kind == LB_INPUT)
      coil_strbuf_printf(out, "# t%d = %%%s (input)\n", b, L->g->inputs[L->bufs[b].input]->name);
  if (!groups) {
    for (int k = 0; k < L->nnodes; k++)
      if (L->nodes[k].live)
        dump_node(L, k, out);
    return;
  }
  for (int i = 0; i < S->norder; i++) {
    const sgroup *g = &S->groups[S->order[i]];
    coil_strbuf_printf(out, "group %d: %s, %d node%s\n", i,
                       g->is_extern ? "extern" : g->has_reduction ? "reduction kernel" : "pointwise kernel",
                       g->nmembers, g->nmembers == 1 ? "" : "s");
    for (int m = 0; m < g->nmembers; m++) {
      coil_strbuf_puts(out, "  ");
      dump_node(L, g->members[m], out);
    }
  }
}
