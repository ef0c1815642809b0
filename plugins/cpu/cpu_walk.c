/* cpu_walk.c — the wrapper of an LLVM-compiled program, as a walk over its Wrapper IR lines.
 *
 * The C path generates coil_cpu_entry; the LLVM path generates kernels only, and this walk does
 * what that function does, line by line and in the same order: bind size symbols from the
 * inputs, check the guards, take memory from the run-time table, call kernels (splitting their
 * x points between OpenMP threads when the work is large, as the C path's `parallel for`),
 * call library ops, copy outputs. The decisions that do not depend on sizes (which output a
 * buffer is, which storage a later reuse keeps) are made once, at load. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "cpu_llvm.h"
#include "cpu_walk.h"

#define PARALLEL_MIN_WORK 32768 /* as the C path */

struct cpu_walk {
  const coil_wir_program *p;
  const cpu_llvm_kernel_fn *fns;
  int *out_of;   /* buffer -> output slot it is, or -1 */
  bool *reused;  /* buffer whose storage a later reuse takes */
  int *input_of; /* buffer -> input index, or -1 */
  int nvars;
};

cpu_walk *
cpu_walk_new(const coil_wir_program *p, const cpu_llvm_kernel_fn *fns)
{
  cpu_walk *w = calloc(1, sizeof *w);
  size_t nb = (size_t)p->nbuffers + 1;
  if (!w || !(w->out_of = malloc(nb * sizeof(int))) || !(w->reused = calloc(nb, sizeof(bool))) ||
      !(w->input_of = malloc(nb * sizeof(int)))) {
    cpu_walk_free(w);
    return NULL;
  }
  w->p = p;
  w->fns = fns;
  w->nvars = coil_sym_nvars(p->sym);
  for (int i = 0; i < p->nbuffers; i++)
    w->out_of[i] = w->input_of[i] = -1;
  for (int i = 0; i < p->ninputs; i++)
    if (w->input_of[p->inputs[i].buffer] < 0)
      w->input_of[p->inputs[i].buffer] = i;
  const coil_line *out = &p->lines[p->nlines - 1];
  for (int k = 0; k < out->nargs; k++)
    if (w->out_of[out->args[k]] < 0)
      w->out_of[out->args[k]] = k;
  for (int k = 0; k < out->nargs; k++) { /* the storage of a reshaped output: the caller's too */
    int st = coil_wir_output_storage((coil_wir_program *)p, k);
    if (st >= 0 && w->out_of[st] < 0)
      w->out_of[st] = k;
  }
  for (int i = 0; i < p->nbuffers; i++)
    if (p->buffers[i].kind == COIL_BUF_REUSE && p->buffers[i].base >= 0)
      w->reused[p->buffers[i].base] = true;
  return w;
}

void
cpu_walk_free(cpu_walk *w)
{
  if (!w)
    return;
  free(w->out_of);
  free(w->reused);
  free(w->input_of);
  free(w);
}

/* rt->fail, and the run's result: failed */
static int
failed(const coil_cpu_rt *rt, int line, const char *what)
{
  rt->fail(rt->ctx, line, what);
  return -1;
}

/* The value of s under the bindings so far; -1 after failing the run (an overflow, say). */
static int
eval(const cpu_walk *w, const coil_cpu_rt *rt, int line, const coil_sym *s, const int64_t *symv, int64_t *out)
{
  coil_diag d = {0};
  if (coil_sym_eval(w->p->sym, s, symv, w->nvars, out, &d) == 0)
    return 0;
  return failed(rt, line, d.msg);
}

static int
bytes_of(const cpu_walk *w, const coil_cpu_rt *rt, int line, const coil_buffer *b, const int64_t *symv, int64_t *out)
{
  int64_t n = (int64_t)coil_dtype_size(b->dtype);
  for (int i = 0; i < b->rank; i++) {
    int64_t s;
    if (eval(w, rt, line, b->sizes[i], symv, &s))
      return -1;
    n *= s;
  }
  *out = n;
  return 0;
}

/* Runs a kernel over its n x points, split over threads in shares of whole rows (`row` points
 * each: the kernels with two x ranges or more count on it, cpu_llvm.c), as the C path's
 * `omp parallel for` over the outer loops does. */
