/* gpu_run.c — the GPU executor of coil-sdk (coil/coil_gpu_run.h): a program's lines, in order,
 * through a plugin's runtime. Moved out of the cuda plugin so hip runs programs the same way. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_run.h"

typedef coil_gpu_buf dbuf;

coil_error *
coil_gpu_run_fail(coil_gpu_run *r, coil_error_code code, const char *fmt, ...)
{
  char what[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return coil_sdk_error(code, "%s: %s, line %d: %s", r->rt->name, r->p->name, r->line + 1, what);
}

coil_error *
coil_gpu_run_rtfail(coil_gpu_run *r, int code, const char *call)
{
  const char *s = r->rt->error_string ? r->rt->error_string(r, code) : NULL;
  return coil_gpu_run_fail(r, COIL_ERR_RUNTIME, "%s failed: %s (%d)", call, s ? s : "unknown error", code);
}

static const char *
bufname(const coil_gpu_run *r, int b)
{
  return b >= 0 && b < r->p->nbuffers ? r->p->buffers[b].name : "?";
}

coil_error *
coil_gpu_run_eval(coil_gpu_run *r, const coil_sym *e, int64_t *out)
{
  coil_diag d = {0};
  if (coil_sym_eval(r->p->sym, e, r->vals, r->nvars, out, &d))
    return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "%s", d.msg);
  return NULL;
}

void
coil_gpu_buf_extent(const dbuf *b, int64_t *lo, int64_t *hi)
{
  *lo = 0, *hi = 0;
  for (int d = 0; d < b->rank; d++) {
    if (b->sizes[d] == 0) {
      *lo = 0, *hi = -1;
      return;
    }
    int64_t span = (b->sizes[d] - 1) * b->strides[d];
    if (span < 0)
      *lo += span;
    else
      *hi += span;
  }
}

static size_t
bytes_of(const dbuf *b)
{
  int64_t lo, hi;
  coil_gpu_buf_extent(b, &lo, &hi);
  return hi < lo ? 0 : (size_t)(hi + 1) * coil_dtype_size(b->dtype);
}

bool
coil_gpu_buf_contiguous(const dbuf *b)
{
  int64_t s = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    if (b->sizes[d] != 1 && b->strides[d] != s)
      return false;
    s *= b->sizes[d];
  }
  return true;
}

int64_t
coil_gpu_buf_numel(const dbuf *b)
{
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++)
    n *= b->sizes[d];
  return n;
}

bool
coil_gpu_blas_layout(const dbuf *x, int o, bool *transposed, int64_t *ld)
{
  int64_t R = x->sizes[o], C = x->sizes[o + 1], sr = x->strides[o], sc = x->strides[o + 1];
  if ((sc == 1 || C <= 1) && (R <= 1 || sr >= C)) {
    *transposed = false;
    *ld = R <= 1 ? (C > 1 ? C : 1) : sr;
  } else if ((sr == 1 || R <= 1) && (C <= 1 || sc >= R)) {
    *transposed = true;
    *ld = C <= 1 ? (R > 1 ? R : 1) : sc;
  } else {
    return false;
  }
  return *ld <= 2147483647;
}

/* The buffer's sizes and strides from the program, symbols bound. */
static coil_error *
layout(coil_gpu_run *r, int bi)
{
  const coil_buffer *cb = &r->p->buffers[bi];
  dbuf *b = &r->bufs[bi];
  coil_error *e;
  b->dtype = cb->dtype;
  b->rank = cb->rank;
  for (int d = 0; d < cb->rank; d++)
    if ((e = coil_gpu_run_eval(r, cb->sizes[d], &b->sizes[d])) || (e = coil_gpu_run_eval(r, cb->strides[d], &b->strides[d])))
      return e;
  return NULL;
}

static coil_error *
device_alloc(coil_gpu_run *r, size_t bytes, coil_gpu_ptr *out)
{
  *out = 0;
  if (!bytes)
    return NULL;
  int rc = r->rt->alloc(r, bytes, out);
  return rc ? coil_gpu_run_rtfail(r, rc, "allocating device memory") : NULL;
}

static bool
reused_later(const coil_gpu_run *r, int buffer)
{
  for (int i = r->line + 1; i < r->p->nlines; i++)
    if (r->p->lines[i].kind == COIL_LINE_REUSE && r->p->buffers[r->p->lines[i].buffer].base == buffer)
      return true;
  return false;
}

