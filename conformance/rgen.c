/* rgen.c — the random tier's generator (rgen.h), its driver: the statement builders and operand
 * choosers the op families share (rgen_int.h), rg_generate() choosing one op family at a time
 * (rgen_math.c, rgen_shape.c) and undoing an attempt that gave up, and what the tier and the
 * shrinker do with a graph: append, print, cut, replace, fill the inputs. */
#include "rgen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values and statements ---- */

static void
dim_text(rg_dim d, char *out, size_t n)
{
  if (d.m == 1)
    snprintf(out, n, "s0");
  else if (d.m)
    snprintf(out, n, "%d*s0", d.m);
  else
    snprintf(out, n, "%lld", (long long)d.c);
}

static int
add_val(rg_graph *g, const rg_val *v)
{
  if (g->nv == g->capv) {
    g->capv = g->capv ? 2 * g->capv : 32;
    g->v = realloc(g->v, sizeof *g->v * (size_t)g->capv);
    if (!g->v)
      abort();
  }
  g->v[g->nv] = *v;
  return g->nv++;
}

int
rg_new_input(rg_graph *g, coil_dtype dt, int rank, const rg_dim *d, double lo, double hi)
{
  rg_val v = {.dt = dt, .rank = rank, .lo = lo, .hi = hi, .exact = true, .contig = true, .stmt = -1};
  memcpy(v.d, d, sizeof *d * (size_t)rank);
  if (dt == COIL_BOOL)
    v.lo = 0, v.hi = 1;
  v.seed = next(&g->rng) | 1;
  return add_val(g, &v);
}

/* A value of an op's result: operand-independent fields set. */
rg_val
rg_result(coil_dtype dt, int rank, const rg_dim *d, double lo, double hi, bool exact, bool contig)
{
  rg_val v = {.dt = dt, .rank = rank, .lo = lo, .hi = hi, .exact = exact, .contig = contig, .stmt = -1};
  if (rank)
    memcpy(v.d, d, sizeof *d * (size_t)rank);
  if (dt == COIL_BOOL)
    v.lo = 0, v.hi = 1;
  if (dt == COIL_I64) /* integer ranges are whole numbers */
    v.lo = floor(v.lo), v.hi = ceil(v.hi);
  if (!is_fl(dt) && !(v.lo > -1e15 && v.hi < 1e15))
    v.lo = -1e15, v.hi = 1e15; /* an integer that may have wrapped: no op that needs a bound takes it */
  return v;
}

/* Adds a statement whose results are res[0..nres-1]; returns the first result's index. */
int
rg_emit(rg_graph *g, const char *text, int nres, rg_val *res)
{
  if (g->ns == g->caps) {
    g->caps = g->caps ? 2 * g->caps : 32;
    g->s = realloc(g->s, sizeof *g->s * (size_t)g->caps);
    if (!g->s)
      abort();
  }
  rg_stmt *s = &g->s[g->ns];
  s->text = strdup(text);
  s->first = g->nv;
  s->nres = nres;
  s->dead = false;
  for (int i = 0; i < nres; i++) {
    res[i].stmt = g->ns;
    add_val(g, &res[i]);
  }
  g->ns++;
  return s->first;
}

int
rg_emit1(rg_graph *g, const char *text, rg_val r)
{
  return rg_emit(g, text, 1, &r);
}

/* "[a, b, c]" of sizes (s0 multiples as -1 is the caller's business). */
void
rg_list_text(const int64_t *x, int n, char *out, size_t cap)
{
  size_t len = (size_t)snprintf(out, cap, "[");
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "", (long long)x[i]);
  if (len < cap)
    snprintf(out + len, cap - len, "]");
}

/* A dim written as given or, half the time, negative. */
int
rg_dim_arg(rg_graph *g, int d, int rank)
{
  return chance(g, 30) ? d - rank : d;
}

/* ---- choosing operands ---- */

typedef bool (*val_pred)(const rg_val *v, const void *arg);

