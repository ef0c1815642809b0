/* test_wir.c — the Wrapper IR: the printer's exact text for a program made with the builder;
 * print(parse(print(p))) == print(p) for it and for every golden file (tests/golden/NAME.wir, which
 * must also verify and print back byte for byte); the malformed corpus (tests/bad/NAME.wir, each
 * rejected with the message its first line expects, by the parser or else the verifier); the
 * verifier on valid programs broken one invariant at a time; and the reader's corners (versions,
 * escapes, floats, line endings, truncated and mutated input). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/wir.h"

#define GOLDEN COIL_SOURCE_DIR "/wrapper-ir/tests/golden"
#define BAD    COIL_SOURCE_DIR "/wrapper-ir/tests/bad"

/* ---- helpers ---- */

static char *
read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  coil_strbuf b = {0};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    coil_strbuf_putn(&b, buf, n);
  fclose(f);
  *len = b.len;
  return coil_strbuf_take(&b);
}

static bool
ends_with(const char *s, const char *tail)
{
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

static int
cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .wir files of dir, sorted; *n of them. Free each and the array. */
static char **
list_wir(const char *dir, int *n)
{
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp, "%s: %s", dir, strerror(errno));
  char **names = NULL;
  *n = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (!ends_with(de->d_name, ".wir"))
      continue;
    names = realloc(names, sizeof(char *) * (size_t)(*n + 1));
    names[(*n)++] = strdup(de->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)*n, sizeof *names, cmp_names);
  return names;
}

static coil_wir_program *
parse_ok(const char *file, const char *text)
{
  coil_diag d = {{0}};
  coil_wir_program *p = coil_wir_parse(file, text, strlen(text), &d);
  cr_assert_not_null(p, "%s rejected: %s\n%s", file, d.msg, text);
  cr_assert_eq(d.msg[0], 0, "message left on success: %s", d.msg);
  return p;
}

static void
parse_fails(const char *text, const char *want)
{
  coil_diag d = {{0}};
  coil_wir_program *p = coil_wir_parse("t.wir", text, strlen(text), &d);
  cr_assert_null(p, "accepted, expected an error containing '%s':\n%s", want, text);
  cr_assert(strstr(d.msg, want), "expected '%s' in: %s", want, d.msg);
}

static void
verify_ok(const coil_wir_program *p)
{
  coil_diag d = {{0}};
  cr_assert_eq(coil_wir_verify(p, &d), 0, "verifier rejected: %s", d.msg);
  cr_assert_eq(d.msg[0], 0);
}

static void
verify_fails(const coil_wir_program *p, const char *want)
{
  coil_diag d = {{0}};
  cr_assert_neq(coil_wir_verify(p, &d), 0, "verifier accepted, expected '%s'", want);
  cr_assert(strstr(d.msg, want), "expected '%s' in: %s", want, d.msg);
}

/* print(p), parsed and printed again, is the same text. Returns the print. */
static char *
round_trip(const coil_wir_program *p)
{
  char *p1 = coil_wir_print(p);
  coil_wir_program *q = parse_ok("printed.wir", p1);
  char *p2 = coil_wir_print(q);
  cr_assert_str_eq(p2, p1, "the print does not print back to itself");
  cr_assert_eq(q->nbuffers, p->nbuffers);
  cr_assert_eq(q->nkernels, p->nkernels);
  cr_assert_eq(q->nlines, p->nlines);
  coil_wir_free(q);
  free(p2);
  return p1;
}

/* Text that must parse, verify and print as `want` (itself when want is NULL). */
static void
expect_print(const char *text, const char *want)
{
  coil_wir_program *p = parse_ok("t.wir", text);
  verify_ok(p);
  char *s = round_trip(p);
  cr_assert_str_eq(s, want ? want : text);
  free(s);
  coil_wir_free(p);
}

/* ---- building programs ---- */

static coil_wir_program *P;

static const coil_sym *
E(const char *text)
{
  coil_diag d = {{0}};
  const coil_sym *s = coil_sym_parse(P->sym, text, &d);
  cr_assert_not_null(s, "%s: %s", text, d.msg);
  return s;
}

/* A buffer with sizes and strides given as comma-separated expressions ("s0, 64"). */
static int
buffer(coil_buf_kind kind, const char *name, coil_dtype t, const char *sizes, const char *strides,
       int base)
{
  coil_buffer b = {.name = name, .kind = kind, .dtype = t, .base = base};
  const char *text[2] = {sizes, strides};
  for (int part = 0; part < 2; part++) {
    int n = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", text[part]);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
      (part ? b.strides : b.sizes)[n++] = E(tok);
    b.rank = n;
  }
  return coil_wir_add_buffer(P, &b);
}

static int
line(coil_line l)
{
  return coil_wir_add_line(P, &l);
}

static int
buf_index(const char *name)
{
  for (int i = 0; i < P->nbuffers; i++)
    if (strcmp(P->buffers[i].name, name) == 0)
      return i;
  cr_assert_fail("no buffer %s", name);
  return -1;
}

static coil_line *
find_line(coil_line_kind kind, int nth)
{
  for (int i = 0; i < P->nlines; i++)
    if (P->lines[i].kind == kind && nth-- == 0)
      return &P->lines[i];
  cr_assert_fail("no line of kind %d", (int)kind);
  return NULL;
}