static coil_error *
run_symbol(coil_gpu_run *r, const coil_line *l)
{
  const dbuf *b = &r->bufs[l->buffer];
  if (l->dim < 0 || l->dim >= b->rank)
    return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "dimension %d of %s", l->dim, bufname(r, l->buffer));
  int64_t v = l->is_stride ? b->strides[l->dim] : b->sizes[l->dim];
  if (l->sym->kind == COIL_SYM_VAR && l->sym->var < r->nvars && !r->bound[l->sym->var]) {
    r->vals[l->sym->var] = v;
    r->bound[l->sym->var] = true;
    return NULL;
  }
  int64_t have;
  coil_error *e = coil_gpu_run_eval(r, l->sym, &have);
  if (!e && have != v)
    e = coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "a size symbol is %" PRId64 ", but %s.%s(%d) is %" PRId64, have,
                          bufname(r, l->buffer), l->is_stride ? "stride" : "size", l->dim, v);
  return e;
}

static coil_error *
run_assert(coil_gpu_run *r, const coil_line *l)
{
  const dbuf *b = &r->bufs[l->buffer];
  if (l->assert_kind == COIL_ASSERT_ALIGNED)
    return b->ptr % (coil_gpu_ptr)(l->align > 0 ? l->align : 1)
               ? coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "%s is not aligned to %" PRId64 " bytes",
                                   bufname(r, l->buffer), l->align)
               : NULL;
  if (l->dim < 0 || l->dim >= b->rank)
    return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "dimension %d of %s", l->dim, bufname(r, l->buffer));
  bool stride = l->assert_kind == COIL_ASSERT_STRIDE;
  int64_t want, have = stride ? b->strides[l->dim] : b->sizes[l->dim];
  coil_error *e = coil_gpu_run_eval(r, l->value, &want);
  if (!e && want != have)
    e = coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "assert failed: %s.%s(%d) == %" PRId64 ", but it is %" PRId64,
                          bufname(r, l->buffer), stride ? "stride" : "size", l->dim, want, have);
  return e;
}

static coil_error *
run_kernel(coil_gpu_run *r, const coil_line *l)
{
  const coil_kernel *k = &r->p->kernels[l->kernel];
  int64_t xnumel = 1, rnumel = 1;
  coil_error *e;
  for (int i = 0; i < k->nx; i++) {
    int64_t v;
    if ((e = coil_gpu_run_eval(r, k->xsize[i], &v)))
      return e;
    xnumel *= v;
  }
  for (int i = 0; i < k->nr; i++) {
    int64_t v;
    if ((e = coil_gpu_run_eval(r, k->rsize[i], &v)))
      return e;
    rnumel *= v;
  }
  if (xnumel <= 0)
    return NULL;
  if (l->nargs != k->nparams)
    return coil_gpu_run_fail(r, COIL_ERR_INTERNAL, "kernel %s takes %d params, the call passes %d", k->name,
                             k->nparams, l->nargs);
  if (k->nparams > 256 || k->nsyms > 256) /* the core's fusion keeps kernels far below this */
    return coil_gpu_run_fail(r, COIL_ERR_UNSUPPORTED, "kernel %s has %d params and %d sizes (at most 256 each)",
                             k->name, k->nparams, k->nsyms);
  coil_gpu_ptr ptrs[256];
  int64_t syms[256];
  void *params[513];
  for (int i = 0; i < k->nparams; i++) {
    if (!r->bufs[l->args[i]].live)
      return coil_gpu_run_fail(r, COIL_ERR_INTERNAL, "%s is not live", bufname(r, l->args[i]));
    ptrs[i] = r->bufs[l->args[i]].ptr;
    params[i] = &ptrs[i];
  }
  for (int i = 0; i < k->nsyms; i++) {
    if ((e = coil_gpu_run_eval(r, k->syms[i], &syms[i])))
      return e;
    params[k->nparams + i] = &syms[i];
  }
  coil_gpu_ptr oob = r->oob;
  if (coil_kernel_has_indirect(k)) {
    if (!oob)
      return coil_gpu_run_fail(r, COIL_ERR_INTERNAL, "kernel %s has indirect loads but no index check", k->name);
    params[k->nparams + k->nsyms] = &oob;
  }
  const coil_gpu_plan *pl = &r->plans[l->kernel];
  bool vec = pl->vec > 1;
  for (int i = 0; i < k->nparams && vec; i++)
    vec = ptrs[i] % 16 == 0;
  unsigned threads = coil_gpu_block_threads(r->rt->dialect, pl, rnumel);
  unsigned blocks = coil_gpu_grid_blocks(pl, vec, xnumel, threads);
  int rc = r->rt->launch(r, l->kernel, vec, blocks, threads, params);
  return rc ? coil_gpu_run_rtfail(r, rc, "launching a kernel") : NULL;
}

