/* gpu_plan.c — launch plans of the GPU emitter (coil/coil_gpu.h): which layout each kernel gets
 * (pointwise, vectorised, transposing, persistent, looped), max-autotune's candidates, and the
 * launch geometry. Decided from the Wrapper IR and the dialect's warp and vector widths alone, so
 * a plugin's compile and load agree without recording it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu.h"
#include "gpu_int.h"

/* ---- vectorised pointwise kernels ----
 * A pointwise kernel gets a variant taking V consecutive elements of its innermost x variable
 * per access, V = 16 bytes over its widest param's element (4 for f32, 8 for f16, at most 8),
 * when that variable's extent is a constant multiple of V, no param is wider than 4 bytes, and
 * every load and store index either ignores the variable (a broadcast) or is `xi + base` with
 * base a sum of multiples of V (consecutive elements from an aligned start): one 16-byte access
 * per param and thread. */
static bool
multiple_of(const coil_sym *s, int64_t v)
{
  if (s->kind == COIL_SYM_CONST)
    return s->value % v == 0;
  if (s->kind == COIL_SYM_MUL) {
    for (int i = 0; i < s->nargs; i++)
      if (s->args[i]->kind == COIL_SYM_CONST && s->args[i]->value % v == 0)
        return true;
    return false;
  }
  if (s->kind == COIL_SYM_ADD) {
    for (int i = 0; i < s->nargs; i++)
      if (!multiple_of(s->args[i], v))
        return false;
    return true;
  }
  return false;
}

bool
gpu_uses_var(const coil_sym *s, int var)
{
  if (s->kind == COIL_SYM_VAR)
    return s->var == var;
  for (int i = 0; i < s->nargs; i++)
    if (gpu_uses_var(s->args[i], var))
      return true;
  return false;
}

/* 1: index is xi + (multiple of v); 0: it ignores xi; -1: anything else. */
int
gpu_index_kind(const coil_sym *e, int xi, int v)
{
  if (!gpu_uses_var(e, xi))
    return 0;
  if (e->kind == COIL_SYM_VAR)
    return 1;
  if (e->kind != COIL_SYM_ADD)
    return -1;
  int unit = 0;
  for (int i = 0; i < e->nargs; i++) {
    const coil_sym *t = e->args[i];
    if (t->kind == COIL_SYM_VAR && t->var == xi)
      unit++;
    else if (gpu_uses_var(t, xi) || !multiple_of(t, v))
      return -1;
  }
  return unit == 1 ? 1 : -1;
}

/* V for accesses along the innermost of vars (x or r), or 1 when they cannot be vectorised. */
static int
vector_width(const coil_gpu_dialect *dl, const coil_kernel *k, int nvars, const coil_sym *const *vars, const coil_sym *const *sizes)
{
  if (nvars < 1)
    return 1;
  int xi = vars[nvars - 1]->var;
  size_t widest = 1; /* of the params accessed along xi: others are read once per point */
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if ((in->op == COIL_KOP_LOAD || in->op == COIL_KOP_STORE) && gpu_uses_var(in->index, xi) &&
        coil_dtype_size(k->params[in->param].dtype) > widest)
      widest = coil_dtype_size(k->params[in->param].dtype);
  }
  int vb = dl->vector_bytes, v = widest > 4 ? 1 : vb / (int)widest > 8 ? 8 : vb / (int)widest;
  int64_t size;
  if (v == 1 || !coil_sym_is_const(sizes[nvars - 1], &size) || size % v != 0 || size == 0)
    return 1;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if ((in->op == COIL_KOP_LOAD || in->op == COIL_KOP_STORE) && gpu_index_kind(in->index, xi, v) < 0)
      return 1;
  }
  return v;
}

/* ---- transposing copies ----
 * Which x variable a load's index runs along with unit stride: the index is that variable, or a
 * sum with it alone as a term and no other term using it. -1: none. */
