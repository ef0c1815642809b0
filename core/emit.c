/* emit.c — writes the Wrapper IR for a schedule: the input signature with its symbols and
 * guards, one kernel per fused group (its members' bodies as SSA, loads of buffers written
 * inside the group replaced by the values themselves), extern calls with strided views, and
 * the memory plan: a buffer is allocated before its first write, freed after its last read,
 * and a dead buffer of the same dtype and element count is reused instead of allocating.
 * Buffers that only live inside one kernel are never allocated. A scatter kernel writes the
 * storage of the buffer its node starts from (the copy of self), which nothing reads after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

typedef struct {
  schedule *S;
  lowering *L;
  coil_wir_program *p;
  int *last_use;             /* per lbuf: last group position that reads it */
  bool *donated;             /* per lbuf: its storage went on to hold a kernel's output */
  int *views;                /* per lview: its Wrapper IR buffer, or -1 */
  int *pool;                 /* freed Wrapper IR buffers available for reuse */
  int npool;
  int64_t live_bytes, peak;
  bool sizes_known;
  int too_large;             /* a Wrapper IR buffer whose bytes, or the sum of the live ones,
                                exceed INT64_MAX, else -1 */
  int nbuf, nview;           /* name counters */
  coil_diag *d;
} emitter;

static const coil_sym *
K(emitter *E, int64_t v)
{
  return coil_sym_const(E->p->sym, v);
}

/* An expression of the lowering, in the program's symbols. */
static const coil_sym *
imp(emitter *E, const coil_sym *s)
{
  return coil_sym_import(E->p->sym, E->L->sym, s);
}

static void
imp_layout(emitter *E, int rank, const coil_sym *const *sizes, const coil_sym *const *strides,
           coil_buffer *w)
{
  for (int i = 0; i < rank; i++) {
    w->sizes[i] = imp(E, sizes[i]);
    w->strides[i] = imp(E, strides[i]);
  }
}

static void
line(emitter *E, coil_line l)
{
  coil_wir_add_line(E->p, &l);
}

static const coil_sym *
numel(emitter *E, int rank, const coil_sym *const *sizes)
{
  const coil_sym *n = K(E, 1);
  for (int i = 0; i < rank; i++)
    n = coil_sym_mul(E->p->sym, n, sizes[i]);
  return n;
}

static void
account(emitter *E, const coil_buffer *b, int sign)
{
  int64_t n;
  if (!coil_sym_is_const(numel(E, b->rank, b->sizes), &n)) {
    E->sizes_known = false;
    return;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, (int64_t)coil_dtype_size(b->dtype), &bytes) ||
      __builtin_add_overflow(E->live_bytes, sign * bytes, &E->live_bytes)) {
    if (E->too_large < 0)
      E->too_large = (int)(b - E->p->buffers);
    return;
  }
  if (E->live_bytes > E->peak)
    E->peak = E->live_bytes;
}

/* Storage for lbuf b: a dead buffer of the same dtype and size, else a new allocation. */
static int
allocate(emitter *E, int b)
{
  const lbuf *lb = &E->L->bufs[b];
  coil_buffer w = {.kind = COIL_BUF_ALLOC, .dtype = lb->dtype, .rank = lb->rank, .base = -1};
  char name[32];
  snprintf(name, sizeof name, "buf%d", E->nbuf++);
  w.name = name;
  imp_layout(E, lb->rank, lb->sizes, lb->strides, &w);
  const coil_sym *want = numel(E, w.rank, w.sizes);
  for (int i = 0; i < E->npool; i++) {
    const coil_buffer *dead = &E->p->buffers[E->pool[i]];
    if (dead->dtype == lb->dtype && coil_sym_cmp(numel(E, dead->rank, dead->sizes), want) == 0) {
      w.kind = COIL_BUF_REUSE;
      w.base = E->pool[i];
      E->pool[i] = E->pool[--E->npool];
      break;
    }
  }
  int id = coil_wir_add_buffer(E->p, &w);
  E->L->bufs[b].wir = id;
  line(E, (coil_line){.kind = w.kind == COIL_BUF_REUSE ? COIL_LINE_REUSE : COIL_LINE_ALLOC, .buffer = id});
  if (w.kind == COIL_BUF_ALLOC)
    account(E, &E->p->buffers[id], +1);
  return id;
}

static void
release(emitter *E, int b)
{
  const lbuf *lb = &E->L->bufs[b];
  if (lb->kind != LB_COMPUTED || lb->is_output || lb->wir < 0 || E->donated[b])
    return;
  line(E, (coil_line){.kind = COIL_LINE_FREE, .buffer = lb->wir});
  E->pool[E->npool++] = lb->wir;
}