/* Copies device buffer src to the caller's tensor t (host or device), through its strides. */
static coil_error *
copy_out(coil_gpu_run *r, const dbuf *src, const coil_plugin_tensor *t)
{
  size_t es = coil_dtype_size(src->dtype), bytes = (size_t)coil_gpu_buf_numel(src) * es;
  if (!bytes)
    return NULL;
  dbuf dst = {.dtype = src->dtype, .rank = t->rank};
  for (int d = 0; d < t->rank; d++)
    dst.sizes[d] = t->sizes[d], dst.strides[d] = t->strides[d];
  int rc;
  if (t->device_type == r->rt->device_type) {
    if (src->ptr == (coil_gpu_ptr)(uintptr_t)t->data)
      return NULL; /* written in place */
    if (!coil_gpu_buf_contiguous(src) || !coil_gpu_buf_contiguous(&dst))
      return coil_gpu_run_fail(r, COIL_ERR_UNSUPPORTED, "a strided output on the device");
    rc = r->rt->copy(r, COIL_GPU_ON_DEVICE, (uintptr_t)t->data, src->ptr, bytes);
    return rc ? coil_gpu_run_rtfail(r, rc, "copying an output on the device") : NULL;
  }
  if (coil_gpu_buf_contiguous(src) && coil_gpu_buf_contiguous(&dst)) {
    rc = r->rt->copy(r, COIL_GPU_TO_HOST, (uintptr_t)t->data, src->ptr, bytes);
    return rc ? coil_gpu_run_rtfail(r, rc, "copying an output to the host") : NULL;
  }
  /* strided: the source's extent to the host, then element by element */
  int64_t lo, hi;
  coil_gpu_buf_extent(src, &lo, &hi);
  char *stage = malloc((size_t)(hi - lo + 1) * es);
  if (!stage)
    return coil_sdk_out_of_memory();
  rc = r->rt->copy(r, COIL_GPU_TO_HOST, (uintptr_t)stage, src->ptr + (coil_gpu_ptr)(lo * (int64_t)es),
                   (size_t)(hi - lo + 1) * es);
  if (!rc)
    rc = r->rt->sync(r);
  if (rc) {
    free(stage);
    return coil_gpu_run_rtfail(r, rc, "copying an output to the host");
  }
  int64_t n = coil_gpu_buf_numel(src), idx[COIL_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t so = -lo, dof = 0;
    for (int d = 0; d < src->rank; d++)
      so += idx[d] * src->strides[d], dof += idx[d] * dst.strides[d];
    memcpy((char *)t->data + dof * (int64_t)es, stage + so * (int64_t)es, es);
    for (int d = src->rank - 1; d >= 0 && ++idx[d] == src->sizes[d]; d--)
      idx[d] = 0;
  }
  free(stage);
  return NULL;
}

/* The caller's tensor for an output buffer the program allocates, when it is on the device with
 * exactly the buffer's layout, or when the output is a view that covers the whole buffer from
 * offset 0 (a reshape: Wrapper IR 1.2) and the tensor is dense: the kernels then write it in
 * place and copy_out has nothing to do. NULL otherwise (the buffer is allocated and copied out). */
