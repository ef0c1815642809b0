/* test_graph.c — the .coil reader and printer. Every PyTorch export in torch-exports parses,
 * prints back to its own text (comments aside), round-trips, and re-infers PyTorch's annotations
 * when they are stripped; hand-written graphs cover the lexical corners (comments and blank
 * lines anywhere, CRLF, keyword arguments, multi-line lists, strings and escapes, floats that
 * must come back bit for bit, devices, computed symbolic sizes); and every file of the malformed
 * corpus core/tests/bad/graph is rejected with the message its first line expects:
 *   # expect: NAME.coil:LINE:COL: error: what */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops.h"

/* ---------------------------------------------------------------- helpers ---- */

static char *
slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long len = ftell(f);
  cr_assert_geq(len, 0);
  rewind(f);
  char *s = malloc((size_t)len + 1);
  cr_assert_not_null(s);
  cr_assert_eq(fread(s, 1, (size_t)len, f), (size_t)len, "%s: short read", path);
  fclose(f);
  s[len] = '\0';
  *n = (size_t)len;
  return s;
}

static char *
join(const char *dir, const char *name)
{
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  cr_assert_not_null(p);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static bool
ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Parses text that must be accepted. */
static coil_graph *
parse_ok(const char *file, const char *text)
{
  coil_diag d = {{0}};
  coil_graph *g = coil_graph_parse(file, text, strlen(text), &d);
  cr_assert_not_null(g, "%s rejected: %s\n%s", file, d.msg, text);
  cr_assert_eq(d.msg[0], '\0', "message left on success: %s", d.msg);
  return g;
}

/* The first line of the message for text that must be rejected. */
static void
parse_fails(const char *text, const char *want)
{
  coil_diag d = {{0}};
  coil_graph *g = coil_graph_parse("t.coil", text, strlen(text), &d);
  cr_assert_null(g, "accepted, expected an error containing '%s':\n%s", want, text);
  cr_assert(strstr(d.msg, want), "expected '%s' in: %s", want, d.msg);
}

/* Print g, parse the print, print again: the two prints must be identical. Returns the first. */
static char *
round_trip(const coil_graph *g)
{
  char *p1 = coil_graph_print(g);
  coil_graph *g2 = parse_ok("printed.coil", p1);
  char *p2 = coil_graph_print(g2);
  cr_assert_str_eq(p2, p1, "the print does not print back to itself");
  cr_assert_eq(g2->ninputs, g->ninputs);
  cr_assert_eq(g2->nnodes, g->nnodes);
  cr_assert_eq(g2->noutputs, g->noutputs);
  for (int i = 0; i < g->nnodes; i++)
    cr_assert(coil_type_equal(&g->nodes[i].out->type, &g2->nodes[i].out->type),
              "type of %%%s changed in the round trip", g->nodes[i].out->name);
  coil_graph_free(g2);
  free(p2);
  return p1;
}

/* Parse, round-trip, and compare the canonical print with want. */
static void
expect_print(const char *text, const char *want)
{
  coil_graph *g = parse_ok("t.coil", text);
  char *p = round_trip(g);
  cr_assert_str_eq(p, want);
  free(p);
  coil_graph_free(g);
}

static const coil_value *
value(const coil_graph *g, const char *name)
{
  for (int i = 0; i < g->ninputs; i++)
    if (strcmp(g->inputs[i]->name, name) == 0)
      return g->inputs[i];
  for (int i = 0; i < g->nnodes; i++)
    if (strcmp(g->nodes[i].out->name, name) == 0)
      return g->nodes[i].out;
  cr_assert_fail("no value %%%s", name);
  return NULL;
}

static const coil_node *
node(const coil_graph *g, const char *name)
{
  const coil_value *v = value(g, name);
  cr_assert_eq(v->kind, COIL_VAL_NODE, "%%%s is an input", name);
  return &g->nodes[v->index];
}

static void
expect_type(const coil_graph *g, const char *name, const char *want)
{
  coil_strbuf b = {0};
  coil_type_print(g, &value(g, name)->type, &b);
  cr_assert_str_eq(b.s ? b.s : "", want, "type of %%%s", name);
  coil_strbuf_free(&b);
}

/* The bound argument `param` of statement %name. */
static const coil_lit *
bound(const coil_graph *g, const char *name, const char *param)
{
  const coil_node *n = node(g, name);
  coil_schema s;
  coil_diag d = {{0}};
  cr_assert_eq(coil_schema_parse(n->op, &s, &d), 0, "%s", d.msg);
  int k = coil_schema_find(&s, param);
  cr_assert_geq(k, 0, "%s has no parameter %s", n->op->name, param);
  return &n->bound[k];
}

/* src without its comment lines (the exports' only comments are whole lines). */
static char *
strip_comment_lines(const char *src)
{
  char *out = malloc(strlen(src) + 1), *o = out;
  cr_assert_not_null(out);
  for (const char *line = src; *line;) {
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) + 1 : strlen(line);
    if (line[0] != '#') {
      memcpy(o, line, n);
      o += n;
    }
    line += n;
  }
  *o = '\0';
  return out;
}

