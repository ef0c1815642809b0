#!/usr/bin/env bash
# Exits 0 when `clang` can build a libFuzzer harness with ASan and UBSan (clang and its
# runtimes, Debian's clang and libclang-rt-dev, are installed); quiet either way.
command -v clang >/dev/null 2>&1 || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
  >"$dir/h.c"
clang -fsanitize=fuzzer,address,undefined,float-cast-overflow "$dir/h.c" -o "$dir/h" \
  >/dev/null 2>&1