/* A value satisfying ok: the newest half the time (chains), else any. -1 if none. */
static int
pick(rg_graph *g, val_pred ok, const void *arg)
{
  int n = 0, last = -1;
  for (int i = 0; i < g->nv; i++)
    if ((g->v[i].stmt < 0 || !g->s[g->v[i].stmt].dead) && ok(&g->v[i], arg))
      n++, last = i;
  if (!n)
    return -1;
  if (chance(g, 50))
    return last;
  int k = rnd(g, n);
  for (int i = 0; i < g->nv; i++)
    if ((g->v[i].stmt < 0 || !g->s[g->v[i].stmt].dead) && ok(&g->v[i], arg) && k-- == 0)
      return i;
  return last;
}

bool
rg_ok_want(const rg_val *v, const void *arg)
{
  const rg_want *w = arg;
  if (!(dt_bit(v->dt) & w->dts) || v->rank < w->min_rank || v->rank > w->max_rank)
    return false;
  if (w->exact && is_fl(v->dt) && !v->exact)
    return false;
  for (int k = 0; w->concrete && k < v->rank; k++)
    if (v->d[k].m)
      return false;
  return true;
}

coil_dtype
rg_random_dtype(rg_graph *g, unsigned dts)
{
  static const coil_dtype all[] = {COIL_F32, COIL_F32, COIL_F32, COIL_F16, COIL_BF16, COIL_I64, COIL_I64, COIL_BOOL};
  for (;;) {
    coil_dtype t = all[rnd(g, 8)];
    if (dt_bit(t) & dts)
      return t;
  }
}

void
rg_input_range(coil_dtype t, double *lo, double *hi)
{
  if (is_fl(t))
    *lo = -4, *hi = 4; /* normals clamped */
  else
    *lo = -5, *hi = 5;
}

/* A fresh input of a random shape. */
static int
fresh(rg_graph *g, unsigned dts, int min_rank, int max_rank)
{
  coil_dtype t = rg_random_dtype(g, dts);
  int rank = min_rank + rnd(g, max_rank - min_rank + 1);
  rg_dim d[RG_MAX_RANK];
  int symdim = g->sym && rank && chance(g, 70) ? rnd(g, rank) : -1;
  for (int k = 0; k < rank; k++)
    d[k] = k == symdim ? (rg_dim){0, 1} : (rg_dim){1 + rnd(g, 6), 0};
  double lo, hi;
  rg_input_range(t, &lo, &hi);
  return rg_new_input(g, t, rank, d, lo, hi);
}

int
rg_operand(rg_graph *g, const rg_want *w)
{
  int v = chance(g, 85) ? pick(g, rg_ok_want, w) : -1;
  if (v < 0)
    v = fresh(g, w->dts & ~(w->exact ? 0u : 0u), w->min_rank, w->max_rank < 4 ? w->max_rank : 3);
  return v;
}

/* Broadcast-compatible with a: aligned trailing dims equal or one of them 1. */
typedef struct {
  const rg_val *a;
  unsigned dts;
  bool exact;
} partner_arg;

bool
rg_broadcasts(const rg_val *a, const rg_val *b)
{
  for (int i = 1; i <= a->rank && i <= b->rank; i++) {
    rg_dim x = a->d[a->rank - i], y = b->d[b->rank - i];
    if (!dim_eq(x, y) && !dim_one(x) && !dim_one(y))
      return false;
  }
  return true;
}

static bool
ok_partner(const rg_val *v, const void *arg)
{
  const partner_arg *p = arg;
  if (!(dt_bit(v->dt) & p->dts) || (p->exact && is_fl(v->dt) && !v->exact))
    return false;
  if ((v->rank == 0) != (p->a->rank == 0) && v->dt != p->a->dt)
    return false; /* a zero-dim tensor promotes differently: keep the dtypes equal there */
  return rg_broadcasts(p->a, v);
}

/* A value to combine with a elementwise: one already there or a new input of a shape that
 * broadcasts with a (trailing dims, some 1, some widening a's 1s). */
