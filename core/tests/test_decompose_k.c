/* Decompose-K (core/lower_ops.c, [coil] decompose_k): which mm and addmm the core splits over K
 * into aten.bmm.dtype partials and a generated sum, for the claims and settings a compile gets.
 * The values are the conformance suite's (conformance_interp_decompose_k: op and model tiers with
 * decompose_k = 8, against ref and PyTorch's outputs). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "coil/coil.h"
#include "coil/sym.h"

static coil_graph *
mm_graph(const char *dtype, int m, int k, int n, bool addmm)
{
  char text[1024];
  if (addmm)
    snprintf(text, sizeof text,
             "coil 1\ngraph g(%%c: %s[%d], %%a: %s[%d, %d], %%b: %s[%d, %d]) {\n"
             "  %%m = aten.addmm.default(%%c, %%a, %%b, beta=0.5, alpha=2)\n  %%y = aten.relu.default(%%m)\n"
             "  return (%%y)\n}\n",
             dtype, n, dtype, m, k, dtype, k, n);
  else
    snprintf(text, sizeof text,
             "coil 1\ngraph g(%%a: %s[%d, %d], %%b: %s[%d, %d]) {\n  %%y = aten.mm.default(%%a, %%b)\n"
             "  return (%%y)\n}\n",
             dtype, m, k, dtype, k, n);
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("mm.coil", text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  return g;
}

static const coil_library_claim bmm_dtype = {"aten.bmm.dtype", 1u << COIL_F16 | 1u << COIL_BF16 | 1u << COIL_F32};

static coil_wir_program *
compile(const coil_graph *g, const coil_library_claim *claims, int nclaims, int decompose_k)
{
  coil_diag d = {0};
  coil_compile_options o = {.fuse = true, .verify = true, .library = claims, .nlibrary = nclaims,
                            .decompose_k = decompose_k};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  return p;
}

static const coil_line *
extern_call(const coil_wir_program *p)
{
  const coil_line *l = NULL;
  for (int i = 0; i < p->nlines; i++)
    if (p->lines[i].kind == COIL_LINE_EXTERN_CALL) {
      cr_expect_null(l, "one extern_call");
      l = &p->lines[i];
    }
  cr_assert_not_null(l, "an extern_call");
  return l;
}

/* The slices the program's mm was split into (the partials' first dim), 0 when it is one
 * aten.mm.default. */
static int64_t
slices(const coil_wir_program *p)
{
  const coil_line *l = extern_call(p);
  if (strcmp(l->op, "aten.mm.default") == 0)
    return 0;
  cr_assert_str_eq(l->op, "aten.bmm.dtype");
  const coil_buffer *o = &p->buffers[l->outs[0]];
  cr_assert_eq(o->rank, 3);
  cr_expect_eq(o->dtype, COIL_F32, "the partials are f32");
  int64_t s = 0;
  cr_assert(coil_sym_is_const(o->sizes[0], &s));
  return s;
}

static int64_t
slices_of(const char *dtype, int m, int k, int n, const coil_library_claim *claims, int nclaims, int setting)
{
  coil_graph *g = mm_graph(dtype, m, k, n, false);
  coil_wir_program *p = compile(g, claims, nclaims, setting);
  int64_t s = slices(p);
  coil_wir_free(p);
  coil_graph_free(g);
  return s;
}

