/* The real PyTorch exports in ../shared/torch-exports: every graph parses, type-checks against
 * PyTorch's own annotations, and runs on the reference interpreter to PyTorch's outputs within
 * torch.testing.assert_close's default tolerances. Cases NAME_0.* rerun NAME.coil at a second
 * size (graphs with a symbolic dimension). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coil/coil.h"

#define DIR_ COIL_SHARED_DIR "/torch-exports"

static bool
exists(const char *path)
{
  return access(path, R_OK) == 0;
}

/* Runs graph `stem`.coil with the data files of `data` (stem or stem_N); returns mismatches. */
static int
run_case(const char *stem, const char *data)
{
  char graph[512], weights[512], inputs[512], expected[512];
  snprintf(graph, sizeof graph, "%s/%s.coil", DIR_, stem);
  snprintf(weights, sizeof weights, "%s/%s.weights.safetensors", DIR_, stem);
  snprintf(inputs, sizeof inputs, "%s/%s.inputs.safetensors", DIR_, data);
  snprintf(expected, sizeof expected, "%s/%s.expected.safetensors", DIR_, data);
  coil_diag d = {0};
  coil_graph *g = coil_graph_load(graph, &d);
  cr_assert_not_null(g, "%s: %s", data, d.msg);
  coil_tensor_list in = {0}, w = {0}, want = {0}, got = {0};
  cr_assert_eq(coil_safetensors_read(inputs, &in, &d), 0, "%s", d.msg);
  if (exists(weights)) {
    cr_assert_eq(coil_safetensors_read(weights, &w, &d), 0, "%s", d.msg);
    for (int i = 0; i < w.n; i++)
      coil_tensor_list_add(&in, w.names[i], &w.tensors[i]);
  }
  cr_assert_eq(coil_safetensors_read(expected, &want, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_ref_run(g, &in, &got, &d), 0, "%s: %s", data, d.msg);
  cr_expect_eq(got.n, want.n, "%s: %d outputs, PyTorch has %d", data, got.n, want.n);
  int bad = 0;
  for (int i = 0; i < got.n; i++) {
    const coil_tensor *e = coil_tensor_list_find(&want, got.names[i]);
    cr_expect_not_null(e, "%s: PyTorch has no %s", data, got.names[i]);
    if (!e) {
      bad++;
      continue;
    }
    double rtol, atol;
    coil_tolerance_default(e->dtype, &rtol, &atol);
    coil_compare c;
    bool ok = coil_tensor_allclose(&got.tensors[i], e, rtol, atol, &c);
    cr_expect(ok, "%s %s: %s; %lld mismatches, worst at %lld: got %.9g, PyTorch %.9g", data,
              got.names[i], c.same_shape ? "values differ" : "dtype or shape differs",
              (long long)c.mismatches, (long long)c.worst, c.worst_got, c.worst_want);
    bad += !ok;
  }
  coil_tensor_list_free(&in);
  coil_tensor_list_free(&w);
  coil_tensor_list_free(&want);
  coil_tensor_list_free(&got);
  coil_graph_free(g);
  return bad;
}

Test(torch_exports, every_case_matches_pytorch)
{
  DIR *dir = opendir(DIR_);
  if (!dir)
    cr_skip_test("%s not found: the shared test data sits beside the checkout", DIR_);
  int graphs = 0, reruns = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t n = strlen(e->d_name);
    if (n > 5 && strcmp(e->d_name + n - 5, ".coil") == 0) {
      char stem[256];
      snprintf(stem, sizeof stem, "%.*s", (int)(n - 5), e->d_name);
      cr_expect_eq(run_case(stem, stem), 0, "case %s", stem);
      graphs++;
      for (int k = 0; k < 10; k++) { /* second sizes: stem_0, stem_1, ... */
        char data[300], path[600];
        snprintf(data, sizeof data, "%s_%d", stem, k);
        snprintf(path, sizeof path, "%s/%s.inputs.safetensors", DIR_, data);
        if (!exists(path))
          break;
        cr_expect_eq(run_case(stem, data), 0, "case %s", data);
        reruns++;
      }
    }
  }
  closedir(dir);
  cr_expect_geq(graphs, 12, "expected the twelve exports, found %d", graphs);
  cr_expect_geq(reruns, 1, "expected at least one second-size case");
}
