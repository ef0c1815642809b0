/* interp_exec.c — the driver of the interp engine: binds inputs and size symbols, checks the
 * assert lines, runs the lines in order and keeps buffer lifetimes honest (every buffer is
 * defined before use and not used after its free; storage that a later reuse line takes is kept
 * across the free, any other freed storage is released at once), then hands back contiguous
 * copies of the outputs. Kernels run in interp_kernel.c, extern calls in interp_extern.c.
 *
 * Storage the engine allocates is filled with 0xff bytes (NaN for every floating dtype, -1 or
 * 255 for integers) so that a kernel reading what no one wrote shows up in its results. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

/* ---- messages ---- */

static const char *
bufname(const ictx *c, int b)
{
  return b >= 0 && b < c->p->nbuffers ? c->p->buffers[b].name : "?";
}

/* What the current line is, for messages: "kernel_call coil_poi_fused_add_0 (line 7)". */
static void
describe_line(const ictx *c, char *out, size_t n)
{
  if (c->line < 0 || c->line >= c->p->nlines) {
    snprintf(out, n, "inputs");
    return;
  }
  const coil_line *l = &c->p->lines[c->line];
  int at = c->line + 1;
  switch (l->kind) {
  case COIL_LINE_SYMBOL:
    snprintf(out, n, "symbol from %s.%s(%d) (line %d)", bufname(c, l->buffer),
             l->is_stride ? "stride" : "size", l->dim, at);
    break;
  case COIL_LINE_ASSERT: snprintf(out, n, "assert on %s (line %d)", bufname(c, l->buffer), at); break;
  case COIL_LINE_ALLOC: snprintf(out, n, "alloc %s (line %d)", bufname(c, l->buffer), at); break;
  case COIL_LINE_FREE: snprintf(out, n, "free %s (line %d)", bufname(c, l->buffer), at); break;
  case COIL_LINE_REUSE: snprintf(out, n, "reuse %s (line %d)", bufname(c, l->buffer), at); break;
  case COIL_LINE_VIEW: snprintf(out, n, "view %s (line %d)", bufname(c, l->buffer), at); break;
  case COIL_LINE_KERNEL_CALL:
    snprintf(out, n, "kernel_call %s (line %d)",
             l->kernel >= 0 && l->kernel < c->p->nkernels ? c->p->kernels[l->kernel].name : "?", at);
    break;
  case COIL_LINE_EXTERN_CALL:
    snprintf(out, n, "extern_call %s (line %d)", l->op ? l->op : "?", at);
    break;
  case COIL_LINE_MULTI_OUTPUT:
    snprintf(out, n, "multi_output %s (line %d)", bufname(c, l->buffer), at);
    break;
  case COIL_LINE_COPY_BACK:
    snprintf(out, n, "copy_back %s (line %d)", bufname(c, l->buffer), at);
    break;
  case COIL_LINE_OUTPUT: snprintf(out, n, "output (line %d)", at); break;
  default: snprintf(out, n, "line %d", at); break;
  }
}

int
interp_err(ictx *c, const char *fmt, ...)
{
  char msg[1536], where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe_line(c, where, sizeof where);
  return coil_diag_set(c->d, "interp: %s: %s", where, msg);
}

/* ---- symbols ---- */

int
interp_check_vars(ictx *c, const coil_sym *s, const bool *is_loop, const char *what)
{
  memset(c->used, 0, sizeof(bool) * (size_t)(c->nvars + 1));
  coil_sym_vars_used(s, c->used, c->nvars);
  for (int v = 0; v < c->nvars; v++)
    if (c->used[v] && !c->bound[v] && !(is_loop && is_loop[v]))
      return interp_err(c, "size symbol '%s' (in %s) is not defined by any symbol line before this",
                        coil_sym_var_name(c->p->sym, v), what);
  return 0;
}

int
interp_eval(ictx *c, const coil_sym *s, const char *what, int64_t *out)
{
  if (!s)
    return interp_err(c, "%s is missing", what);
  if (interp_check_vars(c, s, NULL, what))
    return -1;
  coil_diag tmp = {{0}};
  if (coil_sym_eval(c->p->sym, s, c->bind, c->nvars, out, &tmp))
    return interp_err(c, "cannot evaluate %s: %s", what, tmp.msg);
  return 0;
}