static int
unit_var(const coil_kernel *k, const coil_sym *e)
{
  for (int v = 0; v < k->nx; v++) {
    int var = k->xvars[v]->var;
    if (e->kind == COIL_SYM_VAR && e->var == var)
      return v;
    if (e->kind != COIL_SYM_ADD)
      continue;
    int unit = 0;
    bool other = false;
    for (int i = 0; i < e->nargs; i++) {
      if (e->args[i]->kind == COIL_SYM_VAR && e->args[i]->var == var)
        unit++;
      else if (gpu_uses_var(e->args[i], var))
        other = true;
    }
    if (unit == 1 && !other)
      return v;
  }
  return -1;
}

/* The x variable (index) for a TRANSPOSE plan: every store runs along the innermost x variable
 * and some load runs along another one that the stores use too; -1: not a transposing kernel. */
static int
transpose_var(const coil_kernel *k)
{
  if (k->nx < 2)
    return -1;
  int tv = -1;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_STORE && unit_var(k, in->index) != k->nx - 1)
      return -1;
    if (in->op == COIL_KOP_LOAD && tv < 0) {
      int v = unit_var(k, in->index);
      if (v >= 0 && v != k->nx - 1 && gpu_uses_var(in->index, k->xvars[k->nx - 1]->var))
        tv = v;
    }
  }
  return tv;
}

/* Whether load instruction i goes through the shared-memory tile of a TRANSPOSE kernel. */
bool
gpu_transposed_load(const coil_kernel *k, const coil_gpu_plan *pl, int i)
{
  const coil_kinst *in = &k->insts[i];
  return pl->kind == COIL_GPU_TRANSPOSE && in->op == COIL_KOP_LOAD && unit_var(k, in->index) == pl->tvar &&
         gpu_uses_var(in->index, k->xvars[k->nx - 1]->var);
}

/* The r extent when every r size is a constant, else -1. */
int64_t
gpu_fixed_rnumel(const coil_kernel *k)
{
  int64_t r = 1;
  for (int i = 0; i < k->nr; i++) {
    int64_t v;
    if (!coil_sym_is_const(k->rsize[i], &v))
      return -1;
    r *= v;
  }
  return r;
}

/* The x extent when every x size is a constant, else -1. */
static int64_t
fixed_xnumel(const coil_kernel *k)
{
  int64_t x = 1;
  for (int i = 0; i < k->nx; i++) {
    int64_t v;
    if (!coil_sym_is_const(k->xsize[i], &v))
      return -1;
    x *= v;
  }
  return x;
}

/* Whether the value of an indirect instruction of k varies along loop variable `var` (through
 * its operands, their indices, or other indirect values): a vector of lanes along `var` would
 * then read from different rows, so such kernels get scalar plans. */
static bool
indirect_varies(const coil_wir_program *p, const coil_kernel *k, int var)
{
  bool *dep = calloc((size_t)k->ninsts + 1, sizeof(bool)), any = false;
  if (!dep)
    return true;
  for (int i = 0; i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    dep[i] = in->index && in->op != COIL_KOP_INDIRECT && gpu_uses_var(in->index, var);
    for (int a = 0; a < coil_kop_arity(in->op); a++)
      dep[i] = dep[i] || (in->args[a] >= 0 && in->args[a] < i && dep[in->args[a]]);
    int deps[8], nd = coil_kinst_indirect_deps(p, k, i, deps, 8);
    for (int d = 0; d < nd; d++)
      dep[i] = dep[i] || dep[deps[d]];
    any = any || (in->op == COIL_KOP_INDIRECT && dep[i]);
  }
  free(dep);
  return any;
}

