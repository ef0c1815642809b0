/* wir.c — the Wrapper IR builder and the names of kernel ops. Arrays grow by doubling inside
 * the program's arena (the old copy stays until the program is freed; programs are small). */
#include "coil/wir.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int arity;
  coil_kop_class cls;
} kops[] = {
#define KOP(id, name, arity, cls) {name, arity, COIL_KCLASS_##cls},
#include "coil/kops.def"
#undef KOP
};

static const char *const reductions[] = {
#define R(id, name) name,
    COIL_REDUCTIONS(R)
#undef R
};

const char *
coil_kop_name(coil_kop op)
{
  return (unsigned)op < COIL_KOP_COUNT ? kops[op].name : "?";
}

int
coil_kop_arity(coil_kop op)
{
  return (unsigned)op < COIL_KOP_COUNT ? kops[op].arity : 0;
}

coil_kop_class
coil_kop_class_of(coil_kop op)
{
  return kops[op].cls;
}

int
coil_kop_from_name(const char *s, size_t n)
{
  for (int i = 0; i < COIL_KOP_COUNT; i++)
    if (strlen(kops[i].name) == n && memcmp(kops[i].name, s, n) == 0)
      return i;
  return -1;
}

const char *
coil_reduction_name(coil_reduction r)
{
  return (unsigned)r < COIL_REDUCE_COUNT ? reductions[r] : "?";
}

int
coil_reduction_from_name(const char *s, size_t n)
{
  for (int i = 0; i < COIL_REDUCE_COUNT; i++)
    if (strlen(reductions[i]) == n && memcmp(reductions[i], s, n) == 0)
      return i;
  return -1;
}

static const char *const store_modes[] = {
#define M(id, name) name,
    COIL_STORE_MODES(M)
#undef M
};

const char *
coil_store_mode_name(coil_store_mode m)
{
  return (unsigned)m < COIL_STORE_MODE_COUNT ? store_modes[m] : "?";
}

int
coil_store_mode_from_name(const char *s, size_t n)
{
  for (int i = 1; i < COIL_STORE_MODE_COUNT; i++)
    if (strlen(store_modes[i]) == n && memcmp(store_modes[i], s, n) == 0)
      return i;
  return -1;
}

bool
coil_store_mode_valid(coil_store_mode m, coil_dtype t)
{
  if ((unsigned)m >= COIL_STORE_MODE_COUNT)
    return false;
  return m == COIL_STORE_PLAIN || t != COIL_BOOL;
}

coil_wir_program *
coil_wir_new(const char *name)
{
  coil_arena *a = coil_arena_new();
  coil_wir_program *p = coil_arena_alloc(a, sizeof *p);
  p->arena = a;
  p->sym = coil_symctx_new(a);
  p->version_major = COIL_WIR_VERSION_MAJOR;
  p->version_minor = COIL_WIR_VERSION_MINOR;
  p->name = coil_arena_strdup(a, name ? name : "graph");
  p->peak_bytes = -1;
  return p;
}

void
coil_wir_free(coil_wir_program *p)
{
  if (p)
    coil_arena_free(p->arena);
}

/* Makes room for one more element of size `elem` in *arr (count n, capacity *cap). */
static void *
grow(coil_arena *a, void *arr, int n, int *cap, size_t elem)
{
  if (n < *cap)
    return arr;
  int ncap = *cap ? 2 * *cap : 16;
  void *fresh = coil_arena_alloc(a, elem * (size_t)ncap);
  if (n)
    memcpy(fresh, arr, elem * (size_t)n);
  *cap = ncap;
  return fresh;
}

int
coil_wir_add_buffer(coil_wir_program *p, const coil_buffer *b)
{
  p->buffers = grow(p->arena, p->buffers, p->nbuffers, &p->cap_buffers, sizeof *b);
  p->buffers[p->nbuffers] = *b;
  p->buffers[p->nbuffers].name = coil_arena_strdup(p->arena, b->name);
  if (!b->offset)
    p->buffers[p->nbuffers].offset = coil_sym_const(p->sym, 0);
  return p->nbuffers++;
}

int
coil_wir_add_input(coil_wir_program *p, int buffer, const char *label, bool is_param)
{
  p->inputs = grow(p->arena, p->inputs, p->ninputs, &p->cap_inputs, sizeof *p->inputs);
  p->inputs[p->ninputs] = (coil_wir_input){buffer, coil_arena_strdup(p->arena, label), is_param};
  return p->ninputs++;
}