/* ---- buffers ---- */

int64_t
interp_numel(const rtbuf *b)
{
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++)
    n *= b->sizes[d];
  return n;
}

rtbuf *
interp_use(ictx *c, int buffer)
{
  if (buffer < 0 || buffer >= c->p->nbuffers) {
    interp_err(c, "buffer index %d is out of range (%d buffers)", buffer, c->p->nbuffers);
    return NULL;
  }
  rtbuf *b = &c->bufs[buffer];
  if (b->store < 0) {
    interp_err(c, "%s is used before it is defined", bufname(c, buffer));
    return NULL;
  }
  if (!b->live || c->stores[b->store].freed) {
    interp_err(c, "%s is used after it was freed", bufname(c, buffer));
    return NULL;
  }
  /* a view lives only as long as what it views (a freed base's storage may be parked for a
   * reuse line, so the storage's own flag does not tell) */
  for (int v = buffer; c->p->buffers[v].kind == COIL_BUF_VIEW;) {
    int base = c->p->buffers[v].base;
    if (base < 0 || base >= c->p->nbuffers || !c->bufs[base].live) {
      interp_err(c, "%s is a view of %s, which was freed", bufname(c, buffer), bufname(c, base));
      return NULL;
    }
    v = base;
  }
  return b;
}

/* True if the es bytes at address `at` lie inside storage s. Addresses are compared as
 * integers: an offset that is out of range never forms an invalid pointer. */
static bool
inside(const rtstore *s, uintptr_t at, size_t es)
{
  uintptr_t lo = (uintptr_t)s->lo, hi = (uintptr_t)s->hi;
  return at >= lo && at <= hi && hi - at >= es;
}

char *
interp_elem(const ictx *c, const rtbuf *b, int64_t off)
{
  size_t es = coil_dtype_size(b->dtype);
  uintptr_t at = (uintptr_t)b->ptr + (uintptr_t)off * (uintptr_t)es;
  if (b->store >= 0 && !inside(&c->stores[b->store], at, es))
    return NULL;
  return (char *)at;
}

/* Lowest and highest element offsets a strided layout reaches (0, -1 when it has no elements). */
static void
extent(int rank, const int64_t *sizes, const int64_t *strides, int64_t *lo, int64_t *hi)
{
  *lo = 0, *hi = 0;
  for (int d = 0; d < rank; d++) {
    if (sizes[d] == 0) {
      *lo = 0, *hi = -1;
      return;
    }
    int64_t span = (sizes[d] - 1) * strides[d];
    if (span < 0)
      *lo += span;
    else
      *hi += span;
  }
}

static int
new_store(ictx *c, char *mem, char *start, char *lo, char *hi)
{
  rtstore *s = &c->stores[c->nstores];
  *s = (rtstore){mem, start, lo, hi, false};
  return c->nstores++;
}

/* Evaluates a buffer's sizes and strides (and offset for a view) into its run-time record. */
static int
eval_layout(ictx *c, int buffer, int64_t *offset)
{
  const coil_buffer *cb = &c->p->buffers[buffer];
  rtbuf *b = &c->bufs[buffer];
  char what[96];
  if (cb->rank < 0 || cb->rank > COIL_MAX_RANK)
    return interp_err(c, "%s has rank %d", cb->name, cb->rank);
  b->dtype = cb->dtype;
  b->rank = cb->rank;
  for (int d = 0; d < cb->rank; d++) {
    snprintf(what, sizeof what, "size %d of %s", d, cb->name);
    if (interp_eval(c, cb->sizes[d], what, &b->sizes[d]))
      return -1;
    if (b->sizes[d] < 0)
      return interp_err(c, "%s is %" PRId64 ", a negative size", what, b->sizes[d]);
    snprintf(what, sizeof what, "stride %d of %s", d, cb->name);
    if (interp_eval(c, cb->strides[d], what, &b->strides[d]))
      return -1;
  }
  *offset = 0;
  if (cb->kind == COIL_BUF_VIEW) {
    snprintf(what, sizeof what, "the offset of %s", cb->name);
    if (interp_eval(c, cb->offset, what, offset))
      return -1;
  }
  return 0;
}