static const coil_plugin_tensor *
in_place_output(const coil_gpu_run *r, int buffer, const coil_plugin_run_args *args)
{
  const coil_line *ol = &r->p->lines[r->p->nlines - 1];
  const dbuf *b = &r->bufs[buffer];
  int32_t dev = r->rt->device_type;
  if (ol->kind != COIL_LINE_OUTPUT || (size_t)ol->nargs != args->noutputs)
    return NULL;
  for (int i = 0; i < ol->nargs; i++) {
    const coil_plugin_tensor *t = args->outputs[i];
    if (ol->args[i] != buffer || !t || t->device_type != dev || t->rank != b->rank || t->dtype != (int32_t)b->dtype ||
        !t->data)
      continue;
    bool same = true;
    for (int d = 0; d < b->rank; d++)
      same = same && t->sizes[d] == b->sizes[d] && (b->sizes[d] <= 1 || t->strides[d] == b->strides[d]);
    if (same)
      return t;
  }
  for (int i = 0; i < ol->nargs; i++) {
    const coil_plugin_tensor *t = args->outputs[i];
    const coil_buffer *w = &r->p->buffers[ol->args[i]];
    int64_t off;
    coil_diag why = {0};
    if (w->kind != COIL_BUF_VIEW || w->base != buffer || !t || t->device_type != dev || t->dtype != (int32_t)b->dtype ||
        !t->data || coil_sym_eval(r->p->sym, w->offset, r->vals, r->nvars, &off, &why) || off != 0)
      continue;
    dbuf view = {.dtype = b->dtype, .rank = t->rank};
    for (int d = 0; d < t->rank; d++)
      view.sizes[d] = t->sizes[d], view.strides[d] = t->strides[d];
    if (coil_gpu_buf_contiguous(&view) && coil_gpu_buf_numel(&view) == coil_gpu_buf_numel(b))
      return t;
  }
  return NULL;
}

static coil_error *
run_line(coil_gpu_run *r, const coil_line *l, const coil_plugin_run_args *args)
{
  coil_error *e;
  dbuf *b = l->buffer >= 0 && l->buffer < r->p->nbuffers ? &r->bufs[l->buffer] : NULL;
  switch (l->kind) {
  case COIL_LINE_COMMENT: return NULL;
  case COIL_LINE_SYMBOL: return run_symbol(r, l);
  case COIL_LINE_ASSERT: return run_assert(r, l);
  case COIL_LINE_ALLOC: {
    if ((e = layout(r, l->buffer)))
      return e;
    const coil_plugin_tensor *t = in_place_output(r, l->buffer, args);
    if (t) { /* the kernels write the caller's device tensor directly */
      b->start = b->ptr = (coil_gpu_ptr)(uintptr_t)t->data;
      b->live = true;
      return NULL;
    }
    if ((e = device_alloc(r, bytes_of(b), &b->start)))
      return e;
    b->ptr = b->start;
    b->owned = b->live = true;
    return NULL;
  }
  case COIL_LINE_FREE:
    b->live = false;
    if (b->owned && !reused_later(r, l->buffer) && b->start) {
      int rc = r->rt->release(r, b->start);
      b->owned = false;
      if (rc)
        return coil_gpu_run_rtfail(r, rc, "freeing device memory");
    }
    return NULL;
  case COIL_LINE_REUSE: {
    dbuf *base = &r->bufs[r->p->buffers[l->buffer].base];
    if ((e = layout(r, l->buffer)))
      return e;
    b->start = b->ptr = base->start;
    b->owned = base->owned;
    base->owned = false;
    b->live = true;
    return NULL;
  }
  case COIL_LINE_VIEW: {
    const dbuf *base = &r->bufs[r->p->buffers[l->buffer].base];
    int64_t off;
    if ((e = layout(r, l->buffer)) || (e = coil_gpu_run_eval(r, r->p->buffers[l->buffer].offset, &off)))
      return e;
    b->start = base->start;
    b->ptr = base->start + (coil_gpu_ptr)(off * (int64_t)coil_dtype_size(b->dtype));
    b->live = true;
    return NULL;
  }
  case COIL_LINE_KERNEL_CALL: return run_kernel(r, l);
  case COIL_LINE_EXTERN_CALL:
    if (r->rt->extern_call)
      return r->rt->extern_call(r, l);
    return coil_gpu_run_fail(r, COIL_ERR_UNSUPPORTED, "library op %s is not supported by the %s plugin", l->op,
                             r->rt->name);
  case COIL_LINE_MULTI_OUTPUT: return NULL;
  case COIL_LINE_COPY_BACK: {
    int in = -1;
    for (int i = 0; i < r->p->ninputs; i++)
      if (r->p->inputs[i].buffer == l->buffer)
        in = i;
    if (in < 0)
      return coil_gpu_run_fail(r, COIL_ERR_INTERNAL, "copy_back into %s, which is not an input", bufname(r, l->buffer));
    return copy_out(r, &r->bufs[l->source], args->inputs[in]);
  }
  case COIL_LINE_OUTPUT:
    if ((size_t)l->nargs != args->noutputs)
      return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "%zu outputs given, the program has %d", args->noutputs,
                               l->nargs);
    for (int i = 0; i < l->nargs; i++)
      if ((e = copy_out(r, &r->bufs[l->args[i]], args->outputs[i])))
        return e;
    return NULL;
  }
  return coil_gpu_run_fail(r, COIL_ERR_INTERNAL, "unknown line kind %d", (int)l->kind);
}

