/* claim_stmt.c — the statement query (ABI 1.4 supports_stmt) asked about one line of a
 * program: the line's tensors and text as a coil_plugin_stmt. On its own, apart from backend.c,
 * so that the compiler (compile.c, which asks it about coil.attention calls) links without the
 * runtime's cache and loader. */
#include <stdlib.h>

#include "backend.h"
#include "coil/arena.h"
#include "coil/strbuf.h"
#include "coil/sym.h"

/* The statement query (ABI 1.4 supports_stmt) for a kernel_call or extern_call line; yes for a
 * plugin without it. */
bool
coil_claim_stmt(const coil_loaded_plugin *lp, const coil_plugin *inst, const coil_wir_program *p, const coil_line *l)
{
  if (!lp->api.supports_stmt)
    return true;
  bool kernel = l->kind == COIL_LINE_KERNEL_CALL;
  const coil_kernel *k = kernel ? &p->kernels[l->kernel] : NULL;
  int n = l->nargs + (kernel ? 0 : l->nouts), nin = 0, nout = 0;
  coil_plugin_value *v = coil_xcalloc((size_t)n + 1, sizeof *v);
  int64_t(*dims)[2][COIL_MAX_RANK] = coil_xcalloc((size_t)n + 1, sizeof *dims);
  const coil_plugin_value **in = coil_xcalloc((size_t)n + 1, sizeof *in), **out = coil_xcalloc((size_t)n + 1, sizeof *out);
  for (int i = 0; i < n; i++) {
    const coil_buffer *b = &p->buffers[i < l->nargs ? l->args[i] : l->outs[i - l->nargs]];
    v[i] = (coil_plugin_value){.struct_size = sizeof v[i], .dtype = (int32_t)b->dtype, .rank = b->rank,
                               .sizes = dims[i][0], .strides = dims[i][1]};
    for (int d = 0; d < b->rank; d++) {
      if (!coil_sym_is_const(b->sizes[d], &dims[i][0][d]))
        dims[i][0][d] = -1;
      if (!coil_sym_is_const(b->strides[d], &dims[i][1][d]))
        dims[i][1][d] = -1;
    }
    bool written = kernel ? i < k->nparams && k->params[i].is_output : i >= l->nargs;
    if (written)
      out[nout++] = &v[i];
    else
      in[nin++] = &v[i];
  }
  coil_strbuf text = {0}, *vals = coil_xcalloc((size_t)l->nxparams + 1, sizeof *vals);
  const char **names = coil_xcalloc((size_t)l->nxparams + 1, sizeof *names);
  const char **values = coil_xcalloc((size_t)l->nxparams + 1, sizeof *values);
  if (kernel)
    coil_wir_print_kernel(p, k, &text);
  else
    coil_wir_print_line(p, l, &text);
  int na = kernel ? 0 : l->nxparams;
  for (int i = 0; i < na; i++) {
    coil_wir_print_xparam_value(&l->xparams[i], &vals[i]);
    names[i] = l->xparams[i].name ? l->xparams[i].name : "";
    values[i] = vals[i].s ? vals[i].s : "";
  }
  coil_plugin_stmt st = {.struct_size = sizeof st, .kind = kernel ? COIL_STMT_KERNEL : COIL_STMT_EXTERN,
                         .op = kernel ? k->name : l->op, .text = text.s ? text.s : "",
                         .ninputs = (size_t)nin, .inputs = in, .noutputs = (size_t)nout, .outputs = out,
                         .nattrs = (size_t)na, .attr_names = names, .attr_values = values};
  bool yes = lp->api.supports_stmt(inst, &st) == COIL_SUPPORTED;
  for (int i = 0; i < na; i++)
    coil_strbuf_free(&vals[i]);
  coil_strbuf_free(&text);
  coil_xfree(vals), coil_xfree(names), coil_xfree(values);
  coil_xfree(v), coil_xfree(dims), coil_xfree(in), coil_xfree(out);
  return yes;
}