static int
check_kind(ictx *c, int buffer, coil_buf_kind want, const char *line)
{
  if (buffer < 0 || buffer >= c->p->nbuffers)
    return interp_err(c, "buffer index %d is out of range", buffer);
  if (c->p->buffers[buffer].kind != want)
    return interp_err(c, "%s line for %s, whose buffer kind is not %s", line, bufname(c, buffer),
                      line);
  if (c->bufs[buffer].store >= 0)
    return interp_err(c, "%s is defined twice", bufname(c, buffer));
  return 0;
}

static int
run_alloc(ictx *c, const coil_line *l)
{
  int64_t off, lo, hi;
  if (check_kind(c, l->buffer, COIL_BUF_ALLOC, "alloc") || eval_layout(c, l->buffer, &off))
    return -1;
  rtbuf *b = &c->bufs[l->buffer];
  extent(b->rank, b->sizes, b->strides, &lo, &hi);
  if (lo < 0)
    return interp_err(c, "%s has a negative stride", bufname(c, l->buffer));
  size_t bytes = (size_t)(hi + 1) * coil_dtype_size(b->dtype);
  char *mem = malloc(bytes ? bytes : 1);
  if (!mem)
    return interp_err(c, "out of memory allocating %zu bytes", bytes);
  memset(mem, 0xff, bytes);
  b->ptr = mem;
  b->store = new_store(c, mem, mem, mem, mem + bytes);
  b->live = true;
  return 0;
}

/* True if a reuse line after the current one takes the storage of `buffer`. */
static bool
reused_later(const ictx *c, int buffer)
{
  for (int i = c->line + 1; i < c->p->nlines; i++) {
    const coil_line *l = &c->p->lines[i];
    if (l->kind == COIL_LINE_REUSE && l->buffer >= 0 && l->buffer < c->p->nbuffers &&
        c->p->buffers[l->buffer].base == buffer)
      return true;
  }
  return false;
}

static int
run_free(ictx *c, const coil_line *l)
{
  rtbuf *b = interp_use(c, l->buffer);
  if (!b)
    return -1;
  coil_buf_kind kind = c->p->buffers[l->buffer].kind;
  if (kind == COIL_BUF_INPUT)
    return interp_err(c, "%s is an input: the caller owns it", bufname(c, l->buffer));
  b->live = false;
  if ((kind == COIL_BUF_ALLOC || kind == COIL_BUF_REUSE) && !reused_later(c, l->buffer)) {
    rtstore *s = &c->stores[b->store];
    free(s->mem);
    s->mem = NULL;
    s->freed = true;
  }
  return 0;
}

static int
run_reuse(ictx *c, const coil_line *l)
{
  int64_t off, lo, hi;
  if (check_kind(c, l->buffer, COIL_BUF_REUSE, "reuse"))
    return -1;
  int base = c->p->buffers[l->buffer].base;
  if (base < 0 || base >= c->p->nbuffers || c->bufs[base].store < 0)
    return interp_err(c, "%s reuses %s, which was never defined", bufname(c, l->buffer),
                      bufname(c, base));
  if (c->bufs[base].live)
    return interp_err(c, "%s reuses %s, which is still live (no free line before this)",
                      bufname(c, l->buffer), bufname(c, base));
  rtstore *s = &c->stores[c->bufs[base].store];
  if (s->freed || !s->mem)
    return interp_err(c, "%s reuses the storage of %s, which is not the engine's to hand on",
                      bufname(c, l->buffer), bufname(c, base));
  if (eval_layout(c, l->buffer, &off))
    return -1;
  rtbuf *b = &c->bufs[l->buffer];
  extent(b->rank, b->sizes, b->strides, &lo, &hi);
  size_t bytes = (size_t)(hi + 1) * coil_dtype_size(b->dtype);
  if (lo < 0 || bytes > (size_t)(s->hi - s->start))
    return interp_err(c, "%s needs %zu bytes, but the storage of %s holds %zu",
                      bufname(c, l->buffer), bytes, bufname(c, base), (size_t)(s->hi - s->start));
  memset(s->mem, 0xff, (size_t)(s->hi - s->start));
  b->ptr = s->start;
  b->store = c->bufs[base].store;
  b->live = true;
  return 0;
}