int
rg_partner(rg_graph *g, int a, unsigned dts, bool exact, bool same_dtype)
{
  partner_arg p = {&g->v[a], same_dtype ? dt_bit(g->v[a].dt) : dts, exact};
  int v = chance(g, 50) ? pick(g, ok_partner, &p) : -1;
  if (v >= 0)
    return v;
  const rg_val *x = &g->v[a];
  int rank = x->rank - rnd(g, x->rank < 2 ? x->rank + 1 : 3);
  if (rank < 0)
    rank = 0;
  rg_dim d[RG_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    rg_dim ad = x->d[x->rank - rank + i];
    if (dim_one(ad))
      d[i] = (rg_dim){chance(g, 50) ? 1 : 2 + rnd(g, 3), 0};
    else
      d[i] = chance(g, 30) ? (rg_dim){1, 0} : ad;
  }
  coil_dtype t = same_dtype || chance(g, 70) ? x->dt : rg_random_dtype(g, dts);
  if (!(dt_bit(t) & dts))
    t = x->dt;
  if ((rank == 0) != (x->rank == 0))
    t = x->dt;
  double lo, hi;
  rg_input_range(t, &lo, &hi);
  return rg_new_input(g, t, rank, d, lo, hi);
}

int
rg_bshape(const rg_val *a, const rg_val *b, rg_dim *out)
{
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 1; i <= r; i++) {
    rg_dim x = i <= a->rank ? a->d[a->rank - i] : (rg_dim){1, 0};
    rg_dim y = i <= b->rank ? b->d[b->rank - i] : (rg_dim){1, 0};
    out[r - i] = dim_one(x) ? y : x;
  }
  return r;
}

int
rg_dims_of(rg_graph *g, const rg_val *x, bool *mask, char *list, size_t n)
{
  int cnt = 0;
  size_t len = (size_t)snprintf(list, n, "[");
  for (int k = 0; k < x->rank; k++) {
    mask[k] = chance(g, 45);
    if (mask[k])
      len += (size_t)snprintf(list + len, n - len, "%s%d", cnt++ ? ", " : "", rg_dim_arg(g, k, x->rank));
  }
  if (!cnt && x->rank) {
    int k = rnd(g, x->rank);
    mask[k] = true, cnt = 1;
    len += (size_t)snprintf(list + len, n - len, "%d", rg_dim_arg(g, k, x->rank));
  }
  snprintf(list + len, n - len, "]");
  return cnt;
}

/* ---- guards: statements that put a value into an op's domain ---- */

int
rg_guard_positive(rg_graph *g, int a)
{
  const rg_val *x = &g->v[a];
  if (x->lo > 0.1)
    return a;
  char t[128];
  snprintf(t, sizeof t, "aten.abs.default(@%d)", a);
  int b = rg_emit1(g, t, rg_result(x->dt, x->rank, x->d, 0, fmax_elem(x), x->exact, true));
  snprintf(t, sizeof t, "aten.add.Scalar(@%d, %s)", b, is_fl(x->dt) ? "0.5" : "1");
  const rg_val *y = &g->v[b];
  return rg_emit1(g, t, rg_result(y->dt, y->rank, y->d, y->lo + 0.5, y->hi + 1, false, true));
}

int
rg_guard_unit(rg_graph *g, int a) /* (-0.9, 0.9) */
{
  const rg_val *x = &g->v[a];
  if (x->lo > -0.9 && x->hi < 0.9)
    return a;
  char t[128];
  snprintf(t, sizeof t, "aten.tanh.default(@%d)", a);
  int b = rg_emit1(g, t, rg_result(x->dt, x->rank, x->d, -1, 1, false, true));
  snprintf(t, sizeof t, "aten.mul.Scalar(@%d, 0.9)", b);
  return rg_emit1(g, t, rg_result(x->dt, x->rank, x->d, -0.9, 0.9, false, true));
}

/* ---- the graph ---- */