/* The example of the brief: softmax rows, a view, an mm and a topk extern, reuse, copy_back. */
static coil_wir_program *
build_example(void)
{
  P = coil_wir_new("mlp");
  P->peak_bytes = 4096;
  const coil_sym *s0 = coil_sym_var(P->sym, "s0");
  int arg0 = buffer(COIL_BUF_INPUT, "arg0", COIL_F32, "s0, 64", "64, 1", -1);
  int arg1 = buffer(COIL_BUF_INPUT, "arg1", COIL_F32, "64, 32", "32, 1", -1);
  coil_wir_add_input(P, arg0, "x", false);
  coil_wir_add_input(P, arg1, "w1", true);

  const coil_sym *x0 = coil_sym_var(P->sym, "x0"), *r0 = coil_sym_var(P->sym, "r0");
  coil_sym_set_range(P->sym, r0, 0, 63);
  const coil_sym *idx = E("64*x0 + r0");
  coil_kparam params[] = {{"in0", COIL_F32, false}, {"out0", COIL_F32, true}};
  coil_kinst insts[] = {
      {.op = COIL_KOP_LOAD, .dtype = COIL_F32, .param = 0, .index = idx},
      {.op = COIL_KOP_REDUCE, .dtype = COIL_F32, .args = {0}, .red = COIL_REDUCE_MAX},
      {.op = COIL_KOP_SUB, .dtype = COIL_F32, .args = {0, 1}},
      {.op = COIL_KOP_EXP, .dtype = COIL_F32, .args = {2}},
      {.op = COIL_KOP_REDUCE, .dtype = COIL_F32, .args = {3}, .red = COIL_REDUCE_SUM},
      {.op = COIL_KOP_DIV, .dtype = COIL_F32, .args = {3, 4}},
      {.op = COIL_KOP_STORE, .dtype = COIL_F32, .param = 1, .index = idx, .args = {5}},
      {.op = COIL_KOP_INDEX, .dtype = COIL_I64, .index = idx},
      {.op = COIL_KOP_CONST, .dtype = COIL_F32, .f = 0.5},
      {.op = COIL_KOP_CONST, .dtype = COIL_BOOL, .i = 1},
      {.op = COIL_KOP_CAST, .dtype = COIL_F16, .args = {5}},
      {.op = COIL_KOP_WHERE, .dtype = COIL_F32, .args = {9, 5, 8}},
  };
  const coil_sym *syms[] = {s0};
  coil_kernel k = {
      .name = "coil_per_fused__softmax_0",
      .kind = COIL_KERNEL_PERSISTENT,
      .nx = 1,
      .nr = 1,
      .xvars = {x0},
      .rvars = {r0},
      .xsize = {s0},
      .rsize = {E("64")},
      .nparams = 2,
      .params = params,
      .nsyms = 1,
      .syms = syms,
      .ninsts = 12,
      .insts = insts,
      .source_ops = "aten._softmax.default, aten.add.Tensor",
  };
  int k0 = coil_wir_add_kernel(P, &k);

  line((coil_line){.kind = COIL_LINE_SYMBOL, .sym = s0, .buffer = arg0, .dim = 0});
  line((coil_line){.kind = COIL_LINE_ASSERT,
                   .assert_kind = COIL_ASSERT_SIZE,
                   .buffer = arg0,
                   .dim = 1,
                   .value = E("64")});
  line((coil_line){.kind = COIL_LINE_ASSERT,
                   .assert_kind = COIL_ASSERT_STRIDE,
                   .buffer = arg0,
                   .dim = 0,
                   .value = E("64")});
  line((coil_line){
      .kind = COIL_LINE_ASSERT, .assert_kind = COIL_ASSERT_ALIGNED, .buffer = arg0, .align = 16});
  line((coil_line){.kind = COIL_LINE_COMMENT, .text = "aten._softmax.default"});
  int buf0 = buffer(COIL_BUF_ALLOC, "buf0", COIL_F32, "s0, 64", "64, 1", -1);
  line((coil_line){.kind = COIL_LINE_ALLOC, .buffer = buf0});
  int args[] = {arg0, buf0};
  line((coil_line){.kind = COIL_LINE_KERNEL_CALL, .kernel = k0, .nargs = 2, .args = args});
  int v0 = buffer(COIL_BUF_VIEW, "v0", COIL_F32, "64, s0", "1, 64", buf0);
  line((coil_line){.kind = COIL_LINE_VIEW, .buffer = v0});
  int buf1 = buffer(COIL_BUF_ALLOC, "buf1", COIL_F32, "64, 64", "64, 1", -1);
  line((coil_line){.kind = COIL_LINE_ALLOC, .buffer = buf1});
  int64_t dims[] = {1, 0};
  coil_xparam xp[] = {
      {.name = "beta", .kind = COIL_XP_INT, .i = 1},
      {.name = "alpha", .kind = COIL_XP_FLOAT, .f = 1.0},
      {.name = "dims", .kind = COIL_XP_INTS, .n = 2, .ints = dims},
      {.name = "mode", .kind = COIL_XP_STR, .s = "floor"},
      {.name = "bias", .kind = COIL_XP_NONE},
      {.name = "flag", .kind = COIL_XP_BOOL, .i = 1},
  };
  int mm_args[] = {v0, buf0}, mm_outs[] = {buf1};
  line((coil_line){.kind = COIL_LINE_EXTERN_CALL,
                   .op = "aten.mm.default",
                   .nargs = 2,
                   .args = mm_args,
                   .nouts = 1,
                   .outs = mm_outs,
                   .nxparams = 6,
                   .xparams = xp});
  int buf2 = buffer(COIL_BUF_ALLOC, "buf2", COIL_F32, "64, 4", "4, 1", -1);
  int buf3 = buffer(COIL_BUF_ALLOC, "buf3", COIL_I64, "64, 4", "4, 1", -1);
  line((coil_line){.kind = COIL_LINE_ALLOC, .buffer = buf2});
  line((coil_line){.kind = COIL_LINE_ALLOC, .buffer = buf3});
  coil_xparam k4 = {.name = "k", .kind = COIL_XP_INT, .i = 4};
  int topk_args[] = {buf1}, topk_outs[] = {buf2, buf3};
  line((coil_line){.kind = COIL_LINE_EXTERN_CALL,
                   .op = "aten.topk.default",
                   .nargs = 1,
                   .args = topk_args,
                   .nouts = 2,
                   .outs = topk_outs,
                   .nxparams = 1,
                   .xparams = &k4});
  line((coil_line){.kind = COIL_LINE_MULTI_OUTPUT, .buffer = buf3, .source = buf2, .element = 1});
  line((coil_line){.kind = COIL_LINE_FREE, .buffer = buf1});
  int buf4 = buffer(COIL_BUF_REUSE, "buf4", COIL_F32, "64, 64", "64, 1", buf1);
  line((coil_line){.kind = COIL_LINE_REUSE, .buffer = buf4});
  line((coil_line){.kind = COIL_LINE_COPY_BACK, .buffer = arg0, .source = buf0});
  line((coil_line){.kind = COIL_LINE_FREE, .buffer = buf4});
  int outs[] = {buf0, buf2, buf3};
  line((coil_line){.kind = COIL_LINE_OUTPUT, .nargs = 3, .args = outs});
  return P;
}

static const char example_text[] =
    "wir 1.4\n"
    "program mlp\n"
    "peak 4096\n"
    "input arg0 'x': f32[s0, 64] stride [64, 1]\n"
    "input arg1 'w1' param: f32[64, 32] stride [32, 1]\n"
    "\n"
    "kernel coil_per_fused__softmax_0 persistent x[s0] r[64] {\n"
    "  source aten._softmax.default aten.add.Tensor\n"
    "  sizes s0\n"
    "  param in0: f32\n"
    "  param out0: f32 out\n"
    "  %0: f32 = load in0[r0 + 64*x0]\n"
    "  %1: f32 = reduce max %0\n"
    "  %2: f32 = sub %0, %1\n"
    "  %3: f32 = exp %2\n"
    "  %4: f32 = reduce sum %3\n"
    "  %5: f32 = div %3, %4\n"
    "  store out0[r0 + 64*x0], %5\n"
    "  %7: i64 = index r0 + 64*x0\n"
    "  %8: f32 = const 0.5\n"
    "  %9: bool = const True\n"
    "  %10: f16 = cast %5\n"
    "  %11: f32 = where %9, %5, %8\n"
    "}\n"
    "\n"
    "symbol s0 = arg0.size(0)\n"
    "assert arg0.size(1) == 64\n"
    "assert arg0.stride(0) == 64\n"
    "assert arg0 aligned 16\n"
    "# aten._softmax.default\n"
    "alloc buf0: f32[s0, 64] stride [64, 1]\n"
    "kernel_call coil_per_fused__softmax_0(arg0, buf0)\n"
    "view v0 = buf0: f32[64, s0] stride [1, 64] offset 0\n"
    "alloc buf1: f32[64, 64] stride [64, 1]\n"
    "extern_call aten.mm.default(v0, buf0) -> (buf1) [beta=1, alpha=1.0, dims=[1, 0], "
    "mode='floor', bias=None, flag=True]\n"
    "alloc buf2: f32[64, 4] stride [4, 1]\n"
    "alloc buf3: i64[64, 4] stride [4, 1]\n"
    "extern_call aten.topk.default(buf1) -> (buf2, buf3) [k=4]\n"
    "multi_output buf3 = buf2.1\n"
    "free buf1\n"
    "reuse buf4 = buf1: f32[64, 64] stride [64, 1]\n"
    "copy_back arg0 = buf0\n"
    "free buf4\n"
    "output buf0, buf2, buf3\n";