static int
run_view(ictx *c, const coil_line *l)
{
  int64_t off, lo, hi;
  if (check_kind(c, l->buffer, COIL_BUF_VIEW, "view"))
    return -1;
  rtbuf *base = interp_use(c, c->p->buffers[l->buffer].base);
  if (!base || eval_layout(c, l->buffer, &off))
    return -1;
  rtbuf *b = &c->bufs[l->buffer];
  const rtstore *s = &c->stores[base->store];
  size_t es = coil_dtype_size(b->dtype);
  extent(b->rank, b->sizes, b->strides, &lo, &hi);
  uintptr_t at = (uintptr_t)s->start + (uintptr_t)off * (uintptr_t)es;
  if (hi >= lo && (!inside(s, at + (uintptr_t)lo * (uintptr_t)es, es) ||
                   !inside(s, at + (uintptr_t)hi * (uintptr_t)es, es)))
    return interp_err(c, "%s (offset %" PRId64 ", elements %" PRId64 "..%" PRId64
                      ") reaches outside the storage of %s",
                      bufname(c, l->buffer), off, off + lo, off + hi,
                      bufname(c, c->p->buffers[l->buffer].base));
  b->ptr = (char *)at;
  b->store = base->store;
  b->live = true;
  return 0;
}

/* ---- inputs, symbols, asserts ---- */

static const char *
input_label(const ictx *c, int buffer)
{
  for (int i = 0; i < c->p->ninputs; i++)
    if (c->p->inputs[i].buffer == buffer)
      return c->p->inputs[i].label ? c->p->inputs[i].label : "";
  return NULL;
}

static int
bind_inputs(ictx *c, const interp_tensor *inputs, int ninputs)
{
  const coil_wir_program *p = c->p;
  if (ninputs != p->ninputs)
    return interp_err(c, "the program takes %d inputs, %d were given", p->ninputs, ninputs);
  for (int i = 0; i < ninputs; i++) {
    const interp_tensor *t = &inputs[i];
    int bi = p->inputs[i].buffer;
    if (bi < 0 || bi >= p->nbuffers || p->buffers[bi].kind != COIL_BUF_INPUT)
      return interp_err(c, "input %d names buffer %d, which is not an input buffer", i, bi);
    const coil_buffer *cb = &p->buffers[bi];
    if (t->dtype != cb->dtype || t->rank != cb->rank)
      return interp_err(c, "input '%s' (%s): expected %s of rank %d, got %s of rank %d",
                        p->inputs[i].label, cb->name, coil_dtype_name(cb->dtype), cb->rank,
                        coil_dtype_name(t->dtype), t->rank);
    rtbuf *b = &c->bufs[bi];
    b->dtype = t->dtype;
    b->rank = t->rank;
    for (int d = 0; d < t->rank; d++) {
      if (t->sizes[d] < 0)
        return interp_err(c, "input '%s' (%s) has a negative size %" PRId64 " in dimension %d",
                          p->inputs[i].label, cb->name, t->sizes[d], d);
      b->sizes[d] = t->sizes[d];
      b->strides[d] = t->strides[d];
    }
    int64_t lo, hi;
    extent(b->rank, b->sizes, b->strides, &lo, &hi);
    if (!t->data && hi >= lo)
      return interp_err(c, "input '%s' (%s) has no data", p->inputs[i].label, cb->name);
    size_t es = coil_dtype_size(t->dtype);
    b->ptr = t->data;
    if (hi >= lo) /* (no pointer arithmetic on a NULL pointer of an empty input) */
      b->store = new_store(c, NULL, b->ptr, b->ptr + lo * (int64_t)es, b->ptr + (hi + 1) * (int64_t)es);
    else
      b->store = new_store(c, NULL, b->ptr, b->ptr, b->ptr);
    b->live = true;
  }
  return 0;
}