/* ---- the input signature ---- */

static void
emit_inputs(emitter *E)
{
  lowering *L = E->L;
  const coil_graph *g = L->g;
  int nsym = coil_sym_nvars(g->sym);
  int *def_buf = coil_xmalloc(sizeof(int) * (size_t)(nsym + 1)), *def_dim = coil_xmalloc(sizeof(int) * (size_t)(nsym + 1));
  for (int v = 0; v < nsym; v++)
    def_buf[v] = def_dim[v] = -1;
  for (int b = 0; b < L->nbufs; b++) {
    lbuf *lb = &L->bufs[b];
    if (lb->kind != LB_INPUT)
      continue;
    coil_buffer w = {.kind = COIL_BUF_INPUT, .dtype = lb->dtype, .rank = lb->rank, .base = -1};
    char name[32];
    snprintf(name, sizeof name, "arg%d", lb->input);
    w.name = name;
    imp_layout(E, lb->rank, lb->sizes, lb->strides, &w);
    lb->wir = coil_wir_add_buffer(E->p, &w);
    const coil_value *v = g->inputs[lb->input];
    coil_wir_add_input(E->p, lb->wir, v->name, v->kind != COIL_VAL_INPUT);
  }
  /* each size symbol is defined by its first appearance as a whole dimension of an input;
   * every other dimension is guarded by an assert (constants, repeats, expressions) */
  for (int pass = 0; pass < 2; pass++)
    for (int b = 0; b < L->nbufs; b++) {
      const lbuf *lb = &L->bufs[b];
      if (lb->kind != LB_INPUT)
        continue;
      const coil_type *t = &g->inputs[lb->input]->type;
      for (int k = 0; k < t->rank; k++) {
        const coil_sym *s = t->dims[k];
        bool defines = s->kind == COIL_SYM_VAR && def_buf[s->var] == b && def_dim[s->var] == k;
        if (pass == 0 && s->kind == COIL_SYM_VAR && def_buf[s->var] < 0) {
          def_buf[s->var] = b;
          def_dim[s->var] = k;
          line(E, (coil_line){.kind = COIL_LINE_SYMBOL, .sym = imp(E, L->graph_syms[s->var]), .buffer = lb->wir, .dim = k});
        } else if (pass == 1 && !defines) {
          line(E, (coil_line){.kind = COIL_LINE_ASSERT, .assert_kind = COIL_ASSERT_SIZE, .buffer = lb->wir, .dim = k,
                              .value = imp(E, lb->sizes[k])});
        }
      }
      for (int k = 0; pass == 1 && k < lb->rank; k++) {
        int64_t one;
        if (coil_sym_is_const(lb->sizes[k], &one) && one == 1)
          continue; /* any stride is fine for a size-1 dim */
        line(E, (coil_line){.kind = COIL_LINE_ASSERT, .assert_kind = COIL_ASSERT_STRIDE, .buffer = lb->wir, .dim = k,
                            .value = imp(E, lb->strides[k])});
      }
    }
  coil_xfree(def_buf);
  coil_xfree(def_dim);
}

/* ---- kernels ---- */

typedef struct {
  int buffer;                /* lbuf */
  const coil_sym *index;     /* where it was written, in loop variables */
  int value;
} internal;

typedef struct {
  emitter *E;
  const sgroup *g;
  coil_kernel k;
  int ninsts, capinsts;
  coil_kinst *insts;
  int *cse;                  /* open-addressing table of shareable insts (index + 1; 0 = empty) */
  size_t capcse;             /* a power of two, or 0 */
  int nparams;
  coil_kparam params[2 * COIL_KERNEL_MAX_BUFFERS];
  int param_buf[2 * COIL_KERNEL_MAX_BUFFERS]; /* lbuf per param */
  int ninternal;
  internal internals[2 * 64];
  const coil_sym *loopvar[COIL_MAX_RANK]; /* per space dim */
} kbuild;

/* The hash of what makes two instructions the same value (an index only by identity: equal
 * indices that are different nodes meet in the same chain through the other fields). */
static size_t
inst_hash(const coil_kinst *in)
{
  uint64_t fb;
  memcpy(&fb, &in->f, sizeof fb);
  uint64_t h = (uint64_t)in->op * 0x9e3779b97f4a7c15ull ^ (uint64_t)in->dtype << 8 ^ (uint64_t)in->param << 16;
  const uint64_t parts[6] = {(uint64_t)in->args[0], (uint64_t)in->args[1], (uint64_t)in->args[2],
                             (uint64_t)in->red, fb, (uint64_t)in->i};
  for (int k = 0; k < 6; k++)
    h = (h ^ parts[k]) * 0x100000001b3ull;
  return (size_t)(h ^ h >> 29);
}

