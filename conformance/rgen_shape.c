/* rgen_shape.c — the random tier's op families that move or select data (rgen_int.h): views
 * and data movement (view, reshape, permute, transpose, expand, slice, select, flip, pad, cat,
 * repeat, ...), splits, indexing with indices drawn in range (index, index_select, gather,
 * scatter_add, embedding), library ops (mm, bmm, addmm) and creation (full, arange,
 * scalar_tensor). */
#include "rgen_int.h"

#include <stdio.h>
#include <string.h>

/* ---- views and data movement ---- */

int
rg_gen_view(rg_graph *g)
{
  int kind = rnd(g, 14);
  rg_want w = {W_ALL, 1, 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0 || g->v[a].rank < 1)
    return -1;
  const rg_val *x = &g->v[a];
  rg_val r = *x;
  r.stmt = -1;
  char t[256], list[96];
  int k = rnd(g, x->rank);
  switch (kind) {
  case 0: case 1: { /* view / reshape / _unsafe_view */
    const char *op = kind == 0 && x->contig ? (chance(g, 80) ? "aten.view.default" : "aten._unsafe_view.default")
                                             : "aten.reshape.default";
    int64_t c = 1;
    int m = 0, nsym = 0;
    for (int i = 0; i < x->rank; i++) {
      if (x->d[i].m)
        m = x->d[i].m, nsym++;
      else
        c *= x->d[i].c;
    }
    if (nsym > 1)
      return -1;
    /* sizes whose product is c (and one -1 standing for the rest when symbolic) */
    int rk = 1 + rnd(g, 3), neg = m || chance(g, 40) ? rnd(g, rk) : -1;
    int64_t rest = c, sz[RG_MAX_RANK]; /* a -1 dim takes the rest: (c / product) * m * s0 */
    for (int i = 0; i < rk; i++) {
      if (i == neg)
        continue;
      int64_t f = 1;
      for (int tries = 0; tries < 6; tries++) {
        int64_t cand = 1 + rnd(g, 6);
        if (rest % cand == 0) {
          f = cand;
          break;
        }
      }
      if (neg < 0 && i == rk - 1)
        f = rest;
      sz[i] = f, rest /= f;
    }
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    for (int i = 0; i < rk; i++) {
      r.d[i] = i == neg ? (m ? (rg_dim){0, (int)(rest * m)} : (rg_dim){rest, 0}) : (rg_dim){sz[i], 0};
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", i == neg ? -1LL : (long long)sz[i]);
    }
    snprintf(list + len, sizeof list - len, "]");
    r.rank = rk;
    snprintf(t, sizeof t, "%s(@%d, %s)", op, a, list);
    r.contig = true;
    if (strcmp(op, "aten.reshape.default") == 0 && !x->contig)
      r.contig = true; /* a copy */
    break;
  }
  case 2: { /* permute */
    if (x->rank < 2)
      return -1;
    int p[RG_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
      p[i] = i;
    for (int i = x->rank - 1; i > 0; i--) {
      int j = rnd(g, i + 1), tmp = p[i];
      p[i] = p[j], p[j] = tmp;
    }
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    for (int i = 0; i < x->rank; i++) {
      r.d[i] = x->d[p[i]];
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? ", " : "", rg_dim_arg(g, p[i], x->rank));
    }
    snprintf(list + len, sizeof list - len, "]");
    snprintf(t, sizeof t, "aten.permute.default(@%d, %s)", a, list);
    r.contig = false;
    break;
  }
  case 3: { /* transpose / t */
    if (x->rank <= 2 && chance(g, 50)) {
      snprintf(t, sizeof t, "aten.t.default(@%d)", a);
      if (x->rank == 2)
        r.d[0] = x->d[1], r.d[1] = x->d[0];
    } else {
      int j = rnd(g, x->rank);
      snprintf(t, sizeof t, "aten.transpose.int(@%d, %d, %d)", a, rg_dim_arg(g, k, x->rank), rg_dim_arg(g, j, x->rank));
      r.d[k] = x->d[j], r.d[j] = x->d[k];
    }
    r.contig = false;
    break;
  }
  case 4: { /* unsqueeze */
    if (x->rank >= RG_MAX_RANK)
      return -1;
    int at = rnd(g, x->rank + 1);
    for (int i = x->rank; i > at; i--)
      r.d[i] = x->d[i - 1];
    r.d[at] = (rg_dim){1, 0};
    r.rank++;
    snprintf(t, sizeof t, "aten.unsqueeze.default(@%d, %d)", a, chance(g, 30) ? at - r.rank : at);
    break;
  }
  case 5: { /* squeeze */
    int ones = 0;
    for (int i = 0; i < x->rank; i++)
      ones += dim_one(x->d[i]);
    if (!ones)
      return -1;
    if (chance(g, 50)) {
      int j = 0;
      for (int i = 0; i < x->rank; i++)
        if (!dim_one(x->d[i]))
          r.d[j++] = x->d[i];
      r.rank = j;
      for (int i = 0; i < x->rank; i++)
        if (x->d[i].m)
          return -1; /* s0 may be 1 at run time: squeeze() would depend on it */
      snprintf(t, sizeof t, "aten.squeeze.default(@%d)", a);
    } else {
      int at = -1;
      for (int i = 0; i < x->rank; i++)
        if (dim_one(x->d[i]) && (at < 0 || chance(g, 50)))
          at = i;
      for (int i = at; i < x->rank - 1; i++)
        r.d[i] = x->d[i + 1];
      r.rank--;
      snprintf(t, sizeof t, "aten.squeeze.dim(@%d, %d)", a, rg_dim_arg(g, at, x->rank));
    }
    break;
  }
  case 6: { /* expand */
    int extra = x->rank < RG_MAX_RANK && chance(g, 30) ? 1 : 0;
    size_t len = (size_t)snprintf(list, sizeof list, "[");
    r.rank = x->rank + extra;
    bool changed = extra;
    if (extra) {
      r.d[0] = (rg_dim){1 + rnd(g, 3), 0};
      len += (size_t)snprintf(list + len, sizeof list - len, "%lld, ", (long long)r.d[0].c);
    }
    for (int i = 0; i < x->rank; i++) {
      rg_dim dd = x->d[i];
      if (dim_one(dd) && chance(g, 70))
        dd = (rg_dim){2 + rnd(g, 3), 0}, changed = true;
      r.d[extra + i] = dd;
      bool minus = dd.m || (chance(g, 50) && dim_eq(dd, x->d[i]));
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", minus ? -1LL : (long long)dd.c);
    }
    snprintf(list + len, sizeof list - len, "]");
    snprintf(t, sizeof t, "aten.expand.default(@%d, %s)", a, list);
    r.contig = x->contig && !changed;
    break;
  }
  case 7: { /* slice */
    if (x->d[k].m)
      return -1;
    int64_t n = x->d[k].c, start = rnd(g, (int)n), end = start + 1 + rnd(g, (int)(n - start) + 1), step = 1 + rnd(g, 3);
    int64_t size = ((end < n ? end : n) - start + step - 1) / step;
    long long s_arg = chance(g, 25) ? start - n : start;
    snprintf(t, sizeof t, "aten.slice.Tensor(@%d, %d, %lld, %lld, %lld)", a, rg_dim_arg(g, k, x->rank), s_arg,
             (long long)end, (long long)step);
    r.d[k] = (rg_dim){size, 0};
    r.contig = false;
    break;
  }
  case 8: { /* select */
    if (x->d[k].m)
      return -1;
    int64_t n = x->d[k].c, idx = rnd(g, (int)(2 * n)) - n;
    snprintf(t, sizeof t, "aten.select.int(@%d, %d, %lld)", a, rg_dim_arg(g, k, x->rank), (long long)idx);
    for (int i = k; i < x->rank - 1; i++)
      r.d[i] = x->d[i + 1];
    r.rank--;
    r.contig = false;
    break;
  }
  case 9: { /* flip */
    bool mask[RG_MAX_RANK];
    rg_dims_of(g, x, mask, list, sizeof list);
    snprintf(t, sizeof t, "aten.flip.default(@%d, %s)", a, list);
    r.contig = true;
    break;
  }
  case 10: { /* repeat */
    int extra = x->rank < RG_MAX_RANK && chance(g, 30) ? 1 : 0;
    int64_t rep[RG_MAX_RANK];
    r.rank = x->rank + extra;
    for (int i = 0; i < r.rank; i++)
      rep[i] = chance(g, 60) ? 1 : 2 + rnd(g, 2);
    for (int i = 0; i < r.rank; i++) {
      rg_dim src = i < extra ? (rg_dim){1, 0} : x->d[i - extra];
      r.d[i] = src.m ? (rg_dim){0, src.m * (int)rep[i]} : (rg_dim){src.c * rep[i], 0};
    }
    rg_list_text(rep, r.rank, list, sizeof list);
    snprintf(t, sizeof t, "aten.repeat.default(@%d, %s)", a, list);
    r.contig = true;
    break;
  }
  case 11: { /* cat with one or two more */
    if (x->d[k].m)
      return -1;
    int parts[3] = {a, -1, -1}, np = 2 + rnd(g, 2);
    int64_t total = x->d[k].c;
    for (int p = 1; p < np; p++) {
      rg_dim d[RG_MAX_RANK];
      memcpy(d, x->d, sizeof d);
      d[k] = (rg_dim){1 + rnd(g, 4), 0};
      total += d[k].c;
      double lo, hi;
      rg_input_range(x->dt, &lo, &hi);
      parts[p] = rg_new_input(g, x->dt, x->rank, d, lo, hi);
      x = &g->v[a];
    }
    if (np == 2)
      snprintf(t, sizeof t, "aten.cat.default([@%d, @%d], %d)", parts[0], parts[1], rg_dim_arg(g, k, x->rank));
    else
      snprintf(t, sizeof t, "aten.cat.default([@%d, @%d, @%d], %d)", parts[0], parts[1], parts[2], rg_dim_arg(g, k, x->rank));
    r = *x;
    r.stmt = -1;
    r.d[k] = (rg_dim){total, 0};
    r.lo = fmin(x->lo, -4), r.hi = fmax(x->hi, 4);
    if (!is_fl(x->dt))
      r.lo = fmin(x->lo, -5), r.hi = fmax(x->hi, 5);
    r.exact = x->exact;
    r.contig = true;
    break;
  }
  case 12: { /* constant_pad_nd on the last dims */
    if (x->dt == COIL_BOOL)
      return -1;
    int nd = 1 + rnd(g, x->rank < 2 ? 1 : 2);
    int64_t pads[4];
    for (int i = 0; i < nd; i++) {
      if (x->d[x->rank - 1 - i].m)
        return -1;
      pads[2 * i] = rnd(g, 3), pads[2 * i + 1] = rnd(g, 3);
      r.d[x->rank - 1 - i].c += pads[2 * i] + pads[2 * i + 1];
    }
    rg_list_text(pads, 2 * nd, list, sizeof list);
    snprintf(t, sizeof t, "aten.constant_pad_nd.default(@%d, %s, %s)", a, list, is_fl(x->dt) ? "1.5" : "3");
    r.lo = fmin(x->lo, 1.5), r.hi = fmax(x->hi, 3);
    r.contig = true;
    break;
  }
  default: { /* diagonal */
    if (x->rank < 2)
      return -1;
    int j = rnd(g, x->rank);
    if (j == k || x->d[k].m || x->d[j].m)
      return -1;
    int64_t off = rnd(g, 2), n = x->d[j].c - off < x->d[k].c ? x->d[j].c - off : x->d[k].c;
    if (n < 0)
      n = 0;
    snprintf(t, sizeof t, "aten.diagonal.default(@%d, %lld, %d, %d)", a, (long long)off, k, j);
    int q = 0;
    for (int i = 0; i < x->rank; i++)
      if (i != k && i != j)
        r.d[q++] = x->d[i];
    r.d[q++] = (rg_dim){n, 0};
    r.rank = q;
    r.contig = false;
  }
  }
  if (numel_max(&r) > NUMEL_MAX)
    return -1;
  if (x->dt == COIL_BOOL)
    r.lo = 0, r.hi = 1;
  return rg_emit1(g, t, r);
}