Test(decompose_k, a_count_splits_k_into_views_and_one_sum)
{
  coil_graph *g = mm_graph("f16", 16, 8192, 8, false);
  coil_wir_program *p = compile(g, &bmm_dtype, 1, 8);
  const coil_line *l = extern_call(p);
  cr_assert_str_eq(l->op, "aten.bmm.dtype");
  /* a [16, 8192] read as [8, 16, 1024] and b [8192, 8] as [8, 1024, 8]: views, no copy */
  const coil_buffer *a = &p->buffers[l->args[0]], *b = &p->buffers[l->args[1]], *o = &p->buffers[l->outs[0]];
  cr_expect_eq(a->kind, COIL_BUF_VIEW);
  cr_expect_eq(b->kind, COIL_BUF_VIEW);
  int64_t v[3];
  for (int d = 0; d < 3; d++)
    cr_assert(coil_sym_is_const(a->strides[d], &v[d]));
  cr_expect(v[0] == 1024 && v[1] == 8192 && v[2] == 1, "a's view strides %lld %lld %lld", (long long)v[0],
            (long long)v[1], (long long)v[2]);
  for (int d = 0; d < 3; d++)
    cr_assert(coil_sym_is_const(b->strides[d], &v[d]));
  cr_expect(v[0] == 8192 && v[1] == 8 && v[2] == 1, "b's view strides");
  for (int d = 0; d < 3; d++)
    cr_assert(coil_sym_is_const(o->sizes[d], &v[d]));
  cr_expect(v[0] == 8 && v[1] == 16 && v[2] == 8);
  /* then one kernel: the sum over the slices, cast to f16 */
  cr_assert_eq(p->nkernels, 1);
  bool sums = false;
  for (int i = 0; i < p->kernels[0].ninsts; i++)
    sums = sums || p->kernels[0].insts[i].op == COIL_KOP_REDUCE;
  cr_expect(sums, "the kernel reduces the partials");
  const coil_line *out = &p->lines[p->nlines - 1];
  while (out > p->lines && out->kind != COIL_LINE_OUTPUT)
    out--;
  cr_assert_eq(out->kind, COIL_LINE_OUTPUT);
  cr_expect_eq(p->buffers[out->args[0]].dtype, COIL_F16);
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(decompose_k, auto_and_off_leave_the_product_to_the_library)
{
  cr_expect_eq(slices_of("f16", 16, 8192, 8, &bmm_dtype, 1, 0), 0, "auto");
  cr_expect_eq(slices_of("f16", 64, 65536, 64, &bmm_dtype, 1, 0), 0, "auto, the benchmark's shape");
  cr_expect_eq(slices_of("f16", 16, 8192, 8, &bmm_dtype, 1, -1), 0, "off");
}

Test(decompose_k, only_where_claimed)
{
  cr_expect_eq(slices_of("f16", 16, 8192, 8, NULL, 0, 4), 0, "no claim");
  const coil_library_claim f32_only = {"aten.bmm.dtype", 1u << COIL_F32};
  cr_expect_eq(slices_of("f16", 16, 8192, 8, &f32_only, 1, 4), 0, "claimed for f32 operands only");
  cr_expect_eq(slices_of("f32", 16, 8192, 8, &f32_only, 1, 4), 4);
  cr_expect_eq(slices_of("f64", 16, 8192, 8, &bmm_dtype, 1, 4), 0, "f64 is not claimed");
}

Test(decompose_k, a_count_applies_wherever_it_divides_k)
{
  cr_expect_eq(slices_of("bf16", 64, 65536, 64, &bmm_dtype, 1, 64), 64);
  cr_expect_eq(slices_of("f32", 64, 100, 64, &bmm_dtype, 1, 4), 4, "any size");
  cr_expect_eq(slices_of("f32", 64, 100, 64, &bmm_dtype, 1, 8), 0, "8 does not divide 100");
}

Test(decompose_k, addmm_keeps_its_epilogue_in_the_sum)
{
  coil_graph *g = mm_graph("f32", 16, 8192, 8, true);
  coil_wir_program *p = compile(g, &bmm_dtype, 1, 8);
  cr_expect_str_eq(extern_call(p)->op, "aten.bmm.dtype");
  cr_assert_eq(p->nkernels, 1, "sum, alpha, beta * bias and relu in one kernel");
  cr_expect_eq(p->kernels[0].nparams, 3, "partials, bias, output");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(decompose_k, the_setting_and_the_claim)
{
  cr_expect_eq(coil_backend_decompose_k(NULL), 0);
  cr_expect_eq(coil_backend_decompose_k("auto"), 0);
  cr_expect_eq(coil_backend_decompose_k("off"), -1);
  cr_expect_eq(coil_backend_decompose_k("16"), 16);
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options o = {0};
  coil_backend_compile_options(NULL, NULL, NULL, NULL, NULL, claims, &o);
  cr_expect_eq(o.nlibrary, 0, "no plugin to ask: nothing claimed");
}

/* [coil] matmul (core/lower_ops.c mm_generated): with matmul_generated, a product the claims do
 * not name for its dtype is the core's loop nest (no extern_call, a reduction kernel over K);
 * one they name stays aten.mm.default. Values: conformance_cpu_matmul_generated (op and model
 * tiers against ref and PyTorch's outputs). */
static int
extern_calls(const coil_wir_program *p)
{
  int n = 0;
  for (int i = 0; i < p->nlines; i++)
    n += p->lines[i].kind == COIL_LINE_EXTERN_CALL;
  return n;
}

Test(matmul, generated_where_not_claimed)
{
  coil_graph *g = mm_graph("f16", 64, 96, 32, true);
  coil_diag d = {0};
  coil_compile_options o = {.fuse = true, .verify = true, .matmul_generated = true};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_expect_eq(extern_calls(p), 0, "no library product");
  bool over_k = false;
  int64_t r = 0;
  for (int k = 0; k < p->nkernels; k++)
    over_k |= p->kernels[k].kind != COIL_KERNEL_POINTWISE && p->kernels[k].nr == 1 &&
              coil_sym_is_const(p->kernels[k].rsize[0], &r) && r == 96;
  cr_expect(over_k, "a reduction kernel over K = 96");
  coil_wir_free(p);

  const coil_library_claim mm16 = {"aten.mm.default", 1u << COIL_F16};
  o.library = &mm16, o.nlibrary = 1;
  p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_expect_str_eq(extern_call(p)->op, "aten.mm.default", "claimed for f16: the library product");
  coil_wir_free(p);

  const coil_library_claim mm32 = {"aten.mm.default", 1u << COIL_F32};
  o.library = &mm32;
  p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_expect_eq(extern_calls(p), 0, "claimed for another dtype only: generated");
  coil_wir_free(p);

  o.matmul_generated = false, o.library = NULL, o.nlibrary = 0; /* the default: always the library op */
  p = coil_compile_graph(g, &o, &d);
  cr_assert_not_null(p, "%s", d.msg);
  cr_expect_str_eq(extern_call(p)->op, "aten.mm.default");
  coil_wir_free(p);
  coil_graph_free(g);
}

Test(matmul, the_setting_decides)
{
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  coil_compile_options o = {0};
  coil_backend_compile_options(NULL, NULL, NULL, NULL, "generated", claims, &o);
  cr_expect(o.matmul_generated);
  cr_expect_eq(o.nlibrary, 0);
  coil_backend_compile_options(NULL, NULL, NULL, NULL, "library", claims, &o);
  cr_expect(!o.matmul_generated);
  cr_expect_eq(o.nlibrary, 2, "aten.mm.default and aten.bmm.default, every dtype");
  coil_backend_compile_options(NULL, NULL, NULL, NULL, "auto", claims, &o);
  cr_expect(!o.matmul_generated, "auto without a plugin to ask: the library op, as before");
  coil_backend_compile_options(NULL, NULL, NULL, NULL, NULL, claims, &o);
  cr_expect(!o.matmul_generated);
}