/* Once the symbols are bound: every input has the sizes the program declares for it. */
static int
check_input_sizes(ictx *c)
{
  for (int i = 0; i < c->p->ninputs; i++) {
    int bi = c->p->inputs[i].buffer;
    const coil_buffer *cb = &c->p->buffers[bi];
    for (int d = 0; d < cb->rank; d++) {
      char what[96];
      int64_t want;
      snprintf(what, sizeof what, "size %d of %s", d, cb->name);
      if (interp_eval(c, cb->sizes[d], what, &want))
        return -1;
      if (want != c->bufs[bi].sizes[d])
        return interp_err(c, "input '%s' (%s) has size %" PRId64 " in dimension %d, the program "
                          "expects %" PRId64, c->p->inputs[i].label, cb->name,
                          c->bufs[bi].sizes[d], d, want);
    }
  }
  return 0;
}

static int
run_symbol(ictx *c, const coil_line *l)
{
  rtbuf *b = interp_use(c, l->buffer);
  if (!b)
    return -1;
  if (l->dim < 0 || l->dim >= b->rank)
    return interp_err(c, "dimension %d is out of range for %s of rank %d", l->dim,
                      bufname(c, l->buffer), b->rank);
  int64_t v = l->is_stride ? b->strides[l->dim] : b->sizes[l->dim];
  if (l->sym && l->sym->kind == COIL_SYM_VAR && l->sym->var < c->nvars && !c->bound[l->sym->var]) {
    c->bind[l->sym->var] = v;
    c->bound[l->sym->var] = true;
    return 0;
  }
  int64_t have; /* already bound, or an expression: the line is a check */
  if (interp_eval(c, l->sym, "the symbol", &have))
    return -1;
  if (have != v)
    return interp_err(c, "the symbol is %" PRId64 " from an earlier line, but %s.%s(%d) is %" PRId64,
                      have, bufname(c, l->buffer), l->is_stride ? "stride" : "size", l->dim, v);
  return 0;
}

static int
run_assert(ictx *c, const coil_line *l)
{
  rtbuf *b = interp_use(c, l->buffer);
  if (!b)
    return -1;
  const char *label = input_label(c, l->buffer), *name = bufname(c, l->buffer);
  char who[160];
  if (label)
    snprintf(who, sizeof who, "input '%s' (%s)", label, name);
  else
    snprintf(who, sizeof who, "%s", name);
  if (l->assert_kind == COIL_ASSERT_ALIGNED) {
    if (l->align <= 0)
      return interp_err(c, "alignment %" PRId64 " is not positive", l->align);
    uintptr_t rem = (uintptr_t)b->ptr % (uintptr_t)l->align;
    if (rem)
      return interp_err(c, "assert failed: %s aligned %" PRId64 ", but its data pointer %p is %zu "
                        "bytes past a multiple of %" PRId64, who, l->align, (void *)b->ptr,
                        (size_t)rem, l->align);
    return 0;
  }
  bool stride = l->assert_kind == COIL_ASSERT_STRIDE;
  if (l->dim < 0 || l->dim >= b->rank)
    return interp_err(c, "dimension %d is out of range for %s of rank %d", l->dim, name, b->rank);
  int64_t want, have = stride ? b->strides[l->dim] : b->sizes[l->dim];
  if (interp_eval(c, l->value, "the expected value", &want))
    return -1;
  if (have != want)
    return interp_err(c, "assert failed: %s.%s(%d) == %" PRId64 ", but %s has %s %" PRId64
                      " in dimension %d", name, stride ? "stride" : "size", l->dim, want, who,
                      stride ? "stride" : "size", have, l->dim);
  return 0;
}

/* ---- data movement: copy_back and outputs ---- */