static bool
same_inst(const coil_kinst *o, const coil_kinst *in)
{
  return o->op == in->op && o->dtype == in->dtype && o->args[0] == in->args[0] &&
         o->args[1] == in->args[1] && o->args[2] == in->args[2] && o->param == in->param &&
         o->red == in->red && memcmp(&o->f, &in->f, sizeof o->f) == 0 && o->i == in->i &&
         ((!o->index && !in->index) || (o->index && in->index && coil_sym_cmp(o->index, in->index) == 0));
}

/* Appends an instruction, or returns the one already computing the same value (common
 * subexpressions: the same op on the same values; stores and reductions are never shared). A
 * hash table of the instructions keeps this constant time, so a kernel of N instructions is
 * built in O(N). */
static int
add_inst(kbuild *kb, coil_kinst in)
{
  bool shareable = in.op != COIL_KOP_STORE && in.op != COIL_KOP_REDUCE;
  size_t mask = kb->capcse - 1, at = 0;
  if (shareable && kb->capcse) {
    for (at = inst_hash(&in) & mask; kb->cse[at]; at = (at + 1) & mask)
      if (same_inst(&kb->insts[kb->cse[at] - 1], &in))
        return kb->cse[at] - 1;
  }
  if (kb->ninsts == kb->capinsts) {
    kb->capinsts = kb->capinsts ? 2 * kb->capinsts : 64;
    kb->insts = coil_xrealloc(kb->insts, sizeof(coil_kinst) * (size_t)kb->capinsts);
  }
  kb->insts[kb->ninsts] = in;
  int id = kb->ninsts++;
  if (!shareable)
    return id;
  if (2 * (size_t)kb->ninsts > kb->capcse) { /* grow and rehash every shareable instruction */
    coil_xfree(kb->cse);
    kb->capcse = kb->capcse ? 2 * kb->capcse : 256;
    while (2 * (size_t)kb->ninsts > kb->capcse)
      kb->capcse *= 2;
    kb->cse = coil_xcalloc(kb->capcse, sizeof *kb->cse);
    mask = kb->capcse - 1;
    for (int i = 0; i < kb->ninsts; i++) {
      if (kb->insts[i].op == COIL_KOP_STORE || kb->insts[i].op == COIL_KOP_REDUCE)
        continue;
      size_t j = inst_hash(&kb->insts[i]) & mask;
      while (kb->cse[j])
        j = (j + 1) & mask;
      kb->cse[j] = i + 1;
    }
    return id;
  }
  kb->cse[at] = id + 1;
  return id;
}

static int
param_for(kbuild *kb, int b, bool out)
{
  for (int i = 0; i < kb->nparams; i++)
    if (kb->param_buf[i] == b && kb->params[i].is_output == out)
      return i;
  int n = 0;
  for (int i = 0; i < kb->nparams; i++)
    n += kb->params[i].is_output == out;
  if (kb->nparams == 2 * COIL_KERNEL_MAX_BUFFERS)
    abort(); /* cannot happen: fusion keeps a kernel's buffers within COIL_KERNEL_MAX_BUFFERS */
  char name[16];
  snprintf(name, sizeof name, "%s%d", out ? "out" : "in", n);
  kb->params[kb->nparams] = (coil_kparam){coil_arena_strdup(kb->E->p->arena, name), kb->E->L->bufs[b].dtype, out};
  kb->param_buf[kb->nparams] = b;
  return kb->nparams++;
}

static int emit_expr(kbuild *kb, const lexpr *e);

/* index with the variables q of the n indirect values ind[] replaced by the variables iN of
 * their instructions, emitted first */
static const coil_sym *
bind_indirect(kbuild *kb, const coil_sym *index, int n, const lexpr *const *ind)
{
  int vars[3];
  const coil_sym *repl[3];
  for (int i = 0; i < n && i < 3; i++) {
    int v = emit_expr(kb, ind[i]);
    char name[24];
    snprintf(name, sizeof name, "i%d", v);
    int64_t hi;
    bool known = coil_sym_is_const(ind[i]->bound, &hi) && hi > 0;
    repl[i] = coil_sym_var(kb->E->L->sym, name);
    coil_sym_set_range(kb->E->L->sym, repl[i], 0, known ? hi - 1 : INT64_MAX);
    coil_sym_set_range(kb->E->p->sym, coil_wir_indirect_var(kb->E->p->sym, v), 0, known ? hi - 1 : INT64_MAX);
    vars[i] = ind[i]->index->var;
  }
  return coil_sym_subst(kb->E->L->sym, index, n < 3 ? n : 3, vars, repl);
}

