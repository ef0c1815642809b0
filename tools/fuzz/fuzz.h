/* fuzz.h — what the libFuzzer harnesses of tools/fuzz/ share: a finding that is not a crash (a
 * message without the file's name, a round trip that does not hold) stops the run with the
 * input's bytes saved, as a crash would (libFuzzer saves the input on abort). */
#ifndef COIL_FUZZ_H
#define COIL_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond, ...)                                                                \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "fuzz finding at %s:%d: ", __FILE__, __LINE__);                          \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      abort();                                                                                 \
    }                                                                                          \
  } while (0)

/* An error message must start with the name the input was given ("fuzz.coil: ..."). */
static inline int
fuzz_names_file(const char *msg, const char *file)
{
  return strncmp(msg, file, strlen(file)) == 0;
}

#endif