void
rg_generate(rg_graph *g, uint64_t seed, int nstmts)
{
  memset(g, 0, sizeof *g);
  g->rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (!g->rng)
    g->rng = 1;
  g->sym = chance(g, 35);
  g->s0[0] = 1 + rnd(g, 6);
  g->s0[1] = 1 + (g->s0[0] + rnd(g, 5)) % 6;
  int first = fresh(g, W_ALL, 1, 3);
  if (g->sym) { /* the anchor: s0 alone in its first dim */
    g->v[first].d[0] = (rg_dim){0, 1};
    g->v[first].anchor = true;
  }
  if (chance(g, 50))
    fresh(g, W_ALL, 0, 3);
  for (int tries = 0; tries < 20 * nstmts && g->ns < nstmts; tries++) {
    int before = g->ns, nv = g->nv;
    int w = rnd(g, 100), rc;
    if (w < 20)
      rc = rg_gen_unary(g);
    else if (w < 38)
      rc = rg_gen_binary(g);
    else if (w < 48)
      rc = rg_gen_scalar(g);
    else if (w < 53)
      rc = rg_gen_cast(g);
    else if (w < 63)
      rc = rg_gen_reduce(g);
    else if (w < 68)
      rc = rg_gen_scan_softmax(g);
    else if (w < 72)
      rc = rg_gen_multi(g);
    else if (w < 87)
      rc = rg_gen_view(g);
    else if (w < 89)
      rc = rg_gen_split(g);
    else if (w < 95)
      rc = rg_gen_index(g);
    else if (w < 98)
      rc = rg_gen_matmul(g);
    else
      rc = rg_gen_create(g);
    if (rc < 0) { /* undo what the attempt added (guards, inputs) */
      for (int s = before; s < g->ns; s++)
        free(g->s[s].text);
      g->ns = before, g->nv = nv;
    }
  }
  /* outputs: the last value, and up to two others (an input, a view, a multi-output element) */
  int cand = g->nv - 1;
  g->outs[g->nouts++] = cand;
  int more = rnd(g, 3);
  for (int i = 0; i < more; i++)
    g->outs[g->nouts++] = rnd(g, g->nv);
}

void
rg_append(rg_graph *g, const rg_graph *h)
{
  int voff = g->nv, soff = g->ns;
  for (int i = 0; i < h->nv; i++) {
    rg_val v = h->v[i];
    if (v.stmt >= 0)
      v.stmt += soff;
    add_val(g, &v);
  }
  for (int s = 0; s < h->ns; s++) {
    coil_strbuf b = {0};
    for (const char *p = h->s[s].text; *p; p++) {
      if (*p != '@') {
        coil_strbuf_putn(&b, p, 1);
        continue;
      }
      coil_strbuf_printf(&b, "@%d", atoi(p + 1) + voff);
      while (p[1] >= '0' && p[1] <= '9')
        p++;
    }
    if (g->ns == g->caps) {
      g->caps = g->caps ? 2 * g->caps : 32;
      g->s = realloc(g->s, sizeof *g->s * (size_t)g->caps);
      if (!g->s)
        abort();
    }
    g->s[g->ns] = h->s[s];
    g->s[g->ns].text = coil_strbuf_take(&b);
    g->s[g->ns++].first += voff;
  }
  for (int k = 0; k < h->nouts && g->nouts < RG_MAX_OUTS; k++)
    g->outs[g->nouts++] = h->outs[k] + voff;
  if (h->sym && !g->sym) {
    g->sym = true;
    memcpy(g->s0, h->s0, sizeof g->s0);
  }
}

void
rg_free(rg_graph *g)
{
  for (int s = 0; s < g->ns; s++)
    free(g->s[s].text);
  free(g->s);
  free(g->v);
  memset(g, 0, sizeof *g);
}

void
rg_name(const rg_graph *g, int i, char *out, size_t n)
{
  snprintf(out, n, "%s%d", g->v[i].stmt < 0 ? "x" : "v", i);
}