static int
emit_expr(kbuild *kb, const lexpr *e)
{
  coil_kinst in = {.dtype = e->dtype, .args = {-1, -1, -1}, .param = -1, .red = 0};
  switch (e->kind) {
  case LX_LOAD: {
    const coil_sym *index = e->index;
    if (e->nargs) { /* each indirect value first: variable q of the lowering becomes iN */
      index = bind_indirect(kb, index, e->nargs, e->args);
    } else {
      for (int i = 0; i < kb->ninternal; i++)
        if (kb->internals[i].buffer == e->buffer && coil_sym_cmp(kb->internals[i].index, e->index) == 0)
          return kb->internals[i].value;
    }
    in.op = COIL_KOP_LOAD;
    in.param = param_for(kb, e->buffer, false);
    in.index = imp(kb->E, index);
    return add_inst(kb, in);
  }
  case LX_INDIRECT:
    in.op = COIL_KOP_INDIRECT;
    in.args[0] = emit_expr(kb, e->args[0]);
    in.index = imp(kb->E, e->bound);
    return add_inst(kb, in);
  case LX_CONST:
    in.op = COIL_KOP_CONST;
    in.f = e->f;
    in.i = e->i;
    return add_inst(kb, in);
  case LX_INDEX:
    in.op = COIL_KOP_INDEX;
    in.index = imp(kb->E, e->index);
    return add_inst(kb, in);
  case LX_OP:
    in.op = e->op;
    for (int i = 0; i < e->nargs; i++)
      in.args[i] = emit_expr(kb, e->args[i]);
    return add_inst(kb, in);
  }
  return -1;
}

/* Is buffer b an output, or read by a node outside group gi? */
static bool
needed_outside(const emitter *E, int b, int gi)
{
  if (E->L->bufs[b].is_output)
    return true;
  const sched_ints *r = &E->S->readers[b];
  for (int k = 0; k < r->n; k++)
    if (E->L->nodes[r->v[k]].group != gi)
      return true;
  return false;
}

/* "aten._softmax.default" -> "_softmax" */
static void
short_name(const char *op, char *out, size_t cap)
{
  const char *a = strchr(op, '.');
  const char *b = a ? strchr(a + 1, '.') : NULL;
  const char *from = a && b ? a + 1 : op;
  size_t n = a && b ? (size_t)(b - a - 1) : strlen(op);
  if (n >= cap)
    n = cap - 1; /* names are cut, never overflow */
  memcpy(out, from, n);
  out[n] = 0;
}

/* In place: a pointwise kernel may write output param `out` into the storage of input param
 * `in` when this kernel is the input's last reader, the two have the same dtype and sizes, and
 * every load of the input is at the very index the output is stored (each point reads its
 * element before writing it, and no point reads another's). */
static bool
can_write_in_place(const emitter *E, const kbuild *kb, int in, int out, int pos)
{
  const lowering *L = E->L;
  int ib = kb->param_buf[in], ob = kb->param_buf[out];
  const lbuf *a = &L->bufs[ib], *b = &L->bufs[ob];
  if (a->kind != LB_COMPUTED || a->is_output || a->wir < 0 || E->donated[ib] || E->last_use[ib] != pos ||
      a->dtype != b->dtype)
    return false;
  const coil_buffer *w = &E->p->buffers[a->wir];
  if (w->kind != COIL_BUF_ALLOC && w->kind != COIL_BUF_REUSE)
    return false;
  const coil_sym *store = NULL;
  for (int i = 0; i < kb->ninsts; i++)
    if (kb->insts[i].op == COIL_KOP_STORE && kb->insts[i].param == out)
      store = kb->insts[i].index;
  if (!store)
    return false;
  const coil_sym *na = coil_sym_const(E->p->sym, 1), *nb = na;
  for (int i = 0; i < w->rank; i++)
    na = coil_sym_mul(E->p->sym, na, w->sizes[i]);
  for (int i = 0; i < b->rank; i++)
    nb = coil_sym_mul(E->p->sym, nb, coil_sym_import(E->p->sym, L->sym, b->sizes[i]));
  if (coil_sym_cmp(na, nb) != 0 || w->rank != b->rank)
    return false;
  for (int i = 0; i < b->rank; i++) /* the storage keeps its sizes: externs and views read them */
    if (coil_sym_cmp(w->sizes[i], coil_sym_import(E->p->sym, L->sym, b->sizes[i])) != 0)
      return false;
  for (int i = 0; i < kb->ninsts; i++)
    if (kb->insts[i].op == COIL_KOP_LOAD && kb->insts[i].param == in && coil_sym_cmp(kb->insts[i].index, store) != 0)
      return false;
  return true;
}