TestSuite(wir, .fini = NULL);

Test(wir, builder_program_prints_exactly)
{
  build_example();
  verify_ok(P);
  char *s = round_trip(P);
  cr_assert_str_eq(s, example_text);
  free(s);
  coil_wir_free(P);
}

Test(wir, print_kernel_alone)
{
  build_example();
  coil_strbuf b = {0};
  coil_wir_print_kernel(P, &P->kernels[0], &b);
  const char *start = strstr(example_text, "kernel coil_per");
  const char *end = strstr(start, "}\n") + 2;
  cr_assert_eq(b.len, (size_t)(end - start));
  cr_assert(memcmp(b.s, start, b.len) == 0, "got:\n%s", b.s);
  coil_strbuf_free(&b);
  coil_wir_free(P);
}

Test(wir, parse_builds_the_same_structure)
{
  coil_wir_program *p = parse_ok("example.wir", example_text);
  cr_assert_str_eq(p->name, "mlp");
  cr_assert_eq(p->peak_bytes, 4096);
  cr_assert_eq(p->ninputs, 2);
  cr_assert_str_eq(p->inputs[1].label, "w1");
  cr_assert(p->inputs[1].is_param && !p->inputs[0].is_param);
  /* buffers are numbered in order of definition */
  const char *order[] = {"arg0", "arg1", "buf0", "v0", "buf1", "buf2", "buf3", "buf4"};
  cr_assert_eq(p->nbuffers, 8);
  for (int i = 0; i < 8; i++)
    cr_assert_str_eq(p->buffers[i].name, order[i]);
  cr_assert_eq(p->buffers[3].kind, COIL_BUF_VIEW);
  cr_assert_eq(p->buffers[3].base, 2);
  cr_assert_eq(p->buffers[7].kind, COIL_BUF_REUSE);
  cr_assert_eq(p->buffers[7].base, 4);
  const coil_kernel *k = &p->kernels[0];
  cr_assert_eq(k->kind, COIL_KERNEL_PERSISTENT);
  cr_assert_eq(k->nx, 1);
  cr_assert_eq(k->nr, 1);
  cr_assert_str_eq(coil_sym_var_name(p->sym, k->xvars[0]->var), "x0");
  cr_assert_str_eq(k->source_ops, "aten._softmax.default aten.add.Tensor");
  cr_assert_eq(k->insts[6].op, COIL_KOP_STORE);
  cr_assert_eq(k->insts[6].dtype, COIL_F32, "a store takes its value's dtype");
  cr_assert_eq(k->insts[6].args[0], 5);
  cr_assert_eq(k->insts[9].i, 1);
  cr_assert_eq(k->insts[1].red, COIL_REDUCE_MAX);
  /* r0 has the range of a constant size */
  int64_t lo, hi;
  coil_sym_bounds(p->sym, k->rvars[0], &lo, &hi);
  cr_assert(lo == 0 && hi == 63, "r0 in [%lld, %lld]", (long long)lo, (long long)hi);
  coil_sym_bounds(p->sym, k->xvars[0], &lo, &hi);
  cr_assert(lo == 0 && hi == INT64_MAX);
  const coil_line *x = &p->lines[9];
  cr_assert_eq(x->kind, COIL_LINE_EXTERN_CALL);
  cr_assert_eq(x->nxparams, 6);
  cr_assert_eq(x->xparams[2].kind, COIL_XP_INTS);
  cr_assert_eq(x->xparams[2].ints[0], 1);
  cr_assert_str_eq(x->xparams[3].s, "floor");
  cr_assert_eq(x->xparams[4].kind, COIL_XP_NONE);
  verify_ok(p);
  coil_wir_free(p);
}

/* ---- golden files ---- */

Test(wir, golden_files_round_trip)
{
  int n;
  char **names = list_wir(GOLDEN, &n);
  cr_assert_geq(n, 5, "expected at least 5 golden files in %s", GOLDEN);
  for (int i = 0; i < n; i++) {
    char path[1024];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", GOLDEN, names[i]);
    char *text = read_file(path, &len);
    coil_diag d = {{0}};
    coil_wir_program *p = coil_wir_parse(names[i], text, len, &d);
    cr_assert_not_null(p, "%s", d.msg);
    cr_assert_eq(coil_wir_verify(p, &d), 0, "%s: %s", names[i], d.msg);
    char *s = coil_wir_print(p);
    cr_assert_str_eq(s, text, "%s does not print back byte for byte", names[i]);
    free(s);
    free(round_trip(p));
    coil_wir_free(p);
    free(text);
    free(names[i]);
  }
  free(names);
}

/* Every prefix of every golden file is either a program or an error, never a crash; and so is
 * every file with one byte changed (a deterministic sample). */
Test(wir, truncated_and_mutated_goldens_never_crash)
{
  int n;
  char **names = list_wir(GOLDEN, &n);
  uint64_t seed = 42;
  for (int i = 0; i < n; i++) {
    char path[1024];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", GOLDEN, names[i]);
    char *text = read_file(path, &len);
    for (size_t cut = 0; cut < len; cut++) {
      coil_diag d = {{0}};
      coil_wir_program *p = coil_wir_parse("cut.wir", text, cut, &d);
      cr_assert(p || d.msg[0], "%s cut at %zu: no program and no message", names[i], cut);
      if (p)
        coil_wir_verify(p, &d);
      coil_wir_free(p);
    }
    static const char bytes[] = "%[](),:=.#'\n x0-9\x01";
    for (int m = 0; m < 300; m++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(seed >> 33) % len;
      char keep = text[at];
      text[at] = bytes[(seed >> 13) % (sizeof bytes - 1)];
      coil_diag d = {{0}};
      coil_wir_program *p = coil_wir_parse("mutated.wir", text, len, &d);
      cr_assert(p || d.msg[0]);
      if (p && coil_wir_verify(p, &d) == 0)
        free(round_trip(p));
      coil_wir_free(p);
      text[at] = keep;
    }
    free(text);
    free(names[i]);
  }
  free(names);
}