int
rg_gen_split(rg_graph *g)
{
  rg_want w = {W_ALL, 1, 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0 || g->v[a].rank < 1)
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  if (x->d[k].m || x->d[k].c < 2)
    return -1;
  int64_t n = x->d[k].c, sizes[4];
  int np = 0;
  char t[192], list[64];
  if (chance(g, 50)) {
    int64_t each = 1 + rnd(g, (int)n - 1);
    for (int64_t s = 0; s < n && np < 4; s += each)
      sizes[np++] = n - s < each ? n - s : each;
    if (np * each < n && (n - (np - 1) * each) > each)
      return -1; /* more than 4 pieces */
    if ((n + each - 1) / each > 4)
      return -1;
    snprintf(t, sizeof t, "aten.split.Tensor(@%d, %lld, %d)", a, (long long)each, rg_dim_arg(g, k, x->rank));
  } else {
    int64_t left = n;
    while (left > 0 && np < 3) {
      int64_t s = 1 + rnd(g, (int)left);
      sizes[np++] = s, left -= s;
    }
    if (left)
      sizes[np++] = left;
    rg_list_text(sizes, np, list, sizeof list);
    snprintf(t, sizeof t, "aten.split_with_sizes.default(@%d, %s, %d)", a, list, rg_dim_arg(g, k, x->rank));
  }
  rg_val res[4];
  for (int p = 0; p < np; p++) {
    res[p] = *x;
    res[p].d[k] = (rg_dim){sizes[p], 0};
    res[p].contig = k == 0 && x->contig;
  }
  if (np < 2)
    return -1;
  return rg_emit(g, t, np, res);
}

