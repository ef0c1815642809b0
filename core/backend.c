/* backend.c — running a graph on a backend: "ref" runs the reference interpreter; any other
 * name is a plugin, driven through its whole lifecycle: compile the graph to Wrapper IR, open
 * the plugin, create an instance, compile into a fresh artifact directory, load it, bind the
 * inputs, allocate the outputs at the sizes the program gives them under the inputs' sizes,
 * run, and tear everything down again (the artifact directory included). */
#include "backend.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Removes dir and the files in it (artifacts are flat). */
static void
remove_dir(const char *dir)
{
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      remove(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* The value of every size symbol, from the symbol lines and the inputs' sizes. */
static int
bind_symbols(const coil_wir_program *p, const coil_tensor *const *in, int64_t *vals, coil_diag *d)
{
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    if (l->kind != COIL_LINE_SYMBOL)
      continue;
    const coil_tensor *t = NULL;
    for (int k = 0; k < p->ninputs; k++)
      if (p->inputs[k].buffer == l->buffer)
        t = in[k];
    if (!t || l->dim >= t->rank)
      return coil_diag_set(d, "input %s does not have dimension %d", p->buffers[l->buffer].name, l->dim);
    int64_t stride = 1;
    for (int k = l->dim + 1; k < t->rank; k++)
      stride *= t->shape[k];
    vals[l->sym->var] = l->is_stride ? stride : t->shape[l->dim];
  }
  return 0;
}

int
coil_backend_run(const coil_graph *g, const char *backend, const coil_backend_env *env,
                 const coil_tensor_list *inputs, coil_tensor_list *outputs, coil_diag *d)
{
  memset(outputs, 0, sizeof *outputs);
  if (strcmp(backend, "ref") == 0)
    return coil_ref_run(g, inputs, outputs, d);

  coil_compile_options copts = {.fuse = true, .verify = true, .dump_dir = env ? env->dump_dir : NULL};
  coil_wir_program *p = coil_compile_graph(g, &copts, d);
  if (!p)
    return -1;
  int rc = -1;
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  coil_artifact *art = NULL;
  const coil_tensor **in = calloc((size_t)p->ninputs + 1, sizeof *in);
  coil_plugin_tensor *pin = calloc((size_t)p->ninputs + 1, sizeof *pin);
  const coil_plugin_tensor **pinp = calloc((size_t)p->ninputs + 1, sizeof *pinp);
  int64_t(*istr)[COIL_MAX_RANK] = calloc((size_t)p->ninputs + 1, sizeof *istr);
  int64_t *vals = calloc((size_t)coil_sym_nvars(p->sym) + 1, sizeof *vals);
  char dir[4096] = "";
  const coil_line *out_line = &p->lines[p->nlines - 1];
  int nout = out_line->nargs;
  coil_tensor *outs = calloc((size_t)nout + 1, sizeof *outs);
  coil_plugin_tensor *pout = calloc((size_t)nout + 1, sizeof *pout);
  const coil_plugin_tensor **poutp = calloc((size_t)nout + 1, sizeof *poutp);
  int64_t(*ostr)[COIL_MAX_RANK] = calloc((size_t)nout + 1, sizeof *ostr);
  coil_plugin_options opts = {.struct_size = sizeof opts};
  if (env) {
    opts.count = (size_t)env->noptions;
    opts.keys = env->option_keys;
    opts.values = env->option_values;
  }

  for (int i = 0; i < p->ninputs; i++) {
    in[i] = coil_tensor_list_find(inputs, p->inputs[i].label);
    if (!in[i]) {
      coil_diag_set(d, "no tensor given for %s %%%s", p->inputs[i].is_param ? "parameter" : "input",
                    p->inputs[i].label);
      goto done;
    }
    coil_plugin_tensor_wrap(in[i], istr[i], &pin[i]);
    pinp[i] = &pin[i];
  }
  if (bind_symbols(p, in, vals, d))
    goto done;
  for (int i = 0; i < nout; i++) {
    const coil_buffer *b = &p->buffers[out_line->args[i]];
    int64_t shape[COIL_MAX_RANK];
    for (int k = 0; k < b->rank; k++)
      if (coil_sym_eval(p->sym, b->sizes[k], vals, coil_sym_nvars(p->sym), &shape[k], d))
        goto done;
    if (coil_tensor_init(&outs[i], b->dtype, b->rank, shape, d))
      goto done;
    coil_plugin_tensor_wrap(&outs[i], ostr[i], &pout[i]);
    poutp[i] = &pout[i];
  }

  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/coil-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", backend);
  if (!mkdtemp(dir)) {
    coil_diag_set(d, "%s: cannot create an artifact directory", dir);
    dir[0] = 0;
    goto done;
  }
  const char *const *dirs = env ? (const char *const *)env->dirs.dirs : NULL;
  if (coil_plugin_open(backend, dirs, env ? env->dirs.n : 0, &lp, d) ||
      coil_plugin_create(lp, &opts, &inst, d) || coil_plugin_compile(lp, inst, p, dir, &opts, d) ||
      coil_plugin_load(lp, inst, dir, &opts, &art, d) ||
      coil_plugin_run(lp, art, p->ninputs, pinp, nout, poutp, d))
    goto done;
  for (int i = 0; i < nout; i++) {
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    coil_tensor_list_add(outputs, name, &outs[i]);
  }
  rc = 0;
done:
  if (art)
    coil_plugin_artifact_free(lp, art);
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  if (dir[0])
    remove_dir(dir);
  for (int i = 0; i < nout; i++)
    coil_tensor_free(&outs[i]);
  free(outs), free(pout), free(poutp), free(ostr);
  free(in), free(pin), free(pinp), free(istr), free(vals);
  coil_wir_free(p);
  return rc;
}
