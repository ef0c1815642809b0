/* libFuzzer harness: the safetensors reader (coil_safetensors_read_mem). Every input is either
 * read or refused with a message naming the file; every element of a tensor that was read is
 * then loaded, so a shape that does not match the data it was given shows as an overread. */
#include "coil/coil.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  coil_tensor_list l = {0};
  coil_diag d = {0};
  if (coil_safetensors_read_mem("fuzz.safetensors", data, size, &l, &d) != 0) {
    FUZZ_REQUIRE(fuzz_names_file(d.msg, "fuzz.safetensors"), "message without the file name: %s",
                 d.msg);
    return 0;
  }
  volatile double sink = 0;
  for (int i = 0; i < l.n; i++) {
    const coil_tensor *t = &l.tensors[i];
    FUZZ_REQUIRE(l.names[i] && coil_tensor_list_find(&l, l.names[i]), "tensor %d has no name", i);
    int64_t n = coil_tensor_numel(t);
    for (int64_t j = 0; j < n; j++)
      sink += coil_tensor_get_f64(t, j);
  }
  (void)sink;
  coil_tensor_list_free(&l);
  return 0;
}
