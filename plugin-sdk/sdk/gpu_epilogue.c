/* gpu_epilogue.c — GEMM epilogues (coil/coil_gpu_run.h): an mm line whose next kernel only computes
 * out = [relu](mm [+ bias over the columns]) element for element, found so that a GEMM can do
 * that kernel's work as it stores C (cuBLASLt's epilogues in cuda, the generated GEMM's in hip)
 * and the kernel line is skipped. Moved here from cuda_run.c so both plugins fold the same
 * kernels. And the general form (coil/coil_gpu.h, coil_gpu_find_gemm_epilogues): any elementwise
 * kernel over the product with bias, row-vector and residual loads, for a GEMM that runs the
 * kernel's own body on each element (the cuda plugin's wgmma GEMM, cuda_gemm.c). */
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_run.h"

/* Whether index e is the row-major element (x0, x1) of an m x n matrix (n, m constant). */
static bool
rowmajor_index(const coil_wir_program *p, const coil_sym *e, const coil_kernel *k, int64_t m, int64_t n)
{
  int nv = coil_sym_nvars(p->sym);
  int64_t *vals = calloc((size_t)nv + 1, sizeof *vals);
  int x0 = k->xvars[0]->var, x1 = k->xvars[1]->var;
  static const int64_t pts[4][2] = {{0, 0}, {0, 1}, {1, 0}, {-1, -1}};
  bool ok = vals != NULL && e->kind == COIL_SYM_ADD;
  for (int i = 0; ok && i < e->nargs; i++) /* linear: a sum of x1 and a constant times x0 */
    ok = e->args[i]->kind == COIL_SYM_VAR || e->args[i]->kind == COIL_SYM_MUL;
  for (int i = 0; ok && i < 4; i++) {
    int64_t a = pts[i][0] < 0 ? m - 1 : pts[i][0], b = pts[i][1] < 0 ? n - 1 : pts[i][1], v;
    vals[x0] = a, vals[x1] = b;
    coil_diag d = {0};
    ok = coil_sym_eval(p->sym, e, vals, nv, &v, &d) == 0 && v == a * n + b;
  }
  free(vals);
  return ok;
}

/* Whether line j (not the kernel line kl) reads buffer b or storage shared with it. */
static bool
line_reads(const coil_wir_program *p, const coil_line *l, int b)
{
  for (int i = 0; i < l->nargs; i++)
    if (l->args[i] == b)
      return true;
  if ((l->kind == COIL_LINE_VIEW || l->kind == COIL_LINE_REUSE) && p->buffers[l->buffer].base == b)
    return true;
  return (l->kind == COIL_LINE_COPY_BACK || l->kind == COIL_LINE_MULTI_OUTPUT) && l->source == b;
}

/* The kernel line after mm line li whose product is B, past comments, allocations and frees of
 * other buffers (nothing between them can touch B); -1 when another line comes first. */
static int
kernel_after(const coil_wir_program *p, int li, int B)
{
  int kl = li + 1;
  while (kl < p->nlines && (p->lines[kl].kind == COIL_LINE_COMMENT || p->lines[kl].kind == COIL_LINE_ALLOC ||
                            (p->lines[kl].kind == COIL_LINE_FREE && p->lines[kl].buffer != B)))
    kl++;
  return kl < p->nlines && p->lines[kl].kind == COIL_LINE_KERNEL_CALL ? kl : -1;
}

