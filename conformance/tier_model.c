/* tier_model.c — the model tier: every folder of conformance/models/ holds a graph exported
 * from PyTorch (graph.coil), its parameters (weights.safetensors, when it has any), inputs
 * (inputs.safetensors) and PyTorch's outputs (expected.safetensors: out0, out1, ...); further
 * sizes of a graph with symbolic sizes are inputs_K / expected_K. Each size is a case: the
 * plugin's outputs must match PyTorch's within torch.testing.assert_close's default
 * tolerances for the dtype; the worst NMSE is reported beside. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifact.h"
#include "conf.h"

typedef struct {
  char dir[1024];   /* the model's folder */
  char suffix[16];  /* "" or "_K" */
} model_case;

static void
run_model(const conf_ctx *c, int i, void *user, conf_result *r)
{
  const model_case *mc = &((const model_case *)user)[i];
  char path[1200];
  coil_diag d = {0};
  coil_tensor_list in = {0}, w = {0}, want = {0}, got = {0};
  conf_prepared prep = {0};
  r->status = CONF_FAIL;
  r->nmse = -1;
  snprintf(path, sizeof path, "%s/graph.coil", mc->dir);
  coil_graph *g = coil_graph_load(path, &d);
  if (!g) {
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
    goto done;
  }
  snprintf(path, sizeof path, "%s/inputs%s.safetensors", mc->dir, mc->suffix);
  if (coil_safetensors_read(path, &in, &d))
    goto bad;
  snprintf(path, sizeof path, "%s/expected%s.safetensors", mc->dir, mc->suffix);
  if (coil_safetensors_read(path, &want, &d))
    goto bad;
  snprintf(path, sizeof path, "%s/weights.safetensors", mc->dir);
  if (access(path, R_OK) == 0 && coil_safetensors_read(path, &w, &d))
    goto bad;
  if (conf_prepare(c, g, "model", &prep, r))
    goto done;
  coil_exec_checks chk = {.guard_bytes = 64};
  int rc = coil_artifact_exec_checked(prep.lp, prep.inst, prep.art, prep.p, &in, &w, &chk, &got, &d);
  if (rc) {
    snprintf(r->msg, sizeof r->msg, "%s%.400s", rc == COIL_EXEC_GUARD ? "guard bytes: " : "run: ", d.msg);
    goto done;
  }
  double worst = 0;
  for (int k = 0; k < got.n; k++) {
    char name[32];
    snprintf(name, sizeof name, "out%d", k);
    const coil_tensor *x = coil_tensor_list_find(&want, name);
    if (!x) {
      snprintf(r->msg, sizeof r->msg, "expected%s.safetensors has no %s", mc->suffix, name);
      goto done;
    }
    double rtol, atol, nmse;
    char m[256];
    coil_tolerance_default(x->dtype, &rtol, &atol);
    coil_compare cmp;
    bool close = coil_tensor_allclose(&got.tensors[k], x, rtol, atol, &cmp);
    if (c->repro) {
      printf("  %s (%s), the worst elements against PyTorch's:\n", name, coil_dtype_name(x->dtype));
      conf_print_worst(stdout, &got.tensors[k], x, 10);
      fflush(stdout);
    }
    if (!conf_compare(&got.tensors[k], x, &nmse, m, sizeof m) && nmse >= 1) {
      snprintf(r->msg, sizeof r->msg, "%s: %s", name, m); /* a shape, an integer or a NaN position */
      r->nmse = nmse;
      goto done;
    }
    worst = nmse > worst ? nmse : worst;
    if (!close) {
      snprintf(r->msg, sizeof r->msg, "%s differs from PyTorch at %lld elements beyond rtol %g, atol %g (worst %.9g vs %.9g)",
               name, (long long)cmp.mismatches, rtol, atol, cmp.worst_got, cmp.worst_want);
      r->nmse = worst;
      goto done;
    }
  }
  r->status = CONF_PASS;
  r->nmse = worst;
  goto done;
bad:
  snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
done:
  conf_release(&prep);
  coil_graph_free(g);
  coil_tensor_list_free(&in), coil_tensor_list_free(&w), coil_tensor_list_free(&want), coil_tensor_list_free(&got);
}

static int
by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void
conf_tier_model(conf_ctx *c)
{
  char root[512];
  snprintf(root, sizeof root, "%s/conformance/models", c->source_dir);
  DIR *dp = opendir(root);
  if (!dp) {
    conf_result r = {.tier = "model", .name = "models", .dtype = "-", .shape = "-", .status = CONF_SKIP, .nmse = -1};
    snprintf(r.msg, sizeof r.msg, "%.300s: %s", root, strerror(errno));
    conf_record(c, &r);
    return;
  }
  char **names = NULL;
  int nn = 0;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (e->d_name[0] != '.') {
      names = realloc(names, sizeof *names * (size_t)(nn + 1));
      names[nn++] = strdup(e->d_name);
    }
  closedir(dp);
  qsort(names, (size_t)nn, sizeof *names, by_name);
  model_case *cases = calloc((size_t)nn * 10 + 1, sizeof *cases);
  conf_result *res = calloc((size_t)nn * 10 + 1, sizeof *res);
  int n = 0;
  for (int m = 0; m < nn; m++) {
    for (int k = -1; k < 9; k++) {
      model_case mc;
      if ((size_t)snprintf(mc.dir, sizeof mc.dir, "%s/%s", root, names[m]) >= sizeof mc.dir)
        continue;
      if (k < 0)
        mc.suffix[0] = 0;
      else
        snprintf(mc.suffix, sizeof mc.suffix, "_%d", k);
      char path[1200];
      snprintf(path, sizeof path, "%s/inputs%s.safetensors", mc.dir, mc.suffix);
      if (access(path, R_OK) != 0)
        continue;
      char shape[24];
      snprintf(shape, sizeof shape, "%s", k < 0 ? "size0" : "");
      if (k >= 0)
        snprintf(shape, sizeof shape, "size%d", k + 1);
      if (!conf_selected(c, "model", names[m], "-", shape))
        continue;
      cases[n] = mc;
      conf_result *r = &res[n++];
      snprintf(r->tier, sizeof r->tier, "model");
      snprintf(r->name, sizeof r->name, "%s", names[m]);
      snprintf(r->dtype, sizeof r->dtype, "-");
      snprintf(r->shape, sizeof r->shape, "%s", shape);
    }
    free(names[m]);
  }
  free(names);
  if (n)
    conf_run_cases(c, n, run_model, cases, res);
  free(cases);
  free(res);
}