void
coil_gpu_plan_kernel(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k, coil_gpu_plan *out)
{
  if (coil_kernel_has_scan(k)) { /* the block walks a row in order (emit_scan_loop) */
    *out = (coil_gpu_plan){COIL_GPU_LOOPED, 0, 0, 1, 0, 0, 0};
    return;
  }
  if (coil_kernel_has_combining_store(k)) { /* atomic stores (a scatter): one element a thread */
    *out = k->nr == 0 ? (coil_gpu_plan){COIL_GPU_POINTWISE, 256, 4, 1, 1, 0, 0} : (coil_gpu_plan){COIL_GPU_LOOPED, 0, 0, 1, 0, 0, 0};
    return;
  }
  if (coil_kernel_has_indirect(k)) { /* indirect loads: never a transpose; rows in registers (and
                                         vectors along r) only where no index value varies with r */
    if (k->nr == 0) { /* scalar: a vector load is issued before the lanes compute the index */
      *out = (coil_gpu_plan){COIL_GPU_POINTWISE, 256, 4, 1, 1, 0, 0};
      return;
    }
    bool by_r = false;
    for (int i = 0; i < k->nr; i++)
      by_r = by_r || indirect_varies(p, k, k->rvars[i]->var);
    if (by_r) { /* the rows are gathered: looped, each r point recomputing its index */
      *out = (coil_gpu_plan){COIL_GPU_LOOPED, 0, 0, 1, 0, 0, 0};
      return;
    }
  }
  if (k->nr == 0) {
    int tv = transpose_var(k);
    int64_t xn = fixed_xnumel(k);
    if (tv >= 0)
      *out = (coil_gpu_plan){COIL_GPU_TRANSPOSE, 256, 1, 1, 0, tv, 0};
    else if (xn >= 1 && xn <= COIL_GPU_SMALL_X)
      /* a small kernel is latency-bound (a 10-op chain over 1k elements: 4.0 us over 8 blocks of
         128 threads, one element each, against 7.2 us in one block of 256 x 4; H100, g7_chain):
         one element a thread, spread over as many SMs as the elements allow */
      *out = (coil_gpu_plan){COIL_GPU_POINTWISE, 128, 1, 1, 1, 0, 0};
    else {
      /* large vectorised kernels: two vectors a thread. gelu(x*w+b) 8192^2 f32 on an H200 beside
         Inductor (do_bench, tools/device/gelu_variants.sh, 2026-12-04): 0.995x with one, 1.007x
         with two, once loads and stores at the flat index (gpu_emit.c's flat_index) brought the
         two-vector kernel from 34 registers (6 blocks an SM) to 32; with 34 it ran at 0.956x */
      int v = vector_width(dl, k, k->nx, k->xvars, k->xsize);
      *out = (coil_gpu_plan){COIL_GPU_POINTWISE, 256, 4, v, v > 1 && xn >= COIL_GPU_TWO_VEC_X ? 2 : 1, 0, 0};
    }
    return;
  }
  int64_t r = gpu_fixed_rnumel(k), xn = fixed_xnumel(k);
  if (r >= 1 && r <= COIL_GPU_THREAD_ROW_MAX && xn >= COIL_GPU_WARP_ROWS_MIN_X) {
    /* many tiny rows (a pooling window): a thread per row, 128 rows per block */
    *out = (coil_gpu_plan){COIL_GPU_PERSISTENT, 128, (int)r, 1, 0, 0, 128};
    return;
  }
  if (r > COIL_GPU_THREAD_ROW_MAX && r <= COIL_GPU_WARP_ROW_MAX && xn >= COIL_GPU_WARP_ROWS_MIN_X) {
    /* many short rows: a warp per row, 4 rows per block, the row in registers (<= 32 each) */
    int v = vector_width(dl, k, k->nr, k->rvars, k->rsize);
    int64_t w = dl->warp_size;
    if (v < 1 || r < w * v)
      v = 1;
    *out = (coil_gpu_plan){COIL_GPU_PERSISTENT, 4 * (unsigned)w, (int)((r + w * v - 1) / (w * v)), v, 0, 0, 4};
    return;
  }
  if (r >= 1 && r <= COIL_GPU_PERSISTENT_MAX) {
    unsigned t = (unsigned)dl->warp_size; /* at least 8 elements per thread where the row allows, at most 256 threads */
    while (t < 256 && (int64_t)t * 8 < r)
      t *= 2;
    int v = vector_width(dl, k, k->nr, k->rvars, k->rsize);
    if (v > 1 && r >= (int64_t)t * v) /* P vectors of v per thread: element (j*T + tid)*v + l */
      *out = (coil_gpu_plan){COIL_GPU_PERSISTENT, t, (int)((r + (int64_t)t * v - 1) / ((int64_t)t * v)), v, 0, 0, 0};
    else
      *out = (coil_gpu_plan){COIL_GPU_PERSISTENT, t, (int)((r + t - 1) / t), 1, 0, 0, 0};
    return;
  }
  *out = (coil_gpu_plan){COIL_GPU_LOOPED, 0, 0, 1, 0, 0, 0};
}


