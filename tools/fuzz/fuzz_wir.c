/* libFuzzer harness: the Wrapper IR parser and verifier (coil_wir_parse, coil_wir_verify). A
 * parse error names the file; a program that parses and verifies prints as text that parses
 * back, verifies again and prints the same. */
#include "coil/wir.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse("fuzz.wir", (const char *)data, size, &d);
  if (!p) {
    FUZZ_REQUIRE(fuzz_names_file(d.msg, "fuzz.wir"), "message without the file name: %s", d.msg);
    return 0;
  }
  if (coil_wir_verify(p, &d) != 0) {
    FUZZ_REQUIRE(d.msg[0], "the verifier refused the program without a message");
    coil_wir_free(p);
    return 0;
  }
  char *text = coil_wir_print(p);
  coil_diag d2 = {0};
  coil_wir_program *p2 = coil_wir_parse("printed.wir", text, strlen(text), &d2);
  FUZZ_REQUIRE(p2, "printed program does not parse back: %s\n%s", d2.msg, text);
  FUZZ_REQUIRE(coil_wir_verify(p2, &d2) == 0, "printed program does not verify: %s\n%s", d2.msg,
               text);
  char *text2 = coil_wir_print(p2);
  FUZZ_REQUIRE(strcmp(text, text2) == 0, "print is not stable:\n%s\n---\n%s", text, text2);
  free(text);
  free(text2);
  coil_wir_free(p2);
  coil_wir_free(p);
  return 0;
}