/* ---- the malformed corpus ---- */

Test(wir, bad_corpus_is_rejected_with_its_message)
{
  int n;
  char **names = list_wir(BAD, &n);
  cr_assert_geq(n, 25, "expected at least 25 files in %s", BAD);
  for (int i = 0; i < n; i++) {
    char path[1024];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", BAD, names[i]);
    char *text = read_file(path, &len);
    cr_assert(strncmp(text, "# expect: ", 10) == 0, "%s: first line is not '# expect: '", names[i]);
    char want[512];
    size_t wn = strcspn(text + 10, "\n");
    cr_assert_lt(wn, sizeof want);
    memcpy(want, text + 10, wn);
    want[wn] = 0;
    coil_diag d = {{0}};
    coil_wir_program *p = coil_wir_parse(names[i], text, len, &d);
    if (p) {
      cr_assert_neq(coil_wir_verify(p, &d), 0, "%s: parsed and verified, expected '%s'", names[i],
                    want);
      coil_wir_free(p);
    }
    cr_assert(strstr(d.msg, want), "%s: expected '%s' in: %s", names[i], want, d.msg);
    free(text);
    free(names[i]);
  }
  free(names);
}

/* ---- the reader's corners ---- */

static const char tiny[] = "wir 1.0\n"
                           "program t\n"
                           "input arg0 'x': f32[4] stride [1]\n"
                           "\n"
                           "kernel k0 pointwise x[4] {\n"
                           "  param in0: f32\n"
                           "  param out0: f32 out\n"
                           "  %0: f32 = load in0[x0]\n"
                           "  store out0[x0], %0\n"
                           "}\n"
                           "\n"
                           "alloc buf0: f32[4] stride [1]\n"
                           "kernel_call k0(arg0, buf0)\n"
                           "output buf0\n";

Test(wir, versions)
{
  /* any minor version of major 1 reads; the program keeps the version it was written in */
  char text[sizeof tiny + 64];
  snprintf(text, sizeof text, "wir 1.7%s", tiny + strlen("wir 1.0"));
  coil_wir_program *p = parse_ok("t.wir", text);
  cr_assert_eq(p->version_major, 1);
  cr_assert_eq(p->version_minor, 7);
  char *s = coil_wir_print(p);
  cr_assert_str_eq(s, text);
  free(s);
  coil_wir_free(p);
  /* a later minor version may add lines; this reader skips the ones it does not know */
  char newer[sizeof tiny + 64];
  snprintf(newer, sizeof newer, "wir 1.%d%s", COIL_WIR_VERSION_MINOR + 1, tiny + strlen("wir 1.0"));
  char *at = strstr(newer, "output");
  memmove(at + 21, at, strlen(at) + 1);
  memcpy(at, "prefetch buf0 [hint]\n", 21);
  p = parse_ok("t.wir", newer);
  cr_assert_eq(p->nlines, 3);
  verify_ok(p);
  coil_wir_free(p);
  newer[6] = '0';
  parse_fails(newer, "t.wir:14:1: error: unknown line 'prefetch'");
  snprintf(text, sizeof text, "wir 0.9%s", tiny + strlen("wir 1.0"));
  parse_fails(text, "t.wir:1:5: error: unsupported Wrapper IR version 0.9, expected version 1.x");
  parse_fails("wir x\n", "t.wir:1:5: error: expected a version MAJOR.MINOR");
  parse_fails("wir 1.\n", "t.wir:1:5: error: expected a version MAJOR.MINOR");
}

Test(wir, comments_blank_lines_crlf_and_spacing_before_canonical_form)
{
  const char *text = "# a file comment, not part of the program\n"
                     "\n"
                     "wir 1.0\r\n"
                     "program  t\r\n"
                     "input arg0 'x' :f32[ 4 ]stride[1]\r\n"
                     "kernel k0 pointwise x[4]{\r\n"
                     "\tparam in0 : f32\r\n"
                     "\n\n"
                     "   param out0: f32   out\r\n"
                     "  %0 : f32 = load in0[ x0 ]\r\n"
                     "  store out0[x0] , %0\r\n"
                     "}\r\n"
                     "#\r\n"
                     "#  two spaces\r\n"
                     "alloc buf0: f32[4] stride [1]\r\n"
                     "kernel_call k0( arg0,buf0 )\r\n"
                     "output buf0";
  char want[sizeof tiny + 64];
  snprintf(want, sizeof want, "%.*s#\n#  two spaces\n%s", (int)(strstr(tiny, "alloc") - tiny), tiny,
           strstr(tiny, "alloc"));
  expect_print(text, want);
}

Test(wir, quoted_text_escapes)
{
  coil_wir_program *p = parse_ok("t.wir", tiny);
  p->inputs[0].label = "a'b\\c\nd\te\x01\x7f\xc3\xbc";
  char *s = round_trip(p);
  cr_assert(strstr(s, "input arg0 'a\\'b\\\\c\\nd\\te\\x01\\x7f\xc3\xbc': f32[4]"), "%s", s);
  coil_wir_program *q = parse_ok("t.wir", s);
  cr_assert_str_eq(q->inputs[0].label, "a'b\\c\nd\te\x01\x7f\xc3\xbc");
  free(s);
  coil_wir_free(q);
  coil_wir_free(p);
  parse_fails("wir 1.0\nprogram t\ninput arg0 \"x\": f32[] stride []\n",
              "t.wir:3:12: error: unexpected character '\"'");
  parse_fails("wir 1.0\nprogram t\ninput arg0 'a\\x4': f32[] stride []\n",
              "t.wir:3:12: error: unknown escape");
}