/* src with the type annotation of every statement removed: "  %a: T = op(...)" -> "  %a = op". */
static char *
strip_annotations(const char *src)
{
  char *out = malloc(strlen(src) + 1), *o = out;
  cr_assert_not_null(out);
  for (const char *line = src; *line;) {
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) + 1 : strlen(line);
    const char *colon = memchr(line, ':', n), *eq = strstr(line, " = ");
    if (strncmp(line, "  %", 3) == 0 && colon && eq && colon < eq && eq < line + n) {
      memcpy(o, line, (size_t)(colon - line));
      o += colon - line;
      memcpy(o, eq, n - (size_t)(eq - line));
      o += n - (size_t)(eq - line);
    } else {
      memcpy(o, line, n);
      o += n;
    }
    line += n;
  }
  *o = '\0';
  return out;
}

/* ---------------------------------------------------------------- the PyTorch exports ---- */

#define EXPORTS COIL_SHARED_DIR "/torch-exports"

static DIR *
open_exports(void)
{
  DIR *dp = opendir(EXPORTS);
  if (!dp)
    cr_skip_test("%s is missing", EXPORTS);
  return dp;
}

/* Every export parses, its canonical print is its own text less the comment lines (PyTorch
 * annotated every statement, and the printer writes floats the way Python does), the print
 * round-trips, and the graph re-infers PyTorch's types when the annotations are stripped. */
Test(graph, exports_print_as_written)
{
  DIR *dp = open_exports();
  int files = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (!ends_with(de->d_name, ".coil"))
      continue;
    char *path = join(EXPORTS, de->d_name);
    size_t n;
    char *src = slurp(path, &n);
    coil_diag d = {{0}};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_not_null(g, "%s", d.msg);

    char *want = strip_comment_lines(src);
    char *p = round_trip(g);
    cr_assert_str_eq(p, want, "%s does not print as written", de->d_name);

    char *bare = strip_annotations(src);
    cr_assert(strlen(bare) < strlen(src), "%s: no annotation stripped", de->d_name);
    coil_graph *g2 = parse_ok(de->d_name, bare);
    char *p2 = coil_graph_print(g2);
    cr_assert_str_eq(p2, p, "%s: inference without annotations differs from PyTorch's",
                     de->d_name);

    free(p2);
    coil_graph_free(g2);
    free(bare);
    free(p);
    free(want);
    coil_graph_free(g);
    free(src);
    free(path);
    files++;
  }
  closedir(dp);
  cr_assert_geq(files, 12, "only %d exports in %s", files, EXPORTS);
}

