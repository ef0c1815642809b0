/* libFuzzer harness: graph -> compile, the path a .coil file takes through `coil compile` up to
 * the Wrapper IR text, with no plugin and no C compiler: parse and type-check, lower, fuse and
 * schedule, emit and verify (coil_compile_graph with the verifier on), fused and unfused. A
 * program that compiles prints as Wrapper IR that parses back, verifies and prints the same.
 *
 * Inputs larger than FUZZ_MAX_BYTES or with more than FUZZ_MAX_STATEMENTS statements are
 * skipped here (only here: coil itself compiles any size), so that the fuzzer spends its time
 * on many small graphs rather than on a few large ones. */
#include "coil/coil.h"
#include "coil/wir.h"
#include "fuzz.h"
#include "graph.h"

#define FUZZ_MAX_BYTES 8192
#define FUZZ_MAX_STATEMENTS 48

static void
compile(const coil_graph *g, bool fuse)
{
  coil_compile_options o = {.fuse = fuse, .verify = true};
  coil_diag d = {0};
  coil_wir_program *p = coil_compile_graph(g, &o, &d);
  if (!p) {
    FUZZ_REQUIRE(d.msg[0], "compile failed without a message");
    return;
  }
  char *text = coil_wir_print(p);
  coil_diag d2 = {0};
  coil_wir_program *p2 = coil_wir_parse("compiled.wir", text, strlen(text), &d2);
  FUZZ_REQUIRE(p2, "the compiled program does not parse back: %s\n%s", d2.msg, text);
  FUZZ_REQUIRE(coil_wir_verify(p2, &d2) == 0, "the printed program does not verify: %s\n%s",
               d2.msg, text);
  char *text2 = coil_wir_print(p2);
  FUZZ_REQUIRE(strcmp(text, text2) == 0, "print is not stable:\n%s\n---\n%s", text, text2);
  free(text);
  free(text2);
  coil_wir_free(p2);
  coil_wir_free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > FUZZ_MAX_BYTES)
    return -1; /* not added to the corpus */
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("fuzz.coil", (const char *)data, size, &d);
  if (!g)
    return 0;
  if (g->nnodes <= FUZZ_MAX_STATEMENTS) {
    compile(g, true);
    compile(g, false);
  }
  coil_graph_free(g);
  return 0;
}