static void
match_epilogue(const coil_wir_program *p, int li, coil_gpu_epilogue *e)
{
  const coil_line *l = &p->lines[li];
  e->kernel_line = -1;
  if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "aten.mm.default") != 0 || l->nouts != 1)
    return;
  int B = l->outs[0];
  const coil_buffer *bb = &p->buffers[B];
  int64_t m, n;
  if (bb->rank != 2 || !coil_sym_is_const(bb->sizes[0], &m) || !coil_sym_is_const(bb->sizes[1], &n) ||
      (bb->dtype != COIL_F32 && bb->dtype != COIL_F16 && bb->dtype != COIL_BF16))
    return;
  int kl = kernel_after(p, li, B);
  if (kl < 0)
    return;
  const coil_line *kc = &p->lines[kl];
  const coil_kernel *k = &p->kernels[kc->kernel];
  int64_t xm, xn;
  if (k->nr || k->nx != 2 || !coil_sym_is_const(k->xsize[0], &xm) || !coil_sym_is_const(k->xsize[1], &xn) || xm != m ||
      xn != n || kc->nargs != k->nparams)
    return;
  enum { NONE, MM, BIAS, SUM, RELU_MM, RELU_SUM };
  int *tag = calloc((size_t)k->ninsts + 1, sizeof *tag);
  int bias_arg = -1, out_arg = -1, stored = NONE, nstores = 0;
  bool ok = tag != NULL;
  for (int i = 0; ok && i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    switch (in->op) {
    case COIL_KOP_LOAD:
      if (kc->args[in->param] == B && !k->params[in->param].is_output && rowmajor_index(p, in->index, k, m, n))
        tag[i] = MM;
      else if (bias_arg < 0 && in->index->kind == COIL_SYM_VAR && in->index->var == k->xvars[1]->var &&
               p->buffers[kc->args[in->param]].dtype == bb->dtype)
        tag[i] = BIAS, bias_arg = in->param;
      else
        ok = false;
      break;
    case COIL_KOP_CAST: /* between the floats: values pass through (the epilogue rounds once) */
      ok = coil_dtype_is_float(in->dtype) && in->dtype != COIL_F64 && coil_dtype_is_float(k->insts[in->args[0]].dtype);
      tag[i] = tag[in->args[0]];
      break;
    case COIL_KOP_ADD: {
      int x = tag[in->args[0]], y = tag[in->args[1]];
      ok = (x == MM && y == BIAS) || (x == BIAS && y == MM);
      tag[i] = SUM;
      break;
    }
    case COIL_KOP_RELU:
      ok = tag[in->args[0]] == MM || tag[in->args[0]] == SUM;
      tag[i] = tag[in->args[0]] == MM ? RELU_MM : RELU_SUM;
      break;
    case COIL_KOP_STORE:
      nstores++;
      ok = k->params[in->param].is_output && rowmajor_index(p, in->index, k, m, n) &&
           p->buffers[kc->args[in->param]].dtype == bb->dtype && tag[in->args[0]] != BIAS && tag[in->args[0]] != NONE;
      stored = tag[in->args[0]], out_arg = in->param;
      break;
    default:
      ok = false;
    }
  }
  free(tag);
  if (!ok || nstores != 1 || (stored == MM && bias_arg >= 0))
    return;
  int out = kc->args[out_arg];
  const coil_buffer *ob = &p->buffers[out];
  if (ob->rank != 2 || coil_sym_cmp(ob->sizes[0], bb->sizes[0]) || coil_sym_cmp(ob->sizes[1], bb->sizes[1]))
    return;
  if (out != B) /* the raw product is never written: nothing else may read it */
    for (int j = li + 1; j < p->nlines; j++)
      if (j != kl && line_reads(p, &p->lines[j], B))
        return;
  *e = (coil_gpu_epilogue){kl, bias_arg, out_arg, stored == RELU_MM || stored == RELU_SUM};
}

void
coil_gpu_find_epilogues(const coil_wir_program *p, coil_gpu_epilogue *epi)
{
  for (int i = 0; i < p->nlines; i++)
    match_epilogue(p, i, &epi[i]);
}

/* ---- the general form (coil/coil_gpu.h) ---- */

/* Whether buffer b is the product B or a view of its storage. */
static bool
shares_product(const coil_wir_program *p, int b, int B)
{
  return b == B || ((p->buffers[b].kind == COIL_BUF_VIEW || p->buffers[b].kind == COIL_BUF_REUSE) && p->buffers[b].base == B);
}

/* Whether load index e reads a vector the epilogue can take per element: the row-major element,
 * x1 (a value per column), x0 (per row) or a constant. */
static bool
epilogue_index(const coil_wir_program *p, const coil_sym *e, const coil_kernel *k, int64_t m, int64_t n)
{
  int64_t c;
  if (coil_sym_is_const(e, &c))
    return true;
  if (e->kind == COIL_SYM_VAR)
    return e->var == k->xvars[0]->var || e->var == k->xvars[1]->var;
  return rowmajor_index(p, e, k, m, n);
}