static int
build_kernel(emitter *E, int gi, int pos, int *stored, int *nstored)
{
  lowering *L = E->L;
  const sgroup *g = &E->S->groups[gi];
  kbuild kb = {.E = E, .g = g};
  coil_kernel *k = &kb.k;
  /* loop variables: kept dims are x0.., reduced dims r0.. */
  for (int i = 0; i < g->rank; i++) {
    char name[16];
    bool r = g->red[i];
    snprintf(name, sizeof name, "%c%d", r ? 'r' : 'x', r ? k->nr : k->nx);
    int64_t n;
    int64_t hi = coil_sym_is_const(g->sizes[i], &n) ? (n > 0 ? n - 1 : 0) : INT64_MAX;
    const coil_sym *v = coil_sym_var(L->sym, coil_arena_strdup(L->arena, name));   /* to substitute */
    const coil_sym *pv = coil_sym_var(E->p->sym, coil_arena_strdup(E->p->arena, name)); /* to keep */
    coil_sym_set_range(L->sym, v, 0, hi);
    coil_sym_set_range(E->p->sym, pv, 0, hi);
    kb.loopvar[i] = v;
    if (r) {
      k->rvars[k->nr] = pv;
      k->rsize[k->nr++] = imp(E, g->sizes[i]);
    } else {
      k->xvars[k->nx] = pv;
      k->xsize[k->nx++] = imp(E, g->sizes[i]);
    }
  }
  *nstored = 0;
  coil_strbuf names = {0}, origins = {0};
  char seen[8][48];
  int nseen = 0;
  for (int m = 0; m < g->nmembers; m++) {
    const lnode *n = &L->nodes[g->members[m]];
    int vars[COIL_MAX_RANK];
    const coil_sym *repl[COIL_MAX_RANK];
    coil_sched_map(E->S, g, n, kb.loopvar, repl);
    for (int i = 0; i < n->rank; i++)
      vars[i] = n->dvars[i]->var;
    const lexpr *body = lx_subst(L, n->body, n->rank, vars, repl);
    const coil_sym *store = coil_sym_subst(L->sym, n->store, n->rank, vars, repl);
    int v = emit_expr(&kb, body);
    if (n->kind == LN_SCATTER) { /* alone in its group: a store through its index values */
      const lexpr *ind[3];
      for (int i = 0; i < n->nstore_ind; i++)
        ind[i] = lx_subst(L, n->store_ind[i], n->rank, vars, repl);
      store = bind_indirect(&kb, store, n->nstore_ind, ind);
      int prm = param_for(&kb, n->out, true);
      add_inst(&kb, (coil_kinst){.op = COIL_KOP_STORE, .dtype = L->bufs[n->out].dtype, .args = {v, -1, -1},
                                 .param = prm, .index = imp(E, store), .mode = n->mode});
      stored[(*nstored)++] = n->out;
    } else if (n->kind == LN_REDUCTION) {
      coil_dtype dt = n->reduction == COIL_REDUCE_ARGMAX || n->reduction == COIL_REDUCE_ARGMIN ? COIL_I64 : L->bufs[n->out].dtype;
      v = add_inst(&kb, (coil_kinst){.op = n->scan ? COIL_KOP_SCAN : COIL_KOP_REDUCE, .dtype = dt, .args = {v, -1, -1},
                                     .param = -1, .red = n->reduction});
    }
    if (kb.ninternal < 128 && n->kind != LN_SCATTER)
      kb.internals[kb.ninternal++] = (internal){n->out, store, v};
    if (n->kind != LN_SCATTER && needed_outside(E, n->out, gi)) {
      int prm = param_for(&kb, n->out, true);
      add_inst(&kb, (coil_kinst){.op = COIL_KOP_STORE, .dtype = L->bufs[n->out].dtype, .args = {v, -1, -1}, .param = prm, .index = imp(E, store)});
      stored[(*nstored)++] = n->out;
    }
    for (const char *o = n->origins; o && *o;) { /* each source op once, in order */
      const char *end = strchr(o, ' ');
      size_t len = end ? (size_t)(end - o) : strlen(o);
      char op[128], sn[48];
      snprintf(op, sizeof op, "%.*s", (int)len, o);
      o = end ? end + 1 : o + len;
      if (strcmp(op, "output") == 0)
        continue;
      short_name(op, sn, sizeof sn);
      bool dup = false;
      for (int i = 0; i < nseen; i++)
        dup = dup || strcmp(seen[i], sn) == 0;
      if (dup || nseen == 8)
        continue;
      snprintf(seen[nseen++], sizeof seen[0], "%s", sn);
      if (nseen <= 4)
        coil_strbuf_printf(&names, "_%s", sn);
      coil_strbuf_printf(&origins, "%s%s", origins.len ? " " : "", op);
    }
  }
  bool small_r = false;
  if (k->nr) {
    const coil_sym *rn = numel(E, k->nr, k->rsize);
    int64_t v;
    small_r = coil_sym_is_const(rn, &v) && v <= 1024;
  }
  k->kind = !k->nr ? COIL_KERNEL_POINTWISE : small_r ? COIL_KERNEL_PERSISTENT : COIL_KERNEL_REDUCTION;
  char name[160];
  snprintf(name, sizeof name, "coil_%s_fused%s_%d", k->kind == COIL_KERNEL_POINTWISE ? "poi" : small_r ? "per" : "red",
           names.len ? names.s : "_copy", E->p->nkernels);
  k->name = name;
  k->source_ops = origins.len ? origins.s : NULL;
  k->nparams = kb.nparams;
  k->params = kb.params;
  k->ninsts = kb.ninsts;
  k->insts = kb.insts;
  /* size symbols used by the loop sizes and indices, in program order */
  int nv = coil_sym_nvars(E->p->sym);
  bool *used = coil_xcalloc((size_t)nv + 1, sizeof(bool));
  for (int i = 0; i < k->nx; i++)
    coil_sym_vars_used(k->xsize[i], used, nv);
  for (int i = 0; i < k->nr; i++)
    coil_sym_vars_used(k->rsize[i], used, nv);
  for (int i = 0; i < kb.ninsts; i++)
    if (kb.insts[i].index)
      coil_sym_vars_used(kb.insts[i].index, used, nv);
  int nsyms = 0;
  int ngs = coil_sym_nvars(L->g->sym);
  const coil_sym **syms = COIL_ARENA_ARRAY(E->p->arena, const coil_sym *, ngs + 1); /* any number */
  for (int s = 0; s < ngs; s++) { /* size symbols in order: s0, s1, ... */
    char want[16];
    snprintf(want, sizeof want, "s%d", s);
    const coil_sym *ps = coil_sym_var(E->p->sym, coil_arena_strdup(E->p->arena, want));
    if (ps->var < nv && used[ps->var])
      syms[nsyms++] = ps;
  }
  k->nsyms = nsyms;
  k->syms = syms;
  int id = coil_wir_add_kernel(E->p, k);
  coil_xfree(used);
  coil_strbuf_free(&names);
  coil_strbuf_free(&origins);
  /* the call: params in order, inputs by their buffers, outputs allocated now */
  int args[2 * COIL_KERNEL_MAX_BUFFERS];
  for (int i = 0; i < kb.nparams; i++)
    args[i] = kb.param_buf[i];
  for (int i = 0; i < kb.nparams; i++) {
    if (!kb.params[i].is_output)
      continue;
    const lbuf *ob = &L->bufs[args[i]];
    if (ob->node >= 0 && L->nodes[ob->node].kind == LN_SCATTER) { /* in place: the storage of the
                                                                      buffer it starts from */
      int init = L->nodes[ob->node].init;
      E->donated[init] = true;
      L->bufs[args[i]].wir = L->bufs[init].wir;
      continue;
    }
    int donor = -1;
    /* in place into an input's storage; not when split across backends (partition.h), where the
     * input may live on another backend */
    bool split = L->opts && L->opts->placement;
    for (int j = 0; j < kb.nparams && donor < 0 && k->kind == COIL_KERNEL_POINTWISE && !split; j++)
      if (!kb.params[j].is_output && can_write_in_place(E, &kb, j, i, pos))
        donor = j;
    if (donor >= 0) {
      E->donated[args[donor]] = true;
      L->bufs[args[i]].wir = L->bufs[args[donor]].wir;
    } else {
      allocate(E, args[i]);
    }
  }
  int wargs[2 * COIL_KERNEL_MAX_BUFFERS];
  for (int i = 0; i < kb.nparams; i++)
    wargs[i] = L->bufs[args[i]].wir;
  line(E, (coil_line){.kind = COIL_LINE_COMMENT, .text = E->p->kernels[id].source_ops ? E->p->kernels[id].source_ops : "copy"});
  line(E, (coil_line){.kind = COIL_LINE_KERNEL_CALL, .kernel = id, .nargs = kb.nparams, .args = wargs});
  coil_xfree(kb.insts);
  coil_xfree(kb.cse);
  return 0;
}