bool
coil_gpu_plan_valid(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k, const coil_gpu_plan *pl)
{
  coil_gpu_plan d;
  coil_gpu_plan_kernel(dl, p, k, &d);
  unsigned w = (unsigned)dl->warp_size;
  bool pow2 = pl->threads >= w && pl->threads <= 1024 && (pl->threads & (pl->threads - 1)) == 0;
  if (pl->kind != d.kind || pl->vec != d.vec || (pl->rows && pl->kind != COIL_GPU_PERSISTENT))
    return false;
  switch (pl->kind) {
  case COIL_GPU_POINTWISE: return pow2 && pl->per_thread >= 1 && pl->per_thread <= 64 && pl->vec_per_thread >= 0 &&
                              pl->vec_per_thread <= 64 && (pl->vec == 1 || pl->vec_per_thread >= 1);
  case COIL_GPU_PERSISTENT: {
    int64_t r = gpu_fixed_rnumel(k);
    if (pl->rows > 1 && pl->threads == (unsigned)pl->rows) /* a thread per row */
      return pow2 && pl->vec == 1 && pl->per_thread >= r && pl->per_thread <= 32;
    if (pl->rows > 1) /* a warp per row */
      return pl->threads == w * (unsigned)pl->rows && pl->threads <= 1024 && pl->per_thread >= 1 &&
             pl->per_thread * pl->vec <= 32 && w * (int64_t)pl->per_thread * pl->vec >= r;
    return pow2 && pl->rows == 0 && pl->per_thread >= 1 && (int64_t)pl->threads * pl->per_thread * pl->vec >= r;
  }
  case COIL_GPU_TRANSPOSE: return pl->threads == 256 && pl->tvar == d.tvar;
  default: return pl->threads == 0 || pow2;
  }
}

int
coil_gpu_plan_candidates(const coil_gpu_dialect *dl, const coil_wir_program *p, const coil_kernel *k, coil_gpu_plan *out, int max)
{
  coil_gpu_plan d;
  coil_gpu_plan_kernel(dl, p, k, &d);
  unsigned w = (unsigned)dl->warp_size;
  int n = 0;
  out[n++] = d;
  if (d.kind == COIL_GPU_POINTWISE) {
    static const unsigned th[] = {128, 256, 512};
    for (size_t t = 0; t < 3; t++)
      for (int per = 1; per <= (d.vec > 1 ? 2 : 8); per *= 2) {
        coil_gpu_plan c = d;
        c.threads = th[t];
        if (d.vec > 1)
          c.vec_per_thread = per;
        else
          c.per_thread = per;
        if (n < max && memcmp(&c, &d, sizeof c) != 0)
          out[n++] = c;
      }
  } else if (d.kind == COIL_GPU_PERSISTENT) {
    int64_t r = gpu_fixed_rnumel(k);
    for (unsigned t = w; t <= 1024; t *= 2) {
      coil_gpu_plan c = d;
      c.threads = t;
      if (d.vec > 1 && r >= (int64_t)t * d.vec)
        c.per_thread = (int)((r + (int64_t)t * d.vec - 1) / ((int64_t)t * d.vec));
      else if (d.vec > 1)
        continue;
      else
        c.per_thread = (int)((r + t - 1) / t);
      c.rows = 0;
      if (c.per_thread * c.vec > 32 || (r < (int64_t)t && t > w)) /* rows in registers: 32 at most */
        continue;
      if (n < max && memcmp(&c, &d, sizeof c) != 0)
        out[n++] = c;
    }
    for (unsigned t = 64; t <= 256 && r <= 32 && d.vec == 1; t *= 2) { /* a thread per row */
      coil_gpu_plan c = d;
      c.rows = (int)t, c.threads = t, c.per_thread = (int)r;
      if (n < max && memcmp(&c, &d, sizeof c) != 0)
        out[n++] = c;
    }
    for (int rows = 2; rows <= 8; rows *= 2) { /* a warp per row, rows per block */
      coil_gpu_plan c = d;
      c.rows = rows, c.threads = w * (unsigned)rows;
      c.per_thread = (int)((r + w * (int64_t)d.vec - 1) / (w * (int64_t)d.vec));
      if (c.per_thread * c.vec <= 32 && n < max && memcmp(&c, &d, sizeof c) != 0)
        out[n++] = c;
    }
  } else if (d.kind == COIL_GPU_LOOPED) {
    for (unsigned t = 64; t <= 1024; t *= 2) {
      coil_gpu_plan c = d;
      c.threads = t;
      if (n < max)
        out[n++] = c;
    }
  }
  return n;
}

