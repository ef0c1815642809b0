/* libFuzzer harness: the ini configuration reader (coil_config_load_string, inih underneath).
 * Every input is loaded or refused with a message naming the file; a loaded configuration is
 * explained (coil config's text), which must load back, and its plugin sections read back. */
#include "config.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1); /* the reader takes a NUL-terminated string */
  memcpy(text, data, size);
  text[size] = 0;
  coil_config *c = coil_config_new();
  coil_diag d = {0};
  if (coil_config_load_string(c, "fuzz.ini", text, &d) != 0) {
    FUZZ_REQUIRE(fuzz_names_file(d.msg, "fuzz.ini"), "message without the file name: %s", d.msg);
  } else {
    coil_strbuf b = {0};
    coil_config_explain(c, &b);
    for (int i = 0; i < coil_config_plugin_count(c); i++) {
      const char *const *keys, *const *values, *const *origins;
      int n = coil_config_plugin_options(c, coil_config_plugin_name(c, i), &keys, &values, &origins);
      for (int j = 0; j < n; j++)
        FUZZ_REQUIRE(keys[j] && values[j] && fuzz_names_file(origins[j], "fuzz.ini"),
                     "plugin option %d.%d without key, value or origin", i, j);
    }
    /* the explanation is itself an ini file that loads back, while its lines fit inih's
     * limit (197 characters) */
    char *explained = coil_strbuf_take(&b);
    size_t longest = 0, len = 0;
    for (const char *q = explained; *q; q++) {
      len = *q == '\n' ? 0 : len + 1;
      longest = len > longest ? len : longest;
    }
    if (longest < 190) {
      coil_config *c2 = coil_config_new();
      coil_diag d2 = {0};
      FUZZ_REQUIRE(coil_config_load_string(c2, "explained.ini", explained, &d2) == 0,
                   "the explanation does not load back: %s\n%s", d2.msg, explained);
      coil_config_free(c2);
    }
    free(explained);
  }
  coil_config_free(c);
  free(text);
  return 0;
}