static int
view_buffer(emitter *E, int ref)
{
  if (ref >= 0)
    return E->L->bufs[ref].wir;
  int v = -1 - ref;
  if (E->views[v] >= 0)
    return E->views[v];
  const lview *lv = &E->L->views[v];
  coil_buffer w = {.kind = COIL_BUF_VIEW, .dtype = E->L->bufs[lv->buffer].dtype, .rank = lv->rank,
                   .base = E->L->bufs[lv->buffer].wir, .offset = imp(E, lv->offset)};
  char name[32];
  snprintf(name, sizeof name, "v%d", E->nview++);
  w.name = name;
  imp_layout(E, lv->rank, lv->sizes, lv->strides, &w);
  int id = coil_wir_add_buffer(E->p, &w);
  line(E, (coil_line){.kind = COIL_LINE_VIEW, .buffer = id});
  return E->views[v] = id;
}

static void
build_extern(emitter *E, const lnode *n)
{
  int *ins = COIL_ARENA_ARRAY(E->p->arena, int, n->nins + 1); /* cat takes any number */
  for (int i = 0; i < n->nins; i++)
    ins[i] = view_buffer(E, n->ins[i]);
  for (int i = 0; i < n->nouts; i++)
    allocate(E, n->outs[i]);
  int outs[8];
  for (int i = 0; i < n->nouts && i < 8; i++)
    outs[i] = E->L->bufs[n->outs[i]].wir;
  int first = outs[0];
  line(E, (coil_line){.kind = COIL_LINE_COMMENT, .text = n->origins});
  line(E, (coil_line){.kind = COIL_LINE_EXTERN_CALL, .op = n->op, .nargs = n->nins, .args = ins, .nouts = n->nouts,
                      .outs = outs, .nxparams = n->nxparams, .xparams = n->xparams});
  for (int i = 1; i < n->nouts; i++)
    line(E, (coil_line){.kind = COIL_LINE_MULTI_OUTPUT, .buffer = E->L->bufs[n->outs[i]].wir, .source = first, .element = i});
}