Test(wir, constants_and_extern_params_keep_their_values)
{
  const char *text =
      "wir 1.0\n"
      "program t\n"
      "input arg0 'x': f32[4] stride [1]\n"
      "\n"
      "kernel k0 pointwise x[4] {\n"
      "  param in0: f32\n"
      "  param out0: f32 out\n"
      "  %0: f32 = const 0.1\n"
      "  %1: f32 = const -0.0\n"
      "  %2: f64 = const 1e-05\n"
      "  %3: f64 = const 1e+300\n"
      "  %4: f64 = const 5e-324\n"
      "  %5: f32 = const inf\n"
      "  %6: f32 = const -inf\n"
      "  %7: f32 = const nan\n"
      "  %8: i64 = const -9223372036854775808\n"
      "  %9: i64 = const 9223372036854775807\n"
      "  %10: u8 = const 255\n"
      "  %11: i8 = const -128\n"
      "  %12: bf16 = const 1500.0\n"
      "  %13: f32 = load in0[x0]\n"
      "  store out0[x0], %13\n"
      "}\n"
      "\n"
      "alloc buf0: f32[4] stride [1]\n"
      "kernel_call k0(arg0, buf0)\n"
      "alloc buf1: f32[4] stride [1]\n"
      "extern_call aten.foo.default(arg0, buf0) -> (buf1) [a=-3, b=-2.5, c=inf, d=-inf, e=nan, "
      "f=[], g=[-1, 9223372036854775807], h='it\\'s\\n', i=False, j=None, k=1e+20]\n"
      "extern_call aten.bar.default() -> ()\n"
      "output buf1\n";
  coil_wir_program *p = parse_ok("t.wir", text);
  verify_ok(p);
  const coil_kinst *in = p->kernels[0].insts;
  cr_assert_eq(in[0].f, 0.1);
  cr_assert(in[1].f == 0 && signbit(in[1].f));
  cr_assert_eq(in[4].f, 5e-324);
  cr_assert(isinf(in[6].f) && in[6].f < 0);
  cr_assert(isnan(in[7].f));
  cr_assert_eq(in[8].i, INT64_MIN);
  const coil_line *x = &p->lines[3];
  cr_assert_eq(x->xparams[0].i, -3);
  cr_assert_eq(x->xparams[1].kind, COIL_XP_FLOAT);
  cr_assert_eq(x->xparams[5].n, 0);
  cr_assert_eq(x->xparams[6].ints[1], INT64_MAX);
  cr_assert_str_eq(x->xparams[7].s, "it's\n");
  cr_assert_eq(x->xparams[10].f, 1e20);
  cr_assert_eq(p->lines[4].nargs, 0);
  cr_assert_eq(p->lines[4].nouts, 0);
  coil_wir_free(p);
  expect_print(text, NULL);
}

Test(wir, expression_errors_point_at_their_column)
{
  parse_fails(
      "wir 1.0\nprogram t\ninput arg0 'x': f32[4, s0 +] stride [1, 1]\n",
      "t.wir:3:28: error: bad sizes 's0 +': expected an expression, got the end of the text");
  parse_fails("wir 1.0\nprogram t\ninput arg0 'x': f32[4, (s0] stride [1, 1]\n",
              "t.wir:3:27: error: bad sizes '(s0': expected ')'");
  parse_fails("wir 1.0\nprogram t\ninput arg0 'x': f32[4] stride [1]\nview v0 = arg0: f32[2] "
              "stride [1] offset\n",
              "t.wir:4:41: error: missing offset, expected an expression");
  parse_fails("wir 1.0\nprogram t\ninput arg0 'x': f32[4] stride [1]\nassert arg0.size(0) == 4 4\n",
              "t.wir:4:26: error: bad expected value '4 4': expected an operator or the end");
  parse_fails("wir 1.0\nprogram t\ninput arg0 'x': f32[4] stride [1]\nassert arg0.size(0) == "
              "99999999999999999999\n",
              "t.wir:4:24: error: bad expected value");
}

Test(wir, no_diag_no_file_empty_text)
{
  cr_assert_null(coil_wir_parse(NULL, "garbage", 7, NULL));
  cr_assert_null(coil_wir_parse("f.wir", NULL, 0, NULL));
  coil_diag d = {{0}};
  cr_assert_null(coil_wir_parse(NULL, "", 0, &d));
  cr_assert(strstr(d.msg, "<wir>:1:1: error: expected 'wir 1.0'"), "%s", d.msg);
  coil_wir_program *p = parse_ok("t.wir", tiny);
  cr_assert_eq(coil_wir_verify(p, NULL), 0);
  p->nlines--; /* no output line */
  cr_assert_neq(coil_wir_verify(p, NULL), 0);
  coil_wir_free(p);
}

/* A program broken beyond verifying still prints, with '?' where names are missing. */
Test(wir, printer_survives_broken_programs)
{
  coil_wir_program *p = parse_ok("t.wir", tiny);
  p->lines[1].kernel = 9;
  p->lines[1].args[0] = -4;
  p->lines[0].buffer = 99;
  p->kernels[0].insts[0].param = 7;
  p->kernels[0].kind = (coil_kernel_kind)11;
  p->kernels[0].insts[1].index = NULL;
  char *s = coil_wir_print(p);
  cr_assert(strstr(s, "kernel_call ?(?, buf0)"), "%s", s);
  cr_assert(strstr(s, "alloc ?: ?[] stride []"), "%s", s);
  cr_assert(strstr(s, "load ?[x0]"), "%s", s);
  cr_assert(strstr(s, "store out0[?], %0"), "%s", s);
  cr_assert(strstr(s, "kernel k0 ? x[4] r[] {"), "%s", s);
  free(s);
  coil_wir_free(p);
}

/* ---- the verifier: one broken invariant at a time ---- */

/* The example, built with the builder and valid; each test breaks one thing. */
static void
setup_example(void)
{
  build_example();
}

static void
teardown_example(void)
{
  coil_wir_free(P);
}

TestSuite(verify, .init = setup_example, .fini = teardown_example);

static coil_kinst *
inst(int n)
{
  return &P->kernels[0].insts[n];
}

Test(verify, example_is_valid)
{
  verify_ok(P);
}

Test(verify, kernel_call_argument_dtype)
{
  P->buffers[buf_index("buf0")].dtype = COIL_F16;
  verify_fails(P, "line 7 (kernel_call coil_per_fused__softmax_0): argument 2 is f16, the "
                  "kernel's param out0 is f32");
}

Test(verify, kernel_call_argument_count)
{
  find_line(COIL_LINE_KERNEL_CALL, 0)->nargs = 1;
  verify_fails(P, "line 7 (kernel_call coil_per_fused__softmax_0): 1 arguments, the kernel has 2 "
                  "params");
}

Test(verify, kernel_output_is_a_graph_input)
{
  find_line(COIL_LINE_KERNEL_CALL, 0)->args[1] = buf_index("arg1");
  verify_fails(P, "argument 2 (arg1) is the kernel's output out0 but is an input of the graph");
}

Test(verify, use_before_definition)
{
  find_line(COIL_LINE_KERNEL_CALL, 0)->args[1] = buf_index("buf1");
  verify_fails(P, "line 7 (kernel_call coil_per_fused__softmax_0): argument 2 buf1 is used before "
                  "it is defined");
}

Test(verify, use_after_free)
{
  find_line(COIL_LINE_OUTPUT, 0)->args[1] = buf_index("buf1");
  verify_fails(P, "line 19 (output): output 2 buf1 is used after its free on line 15");
}

Test(verify, output_view_dense_or_not)
{
  find_line(COIL_LINE_OUTPUT, 0)->args[0] = buf_index("v0"); /* buf0 seen as [64, s0], [1, 64] */
  verify_fails(P, "line 19 (output): output 1 v0 is not dense in row-major order (stride 1), as "
                  "outputs must be");
  coil_buffer *v = &P->buffers[buf_index("v0")];
  v->strides[0] = E("s0");
  v->strides[1] = E("1");
  verify_ok(P); /* a reshape of buf0: a view may be an output (since 1.2) */
}