/* Copies every element of src into dst (same sizes), converting dtype as torch's .to(). */
static int
copy_elems(ictx *c, const rtbuf *src, const rtbuf *dst)
{
  int64_t n = interp_numel(src), idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t so = 0, dof = 0;
    for (int d = 0; d < src->rank; d++) {
      so += idx[d] * src->strides[d];
      dof += idx[d] * dst->strides[d];
    }
    const char *sp = interp_elem(c, src, so);
    char *dp = interp_elem(c, dst, dof);
    if (!sp || !dp)
      return interp_err(c, "element %" PRId64 " lies outside its storage", i);
    interp_store(dp, dst->dtype, interp_convert(interp_load(sp, src->dtype), src->dtype, dst->dtype));
    for (int d = src->rank - 1; d >= 0; d--) { /* next multi-index, last dimension fastest */
      if (++idx[d] < src->sizes[d])
        break;
      idx[d] = 0;
    }
  }
  return 0;
}

static int
same_sizes(const rtbuf *a, const rtbuf *b)
{
  if (a->rank != b->rank)
    return 0;
  for (int d = 0; d < a->rank; d++)
    if (a->sizes[d] != b->sizes[d])
      return 0;
  return 1;
}

static int
run_copy_back(ictx *c, const coil_line *l)
{
  rtbuf *dst = interp_use(c, l->buffer), *src = dst ? interp_use(c, l->source) : NULL;
  if (!src)
    return -1;
  if (c->p->buffers[l->buffer].kind != COIL_BUF_INPUT)
    return interp_err(c, "%s is not an input", bufname(c, l->buffer));
  if (!same_sizes(src, dst))
    return interp_err(c, "%s and %s differ in sizes", bufname(c, l->source), bufname(c, l->buffer));
  return copy_elems(c, src, dst);
}

static int
run_output(ictx *c, const coil_line *l, interp_tensor **outs, int *nouts)
{
  if (*outs)
    return interp_err(c, "a second output line");
  interp_tensor *o = calloc((size_t)l->nargs + 1, sizeof *o);
  if (!o)
    return interp_err(c, "out of memory");
  *outs = o;
  for (int i = 0; i < l->nargs; i++) {
    rtbuf *src = interp_use(c, l->args[i]);
    if (!src)
      return -1;
    rtbuf dst = *src;
    dst.store = -1;
    int64_t st = 1;
    for (int d = src->rank - 1; d >= 0; d--) {
      dst.strides[d] = st;
      st *= src->sizes[d];
    }
    size_t bytes = (size_t)interp_numel(src) * coil_dtype_size(src->dtype);
    dst.ptr = malloc(bytes ? bytes : 1);
    if (!dst.ptr)
      return interp_err(c, "out of memory allocating %zu bytes", bytes);
    o[i] = (interp_tensor){.data = dst.ptr, .dtype = dst.dtype, .rank = dst.rank};
    memcpy(o[i].sizes, dst.sizes, sizeof dst.sizes);
    memcpy(o[i].strides, dst.strides, sizeof dst.strides);
    *nouts = i + 1;
    if (copy_elems(c, src, &dst))
      return -1;
  }
  return 0;
}

/* ---- extern calls: resolving the outputs ---- */

static int
run_extern(ictx *c, const coil_line *l)
{
  int n = interp_extern_nouts(l->op ? l->op : "");
  if (!n)
    return interp_err(c, "extern op %s is not supported by interp", l->op ? l->op : "(none)");
  rtbuf *outs[4] = {0};
  if (l->nouts < 1 || l->nouts > n)
    return interp_err(c, "%s writes %d output(s), the line lists %d", l->op, n, l->nouts);
  for (int k = 0; k < l->nouts; k++)
    if (!(outs[k] = interp_use(c, l->outs[k])))
      return -1;
  /* the other outputs of a multi-output op: multi_output lines right after this one */
  for (int i = c->line + 1; i < c->p->nlines; i++) {
    const coil_line *m = &c->p->lines[i];
    if (m->kind == COIL_LINE_COMMENT)
      continue;
    if (m->kind != COIL_LINE_MULTI_OUTPUT || m->source != l->outs[0])
      break;
    if (m->element < 0 || m->element >= n)
      return interp_err(c, "multi_output element %d of an op with %d outputs", m->element, n);
    if (m->element < l->nouts && m->buffer != l->outs[m->element])
      return interp_err(c, "a multi_output line names %s as output %d, but the call writes %s",
                        bufname(c, m->buffer), m->element, bufname(c, l->outs[m->element]));
    if (m->element >= l->nouts && !(outs[m->element] = interp_use(c, m->buffer)))
      return -1;
  }
  for (int k = 0; k < n; k++)
    if (!outs[k])
      return interp_err(c, "output %d of %s is neither in the line's outs nor named by a "
                        "multi_output line after it", k, l->op);
  return interp_extern_call(c, l, outs, n);
}