static void
match_general(const coil_wir_program *p, int li, coil_gpu_gemm_epilogue *e)
{
  const coil_line *l = &p->lines[li];
  e->kernel_line = -1;
  if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "aten.mm.default") != 0 || l->nouts != 1)
    return;
  int B = l->outs[0];
  const coil_buffer *bb = &p->buffers[B];
  int64_t m, n;
  if (bb->rank != 2 || !coil_sym_is_const(bb->sizes[0], &m) || !coil_sym_is_const(bb->sizes[1], &n) ||
      (bb->dtype != COIL_F32 && bb->dtype != COIL_F16 && bb->dtype != COIL_BF16))
    return;
  int kl = kernel_after(p, li, B);
  if (kl < 0)
    return;
  const coil_line *kc = &p->lines[kl];
  const coil_kernel *k = &p->kernels[kc->kernel];
  int64_t xm, xn;
  if (k->nr || k->nx != 2 || k->nsyms || !coil_sym_is_const(k->xsize[0], &xm) || !coil_sym_is_const(k->xsize[1], &xn) ||
      xm != m || xn != n || kc->nargs != k->nparams)
    return;
  coil_gpu_gemm_epilogue r = {.kernel_line = kl, .product = B, .out_arg = -1};
  bool *loaded = calloc((size_t)k->nparams + 1, sizeof *loaded);
  bool ok = loaded != NULL;
  int nstores = 0;
  for (int i = 0; ok && i < k->ninsts; i++) {
    const coil_kinst *in = &k->insts[i];
    switch (in->op) {
    case COIL_KOP_LOAD: {
      int b = kc->args[in->param];
      if (k->params[in->param].is_output)
        ok = false; /* a kernel that reads what it writes: not an element-for-element body */
      else if (b == B)
        ok = rowmajor_index(p, in->index, k, m, n);
      else { /* the product through a view would read storage the GEMM never writes */
        ok = !shares_product(p, b, B) && epilogue_index(p, in->index, k, m, n);
        loaded[in->param] = true;
      }
      break;
    }
    case COIL_KOP_STORE:
      nstores++;
      r.out_arg = in->param;
      ok = k->params[in->param].is_output && in->mode == 0 && rowmajor_index(p, in->index, k, m, n) &&
           p->buffers[kc->args[in->param]].dtype == bb->dtype &&
           (k->insts[in->args[0]].dtype == COIL_F32 || k->insts[in->args[0]].dtype == COIL_F16 ||
            k->insts[in->args[0]].dtype == COIL_BF16);
      break;
    case COIL_KOP_REDUCE: case COIL_KOP_SCAN: case COIL_KOP_INDIRECT:
      ok = false;
      break;
    default: /* const, index (of x0 and x1 alone: no size symbols, no indirect), cast, where, math */
      break;
    }
  }
  for (int i = 0; ok && i < k->nparams; i++) {
    if (k->params[i].is_output && i != r.out_arg)
      ok = false; /* an output never stored */
    else if (loaded[i] && r.ninputs == COIL_GPU_EPILOGUE_MAX_INPUTS)
      ok = false;
    else if (loaded[i])
      r.inputs[r.ninputs++] = i;
  }
  free(loaded);
  if (!ok || nstores != 1)
    return;
  int out = kc->args[r.out_arg];
  const coil_buffer *ob = &p->buffers[out];
  if (ob->rank != 2 || coil_sym_cmp(ob->sizes[0], bb->sizes[0]) || coil_sym_cmp(ob->sizes[1], bb->sizes[1]))
    return;
  if (out != B) /* the raw product is never written: nothing else may read it */
    for (int j = li + 1; j < p->nlines; j++)
      if (j != kl && line_reads(p, &p->lines[j], B))
        return;
  *e = r;
}

void
coil_gpu_find_gemm_epilogues(const coil_wir_program *p, coil_gpu_gemm_epilogue *epi)
{
  for (int i = 0; i < p->nlines; i++)
    match_general(p, i, &epi[i]);
}