/* Output i is handed back in buffer w: its dtype and sizes must be the graph's type, and it must
 * be dense in row-major order (the caller's tensors are). A mismatch is a bug of the core, caught
 * here rather than as a wrong shape at run time. */
static int
check_output(emitter *E, int i, int w)
{
  const coil_value *v = E->L->g->outputs[i];
  const coil_type *t = &v->type;
  const coil_buffer *b = &E->p->buffers[w];
  const coil_sym *want[COIL_MAX_RANK], *stride = K(E, 1);
  bool ok = t->kind == COIL_TYPE_TENSOR && b->dtype == t->dtype && b->rank == t->rank;
  if (ok)
    coil_lower_sizes(E->L, t, want);
  for (int k = b->rank - 1; ok && k >= 0; k--) {
    int64_t n;
    const coil_sym *ws = imp(E, want[k]);
    bool unit = coil_sym_is_const(ws, &n) && n == 1;
    ok = coil_sym_cmp(b->sizes[k], ws) == 0 && (unit || coil_sym_cmp(b->strides[k], stride) == 0);
    stride = coil_sym_mul(E->p->sym, stride, ws);
  }
  if (ok)
    return 0;
  coil_strbuf got = {0};
  coil_strbuf_printf(&got, "%s %s[", b->name, coil_dtype_name(b->dtype));
  for (int k = 0; k < b->rank; k++) {
    coil_strbuf_puts(&got, k ? ", " : "");
    coil_sym_print(E->p->sym, b->sizes[k], COIL_SYM_PY_SYNTAX, &got);
  }
  coil_strbuf_puts(&got, "] stride [");
  for (int k = 0; k < b->rank; k++) {
    coil_strbuf_puts(&got, k ? ", " : "");
    coil_sym_print(E->p->sym, b->strides[k], COIL_SYM_PY_SYNTAX, &got);
  }
  coil_strbuf_puts(&got, "]");
  const coil_graph *g = E->L->g;
  bool node = v->kind == COIL_VAL_NODE;
  coil_diag_at(E->d, g->file, node ? g->nodes[v->index].line : 0, node ? g->nodes[v->index].col : 0,
               "internal: output %d is handed back as %s, not the graph's type (dense, row-major)",
               i, got.s);
  coil_strbuf_free(&got);
  return -1;
}

