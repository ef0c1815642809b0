/* Convolution, generated or a library call (core/lower_conv.c, [coil] convolution): what the
 * compile options' library claims make of a conv + bias + relu graph, per dtype; what
 * coil_backend_compile_options claims for each setting; and that the compile cache tells the
 * two programs apart. The numbers are the conformance suite's (op tier, against ref). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cache.h"
#include "coil/coil.h"
#include "coil/sym.h"

static const char conv_relu[] =
    "coil 1\n"
    "graph conv_relu(%x: $T[2, 3, 9, 8], %w: $T[4, 3, 3, 3] param, %b: $T[4] param) {\n"
    "  %c = aten.convolution.default(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
    "  %r = aten.relu.default(%c)\n"
    "  return (%r)\n"
    "}\n";

static const char conv3d[] =
    "coil 1\n"
    "graph conv3d(%x: f32[1, 4, 5, 6, 7], %w: f32[6, 2, 3, 2, 3] param) {\n"
    "  %c = aten.convolution.default(%x, %w, None, [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 2)\n"
    "  return (%c)\n"
    "}\n";

/* The graph text with $T replaced by dtype. */
static coil_graph *
graph_of(const char *tmpl, const char *dtype)
{
  char text[1024];
  size_t n = 0;
  for (const char *s = tmpl; *s && n + 8 < sizeof text; s++) {
    if (s[0] == '$' && s[1] == 'T') {
      n += (size_t)snprintf(text + n, sizeof text - n, "%s", dtype);
      s++;
    } else {
      text[n++] = *s;
    }
  }
  text[n] = 0;
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("conv.coil", text, n, &d);
  cr_assert_not_null(g, "%s", d.msg);
  return g;
}

static coil_wir_program *
compile(const coil_graph *g, const coil_library_claim *claims, int nclaims)
{
  coil_diag d = {0};
  coil_compile_options o = {.fuse = true, .verify = true, .library = claims, .nlibrary = nclaims};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  return p;
}

static int
count_lines(const coil_wir_program *p, coil_line_kind k)
{
  int n = 0;
  for (int i = 0; i < p->nlines; i++)
    n += p->lines[i].kind == k;
  return n;
}

static const coil_line *
extern_call(const coil_wir_program *p)
{
  for (int i = 0; i < p->nlines; i++)
    if (p->lines[i].kind == COIL_LINE_EXTERN_CALL)
      return &p->lines[i];
  return NULL;
}