/* ---- indexing ---- */

static int
index_input(rg_graph *g, int rank, const rg_dim *d, int64_t lo, int64_t hi)
{
  return rg_new_input(g, COIL_I64, rank, d, (double)lo, (double)(hi - 1));
}

int
rg_gen_index(rg_graph *g)
{
  int kind = rnd(g, 5);
  rg_want w = {kind == 2 ? W_FL : kind == 0 || kind == 4 ? W_NUM : W_ALL, kind == 2 ? 2 : 1, kind == 2 ? 2 : 4, false, false};
  int a = rg_operand(g, &w);
  if (a < 0 || !rg_ok_want(&g->v[a], &w))
    return -1;
  const rg_val *x = &g->v[a];
  int k = rnd(g, x->rank);
  if (kind == 2)
    k = 0;
  if (x->d[k].m)
    return -1;
  int64_t n = x->d[k].c;
  if (n < 1)
    return -1;
  char t[192];
  rg_val r = *x;
  r.stmt = -1;
  r.contig = true;
  rg_dim id[RG_MAX_RANK];
  switch (kind) {
  case 0: { /* gather: index no larger than x in the other dims */
    for (int i = 0; i < x->rank; i++)
      id[i] = i == k ? (rg_dim){1 + rnd(g, 4), 0} : x->d[i].m || chance(g, 60) ? x->d[i] : (rg_dim){1 + rnd(g, (int)x->d[i].c), 0};
    int ix = index_input(g, x->rank, id, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.gather.default(@%d, %d, @%d)", a, rg_dim_arg(g, k, x->rank), ix);
    memcpy(r.d, id, sizeof id);
    break;
  }
  case 1: { /* index_select */
    rg_dim l = {1 + rnd(g, 5), 0};
    int ix = index_input(g, 1, &l, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.index_select.default(@%d, %d, @%d)", a, rg_dim_arg(g, k, x->rank), ix);
    r.d[k] = l;
    break;
  }
  case 2: { /* embedding */
    int ir = 1 + rnd(g, 2);
    rg_dim d[2] = {{1 + rnd(g, 4), 0}, {1 + rnd(g, 3), 0}};
    if (g->sym && chance(g, 50))
      d[0] = (rg_dim){0, 1};
    int ix = index_input(g, ir, d, 0, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.embedding.default(@%d, @%d)", a, ix);
    r.rank = ir + 1;
    memcpy(r.d, d, sizeof *d * (size_t)ir);
    r.d[ir] = x->d[1];
    break;
  }
  case 3: { /* index.Tensor on dim 0: negative indices wrap */
    k = 0;
    if (x->d[0].m)
      return -1;
    n = x->d[0].c;
    int ir = 1 + rnd(g, 2);
    if (x->rank + ir - 1 > RG_MAX_RANK)
      return -1;
    rg_dim d[2] = {{1 + rnd(g, 4), 0}, {1 + rnd(g, 3), 0}};
    int ix = index_input(g, ir, d, -n, n);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.index.Tensor(@%d, [@%d])", a, ix);
    r.rank = ir + x->rank - 1;
    memcpy(r.d, d, sizeof *d * (size_t)ir);
    for (int i = 1; i < x->rank; i++)
      r.d[ir + i - 1] = x->d[i];
    break;
  }
  default: { /* scatter_add: duplicates combine */
    for (int i = 0; i < x->rank; i++)
      id[i] = i == k ? (rg_dim){1 + rnd(g, 4), 0} : x->d[i].m || chance(g, 60) ? x->d[i] : (rg_dim){1 + rnd(g, (int)x->d[i].c), 0};
    int ix = index_input(g, x->rank, id, 0, n);
    double lo, hi;
    rg_input_range(g->v[a].dt, &lo, &hi);
    int src = rg_new_input(g, g->v[a].dt, g->v[a].rank, id, lo, hi);
    x = &g->v[a];
    snprintf(t, sizeof t, "aten.scatter_add.default(@%d, %d, @%d, @%d)", a, rg_dim_arg(g, k, x->rank), ix, src);
    double m = fmax_elem(x) + 4 * 4 * (double)numel_max(&g->v[src]);
    r.lo = -m, r.hi = m;
    r.exact = !is_fl(x->dt);
  }
  }
  if (numel_max(&r) > NUMEL_MAX)
    return -1;
  return rg_emit1(g, t, r);
}

/* ---- library ops and creation ---- */

int
rg_gen_matmul(rg_graph *g)
{
  int kind = rnd(g, 3);
  int rank = kind == 1 ? 3 : 2;
  rg_want w = {W_FL, rank, rank, false, false};
  int a = rg_operand(g, &w);
  if (a < 0 || !rg_ok_want(&g->v[a], &w) || half_rounded(&g->v[a]))
    return -1;
  const rg_val *x = &g->v[a];
  rg_dim kd = x->d[rank - 1], nd = {1 + rnd(g, 5), 0}, bd[3];
  if (rank == 3)
    bd[0] = x->d[0];
  bd[rank - 2] = kd, bd[rank - 1] = nd;
  int b = rg_new_input(g, x->dt, rank, bd, -4, 4);
  x = &g->v[a];
  char t[160];
  double m = fmax_elem(x) * 4 * (double)dim_max(kd);
  rg_dim rd[3];
  memcpy(rd, x->d, sizeof rd);
  rd[rank - 1] = nd;
  if (kind == 2) {
    int bias = rg_new_input(g, x->dt, 1, &nd, -4, 4);
    snprintf(t, sizeof t, "aten.addmm.default(@%d, @%d, @%d)", bias, a, b);
    m += 4;
  } else {
    snprintf(t, sizeof t, "aten.%s.default(@%d, @%d)", rank == 3 ? "bmm" : "mm", a, b);
  }
  x = &g->v[a];
  return rg_emit1(g, t, rg_result(x->dt, rank, rd, -m, m, false, true));
}

int
rg_gen_create(rg_graph *g)
{
  char t[160], list[64];
  int kind = rnd(g, 3);
  coil_dtype dt = rg_random_dtype(g, kind == 1 ? W_F32 | W_I64 : W_ALL);
  if (kind == 0) {
    int rank = rnd(g, 3);
    int64_t sz[RG_MAX_RANK];
    rg_dim d[RG_MAX_RANK];
    for (int i = 0; i < rank; i++)
      sz[i] = 1 + rnd(g, 5), d[i] = (rg_dim){sz[i], 0};
    rg_list_text(sz, rank, list, sizeof list);
    int v = rnd(g, 5) - 2;
    snprintf(t, sizeof t, "aten.full.default(%s, %s, dtype=%s)", list, dt == COIL_BOOL ? "True" : v ? "2" : "0",
             coil_dtype_name(dt));
    return rg_emit1(g, t, rg_result(dt, rank, d, 0, 2, true, true));
  }
  if (kind == 1) {
    int64_t start = rnd(g, 5) - 2, n = 1 + rnd(g, 7), step = 1 + rnd(g, 2);
    rg_dim d = {(n + step - 1) / step, 0};
    snprintf(t, sizeof t, "aten.arange.start_step(%lld, %lld, %lld, dtype=%s)", (long long)start,
             (long long)(start + n), (long long)step, coil_dtype_name(dt));
    return rg_emit1(g, t, rg_result(dt, 1, &d, (double)start, (double)(start + n), true, true));
  }
  if (dt == COIL_BOOL)
    return -1;
  snprintf(t, sizeof t, "aten.scalar_tensor.default(%s, dtype=%s)", is_fl(dt) ? "-1.5" : "3", coil_dtype_name(dt));
  return rg_emit1(g, t, rg_result(dt, 0, NULL, -1.5, 3, true, true));
}