/* The memory plan's sizes do not fit 64 bits: the graph cannot run anywhere. */
static int
too_large(emitter *E)
{
  const coil_buffer *b = &E->p->buffers[E->too_large];
  coil_strbuf what = {0};
  coil_strbuf_printf(&what, "%s[", coil_dtype_name(b->dtype));
  for (int k = 0; k < b->rank; k++) {
    coil_strbuf_puts(&what, k ? ", " : "");
    coil_sym_print(E->p->sym, b->sizes[k], COIL_SYM_PY_SYNTAX, &what);
  }
  coil_strbuf_puts(&what, "]");
  coil_diag_at(E->d, E->L->g->file, 0, 0,
               "the graph needs more than 2^63 bytes of memory (at buffer %s: %s), expected "
               "tensors whose sizes in bytes fit in 64 bits",
               b->name, what.s);
  coil_strbuf_free(&what);
  return -1;
}

int
coil_emit_program(schedule *S, coil_wir_program *p, coil_diag *d)
{
  lowering *L = S->L;
  emitter E = {.S = S, .L = L, .p = p, .d = d, .sizes_known = true, .too_large = -1};
  E.last_use = coil_xcalloc((size_t)L->nbufs + 1, sizeof(int));
  E.donated = coil_xcalloc((size_t)L->nbufs + 1, sizeof(bool));
  E.views = coil_xmalloc(sizeof(int) * (size_t)(L->nviews + 1));
  E.pool = coil_xmalloc(sizeof(int) * (size_t)(L->nbufs + 1));
  for (int v = 0; v < L->nviews; v++)
    E.views[v] = -1;
  for (int b = 0; b < L->nbufs; b++)
    E.last_use[b] = -1;
  for (int k = 0; k < L->nnodes; k++) {
    if (!L->nodes[k].live)
      continue;
    int pos = S->groups[L->nodes[k].group].order;
    for (int i = 0; i < S->reads[k].n; i++)
      if (E.last_use[S->reads[k].v[i]] < pos)
        E.last_use[S->reads[k].v[i]] = pos;
  }
  sched_ints *dies = coil_xcalloc((size_t)S->norder + 1, sizeof *dies); /* per position: last reads */
  for (int b = 0; b < L->nbufs; b++) {
    int pos = E.last_use[b];
    if (pos < 0)
      continue;
    sched_ints *s = &dies[pos];
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 4;
      s->v = coil_xrealloc(s->v, sizeof(int) * (size_t)s->cap);
    }
    s->v[s->n++] = b;
  }
  emit_inputs(&E);
  for (int i = 0; i < S->norder; i++) {
    const sgroup *g = &S->groups[S->order[i]];
    int stored[128], nstored = 0;
    int first_line = p->nlines;
    if (g->is_extern) {
      const lnode *n = &L->nodes[g->members[0]];
      build_extern(&E, n);
      for (int k = 0; k < n->nouts; k++)
        stored[nstored++] = n->outs[k];
    } else {
      build_kernel(&E, S->order[i], i, stored, &nstored);
    }
    const coil_compile_options *o = L->opts;
    for (int l = first_line; o && o->work_line && l < p->nlines; l++) /* partial offload */
      if (p->lines[l].kind == COIL_LINE_KERNEL_CALL || p->lines[l].kind == COIL_LINE_EXTERN_CALL)
        o->work_line(o->work_user, l, g->members[0]);
    /* free what is read for the last time here, and what nobody reads after writing */
    for (int k = 0; k < dies[i].n; k++) {
      int b = dies[i].v[k];
      bool written_here = false;
      for (int q = 0; q < nstored; q++)
        written_here = written_here || stored[q] == b;
      if (!written_here)
        release(&E, b);
    }
    for (int q = 0; q < nstored; q++)
      if (E.last_use[stored[q]] <= i)
        release(&E, stored[q]);
  }
  for (int i = 0; i < L->ncopy_backs; i++) /* inputs written in place get their final values */
    line(&E, (coil_line){.kind = COIL_LINE_COPY_BACK, .buffer = L->bufs[L->copy_back_input[i]].wir,
                         .source = L->bufs[L->copy_back_buf[i]].wir});
  int *outs = coil_xmalloc(sizeof(int) * (size_t)(L->g->noutputs + 1)), rc = 0;
  for (int i = 0; i < L->g->noutputs && !rc; i++) {
    outs[i] = view_buffer(&E, L->outputs[i]);
    rc = check_output(&E, i, outs[i]);
  }
  if (!rc)
    line(&E, (coil_line){.kind = COIL_LINE_OUTPUT, .nargs = L->g->noutputs, .args = outs});
  coil_xfree(outs);
  if (!rc && E.too_large >= 0)
    rc = too_large(&E);
  E.p->peak_bytes = E.sizes_known ? E.peak : -1;
  for (int i = 0; i < S->norder; i++)
    coil_xfree(dies[i].v);
  coil_xfree(dies);
  coil_xfree(E.last_use);
  coil_xfree(E.donated);
  coil_xfree(E.views);
  coil_xfree(E.pool);
  return rc;
}