static void
run_kernel(cpu_llvm_kernel_fn fn, char *const *bufs, const int64_t *symv, int64_t *oob, int64_t n, int64_t row,
           int64_t work, int threads)
{
  int64_t rows = n / row;
  if (work < PARALLEL_MIN_WORK || threads <= 1 || rows <= 1) {
    fn(bufs, symv, oob, 0, n);
    return;
  }
  if (threads > rows)
    threads = (int)rows;
  /* one share of the rows a thread, as a loop the runtime splits: not omp_get_thread_num(), which
   * in a plugin built by clang (libomp) but also linked to gcc's libgomp can answer from the
   * other runtime (0 in every thread: each would run the whole range) */
  int64_t nt = threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int64_t t = 0; t < nt; t++) {
    int64_t lo = row * (rows * t / nt), hi = row * (rows * (t + 1) / nt);
    if (lo < hi)
      fn(bufs, symv, oob, lo, hi);
  }
}

int
cpu_walk_run(const cpu_walk *w, const coil_cpu_rt *rt, void *const *in, const int64_t *const *in_sizes,
             const int64_t *const *in_strides, void *const *out)
{
  const coil_wir_program *p = w->p;
  int threads = rt->threads > 0 ? rt->threads : omp_get_max_threads();
  int64_t symv_local[256];
  char *ptr_local[256];
  int64_t *symv = w->nvars <= 256 ? symv_local : calloc((size_t)w->nvars, sizeof(int64_t));
  char **ptr = p->nbuffers <= 256 ? ptr_local : calloc((size_t)p->nbuffers, sizeof(char *));
  int rc = 0;
  if (!symv || !ptr) {
    rc = failed(rt, 0, "out of memory");
    goto out;
  }
  memset(symv, 0, sizeof(int64_t) * (size_t)(w->nvars > 0 ? w->nvars : 0));
  for (int i = 0; i < p->ninputs; i++)
    ptr[p->inputs[i].buffer] = in[i];
  for (int li = 0; li < p->nlines && rc == 0; li++) {
    const coil_line *l = &p->lines[li];
    const coil_buffer *b = l->buffer >= 0 && l->buffer < p->nbuffers ? &p->buffers[l->buffer] : NULL;
    switch (l->kind) {
    case COIL_LINE_COMMENT: case COIL_LINE_MULTI_OUTPUT:
      break;
    case COIL_LINE_SYMBOL: {
      int i = w->input_of[l->buffer];
      symv[l->sym->var] = (l->is_stride ? in_strides : in_sizes)[i][l->dim];
      break;
    }
    case COIL_LINE_ASSERT: {
      int i = w->input_of[l->buffer];
      if (l->assert_kind == COIL_ASSERT_ALIGNED) {
        if ((uintptr_t)in[i] % (uintptr_t)l->align != 0) {
          char what[300];
          snprintf(what, sizeof what, "%s is not aligned to %lld bytes", b->name, (long long)l->align);
          rc = failed(rt, li, what);
        }
        break;
      }
      int64_t want;
      if (eval(w, rt, li, l->value, symv, &want)) {
        rc = -1;
        break;
      }
      bool size = l->assert_kind == COIL_ASSERT_SIZE;
      if ((size ? in_sizes : in_strides)[i][l->dim] != want) {
        coil_strbuf what = {0};
        coil_strbuf_printf(&what, "%s.%s(%d) must be ", b->name, size ? "size" : "stride", l->dim);
        coil_sym_print(p->sym, l->value, COIL_SYM_PY_SYNTAX, &what);
        rc = failed(rt, li, what.s ? what.s : "a guard failed");
        coil_strbuf_free(&what);
      }
      break;
    }
    case COIL_LINE_ALLOC: {
      if (w->out_of[l->buffer] >= 0) { /* an output: the caller's memory */
        ptr[l->buffer] = out[w->out_of[l->buffer]];
        break;
      }
      int64_t n;
      if (bytes_of(w, rt, li, b, symv, &n)) {
        rc = -1;
        break;
      }
      if (!(ptr[l->buffer] = rt->alloc(rt->ctx, n)))
        rc = failed(rt, li, "out of memory");
      break;
    }
    case COIL_LINE_REUSE:
      ptr[l->buffer] = ptr[b->base];
      break;
    case COIL_LINE_VIEW: {
      int64_t off;
      if (eval(w, rt, li, b->offset, symv, &off)) {
        rc = -1;
        break;
      }
      ptr[l->buffer] = ptr[b->base] + (int64_t)coil_dtype_size(b->dtype) * off;
      break;
    }
    case COIL_LINE_FREE:
      if (w->out_of[l->buffer] < 0 && !w->reused[l->buffer])
        rt->release(rt->ctx, ptr[l->buffer]);
      break;
    case COIL_LINE_KERNEL_CALL: {
      const coil_kernel *k = &p->kernels[l->kernel];
      char *bufs_local[64];
      char **bufs = l->nargs <= 64 ? bufs_local : malloc(sizeof(char *) * (size_t)l->nargs);
      if (!bufs) {
        rc = failed(rt, li, "out of memory");
        break;
      }
      for (int a = 0; a < l->nargs; a++)
        bufs[a] = ptr[l->args[a]];
      int64_t n = 1, row = 1, work, s;
      for (int i = 0; i < k->nx && rc == 0; i++)
        if (eval(w, rt, li, k->xsize[i], symv, &s) == 0) {
          n *= s;
          row = k->nx >= 2 && i == k->nx - 1 ? s : row;
        } else {
          rc = -1;
        }
      work = n;
      for (int i = 0; i < k->nr && rc == 0; i++)
        if (eval(w, rt, li, k->rsize[i], symv, &s) == 0)
          work *= s;
        else
          rc = -1;
      int64_t oob = INT64_MIN; /* an index found out of range */
      if (rc == 0 && n > 0)
        run_kernel(w->fns[l->kernel], bufs, symv, &oob, n, row, work, threads);
      if (bufs != bufs_local)
        free(bufs);
      if (rc == 0 && oob != INT64_MIN) {
        char what[512];
        snprintf(what, sizeof what, "index %lld is out of range in %s (%s)", (long long)oob, k->name,
                 k->source_ops ? k->source_ops : "indirect");
        rc = failed(rt, li, what);
      }
      break;
    }
    case COIL_LINE_EXTERN_CALL: {
      void *args_local[64];
      int n = l->nargs + l->nouts;
      void **args = n <= 64 ? args_local : malloc(sizeof(void *) * (size_t)n);
      if (!args) {
        rc = failed(rt, li, "out of memory");
        break;
      }
      for (int a = 0; a < n; a++)
        args[a] = ptr[a < l->nargs ? l->args[a] : l->outs[a - l->nargs]];
      if (rt->extern_call(rt->ctx, li, args, symv))
        rc = -1;
      if (args != args_local)
        free(args);
      break;
    }
    case COIL_LINE_COPY_BACK: {
      int64_t n;
      if (bytes_of(w, rt, li, &p->buffers[l->source], symv, &n))
        rc = -1;
      else if (n > 0) /* an empty tensor may have no storage at all */
        memcpy(ptr[l->buffer], ptr[l->source], (size_t)n);
      break;
    }
    case COIL_LINE_OUTPUT:
      for (int k = 0; k < l->nargs && rc == 0; k++) {
        const coil_buffer *ob = &p->buffers[l->args[k]];
        int st = coil_wir_output_storage((coil_wir_program *)p, k);
        if (st >= 0 && w->out_of[st] == k)
          continue; /* computed in place */
        int64_t n;
        if (bytes_of(w, rt, li, ob, symv, &n))
          rc = -1;
        else if (n > 0)
          memcpy(out[k], ptr[l->args[k]], (size_t)n);
      }
      for (int k = 0; k < l->nargs && rc == 0; k++) /* outputs in reused storage: copied out, now released */
        if (p->buffers[l->args[k]].kind == COIL_BUF_REUSE && w->out_of[l->args[k]] == k)
          rt->release(rt->ctx, ptr[l->args[k]]);
      break;
    }
  }
out:
  if (symv && symv != symv_local)
    free(symv);
  if (ptr && ptr != ptr_local)
    free(ptr);
  return rc ? -1 : 0;
}