Test(verify, view_of_a_freed_buffer)
{
  P->buffers[buf_index("v0")].base = buf_index("buf1");
  verify_fails(P, "line 8 (view v0): the viewed buffer buf1 is used before it is defined");
}

Test(verify, free_twice)
{
  find_line(COIL_LINE_FREE, 1)->buffer = buf_index("buf1");
  verify_fails(P, "line 18 (free buf1): buf1 is freed twice (first on line 15)");
}

Test(verify, free_of_an_input_or_a_view)
{
  find_line(COIL_LINE_FREE, 0)->buffer = buf_index("arg1");
  verify_fails(P, "line 15 (free arg1): arg1 is an input, which is never freed");
}

Test(verify, free_of_a_view)
{
  find_line(COIL_LINE_FREE, 0)->buffer = buf_index("v0");
  verify_fails(P, "line 15 (free v0): v0 is a view, which has no storage to free");
}

Test(verify, reuse_of_a_live_buffer)
{
  P->buffers[buf_index("buf4")].base = buf_index("buf0");
  verify_fails(P, "line 16 (reuse buf4): reuses buf0, which is not a freed buffer");
}

Test(verify, reuse_with_another_dtype_or_size)
{
  int b4 = buf_index("buf4");
  P->buffers[b4].sizes[0] = coil_sym_const(P->sym, 32);
  verify_fails(P, "line 16 (reuse buf4): buf4 spans 2048 elements, the storage of buf1 4096");
  P->buffers[b4].sizes[0] = coil_sym_const(P->sym, 64);
  P->buffers[b4].strides[0] = coil_sym_const(P->sym, 1);
  P->buffers[b4].strides[1] = coil_sym_const(P->sym, 64);
  verify_ok(P); /* a transposed layout spans the same storage */
  P->buffers[b4].dtype = COIL_I32;
  verify_fails(P, "line 16 (reuse buf4): buf4 is i32, the storage of buf1 holds f32");
}

Test(verify, symbols_defined_before_use)
{
  find_line(COIL_LINE_SYMBOL, 0)->kind = COIL_LINE_COMMENT;
  find_line(COIL_LINE_COMMENT, 0)->text = "no symbol";
  verify_fails(P, "input arg0: size symbol s0 is not defined by a symbol line");
}

Test(verify, kernel_symbols_defined_before_the_call)
{
  /* move the symbol line below the call: alloc buf0 needs s0 first */
  coil_line sym = P->lines[0];
  memmove(&P->lines[0], &P->lines[1], sizeof(coil_line) * 6);
  P->lines[6] = sym;
  verify_fails(P, "line 5 (alloc buf0): size symbol s0 is not defined by a symbol line above");
}

Test(verify, symbol_must_match_its_input)
{
  find_line(COIL_LINE_SYMBOL, 0)->dim = 1;
  verify_fails(P, "line 1 (symbol s0): arg0.size(1) is 64, not s0");
  find_line(COIL_LINE_SYMBOL, 0)->dim = 2;
  coil_diag d = {{0}};
  cr_assert_neq(coil_wir_verify(P, &d), 0);
  cr_assert(strstr(d.msg, "dimension 2 of arg0, which has rank 2"), "%s", d.msg);
}

Test(verify, alignment_is_a_power_of_two)
{
  find_line(COIL_LINE_ASSERT, 2)->align = 24;
  verify_fails(P, "line 4 (assert arg0): alignment 24 is not a power of two");
}

Test(verify, binary_operand_dtypes)
{
  *inst(11) = (coil_kinst){.op = COIL_KOP_ADD, .dtype = COIL_F32, .args = {5, 7}};
  verify_fails(P, "kernel coil_per_fused__softmax_0, %11: add operands have dtypes f32 and i64");
}

Test(verify, compare_gives_bool)
{
  *inst(11) = (coil_kinst){.op = COIL_KOP_LT, .dtype = COIL_F32, .args = {5, 8}};
  verify_fails(P, "kernel coil_per_fused__softmax_0, %11: lt of f32 gives f32, expected bool");
}

Test(verify, combining_store_mode_fits_the_dtype)
{
  inst(6)->mode = COIL_STORE_MAX; /* store out0[...], %5, max: valid for f32 */
  coil_diag d = {0};
  cr_assert_eq(coil_wir_verify(P, &d), 0, "%s", d.msg);
  P->kernels[0].params[1].dtype = COIL_BOOL;
  inst(6)->dtype = COIL_BOOL;
  inst(5)->dtype = COIL_BOOL;
  *inst(5) = (coil_kinst){.op = COIL_KOP_CONST, .dtype = COIL_BOOL, .i = 1, .args = {-1, -1, -1}, .param = -1};
  verify_fails(P, "kernel coil_per_fused__softmax_0, %6: store mode max is not valid for bool (combining "
                  "stores take numbers, not bool)");
  inst(6)->mode = (coil_store_mode)99;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %6: store mode ? is not valid for bool");
}

Test(verify, scan_rules)
{
  /* %3 = exp %2 becomes a scan sum of %2: valid, and then %4 (reduce sum %3) reduces a scan */
  *inst(3) = (coil_kinst){.op = COIL_KOP_SCAN, .dtype = COIL_F32, .args = {2, -1, -1}, .param = -1, .red = COIL_REDUCE_SUM};
  verify_fails(P, "kernel coil_per_fused__softmax_0, %4: reduce of a value computed from a scan");
  inst(4)->args[0] = 2;
  verify_ok(P);
  inst(3)->red = COIL_REDUCE_ARGMAX;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %3: scan 4 is not a scan (sum prod max min)");
  inst(3)->red = COIL_REDUCE_MAX;
  inst(3)->dtype = COIL_F64;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %3: scan max of f32 gives f64, expected f32");
  inst(3)->dtype = COIL_F32;
  P->kernels[0].nr = 0;
  P->kernels[0].kind = COIL_KERNEL_POINTWISE;
  coil_diag d = {{0}};
  cr_assert_neq(coil_wir_verify(P, &d), 0);
}

Test(verify, scan_takes_no_half_floats)
{
  *inst(3) = (coil_kinst){.op = COIL_KOP_CAST, .dtype = COIL_F16, .args = {2, -1, -1}, .param = -1};
  *inst(5) = (coil_kinst){.op = COIL_KOP_SCAN, .dtype = COIL_F16, .args = {3, -1, -1}, .param = -1, .red = COIL_REDUCE_SUM};
  inst(4)->args[0] = 2;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %5: scan sum of f16, expected f32, f64 or an integer operand");
}

Test(verify, where_condition_is_bool)
{
  inst(9)->dtype = COIL_F32;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %11: where's condition is f32, expected bool");
}