Test(lower_conv, generated_is_one_kernel_with_bias_and_relu)
{
  coil_graph *g = graph_of(conv_relu, "f32");
  coil_wir_program *p = compile(g, NULL, 0);
  cr_expect_eq(count_lines(p, COIL_LINE_EXTERN_CALL), 0);
  cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), 1, "conv, bias and relu fuse into one kernel");
  cr_assert_eq(p->nkernels, 1);
  const coil_kernel *k = &p->kernels[0];
  cr_expect(strstr(k->name, "_convolution_") != NULL, "the kernel says what it holds: %s", k->name);
  cr_expect_str_eq(k->source_ops, "aten.convolution.default aten.relu.default");
  cr_expect_eq(k->nr, 3, "reduced over C, KH, KW (3 channels: the window innermost)");
  cr_expect_eq(k->nx, 4, "kept N, Co, OH, OW");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(lower_conv, library_when_claimed)
{
  coil_graph *g = graph_of(conv_relu, "f32");
  coil_library_claim claim = {"aten.convolution.default", 1u << COIL_F32};
  coil_wir_program *p = compile(g, &claim, 1);
  const coil_line *x = extern_call(p);
  cr_assert_not_null(x, "a claimed convolution is a library call");
  cr_expect_str_eq(x->op, "aten.convolution.default");
  cr_expect_eq(count_lines(p, COIL_LINE_EXTERN_CALL), 1);
  cr_expect_eq(count_lines(p, COIL_LINE_KERNEL_CALL), 1, "relu is its own kernel");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(lower_conv, claims_are_per_dtype_and_per_op)
{
  coil_library_claim f32_only = {"aten.convolution.default", 1u << COIL_F32};
  coil_graph *g = graph_of(conv_relu, "f16");
  coil_wir_program *p = compile(g, &f32_only, 1);
  cr_expect_eq(count_lines(p, COIL_LINE_EXTERN_CALL), 0, "f32 claimed, f16 generated");
  coil_wir_free(p);
  coil_graph_free(g);
  coil_library_claim other = {"aten.mm.default", ~0u};
  g = graph_of(conv_relu, "f32");
  p = compile(g, &other, 1);
  cr_expect_eq(count_lines(p, COIL_LINE_EXTERN_CALL), 0, "a claim for another op changes nothing");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(lower_conv, f16_accumulates_in_f32)
{
  coil_graph *g = graph_of(conv_relu, "bf16");
  coil_wir_program *p = compile(g, NULL, 0);
  cr_assert_eq(p->nkernels, 1);
  const coil_kernel *k = &p->kernels[0];
  bool reduce_f32 = false;
  for (int i = 0; i < k->ninsts; i++)
    if (k->insts[i].op == COIL_KOP_REDUCE)
      reduce_f32 = k->insts[i].dtype == COIL_F32;
  cr_expect(reduce_f32, "the sum of a bf16 convolution runs in f32");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(lower_conv, three_d_fits_the_loop_dims)
{
  coil_graph *g = graph_of(conv3d, "f32");
  coil_wir_program *p = compile(g, NULL, 0);
  cr_assert_eq(p->nkernels, 1);
  cr_expect_eq(p->kernels[0].nx, 5, "kept N, Co, O1, O2, O3");
  cr_expect_eq(p->kernels[0].nr, 3, "C/G with K1, then K2, K3");
  coil_wir_free(p);
  coil_graph_free(g);
}

/* With many channels per group the sum runs over them innermost, from channels-last copies of
 * x (padded: the zeros are in the copy, the sum has no mask) and w; with one group the last
 * window dim and the channels are one contiguous reduced dim (KW*C), read at unit stride. */
Test(lower_conv, many_channels_are_summed_innermost)
{
  static const char wide[] =
      "coil 1\n"
      "graph wide(%x: f32[1, 16, 6, 6], %w: f32[8, 16, 3, 3] param, %v: f32[8, 8, 3, 3] param) {\n"
      "  %c = aten.convolution.default(%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
      "  %d = aten.convolution.default(%x, %v, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2)\n"
      "  return (%c, %d)\n"
      "}\n";
  coil_graph *g = graph_of(wide, "f32");
  coil_wir_program *p = compile(g, NULL, 0);
  int sums = 0;
  for (int i = 0; i < p->nkernels; i++) {
    const coil_kernel *k = &p->kernels[i];
    if (!k->nr)
      continue;
    int64_t inner = 0;
    bool grouped = k->nr == 3; /* groups = 2: 8 channels per group, not merged with the window */
    cr_expect(k->nr == 2 || grouped, "kernel %s: %d reduced dims", k->name, k->nr);
    cr_expect(coil_sym_is_const(k->rsize[k->nr - 1], &inner) && inner == (grouped ? 8 : 48),
              "kernel %s: the innermost reduced dim is %s", k->name, grouped ? "C/G" : "KW*C");
    for (int j = 0; j < k->ninsts; j++) {
      cr_expect_neq(k->insts[j].op, COIL_KOP_WHERE, "kernel %s: the sum is masked", k->name);
      if (k->insts[j].op == COIL_KOP_LOAD && !grouped) { /* unit stride along r1 */
        const char *t = coil_sym_str(p->sym, k->insts[j].index, COIL_SYM_PY_SYNTAX);
        cr_expect(strstr(t, "r1 +") || strstr(t, "+ r1"), "kernel %s: load at %s", k->name, t);
        cr_expect(!strstr(t, "//") && !strstr(t, "%"), "kernel %s: load at %s", k->name, t);
      }
    }
    sums++;
  }
  cr_expect_eq(sums, 2);
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(lower_conv, the_setting_decides_the_claims)
{
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options o = {0};
  coil_backend_compile_options(NULL, NULL, "library", NULL, NULL, claims, &o);
  cr_assert_eq(o.nlibrary, 1);
  cr_expect_str_eq(o.library[0].op, "aten.convolution.default");
  cr_expect(o.library[0].dtypes >> COIL_F32 & 1u);
  cr_expect(o.library[0].dtypes >> COIL_BF16 & 1u);
  coil_backend_compile_options(NULL, NULL, "generated", NULL, NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0);
  coil_backend_compile_options(NULL, NULL, "auto", NULL, NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0, "auto without a plugin to ask generates");
  coil_backend_compile_options(NULL, NULL, NULL, NULL, NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0);
}

Test(lower_conv, the_cache_keys_differ)
{
  coil_graph *g = graph_of(conv_relu, "f32");
  coil_library_claim claim = {"aten.convolution.default", 1u << COIL_F32};
  coil_wir_program *gen = compile(g, NULL, 0), *lib = compile(g, &claim, 1);
  char *a = coil_wir_print(gen), *b = coil_wir_print(lib);
  coil_cache_key ka, kb;
  coil_cache_key_make(a, "cpu", "0.1.0", NULL, "", &ka);
  coil_cache_key_make(b, "cpu", "0.1.0", NULL, "", &kb);
  cr_expect_str_neq(ka.hex, kb.hex);
  free(a);
  free(b);
  coil_wir_free(gen);
  coil_wir_free(lib);
  coil_graph_free(g);
}