unsigned
coil_gpu_block_threads(const coil_gpu_dialect *dl, const coil_gpu_plan *pl, int64_t rnumel)
{
  if (pl->kind != COIL_GPU_LOOPED || pl->threads) /* fixed by the code, or tuned */
    return pl->threads;
  unsigned t = (unsigned)dl->warp_size;
  while (t < 256 && (int64_t)t < rnumel)
    t *= 2;
  return t;
}

unsigned
coil_gpu_grid_blocks(const coil_gpu_plan *pl, bool vec, int64_t xnumel, unsigned threads)
{
  if (pl->kind == COIL_GPU_TRANSPOSE) { /* tiles of 32 x 32 (the kernel strides over them) */
    int64_t b = (xnumel + 1023) / 1024 + 1;
    return b > (1 << 22) ? 1u << 22 : (unsigned)b;
  }
  int64_t tile = pl->kind != COIL_GPU_POINTWISE ? 0
                 : vec                          ? (int64_t)threads * pl->vec_per_thread * pl->vec
                                                : (int64_t)threads * pl->per_thread;
  if (pl->kind == COIL_GPU_PERSISTENT && pl->rows > 1) /* rows x points per block */
    tile = pl->rows;
  int64_t b = tile ? (xnumel + tile - 1) / tile : xnumel; /* kernels stride by the grid */
  if (b > (1 << 22))
    b = 1 << 22;
  return b < 1 ? 1 : (unsigned)b;
}

void
coil_gpu_plan_print(int k, const coil_gpu_plan *q, coil_strbuf *out)
{
  coil_strbuf_printf(out, "k%d %d %u %d %d %d %d %d\n", k, q->kind, q->threads, q->per_thread, q->vec, q->vec_per_thread,
                     q->tvar, q->rows);
}

bool
coil_gpu_plan_read(const char *text, int k, coil_gpu_plan *out)
{
  char head[32];
  snprintf(head, sizeof head, "k%d ", k);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, head, strlen(head)) == 0)
      return sscanf(l + strlen(head), "%d %u %d %d %d %d %d", &out->kind, &out->threads, &out->per_thread, &out->vec,
                    &out->vec_per_thread, &out->tvar, &out->rows) == 7;
  return false;
}

const char *
coil_gpu_ool_math(coil_kop op, coil_dtype t)
{
  bool f = t != COIL_F64;
  switch (op) {
  case COIL_KOP_SIN: return f ? "coil_sinf_ool" : "coil_sin_ool";
  case COIL_KOP_COS: return f ? "coil_cosf_ool" : "coil_cos_ool";
  case COIL_KOP_TAN: return f ? "coil_tanf_ool" : "coil_tan_ool";
  default: return NULL;
  }
}
