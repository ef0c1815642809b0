#!/usr/bin/env bash
# The README's second command: every test. Builds with warnings as errors, runs the whole CTest
# suite, then again under AddressSanitizer and UndefinedBehaviorSanitizer (float-cast-overflow
# included, no recovery). The sanitizer build uses clang where it is there (deps.sh installs it):
# then it also builds the libFuzzer harnesses of tools/fuzz, which CTest runs for
# COIL_FUZZ_SECONDS each (docs/reliability.md ("Fuzzing")). Without clang it is gcc's, without fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOIL_WERROR=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# CC only for the configure step: the cpu plugin compiles generated code with $CC (else cc) at
# run time, and that stays the system compiler.
if bash tools/fuzz/have-libfuzzer.sh; then
  # -O1, as the sanitizers' documentation advises: faster than -O0 (core_fuzz takes half the
  # CPU time), with every check kept (they are inserted before optimisation) and asserts on
  CC=clang cmake -S . -B build-asan-clang -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
    -DCOIL_WERROR=ON -DCOIL_SANITIZE=ON -DCOIL_FUZZ=ON
  asan=build-asan-clang
else
  echo "coil: clang with libFuzzer not found: gcc sanitizer build, no fuzzing" >&2
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCOIL_WERROR=ON -DCOIL_SANITIZE=ON
  asan=build-asan
fi
cmake --build "$asan" -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure -j"$jobs"