int
coil_wir_add_kernel(coil_wir_program *p, const coil_kernel *k)
{
  p->kernels = grow(p->arena, p->kernels, p->nkernels, &p->cap_kernels, sizeof *k);
  coil_kernel *c = &p->kernels[p->nkernels];
  *c = *k;
  c->name = coil_arena_strdup(p->arena, k->name);
  c->source_ops = k->source_ops ? coil_arena_strdup(p->arena, k->source_ops) : NULL;
  c->params = COIL_ARENA_ARRAY(p->arena, coil_kparam, k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    c->params[i] = k->params[i];
    c->params[i].name = coil_arena_strdup(p->arena, k->params[i].name);
  }
  c->syms = COIL_ARENA_ARRAY(p->arena, const coil_sym *, k->nsyms);
  if (k->nsyms)
    memcpy(c->syms, k->syms, sizeof(*k->syms) * (size_t)k->nsyms);
  c->insts = COIL_ARENA_ARRAY(p->arena, coil_kinst, k->ninsts);
  if (k->ninsts)
    memcpy(c->insts, k->insts, sizeof(*k->insts) * (size_t)k->ninsts);
  return p->nkernels++;
}

static int *
copy_ints(coil_arena *a, const int *v, int n)
{
  int *c = COIL_ARENA_ARRAY(a, int, n);
  if (n)
    memcpy(c, v, sizeof(int) * (size_t)n);
  return c;
}

int
coil_wir_add_line(coil_wir_program *p, const coil_line *l)
{
  p->lines = grow(p->arena, p->lines, p->nlines, &p->cap_lines, sizeof *l);
  coil_line *c = &p->lines[p->nlines];
  *c = *l;
  if (l->text)
    c->text = coil_arena_strdup(p->arena, l->text);
  if (l->op)
    c->op = coil_arena_strdup(p->arena, l->op);
  c->args = copy_ints(p->arena, l->args, l->nargs);
  c->outs = copy_ints(p->arena, l->outs, l->nouts);
  c->xparams = COIL_ARENA_ARRAY(p->arena, coil_xparam, l->nxparams);
  for (int i = 0; i < l->nxparams; i++) {
    coil_xparam *x = &c->xparams[i];
    *x = l->xparams[i];
    x->name = coil_arena_strdup(p->arena, l->xparams[i].name);
    if (x->s)
      x->s = coil_arena_strdup(p->arena, x->s);
    int64_t *ints = COIL_ARENA_ARRAY(p->arena, int64_t, x->n);
    if (x->n)
      memcpy(ints, l->xparams[i].ints, sizeof(int64_t) * (size_t)x->n);
    x->ints = ints;
  }
  return p->nlines++;
}

void
coil_wir_contiguous(coil_wir_program *p, int rank, const coil_sym *const *sizes,
                    const coil_sym **strides)
{
  const coil_sym *s = coil_sym_const(p->sym, 1);
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s = coil_sym_mul(p->sym, s, sizes[i]);
  }
}

int
coil_wir_output_storage(coil_wir_program *p, int output)
{
  const coil_line *ol = p->nlines > 0 ? &p->lines[p->nlines - 1] : NULL;
  if (!ol || ol->kind != COIL_LINE_OUTPUT || output < 0 || output >= ol->nargs)
    return -1;
  int b = ol->args[output];
  if (b < 0 || b >= p->nbuffers)
    return -1;
  const coil_buffer *w = &p->buffers[b];
  if (w->kind == COIL_BUF_ALLOC)
    return b;
  int64_t off;
  if (w->kind != COIL_BUF_VIEW || w->base < 0 || w->base >= p->nbuffers ||
      p->buffers[w->base].kind != COIL_BUF_ALLOC || !coil_sym_is_const(w->offset, &off) || off != 0)
    return -1;
  const coil_buffer *base = &p->buffers[w->base];
  const coil_sym *nv = coil_sym_const(p->sym, 1), *nb = nv;
  for (int i = 0; i < w->rank; i++)
    nv = coil_sym_mul(p->sym, nv, w->sizes[i]);
  for (int i = 0; i < base->rank; i++)
    nb = coil_sym_mul(p->sym, nb, base->sizes[i]);
  return base->dtype == w->dtype && coil_sym_cmp(nv, nb) == 0 ? w->base : -1;
}

const coil_sym *
coil_wir_indirect_var(coil_symctx *sym, int inst)
{
  char name[24];
  snprintf(name, sizeof name, "i%d", inst);
  return coil_sym_var(sym, name);
}

int
coil_wir_indirect_of(const coil_symctx *sym, int var)
{
  if (var < 0 || var >= coil_sym_nvars(sym))
    return -1;
  const char *s = coil_sym_var_name(sym, var);
  if (!s || s[0] != 'i' || !s[1] || strlen(s) > 10)
    return -1;
  int n = 0;
  for (const char *c = s + 1; *c; c++) {
    if (*c < '0' || *c > '9' || (c == s + 1 && *c == '0' && c[1]))
      return -1;
    n = n * 10 + (*c - '0');
  }
  return n;
}