Test(verify, operands_defined_above)
{
  inst(2)->args[1] = 5;
  verify_fails(P, "kernel coil_per_fused__softmax_0, %2: sub operand 2 is %5, expected a value "
                  "defined above");
  inst(2)->args[1] = 1;
  inst(10)->args[0] = 6;
  verify_fails(P, "%10: cast operand 1 is the store %6, which has no value");
}

Test(verify, reduce_of_a_value_constant_along_r_verifies)
{
  inst(4)->args[0] = 1; /* reduced as the value repeated over r */
  coil_diag d = {0};
  cr_assert_eq(coil_wir_verify(P, &d), 0, "%s", d.msg);
}

Test(verify, reduce_result_dtype)
{
  inst(4)->red = COIL_REDUCE_ARGMAX;
  verify_fails(P, "%4: reduce argmax of f32 gives f32, expected i64");
}

Test(verify, welford_needs_a_float_operand)
{
  *inst(3) = (coil_kinst){.op = COIL_KOP_CAST, .dtype = COIL_I64, .args = {2, -1, -1}, .param = -1};
  inst(4)->red = COIL_REDUCE_WELFORD_M2;
  inst(4)->dtype = COIL_I64;
  verify_fails(P, "%4: reduce welford_m2 of i64: expected a float operand");
}

Test(verify, store_only_to_outputs)
{
  inst(6)->param = 0;
  verify_fails(P,
               "kernel coil_per_fused__softmax_0, %6: store to in0, which is not an output param");
}

Test(verify, store_of_a_row_to_one_place)
{
  inst(6)->index = coil_sym_var(P->sym, "x0");
  verify_fails(P, "%6: store of a value that varies along r to an index without r");
}

Test(verify, indices_use_only_the_kernels_variables)
{
  inst(0)->index = E("x0 + s1");
  verify_fails(P, "kernel coil_per_fused__softmax_0, %0: index uses s1, which is neither a loop "
                  "variable nor a size symbol of the kernel");
}

Test(verify, loop_variables_are_named_by_position)
{
  P->kernels[0].xvars[0] = coil_sym_var(P->sym, "i0");
  verify_fails(P, "kernel coil_per_fused__softmax_0: loop variable 0 is not the variable x0");
}

Test(verify, kernel_kind_matches_its_ranges)
{
  P->kernels[0].kind = COIL_KERNEL_POINTWISE;
  verify_fails(P, "kernel coil_per_fused__softmax_0: a pointwise kernel with r ranges");
}

Test(verify, load_dtype_is_the_params)
{
  P->kernels[0].params[0].dtype = COIL_BF16;
  verify_fails(P, "%0: load of f32 with param in0 of dtype bf16");
}

Test(verify, multi_output_follows_its_extern_call)
{
  coil_line *m = find_line(COIL_LINE_MULTI_OUTPUT, 0);
  m->element = 2;
  verify_fails(P, "line 14 (multi_output buf3): element 2, expected 1 to 1 (the extern_call on "
                  "line 13 has 2 outputs)");
  m->element = 1;
  m->source = buf_index("buf1");
  verify_fails(P, "line 14 (multi_output buf3): names buf1, which is not the first output of the "
                  "extern_call on line 13");
}

Test(verify, extern_outputs_are_allocated)
{
  find_line(COIL_LINE_EXTERN_CALL, 0)->outs[0] = buf_index("v0");
  verify_fails(P, "line 10 (extern_call aten.mm.default): output 1 (v0) is a view, expected an "
                  "allocated buffer");
}

Test(verify, copy_back_shapes)
{
  find_line(COIL_LINE_COPY_BACK, 0)->source = buf_index("buf2");
  verify_fails(P, "line 17 (copy_back arg0): buf2 and arg0 differ in dtype or sizes");
  find_line(COIL_LINE_COPY_BACK, 0)->source = buf_index("buf0");
  find_line(COIL_LINE_COPY_BACK, 0)->buffer = buf_index("buf2");
  verify_fails(P, "line 17 (copy_back buf2): buf2 is not an input");
}

Test(verify, output_is_the_last_line)
{
  coil_line out = P->lines[P->nlines - 1];
  P->lines[P->nlines - 1] = P->lines[P->nlines - 2];
  P->lines[P->nlines - 2] = out;
  verify_fails(P, "line 19 (free buf4): after the output line, which is the last");
}

Test(verify, names)
{
  P->buffers[buf_index("buf2")].name = "v9";
  verify_fails(P, "buffer 5: name 'v9', expected bufN for alloc buffers");
  P->buffers[buf_index("v9")].name = "buf3";
  verify_fails(P, "two buffers are named buf3");
}

/* Invariants easiest to break in text: the text parses, the verifier says no. */
static void
text_fails(const char *body, const char *lines, const char *want)
{
  char text[2048];
  snprintf(text, sizeof text,
           "wir 1.0\nprogram t\ninput arg0 'x': f32[s0] stride [1]\n\n"
           "kernel k0 pointwise x[s0] {\n  sizes s0\n  param in0: f32\n  param out0: f32 out\n"
           "%s}\n\nsymbol s0 = arg0.size(0)\nalloc buf0: f32[s0] stride [1]\n%s",
           body, lines);
  coil_wir_program *p = parse_ok("t.wir", text);
  verify_fails(p, want);
  coil_wir_free(p);
}

Test(verify, rules_in_text)
{
  const char *call = "kernel_call k0(arg0, buf0)\noutput buf0\n";
  const char *load = "  %0: f32 = load in0[x0]\n";
  text_fails("  %0: f32 = load in0[x0]\n  %1: f32 = reduce sum %0\n  store out0[x0], %1\n", call,
             "kernel k0, %1: reduce in a kernel without r ranges");
  text_fails("  %0: i8 = const 300\n  %1: f32 = load in0[x0]\n  store out0[x0], %1\n", call,
             "kernel k0, %0: const 300 does not fit in i8");
  text_fails("  %0: i32 = const 3\n  %1: i32 = div %0, %0\n  %2: f32 = load in0[x0]\n"
             "  store out0[x0], %2\n",
             call, "kernel k0, %1: div of i32, expected floating operands");
  text_fails("  %0: i64 = load in0[x0]\n  store out0[x0], %0\n", call,
             "kernel k0, %0: load of i64 with param in0 of dtype f32");
  text_fails("  %0: f32 = load in0[x0]\n", call, "kernel k0: output param out0 is never stored");
  text_fails("  %0: i32 = index x0\n  %1: f32 = load in0[x0]\n  store out0[x0], %1\n", call,
             "kernel k0, %0: index is i32, expected i64");
  text_fails("  %0: i32 = const 1\n  %1: i32 = exp %0\n  %2: f32 = load in0[x0]\n"
             "  store out0[x0], %2\n",
             call, "kernel k0, %1: exp of i32, expected a floating operand");
  char body[256];
  snprintf(body, sizeof body, "%s  store out0[x0], %%0\n", load);
  text_fails(body, "symbol s0 = arg0.size(0)\nkernel_call k0(arg0, buf0)\noutput buf0\n",
             "line 3 (symbol s0): s0 is defined twice (first on line 1)");
  text_fails(body, "kernel_call k0(arg0, buf0)\n", "the program has no output line");
  text_fails(body, "kernel_call k0(arg0, buf0)\noutput buf0\noutput buf0\n",
             "line 5 (output): after the output line, which is the last");
  text_fails(body, "kernel_call k0(arg0, buf0)\nsymbol x3 = arg0.stride(0)\noutput buf0\n",
             "line 4 (symbol x3): 'x3' is not a size symbol name");
  text_fails(body, "alloc buf1: f32[s0] stride [1]\nmulti_output buf1 = buf0.1\noutput buf0\n",
             "line 4 (multi_output buf1): does not follow an extern_call");
  text_fails(body, "kernel_call k0(arg0, buf0)\nassert arg0.size(0) == s2\noutput buf0\n",
             "line 4 (assert arg0): size symbol s2 is not defined by a symbol line above");
  text_fails(body, "view v0 = arg0: f16[s0] stride [1] offset 0\noutput buf0\n",
             "line 3 (view v0): v0 is f16, the buffer it views (arg0) is f32");
  text_fails(body, "view v0 = buf0: f32[2] stride [1] offset s0 - 2\nfree buf0\noutput v0\n",
             "line 5 (output): output 1 v0 views buf0, which is freed on line 4");
}