/* Marks what the outputs need: used[v] for values, live statements through their operands. */
static void
mark_used(const rg_graph *g, bool *used)
{
  memset(used, 0, sizeof *used * (size_t)g->nv);
  for (int k = 0; k < g->nouts; k++)
    used[g->outs[k]] = true;
  for (int s = g->ns - 1; s >= 0; s--) {
    const rg_stmt *st = &g->s[s];
    bool live = false;
    for (int r = 0; r < st->nres; r++)
      live = live || used[st->first + r];
    if (!live || st->dead)
      continue;
    for (const char *p = strchr(st->text, '@'); p; p = strchr(p + 1, '@'))
      used[atoi(p + 1)] = true;
  }
}

void
rg_print(const rg_graph *g, coil_strbuf *b, bool with_ranges)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  char name[32];
  if (with_ranges)
    for (int i = 0; i < g->nv; i++)
      if ((used[i] || g->v[i].anchor) && g->v[i].stmt < 0) {
        rg_name(g, i, name, sizeof name);
        coil_strbuf_printf(b, "# %%%s: values in [%g, %g]%s\n", name, g->v[i].lo, g->v[i].hi,
                           is_fl(g->v[i].dt) && g->v[i].lo <= -4 && g->v[i].hi >= 4 ? " (normal)" : "");
      }
  if (with_ranges && g->sym)
    coil_strbuf_printf(b, "# runs at s0 = %lld and s0 = %lld\n", (long long)g->s0[0], (long long)g->s0[1]);
  coil_strbuf_puts(b, "coil 1\ngraph random(");
  int n = 0;
  for (int i = 0; i < g->nv; i++) {
    const rg_val *v = &g->v[i];
    if (!(used[i] || v->anchor) || v->stmt >= 0)
      continue;
    rg_name(g, i, name, sizeof name);
    coil_strbuf_printf(b, "%s%%%s: %s[", n++ ? ", " : "", name, coil_dtype_name(v->dt));
    for (int k = 0; k < v->rank; k++) {
      char d[32];
      dim_text(v->d[k], d, sizeof d);
      coil_strbuf_printf(b, "%s%s", k ? ", " : "", d);
    }
    coil_strbuf_puts(b, "]");
  }
  coil_strbuf_puts(b, ") {\n");
  for (int s = 0; s < g->ns; s++) {
    const rg_stmt *st = &g->s[s];
    bool live = false;
    for (int r = 0; r < st->nres; r++)
      live = live || used[st->first + r];
    if (!live || st->dead)
      continue;
    if (st->nres > 1)
      coil_strbuf_printf(b, "  %%t%d = ", s);
    else
      coil_strbuf_printf(b, "  %%v%d = ", st->first);
    for (const char *p = st->text; *p; p++) {
      if (*p != '@') {
        coil_strbuf_putn(b, p, 1);
        continue;
      }
      int v = atoi(p + 1);
      while (p[1] >= '0' && p[1] <= '9')
        p++;
      rg_name(g, v, name, sizeof name);
      coil_strbuf_printf(b, "%%%s", name);
    }
    coil_strbuf_puts(b, "\n");
    for (int r = 0; st->nres > 1 && r < st->nres; r++)
      if (used[st->first + r])
        coil_strbuf_printf(b, "  %%v%d = getitem(%%t%d, %d)\n", st->first + r, s, r);
  }
  coil_strbuf_puts(b, "  return (");
  for (int k = 0; k < g->nouts; k++) {
    rg_name(g, g->outs[k], name, sizeof name);
    coil_strbuf_printf(b, "%s%%%s", k ? ", " : "", name);
  }
  coil_strbuf_puts(b, ")\n}\n");
  free(used);
}

bool
rg_stmt_live(const rg_graph *g, int s)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  bool live = false;
  for (int r = 0; r < g->s[s].nres; r++)
    live = live || used[g->s[s].first + r];
  free(used);
  return live && !g->s[s].dead;
}

int
rg_live_stmts(const rg_graph *g)
{
  bool *used = calloc((size_t)g->nv + 1, sizeof *used);
  mark_used(g, used);
  int n = 0;
  for (int s = 0; s < g->ns; s++) {
    bool live = false;
    for (int r = 0; r < g->s[s].nres; r++)
      live = live || used[g->s[s].first + r];
    n += live && !g->s[s].dead;
  }
  free(used);
  return n;
}