/* Inputs: checked against the program, host ones copied to the device. */
static coil_error *
bind_inputs(coil_gpu_run *r, const coil_plugin_run_args *args)
{
  const coil_wir_program *p = r->p;
  if (args->ninputs != (size_t)p->ninputs)
    return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "%zu inputs given, the program takes %d", args->ninputs,
                             p->ninputs);
  for (int i = 0; i < p->ninputs; i++) {
    const coil_plugin_tensor *t = args->inputs[i];
    const coil_buffer *cb = &p->buffers[p->inputs[i].buffer];
    dbuf *b = &r->bufs[p->inputs[i].buffer];
    if (!t || t->dtype != (int32_t)cb->dtype || t->rank != cb->rank ||
        (t->device_type != COIL_DEVICE_CPU && t->device_type != r->rt->device_type))
      return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "input %d ('%s') is not a %s tensor of rank %d on the host or the GPU",
                               i, p->inputs[i].label, coil_dtype_name(cb->dtype), cb->rank);
    b->dtype = cb->dtype;
    b->rank = cb->rank;
    for (int d = 0; d < cb->rank; d++) {
      if (t->sizes[d] < 0 || t->strides[d] < 0)
        return coil_gpu_run_fail(r, COIL_ERR_INVALID_ARGUMENT, "input %d has a negative size or stride", i);
      b->sizes[d] = t->sizes[d], b->strides[d] = t->strides[d];
    }
    b->live = true;
    size_t bytes = bytes_of(b);
    if (t->device_type == r->rt->device_type) {
      b->start = b->ptr = (coil_gpu_ptr)(uintptr_t)t->data;
      continue;
    }
    coil_error *e = device_alloc(r, bytes, &b->start);
    if (e)
      return e;
    b->ptr = b->start;
    b->owned = true;
    if (bytes) {
      int rc = r->rt->copy(r, COIL_GPU_TO_DEVICE, b->start, (uintptr_t)t->data, bytes);
      if (rc)
        return coil_gpu_run_rtfail(r, rc, "copying an input to the device");
    }
  }
  return NULL;
}

coil_error *
coil_gpu_run_program(const coil_gpu_runtime *rt, void *user, const coil_wir_program *p, const coil_gpu_plan *plans,
                     coil_gpu_ptr oob, const coil_plugin_run_args *args)
{
  coil_gpu_run r = {.rt = rt, .user = user, .p = p, .plans = plans, .oob = oob, .nvars = coil_sym_nvars(p->sym),
                    .line = -1, .skip_line = -1};
  r.vals = calloc((size_t)r.nvars + 1, sizeof *r.vals);
  r.bound = calloc((size_t)r.nvars + 1, sizeof *r.bound);
  r.bufs = calloc((size_t)p->nbuffers + 1, sizeof *r.bufs);
  if (!r.vals || !r.bound || !r.bufs) {
    free(r.vals), free(r.bound), free(r.bufs);
    return coil_sdk_out_of_memory();
  }
  coil_error *e = bind_inputs(&r, args);
  for (r.line = 0; !e && r.line < p->nlines; r.line++)
    if (r.line != r.skip_line)
      e = run_line(&r, &p->lines[r.line], args);
  for (int i = 0; i < p->nbuffers; i++) /* whatever is still held, error or not */
    if (r.bufs[i].owned && r.bufs[i].start)
      rt->release(&r, r.bufs[i].start);
  free(r.vals), free(r.bound), free(r.bufs);
  return e;
}