static int
run_multi_output(ictx *c, const coil_line *l)
{
  /* written by the extern call it follows; here only check that both buffers are alive */
  if (!interp_use(c, l->source) || !interp_use(c, l->buffer))
    return -1;
  return 0;
}

/* ---- the driver ---- */

static int
run_line(ictx *c, const coil_line *l, interp_tensor **outs, int *nouts)
{
  switch (l->kind) {
  case COIL_LINE_COMMENT: return 0;
  case COIL_LINE_SYMBOL: return run_symbol(c, l);
  case COIL_LINE_ASSERT: return run_assert(c, l);
  case COIL_LINE_ALLOC: return run_alloc(c, l);
  case COIL_LINE_FREE: return run_free(c, l);
  case COIL_LINE_REUSE: return run_reuse(c, l);
  case COIL_LINE_VIEW: return run_view(c, l);
  case COIL_LINE_KERNEL_CALL: return interp_kernel_call(c, l);
  case COIL_LINE_EXTERN_CALL: return run_extern(c, l);
  case COIL_LINE_MULTI_OUTPUT: return run_multi_output(c, l);
  case COIL_LINE_COPY_BACK: return run_copy_back(c, l);
  case COIL_LINE_OUTPUT: return run_output(c, l, outs, nouts);
  }
  return interp_err(c, "unknown line kind %d", (int)l->kind);
}

void
interp_free_outputs(interp_tensor *outs, int nouts)
{
  if (!outs)
    return;
  for (int i = 0; i < nouts; i++)
    free(outs[i].data);
  free(outs);
}

int
interp_run(const coil_wir_program *p, const interp_tensor *inputs, int ninputs,
           interp_tensor **outs, int *nouts, coil_diag *d)
{
  *outs = NULL;
  *nouts = 0;
  if (!p || (ninputs > 0 && !inputs))
    return coil_diag_set(d, "interp: no program or no inputs given");
  ictx c = {.p = p, .d = d, .line = -1, .nvars = coil_sym_nvars(p->sym)};
  c.bind = calloc((size_t)c.nvars + 1, sizeof *c.bind);
  c.bound = calloc((size_t)c.nvars + 1, sizeof *c.bound);
  c.used = calloc((size_t)c.nvars + 1, sizeof *c.used);
  c.bufs = calloc((size_t)p->nbuffers + 1, sizeof *c.bufs);
  c.stores = calloc((size_t)p->nbuffers + 1, sizeof *c.stores);
  int rc = -1;
  if (!c.bind || !c.bound || !c.used || !c.bufs || !c.stores) {
    coil_diag_set(d, "interp: out of memory");
    goto done;
  }
  for (int i = 0; i < p->nbuffers; i++)
    c.bufs[i].store = -1;
  if (bind_inputs(&c, inputs, ninputs))
    goto done;
  bool sizes_checked = false;
  for (c.line = 0; c.line < p->nlines; c.line++) {
    const coil_line *l = &p->lines[c.line];
    bool prologue = l->kind == COIL_LINE_COMMENT || l->kind == COIL_LINE_SYMBOL ||
                    l->kind == COIL_LINE_ASSERT;
    if (!prologue && !sizes_checked) {
      sizes_checked = true;
      if (check_input_sizes(&c))
        goto done;
    }
    if (run_line(&c, l, outs, nouts))
      goto done;
  }
  if (!sizes_checked && check_input_sizes(&c))
    goto done;
  rc = 0;
done:
  if (rc) {
    interp_free_outputs(*outs, *nouts);
    *outs = NULL;
    *nouts = 0;
  }
  for (int i = 0; c.stores && i < c.nstores; i++)
    free(c.stores[i].mem);
  free(c.bind);
  free(c.bound);
  free(c.used);
  free(c.bufs);
  free(c.stores);
  return rc;
}