void
rg_cut(rg_graph *g, int s)
{
  rg_stmt *st = &g->s[s];
  st->dead = true;
  for (int r = 0; r < st->nres; r++) {
    rg_val *v = &g->v[st->first + r];
    v->stmt = -1;
    v->seed = (uint64_t)(st->first + r) * 0x9e3779b97f4a7c15ull + 7;
    if (v->dt == COIL_BOOL)
      v->lo = 0, v->hi = 1;
    if (!(v->lo > -1e9))
      v->lo = is_fl(v->dt) ? -4 : -5;
    if (!(v->hi < 1e9))
      v->hi = is_fl(v->dt) ? 4 : 5;
  }
}

void
rg_replace(rg_graph *g, int from, int to)
{
  char pat[24], rep[24];
  snprintf(pat, sizeof pat, "@%d", from);
  snprintf(rep, sizeof rep, "@%d", to);
  for (int s = 0; s < g->ns; s++) {
    coil_strbuf b = {0};
    const char *p = g->s[s].text;
    for (const char *q; (q = strstr(p, pat));) {
      coil_strbuf_putn(&b, p, (size_t)(q - p));
      if (q[strlen(pat)] >= '0' && q[strlen(pat)] <= '9') /* @12 is not @1 */
        coil_strbuf_putn(&b, q, strlen(pat));
      else
        coil_strbuf_puts(&b, rep);
      p = q + strlen(pat);
    }
    coil_strbuf_puts(&b, p);
    free(g->s[s].text);
    g->s[s].text = coil_strbuf_take(&b);
  }
  for (int k = 0; k < g->nouts; k++)
    if (g->outs[k] == from)
      g->outs[k] = to;
}

bool
rg_same_type(const rg_graph *g, int a, int b)
{
  const rg_val *x = &g->v[a], *y = &g->v[b];
  if (x->dt != y->dt || x->rank != y->rank)
    return false;
  for (int k = 0; k < x->rank; k++)
    if (!dim_eq(x->d[k], y->d[k]))
      return false;
  return true;
}

void
rg_drop_output(rg_graph *g, int k)
{
  for (int i = k; i < g->nouts - 1; i++)
    g->outs[i] = g->outs[i + 1];
  g->nouts--;
}

/* Input values: floats normal (clamped to the range) when the range holds [-4, 4], else
 * uniform in it; integers uniform in [lo, hi]; bools fair. Seeded per value, so a value keeps
 * its numbers while the shrinker cuts around it. */
int
rg_input_fill(const rg_graph *g, int i, int64_t s0, coil_tensor *t, coil_diag *d)
{
  const rg_val *v = &g->v[i];
  int64_t shape[COIL_MAX_RANK];
  for (int k = 0; k < v->rank; k++)
    shape[k] = v->d[k].m ? v->d[k].m * s0 : v->d[k].c;
  if (coil_tensor_init(t, v->dt, v->rank, shape, d))
    return -1;
  uint64_t s = v->seed ? v->seed : 1;
  double lo = fmax(v->lo, -1e6), hi = fmin(v->hi, 1e6);
  if (hi < lo)
    hi = lo;
  bool normal = lo <= -4 && hi >= 4;
  int64_t n = coil_tensor_numel(t);
  for (int64_t e = 0; e < n; e++) {
    double u1 = ((double)(next(&s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(next(&s) >> 11) + 0.5) / 9007199254740992.0;
    if (v->dt == COIL_BOOL)
      coil_tensor_set_i64(t, e, u1 < 0.5);
    else if (!is_fl(v->dt))
      coil_tensor_set_i64(t, e, (int64_t)ceil(lo) + (int64_t)(u1 * (floor(hi) - ceil(lo) + 1)));
    else if (normal)
      coil_tensor_set_f64(t, e, fmax(-4, fmin(4, sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2))));
    else
      coil_tensor_set_f64(t, e, lo + (hi - lo) * u1);
  }
  return 0;
}