Test(graph, exports_structure)
{
  closedir(open_exports());
  static const struct {
    const char *name;
    int ninputs, nnodes, noutputs;
  } cases[] = {
      {"e01_add_relu", 2, 2, 1},         {"e02_silu_mlp", 5, 6, 1},
      {"e03_log_softmax_dim0", 1, 1, 1}, {"e04_mean_var", 1, 4, 4},
      {"e05_exp_log_pow", 1, 11, 1},     {"e06_bf16_cast", 2, 8, 1},
      {"e07_cat_split", 2, 8, 3},        {"e08_transpose_contig", 1, 4, 1},
      {"e09_dynamic_rows", 2, 3, 1},     {"e10_encoder_layer", 13, 75, 1},
      {"e11_conv_groups_avgpool", 3, 3, 1}, {"e12_argmin_any_where", 1, 7, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char file[128];
    snprintf(file, sizeof file, "%s.coil", cases[i].name);
    char *path = join(EXPORTS, file);
    coil_diag d = {{0}};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_not_null(g, "%s", d.msg);
    cr_assert_str_eq(g->name, cases[i].name);
    cr_assert_eq(g->version, 1);
    cr_assert_eq(g->ninputs, cases[i].ninputs, "%s: inputs", file);
    cr_assert_eq(g->nnodes, cases[i].nnodes, "%s: statements", file);
    cr_assert_eq(g->noutputs, cases[i].noutputs, "%s: outputs", file);
    for (int k = 0; k < g->nnodes; k++) {
      cr_assert_eq(g->nodes[k].out->index, k);
      cr_assert_eq(g->nodes[k].annotated, g->nodes[k].out->type.kind != COIL_TYPE_NONE,
                   "%s: PyTorch annotates every statement that has a value", file);
    }
    coil_graph_free(g);
    free(path);
  }
}

static coil_graph *
load_export(const char *name)
{
  closedir(open_exports());
  char file[128];
  snprintf(file, sizeof file, "%s.coil", name);
  char *path = join(EXPORTS, file);
  coil_diag d = {{0}};
  coil_graph *g = coil_graph_load(path, &d);
  cr_assert_not_null(g, "%s", d.msg);
  free(path);
  return g;
}

Test(graph, exports_types)
{
  coil_graph *g = load_export("e07_cat_split");
  expect_type(g, "cat", "f32[10, 8]");
  expect_type(g, "split_with_sizes", "(f32[3, 8], f32[5, 8], f32[2, 8])");
  cr_assert_eq(value(g, "split_with_sizes")->type.kind, COIL_TYPE_TUPLE);
  cr_assert_eq(value(g, "split_with_sizes")->type.nelems, 3);
  expect_type(g, "getitem_1", "f32[5, 8]");
  cr_assert_str_eq(g->outputs[2]->name, "mul_2");
  coil_graph_free(g);

  g = load_export("e10_encoder_layer");
  expect_type(g, "native_layer_norm", "(f32[2, 7, 32], f32[2, 7, 1], f32[2, 7, 1])");
  expect_type(g, "squeeze", "f32[3, 7, 2, 32]");
  expect_type(g, "any_1", "bool[2, 4, 7, 1]");
  cr_assert_eq(value(g, "p_l_norm1_weight")->kind, COIL_VAL_PARAM);
  cr_assert_eq(value(g, "x")->kind, COIL_VAL_INPUT);
  cr_assert_eq(value(g, "x")->index, 12);
  cr_assert_eq(bound(g, "native_layer_norm", "eps")->kind, COIL_LIT_FLOAT);
  cr_assert_eq(bound(g, "native_layer_norm", "eps")->f, 1e-05);
  cr_assert_eq(bound(g, "mul", "other")->f, 0.5946035575013605);
  cr_assert_eq(bound(g, "eq", "other")->f, -INFINITY);
  coil_graph_free(g);

  g = load_export("e09_dynamic_rows");
  expect_type(g, "x", "f32[s77, 48]");
  expect_type(g, "_softmax", "f32[s77, 48]");
  expect_type(g, "amax", "f32[s77]");
  cr_assert_eq(coil_sym_nvars(g->sym), 1);
  cr_assert_str_eq(coil_sym_var_name(g->sym, 0), "s77");
  coil_graph_free(g);

  g = load_export("e06_bf16_cast");
  cr_assert_eq(value(g, "_assert_tensor_metadata")->type.kind, COIL_TYPE_NONE);
  cr_assert_not(node(g, "_assert_tensor_metadata")->annotated);
  cr_assert_eq(bound(g, "_assert_tensor_metadata", "dtype")->dtype, COIL_F32);
  cr_assert_str_eq(bound(g, "_assert_tensor_metadata", "device")->s, "cpu");
  expect_type(g, "_to_copy", "bf16[12, 20]");
  coil_graph_free(g);

  g = load_export("e12_argmin_any_where");
  expect_type(g, "argmin", "i64[6]");
  expect_type(g, "sum_1", "f32[]");
  cr_assert_eq(bound(g, "argmin", "keepdim")->kind, COIL_LIT_BOOL, "default filled in");
  cr_assert_eq(bound(g, "argmin", "keepdim")->i, 0);
  coil_graph_free(g);

  g = load_export("e11_conv_groups_avgpool");
  expect_type(g, "convolution", "f32[1, 8, 6, 6]");
  expect_type(g, "avg_pool2d", "f32[1, 8, 3, 3]");
  coil_graph_free(g);
}

/* ---------------------------------------------------------------- hand-written graphs ---- */

Test(graph, comments_and_blank_lines_anywhere)
{
  expect_print("# a comment before the header\n"
               "\n"
               "   # indented comment\n"
               "coil 1   # the version\n"
               "\n"
               "# between header and graph\n"
               "graph g(   # the inputs follow\n"
               "  %x: f32[2, 3],   # first\n"
               "\n"
               "  # a comment line inside the input list\n"
               "  %w: f32[3] param,\n"
               "  %b: f32[3] buffer\n"
               ") {   # the body\n"
               "   \n"
               "  # before a statement\n"
               "  %a = aten.add.Tensor(%x, %w)   # trailing\n"
               "\n"
               "\t\n"
               "  %m: f32[2, 3] = aten.mul.Tensor(\n"
               "      %a,      # first operand\n"
               "\n"
               "      %b\n"
               "  )\n"
               "  # before return\n"
               "  return (%a,\n"
               "          %m)  # outputs\n"
               "# before the brace\n"
               "}\n"
               "# trailing comment\n"
               "\n",
               "coil 1\n"
               "graph g(%x: f32[2, 3], %w: f32[3] param, %b: f32[3] buffer) {\n"
               "  %a: f32[2, 3] = aten.add.Tensor(%x, %w)\n"
               "  %m: f32[2, 3] = aten.mul.Tensor(%a, %b)\n"
               "  return (%a, %m)\n"
               "}\n");
}

Test(graph, crlf_and_no_final_newline)
{
  expect_print("coil 1\r\ngraph g(%x: f32[4]) {\r\n  %r = aten.relu.default(%x)\r\n"
               "  return (%r)\r\n}",
               "coil 1\ngraph g(%x: f32[4]) {\n  %r: f32[4] = aten.relu.default(%x)\n"
               "  return (%r)\n}\n");
}

Test(graph, statements_without_annotations_print_inferred_types)
{
  expect_print("coil 1\n"
               "graph g(%x: f32[4, 5], %i: i64[4, 5]) {\n"
               "  %a = aten.add.Tensor(%x, %i)\n"
               "  %s = aten.sum.dim_IntList(%i, [1])\n"
               "  %c = aten.lt.Scalar(%x, 0)\n"
               "  %t = aten.topk.default(%x, 2)\n"
               "  %v = getitem(%t, 1)\n"
               "  %n = aten._assert_tensor_metadata.default(%x, dtype=f32)\n"
               "  return (%a, %s, %c, %v)\n"
               "}\n",
               "coil 1\n"
               "graph g(%x: f32[4, 5], %i: i64[4, 5]) {\n"
               "  %a: f32[4, 5] = aten.add.Tensor(%x, %i)\n"
               "  %s: i64[4] = aten.sum.dim_IntList(%i, [1])\n"
               "  %c: bool[4, 5] = aten.lt.Scalar(%x, 0)\n"
               "  %t: (f32[4, 2], i64[4, 2]) = aten.topk.default(%x, 2)\n"
               "  %v: i64[4, 2] = getitem(%t, 1)\n"
               "  %n = aten._assert_tensor_metadata.default(%x, dtype=f32)\n"
               "  return (%a, %s, %c, %v)\n"
               "}\n");
}

/* Keyword arguments print as written (order kept, spaces normalised) and bind by name. */
Test(graph, keyword_arguments)
{
  const char *src = "coil 1\n"
                    "graph k(%x: f32[4, 5], %y: f32[4, 5]) {\n"
                    "  %s = aten.sum.dim_IntList(%x, [1], keepdim = True)\n"
                    "  %a = aten.add.Tensor(%x, %y, alpha=2)\n"
                    "  %v = aten.var.correction(%x, keepdim=False, correction=0, dim=[0, 1])\n"
                    "  %m = aten.mean.dim(%x, dim=[-1], keepdim=True, dtype=f64)\n"
                    "  return (%s, %a, %v, %m)\n"
                    "}\n";
  coil_graph *g = parse_ok("k.coil", src);
  char *p = round_trip(g);
  cr_assert_str_eq(p, "coil 1\n"
                      "graph k(%x: f32[4, 5], %y: f32[4, 5]) {\n"
                      "  %s: f32[4, 1] = aten.sum.dim_IntList(%x, [1], keepdim=True)\n"
                      "  %a: f32[4, 5] = aten.add.Tensor(%x, %y, alpha=2)\n"
                      "  %v: f32[] = aten.var.correction(%x, keepdim=False, correction=0, dim=[0, 1])\n"
                      "  %m: f64[4, 1] = aten.mean.dim(%x, dim=[-1], keepdim=True, dtype=f64)\n"
                      "  return (%s, %a, %v, %m)\n"
                      "}\n");
  cr_assert_eq(bound(g, "s", "keepdim")->i, 1);
  cr_assert_eq(bound(g, "a", "alpha")->kind, COIL_LIT_INT);
  cr_assert_eq(bound(g, "a", "alpha")->i, 2);
  const coil_lit *dim = bound(g, "v", "dim");
  cr_assert_eq(dim->kind, COIL_LIT_LIST);
  cr_assert_eq(dim->n, 2);
  cr_assert_eq(dim->items[1].i, 1);
  cr_assert_eq(bound(g, "v", "correction")->i, 0);
  cr_assert_eq(bound(g, "m", "dtype")->dtype, COIL_F64);
  /* defaults are filled in where nothing was written */
  cr_assert_eq(bound(g, "s", "dtype")->kind, COIL_LIT_NONE);
  free(p);
  coil_graph_free(g);
}

/* Lists split over lines (newlines inside brackets are spaces, as in Python), trailing commas. */
Test(graph, multi_line_lists)
{
  expect_print("coil 1\n"
               "graph m(\n"
               "    %x: f32[2, 3, 4],\n"
               "    %y: f32[\n"
               "      2,\n"
               "      3,\n"
               "      4,\n"
               "    ],\n"
               ") {\n"
               "  %p = aten.permute.default(%x, [\n"
               "      2,\n"
               "      0,\n"
               "      1,\n"
               "  ])\n"
               "  %c = aten.cat.default(\n"
               "      [%x,\n"
               "       %y],\n"
               "      dim=1,\n"
               "  )\n"
               "  return (\n"
               "    %p,\n"
               "    %c,\n"
               "  )\n"
               "}\n",
               "coil 1\n"
               "graph m(%x: f32[2, 3, 4], %y: f32[2, 3, 4]) {\n"
               "  %p: f32[4, 2, 3] = aten.permute.default(%x, [2, 0, 1])\n"
               "  %c: f32[2, 6, 4] = aten.cat.default([%x, %y], dim=1)\n"
               "  return (%p, %c)\n"
               "}\n");
}

/* No op takes a list of lists, so nesting shows in where the parser stops: at 32 levels the list
 * is read and binding rejects it; at 33 the parser refuses at the innermost item. */
Test(graph, nested_lists)
{
  for (int levels = 2; levels <= 34; levels += 1) {
    char text[512];
    const char *head = "coil 1\ngraph n(%x: f32[2]) {\n";
    const char *stmt = "  %r = aten.view.default(%x, ";
    int len = snprintf(text, sizeof text, "%s%s", head, stmt);
    for (int i = 0; i < levels; i++)
      text[len++] = '[';
    text[len++] = '2';
    for (int i = 0; i < levels; i++)
      text[len++] = ']';
    snprintf(text + len, sizeof text - (size_t)len, ")\n  return (%%r)\n}\n");
    char want[128];
    if (levels <= 32)
      snprintf(want, sizeof want, "t.coil:3:30: error: aten.view.default: argument 'size' must "
                                  "be a list of integers");
    else
      snprintf(want, sizeof want, "t.coil:3:%d: error: lists nested too deeply",
               (int)strlen(stmt) + 33 + 1);
    parse_fails(text, want);
  }
  /* one level is a list of integers */
  coil_graph *g = parse_ok("t.coil", "coil 1\ngraph n(%x: f32[2]) {\n"
                                     "  %r = aten.view.default(%x, [2])\n  return (%r)\n}\n");
  expect_type(g, "r", "f32[2]");
  coil_graph_free(g);
}

/* Strings: either quote, escapes decoded; the printer writes single quotes. */
Test(graph, strings)
{
  expect_print("coil 1\n"
               "graph s(%x: f32[3], %y: f32[3]) {\n"
               "  %g = aten.gelu.default(%x, approximate=\"t\\x61nh\")\n"
               "  %h = aten.gelu.default(%x, approximate='n\\x6fne')\n"
               "  %d = aten.div.Tensor_mode(%x, %y, rounding_mode=\"floor\")\n"
               "  %e = aten.div.Tensor_mode(%x, %y, rounding_mode='tr\\x75nc')\n"
               "  return (%g, %h, %d, %e)\n"
               "}\n",
               "coil 1\n"
               "graph s(%x: f32[3], %y: f32[3]) {\n"
               "  %g: f32[3] = aten.gelu.default(%x, approximate='tanh')\n"
               "  %h: f32[3] = aten.gelu.default(%x, approximate='none')\n"
               "  %d: f32[3] = aten.div.Tensor_mode(%x, %y, rounding_mode='floor')\n"
               "  %e: f32[3] = aten.div.Tensor_mode(%x, %y, rounding_mode='trunc')\n"
               "  return (%g, %h, %d, %e)\n"
               "}\n");
  /* the decoded value reaches the checks: \' \" \\ and \xNN */
  parse_fails("coil 1\ngraph s(%x: f32[3]) {\n"
              "  %g = aten.gelu.default(%x, approximate='a\\'b\\\"c\\\\d\\x41')\n"
              "  return (%g)\n}\n",
              "t.coil:3:42: error: aten.gelu.default: approximate must be 'none' or 'tanh', not "
              "'a'b\"c\\dA'");
  parse_fails("coil 1\ngraph s(%x: f32[3]) {\n"
              "  %g = aten.gelu.default(%x, approximate=\"it's\")\n"
              "  return (%g)\n}\n",
              "not 'it's'");
  parse_fails("coil 1\ngraph s(%x: f32[3]) {\n"
              "  %g = aten.gelu.default(%x, approximate='\\x4')\n  return (%g)\n}\n",
              "t.coil:3:42: error: unknown escape in string");
  parse_fails("coil 1\ngraph s(%x: f32[3]) {\n"
              "  %g = aten.gelu.default(%x, approximate='tanh\\')\n  return (%g)\n}\n",
              "t.coil:3:42: error: unterminated string");
}

/* Each float prints in the shortest form that reads back to the identical double (sign of zero
 * included) and stays a float. */
Test(graph, floats_round_trip_exactly)
{
  static const struct {
    const char *src, *printed;
  } cases[] = {
      {"0.1", "0.1"},
      {"1e-05", "1e-05"},
      {"1E-5", "1e-05"},
      {"0.00001", "1e-05"},
      {"0.5946035575013605", "0.5946035575013605"},
      {"1e300", "1e+300"},
      {"-0.0", "-0.0"},
      {"0.0", "0.0"},
      {"2.", "2.0"},
      {"-2.5", "-2.5"},
      {"1.5e3", "1500.0"},
      {"1500.0", "1500.0"},
      {"0.0001", "0.0001"},
      {"1e15", "1000000000000000.0"},
      {"1e16", "1e+16"},
      {"100.0", "100.0"},
      {"123.0", "123.0"},
      {"123456789012345678.0", "1.2345678901234568e+17"},
      {"5e-324", "5e-324"},
      {"1.7976931348623157e308", "1.7976931348623157e+308"},
      {"0.30000000000000004", "0.30000000000000004"},
      {"inf", "inf"},
      {"-inf", "-inf"},
      {"1e400", "inf"},
      {"nan", "nan"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char src[256], want[256];
    const char *fmt = "coil 1\ngraph f(%%x: f32[3]) {\n  %%r%s = aten.mul.Scalar(%%x, %s)\n"
                      "  return (%%r)\n}\n";
    snprintf(src, sizeof src, fmt, "", cases[i].src);
    snprintf(want, sizeof want, fmt, ": f32[3]", cases[i].printed);
    coil_graph *g = parse_ok("f.coil", src);
    char *p = round_trip(g);
    cr_assert_str_eq(p, want, "%s", cases[i].src);
    coil_graph *g2 = parse_ok("f.coil", p);
    double a = bound(g, "r", "other")->f, b = bound(g2, "r", "other")->f;
    cr_assert_eq(bound(g2, "r", "other")->kind, COIL_LIT_FLOAT, "%s", cases[i].src);
    if (isnan(a)) {
      cr_assert(isnan(b));
    } else {
      cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "%s: %.17g came back as %.17g", cases[i].src, a, b);
      cr_assert_eq(a, strtod(cases[i].src, NULL), "%s", cases[i].src);
    }
    coil_graph_free(g2);
    free(p);
    coil_graph_free(g);
  }
  /* -0.0 keeps its sign through the round trip */
  coil_graph *g = parse_ok("f.coil", "coil 1\ngraph f(%x: f32[3]) {\n"
                                     "  %r = aten.mul.Scalar(%x, -0.0)\n  return (%r)\n}\n");
  cr_assert(signbit(bound(g, "r", "other")->f));
  coil_graph_free(g);
  /* integers stay integers */
  g = parse_ok("f.coil", "coil 1\ngraph f(%x: f32[3]) {\n"
                         "  %r = aten.mul.Scalar(%x, -9223372036854775808)\n  return (%r)\n}\n");
  cr_assert_eq(bound(g, "r", "other")->kind, COIL_LIT_INT);
  cr_assert_eq(bound(g, "r", "other")->i, INT64_MIN);
  char *p = round_trip(g);
  cr_assert(strstr(p, "(%x, -9223372036854775808)"), "%s", p);
  free(p);
  coil_graph_free(g);
}

Test(graph, devices_layouts_memory_formats)
{
  const char *src = "coil 1\n"
                    "graph d(%x: f32[3]) {\n"
                    "  %a = aten._to_copy.default(%x, dtype=f16, device=cuda:0)\n"
                    "  %b = aten._to_copy.default(%x, device = cuda : 3, layout=strided)\n"
                    "  %c = aten._to_copy.default(%x, device=cuda, memory_format=channels_last)\n"
                    "  %e = aten._to_copy.default(%x, device=cpu, pin_memory=False)\n"
                    "  %f = aten.clone.default(%x, memory_format=contiguous_format)\n"
                    "  %n = aten._assert_tensor_metadata.default(%x, None, None, f32, device=cuda:1024)\n"
                    "  return (%a, %b, %c, %e, %f)\n"
                    "}\n";
  coil_graph *g = parse_ok("d.coil", src);
  char *p = round_trip(g);
  cr_assert_str_eq(
      p, "coil 1\n"
         "graph d(%x: f32[3]) {\n"
         "  %a: f16[3] = aten._to_copy.default(%x, dtype=f16, device=cuda:0)\n"
         "  %b: f32[3] = aten._to_copy.default(%x, device=cuda:3, layout=strided)\n"
         "  %c: f32[3] = aten._to_copy.default(%x, device=cuda, memory_format=channels_last)\n"
         "  %e: f32[3] = aten._to_copy.default(%x, device=cpu, pin_memory=False)\n"
         "  %f: f32[3] = aten.clone.default(%x, memory_format=contiguous_format)\n"
         "  %n = aten._assert_tensor_metadata.default(%x, None, None, f32, device=cuda:1024)\n"
         "  return (%a, %b, %c, %e, %f)\n"
         "}\n");
  const coil_lit *dev = bound(g, "a", "device");
  cr_assert_eq(dev->kind, COIL_LIT_WORD);
  cr_assert_str_eq(dev->s, "cuda");
  cr_assert_eq(dev->i, 0);
  cr_assert_eq(bound(g, "b", "device")->i, 3);
  cr_assert_eq(bound(g, "c", "device")->i, -1, "plain cuda has no index");
  cr_assert_str_eq(bound(g, "e", "device")->s, "cpu");
  free(p);
  coil_graph_free(g);

  parse_fails("coil 1\ngraph d(%x: f32[3]) {\n  %a = aten._to_copy.default(%x, device=cuda:1025)\n"
              "  return (%a)\n}\n",
              "t.coil:3:46: error: expected a device index after 'cuda:', found an integer");
  parse_fails("coil 1\ngraph d(%x: f32[3]) {\n  %a = aten._to_copy.default(%x, device=cuda:-1)\n"
              "  return (%a)\n}\n",
              "t.coil:3:46: error: expected a device index after 'cuda:'");
  parse_fails("coil 1\ngraph d(%x: f32[3]) {\n  %a = aten._to_copy.default(%x, device=strided)\n"
              "  return (%a)\n}\n",
              "t.coil:3:41: error: aten._to_copy.default: argument 'device' must be a device "
              "(cpu, cuda, cuda:N) or None");
}

/* Graphs with no inputs, no outputs, and names that are keywords elsewhere. */
Test(graph, edge_shapes_of_graphs)
{
  expect_print("coil 1\ngraph empty() {\n  return ()\n}\n", "coil 1\ngraph empty() {\n  return ()\n}\n");
  expect_print("coil 1\n"
               "graph return(%graph: f32[], %coil: i64[2]) {\n"
               "  %return = aten.full.default([2, 3], 1.5)\n"
               "  %None = aten.add.Tensor(%graph, %coil)\n"
               "  %_9 = aten.scalar_tensor.default(7, dtype=i32)\n"
               "  return (%return, %None, %_9)\n"
               "}\n",
               "coil 1\n"
               "graph return(%graph: f32[], %coil: i64[2]) {\n"
               "  %return: f32[2, 3] = aten.full.default([2, 3], 1.5)\n"
               "  %None: f32[2] = aten.add.Tensor(%graph, %coil)\n"
               "  %_9: i32[] = aten.scalar_tensor.default(7, dtype=i32)\n"
               "  return (%return, %None, %_9)\n"
               "}\n");
  /* an input may be returned directly, and twice */
  expect_print("coil 1\ngraph id(%x: bool[0]) {\n  return (%x, %x)\n}\n",
               "coil 1\ngraph id(%x: bool[0]) {\n  return (%x, %x)\n}\n");
}

/* Computed symbolic sizes print as expressions, and those parse back (as annotations too). */
Test(graph, symbolic_sizes_round_trip)
{
  const char *src = "coil 1\n"
                    "graph s(%x: f32[s0, 48], %y: f32[s0, 4], %z: f32[s1, 3, s2], %w: f32[4, 3, 3]) {\n"
                    "  %v = aten.view.default(%x, [-1, 8])\n"
                    "  %c = aten.cat.default([%x, %x, %x])\n"
                    "  %p = aten.constant_pad_nd.default(%y, [0, 0, -3, 1])\n"
                    "  %s = aten.slice.Tensor(%y, 0, 1, 9223372036854775807, 2)\n"
                    "  %t = aten.slice.Tensor(%y, 0, -3)\n"
                    "  %k = aten.convolution.default(%z, %w, None, [2], [1], [1], False, [0], 1)\n"
                    "  %u = aten.split_with_sizes.default(%v, [1, 7], 1)\n"
                    "  return (%v, %c, %p, %s, %t, %k)\n"
                    "}\n";
  coil_graph *g = parse_ok("s.coil", src);
  expect_type(g, "v", "f32[6*s0, 8]");
  expect_type(g, "c", "f32[3*s0, 48]");
  expect_type(g, "p", "f32[s0 - 2, 4]");
  expect_type(g, "k", "f32[s1, 4, (s2 + 1) // 2]");
  expect_type(g, "u", "(f32[6*s0, 1], f32[6*s0, 7])");
  char *p = round_trip(g);
  coil_graph *g2 = parse_ok("s.coil", p); /* every statement now annotated with expressions */
  for (int i = 0; i < g2->nnodes; i++)
    cr_assert(g2->nodes[i].annotated);
  coil_graph_free(g2);
  free(p);
  coil_graph_free(g);

  /* an equal expression written another way is the same type */
  g = parse_ok("s.coil", "coil 1\ngraph s(%x: f32[s0, 48]) {\n"
                         "  %v: f32[s0 * 6, (16) // 2] = aten.view.default(%x, [-1, 8])\n"
                         "  %w: f32[(s0 + s0)*3, 8] = aten.view.default(%x, [-1, 8])\n"
                         "  return (%v, %w)\n}\n");
  expect_type(g, "v", "f32[6*s0, 8]");
  coil_graph_free(g);
  /* inputs may carry expressions too */
  g = parse_ok("s.coil", "coil 1\ngraph s(%x: f32[2*n + 1, min(n, 4)]) {\n  return (%x)\n}\n");
  expect_type(g, "x", "f32[2*n + 1, min(n, 4)]");
  free(round_trip(g));
  coil_graph_free(g);

  parse_fails("coil 1\ngraph s(%x: f32[s0, 48]) {\n"
              "  %v: f32[5*s0, 8] = aten.view.default(%x, [-1, 8])\n  return (%v)\n}\n",
              "t.coil:3:3: error: type annotation f32[5*s0, 8] does not match the inferred type "
              "f32[6*s0, 8]");
  parse_fails("coil 1\ngraph s(%x: f32[s0 / 2]) {\n  return (%x)\n}\n",
              "t.coil:2:17: error: bad size expression 's0 / 2': column 4: '/' is not an operator "
              "here; floor division is '//'");
  parse_fails("coil 1\ngraph s(%x: f32[s0, 2*s0 - 2*s0 - 1]) {\n  return (%x)\n}\n",
              "t.coil:2:21: error: a size must not be negative");
}

/* A message is the first line only, names the file, and is never cut short: even the longest
 * annotation mismatch (two 40-element tuples) arrives whole. */
Test(graph, long_messages_are_whole)
{
  coil_strbuf src = {0}, want = {0};
  coil_strbuf_puts(&src, "coil 1\ngraph l(%x: f32[40, 2]) {\n  %s: (");
  for (int i = 0; i < 40; i++)
    coil_strbuf_printf(&src, "%sf32[1, %d]", i ? ", " : "", i == 39 ? 3 : 2);
  coil_strbuf_puts(&src, ") = aten.split.Tensor(%x, 1)\n  return (%x)\n}\n");
  coil_strbuf_puts(&want, "the inferred type (");
  for (int i = 0; i < 40; i++)
    coil_strbuf_printf(&want, "%sf32[1, 2]", i ? ", " : "");
  coil_strbuf_puts(&want, ")");
  coil_diag d = {{0}};
  cr_assert_null(coil_graph_parse("l.coil", src.s, src.len, &d));
  cr_assert(strncmp(d.msg, "l.coil:3:3: error: type annotation (f32[1, 2], ", 46) == 0, "%s", d.msg);
  cr_assert(strstr(d.msg, want.s), "message cut short: %s", d.msg);
  cr_assert(ends_with(d.msg, want.s), "%s", d.msg);
  coil_strbuf_free(&src);
  coil_strbuf_free(&want);
}

/* Text is untrusted and may hold any byte; the length, not a NUL, ends it. */
Test(graph, bytes_and_lengths)
{
  const char *text = "coil 1\ngraph b(%x: f32[2]) {\n  return (%x)\n}\n";
  coil_diag d = {{0}};
  /* a prefix of a valid file is an error, never a read past the end */
  for (size_t n = 0; n < strlen(text); n++) {
    char *buf = malloc(n ? n : 1);
    memcpy(buf, text, n);
    memset(&d, 0, sizeof d);
    coil_graph *g = coil_graph_parse("p.coil", buf, n, &d);
    free(buf);
    if (n >= strlen(text) - 1) { /* only the final newline may be missing */
      cr_assert_not_null(g, "prefix of %zu bytes: %s", n, d.msg);
      coil_graph_free(g);
      continue;
    }
    cr_assert_null(g, "prefix of %zu bytes accepted", n);
    cr_assert(strncmp(d.msg, "p.coil:", 7) == 0, "%s", d.msg);
  }
  /* a NUL inside the given length is a byte like any other */
  const char with_nul[] = "coil 1\ngraph b(%x: f32[2]) {\n  return (%x)\0\n}\n";
  memset(&d, 0, sizeof d);
  cr_assert_null(coil_graph_parse("z.coil", with_nul, sizeof with_nul - 1, &d));
  cr_assert_str_eq(d.msg, "z.coil:3:14: error: unexpected character byte 0x00");
  /* the loader names the file it could not open */
  memset(&d, 0, sizeof d);
  cr_assert_null(coil_graph_load("/nonexistent/x.coil", &d));
  cr_assert(strstr(d.msg, "/nonexistent/x.coil: error: cannot open: "), "%s", d.msg);
}

/* ---------------------------------------------------------------- the malformed corpus ---- */

#define BAD COIL_SOURCE_DIR "/core/tests/bad/graph"

/* Every NAME.coil in core/tests/bad/graph fails to load, and the message (one line, naming the
 * file) contains what its first line "# expect: ..." says. */
Test(graph, bad_corpus)
{
  DIR *dp = opendir(BAD);
  cr_assert_not_null(dp, "%s: %s", BAD, strerror(errno));
  int cases = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (!ends_with(de->d_name, ".coil"))
      continue;
    char *path = join(BAD, de->d_name);
    size_t n;
    char *text = slurp(path, &n);
    const char *tag = "# expect: ";
    cr_assert(strncmp(text, tag, strlen(tag)) == 0, "%s does not start with '%s'", de->d_name,
              tag);
    char *want = text + strlen(tag);
    want[strcspn(want, "\n")] = '\0';
    cr_assert_gt(strlen(want), 0, "%s: empty expectation", de->d_name);
    char where[300];
    snprintf(where, sizeof where, "%s:", de->d_name);
    cr_assert(strncmp(want, where, strlen(where)) == 0,
              "%s: the expectation must start with the file name and location", de->d_name);

    coil_diag d = {{0}};
    coil_graph *g = coil_graph_load(path, &d);
    cr_assert_null(g, "%s was accepted", de->d_name);
    cr_assert(strncmp(d.msg, path, strlen(path)) == 0, "message does not name %s: %s", path,
              d.msg);
    cr_assert(strstr(d.msg, want), "%s: expected '%s' in: %s", de->d_name, want, d.msg);
    for (const char *c = d.msg; *c; c++)
      cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "%s: control byte in message: %s",
                de->d_name, d.msg);
    cr_assert_lt(strlen(d.msg), sizeof d.msg - 1, "%s: message truncated", de->d_name);
    free(text);
    free(path);
    cases++;
  }
  closedir(dp);
  cr_assert_geq(cases, 30, "only %d corpus files in %s", cases, BAD);
}

/* A size whose expression prints with a leading minus (1 - s1 prints as -s1 + 1) is printed in
 * parentheses, which the parser reads back (found by tools/fuzz/fuzz_graph). */
Test(graph, negative_leading_term_round_trips)
{
  expect_print("coil 1\ngraph t(%x: f32[4, 1 - s1]) {\n  %r = aten.relu.default(%x)\n  return (%r)\n}\n",
               "coil 1\ngraph t(%x: f32[4, (-s1 + 1)]) {\n"
               "  %r: f32[4, (-s1 + 1)] = aten.relu.default(%x)\n  return (%r)\n}\n");
}
