/* libFuzzer harness: the .coil graph parser and type checker (coil_graph_parse). Every input
 * either parses or fails with a message naming the file; a graph that parses prints as text
 * that parses back and prints the same (the print/parse round trip test_fuzz.c checks on
 * fixed-seed mutants). */
#include "coil/coil.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  coil_diag d = {0};
  coil_graph *g = coil_graph_parse("fuzz.coil", (const char *)data, size, &d);
  if (!g) {
    FUZZ_REQUIRE(fuzz_names_file(d.msg, "fuzz.coil"), "message without the file name: %s", d.msg);
    return 0;
  }
  char *text = coil_graph_print(g);
  coil_diag d2 = {0};
  coil_graph *g2 = coil_graph_parse("printed.coil", text, strlen(text), &d2);
  FUZZ_REQUIRE(g2, "printed graph does not parse back: %s\n%s", d2.msg, text);
  char *text2 = coil_graph_print(g2);
  FUZZ_REQUIRE(strcmp(text, text2) == 0, "print is not stable:\n%s\n---\n%s", text, text2);
  free(text);
  free(text2);
  coil_graph_free(g2);
  coil_graph_free(g);
  return 0;
}