/* What the printer writes must read back: names, op names and comment text too. */
Test(verify, text_that_would_not_read_back)
{
  P->kernels[0].source_ops = "aten.add.Tensor, aten..relu";
  verify_fails(P, "kernel coil_per_fused__softmax_0: source op 'aten..relu' is not a dotted name");
  P->kernels[0].source_ops = NULL;
  find_line(COIL_LINE_EXTERN_CALL, 0)->op = "aten.mm(x)";
  verify_fails(P, "line 10 (extern_call aten.mm(x)): op name 'aten.mm(x)' is not a dotted name");
  find_line(COIL_LINE_EXTERN_CALL, 0)->op = "aten.mm.default";
  find_line(COIL_LINE_COMMENT, 0)->text = "two\nlines";
  verify_fails(P, "line 5 (comment): control byte 0x0a in the text");
  find_line(COIL_LINE_COMMENT, 0)->text = "";
  P->kernels[0].params[1].name = "out 0";
  verify_fails(P, "kernel coil_per_fused__softmax_0: param 2's name is not an identifier");
}

/* Indirect indexing (1.2): iN is usable only after %N = indirect; its operand is an integer. */
Test(wir, indirect_variables_are_checked)
{
  static const char *const cases[][2] = {
      {"  %0: i64 = load in0[x0]\n  %1: f32 = load in1[i2]\n  %2: i64 = indirect %0, 10\n",
       "index uses i2, which is neither a loop variable nor a size symbol of the kernel nor an indirect value defined above"},
      {"  %0: f32 = load in1[x0]\n  %1: i64 = indirect %0, 10\n  %2: f32 = load in1[i1]\n",
       "indirect of f32, expected an integer operand"},
      {"  %0: i64 = load in0[x0]\n  %1: i64 = indirect %0, x0\n  %2: f32 = load in1[i1]\n",
       "the bound uses x0, which is not a size symbol of the kernel"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char text[1024];
    snprintf(text, sizeof text,
             "wir 1.2\nprogram t\ninput arg0 'ix': i64[3] stride [1]\ninput arg1 'w': f32[10] stride [1]\n\n"
             "kernel k pointwise x[3] {\n  param in0: i64\n  param in1: f32\n  param out0: f32 out\n%s"
             "  store out0[x0], %%2\n}\n\nalloc buf0: f32[3] stride [1]\nkernel_call k(arg0, arg1, buf0)\noutput buf0\n",
             cases[c][0]);
    coil_diag d = {{0}};
    coil_wir_program *p = coil_wir_parse("t.wir", text, strlen(text), &d);
    cr_assert_not_null(p, "case %zu: %s", c, d.msg);
    cr_expect_neq(coil_wir_verify(p, &d), 0, "case %zu verifies", c);
    cr_expect(strstr(d.msg, cases[c][1]) != NULL, "case %zu: %s", c, d.msg);
    coil_wir_free(p);
  }
}

/* coil.attention, the library op coil defines (docs/wrapper-ir.md): its operands and parameters
 * are checked, so a plugin may take them as given. */
static const char attention_prog[] =
    "wir 1.4\nprogram t\n"
    "input arg0 'q': f16[2, 4, 8] stride [32, 8, 1]\n"
    "input arg1 'k': f16[2, 5, 8] stride [40, 8, 1]\n"
    "input arg2 'v': f16[2, 5, 3] stride [15, 3, 1]\n"
    "input arg3 'm': %s[1, 4, 5] stride [20, 5, 1]\n\n"
    "alloc buf0: f16[2, 4, 3] stride [12, 3, 1]\n"
    "extern_call %s(%s) -> (buf0) [%s]\n"
    "output buf0\n";

static void
attention_case(const char *mask_dtype, const char *op, const char *args, const char *params, const char *want)
{
  char text[1024];
  snprintf(text, sizeof text, attention_prog, mask_dtype, op, args, params);
  coil_wir_program *p = parse_ok("t.wir", text);
  if (want) {
    verify_fails(p, want);
  } else {
    verify_ok(p);
    char *s = round_trip(p);
    cr_expect(strstr(s, "[scale=0.125, masked_rows='zero']") || strstr(s, "masked_rows='nan'"), "%s", s);
    free(s);
  }
  coil_wir_free(p);
}

Test(verify, coil_attention)
{
  static const char ok[] = "scale=0.125, masked_rows='zero'";
  attention_case("f16", "coil.attention", "arg0, arg1, arg2", ok, NULL);
  attention_case("f16", "coil.attention", "arg0, arg1, arg2, arg3", "scale=1.0, masked_rows='nan'", NULL);
  attention_case("f16", "coil.attention", "arg0, arg1", ok, "takes q, k, v and an optional mask to one output, not 2 to 1");
  attention_case("f32", "coil.attention", "arg0, arg1, arg2, arg3", ok, "the mask is f32 of rank 3, the output f16 of rank 3");
  attention_case("f16", "coil.attention", "arg0, arg1, arg2", "scale=0.125", "parameter masked_rows is missing");
  attention_case("f16", "coil.attention", "arg0, arg1, arg2", "scale=0.125, masked_rows='keep'", "unexpected parameter masked_rows");
  attention_case("f16", "coil.attention", "arg0, arg1, arg2", "scale=1, masked_rows='zero'", "unexpected parameter scale");
  attention_case("f16", "coil.flash", "arg0, arg1, arg2", ok, "unknown op coil.flash: coil defines only coil.attention");
}
