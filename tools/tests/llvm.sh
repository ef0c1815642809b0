#!/usr/bin/env bash
# The cpu plugin's LLVM code path ([plugin.cpu] codegen = llvm) from the command line: the main
# job with no C compiler on PATH, artifacts that carry object code, what load refuses, and an
# IR the verifier refuses reported as an internal error naming the kernel with the IR kept.
# usage: llvm.sh COIL_BINARY SOURCE_DIR PLUGIN_DIR [SANITIZED]; exit 77 (skipped) where cpu-llvm.so is not built
set -u
coil=$1
src=$2
plugins=$3
sanitized=${4:-OFF}
[ -f "$plugins/cpu-llvm.so" ] || { echo "cpu-llvm.so not built (no LLVM 19): skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
export COIL_CACHE_DIR="$tmp/cache"
pass=0
failed=0

check() { # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then
    pass=$((pass + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    sed 's/^/  err: /' "$tmp/err" | head -5
  fi
}
run() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc_is() { [ "$(cat "$tmp/rc")" = "$1" ]; }
out_has() { grep -qF -- "$1" "$tmp/out"; }
err_has() { grep -qF -- "$1" "$tmp/err"; }

printf '[plugin.cpu]\ncodegen = llvm\n' >"$tmp/llvm.ini"
mlp=("$src/examples/mlp.coil" --weights "$src/examples/mlp.weights.safetensors" --inputs "$src/examples/mlp.inputs.safetensors")

# the README's main job on a machine without a C compiler: nothing on PATH at all
run env PATH=/nonexistent "$coil" run "${mlp[@]}" --config "$tmp/llvm.ini"
check "main job without cc: exit 0" rc_is 0
tail -n +2 "$tmp/out" >"$tmp/llvm.txt"
run "$coil" run "${mlp[@]}" --backend ref
tail -n +2 "$tmp/out" >"$tmp/ref.txt"
check "main job without cc: the reference interpreter's outputs" cmp -s "$tmp/llvm.txt" "$tmp/ref.txt"

# the default, codegen = auto, takes LLVM where there is no C compiler: the README's main job as it is
printf '[coil]\n' >"$tmp/empty.ini"
run env PATH=/nonexistent COIL_CACHE_DIR="$tmp/autocache" "$coil" run "${mlp[@]}" --config "$tmp/empty.ini"
check "main job without cc, default options: exit 0" rc_is 0
tail -n +2 "$tmp/out" >"$tmp/auto.txt"
check "main job without cc, default options: the reference's outputs" cmp -s "$tmp/auto.txt" "$tmp/ref.txt"
check "main job without cc, default options: through LLVM" test -n "$(find "$tmp/autocache" -name kernels.o)"

# ... and where there is one: cpu-llvm.so is installed, so the default builds through LLVM; a key
# of the C path (cc, cflags, cc_timeout) asks for the C compiler; where libLLVM cannot even be
# mapped (ulimit -v), auto says so once and compiles with cc
run env COIL_CACHE_DIR="$tmp/auto2" "$coil" run "${mlp[@]}" --config "$tmp/empty.ini"
check "default options with cc on PATH: through LLVM" test -n "$(find "$tmp/auto2" -name kernels.o)"
check "default options with cc on PATH: the reference's outputs" bash -c "tail -n +2 '$tmp/out' | cmp -s - '$tmp/ref.txt'"
for key in "cc = cc" "cflags = -O2" "cc_timeout = 300"; do
  printf '[plugin.cpu]\n%s\n' "$key" >"$tmp/ckey.ini"
  run env COIL_CACHE_DIR="$tmp/ckey" "$coil" run "${mlp[@]}" --config "$tmp/ckey.ini"
  check "auto with '$key': through the C compiler" test -n "$(find "$tmp/ckey" -name libkernels.so)"
  rm -rf "$tmp/ckey"
done
if [ "$sanitized" != ON ]; then # ASan reserves terabytes of address space: no ulimit -v there
  run bash -c 'ulimit -v 100000; exec "$0" compile "$1" --backend cpu -o "$2"' "$coil" "${mlp[0]}" "$tmp/vart"
  check "libLLVM unmappable (ulimit -v): the compile goes on" rc_is 0
  check "libLLVM unmappable: says it compiles with cc" err_has "codegen = auto: compiling with the C compiler: the LLVM compile worker"
  check "libLLVM unmappable: the worker could not load cpu-llvm.so" err_has "cannot load"
  check "libLLVM unmappable: says why" err_has "failed to map segment"
  check "libLLVM unmappable: says it once" test "$(grep -c 'codegen = auto' "$tmp/err")" = 1
  check "libLLVM unmappable: a cc artifact" test -s "$tmp/vart/libkernels.so"
  run "$coil" run "${mlp[@]}" --backend ref --out "$tmp/ref.st"
  run "$coil" run "$tmp/vart" --weights "${mlp[2]}" --inputs "${mlp[4]}" --expect "$tmp/ref.st"
  check "libLLVM unmappable: the artifact runs to the reference's outputs" rc_is 0
fi

# an artifact: object code, its IR, the manifest naming LLVM and the target; runs without cc
run env PATH=/nonexistent COIL_CONFIG="$tmp/llvm.ini" "$coil" compile "$src/examples/mlp.coil" --backend cpu -o "$tmp/art"
check "compile -o with codegen = llvm: exit 0" rc_is 0
check "the artifact holds kernels.o" test -s "$tmp/art/kernels.o"
check "the artifact holds kernels.ll" grep -q "^define" "$tmp/art/kernels.ll"
check "the artifact holds no C" test ! -e "$tmp/art/kernels.c"
check "the manifest names the code path" grep -q '"codegen": "llvm"' "$tmp/art/manifest.json"
check "the manifest names the target" grep -q '"target": "' "$tmp/art/manifest.json"
run env PATH=/nonexistent "$coil" run "$tmp/art" --weights "$src/examples/mlp.weights.safetensors" \
  --inputs "$src/examples/mlp.inputs.safetensors" --config "$tmp/llvm.ini"
check "the artifact runs without cc" rc_is 0
tail -n +2 "$tmp/out" >"$tmp/art.txt"
check "the artifact's outputs are the reference's" cmp -s "$tmp/art.txt" "$tmp/ref.txt"

# load refuses an object built for another CPU (the manifest says which), and a symlinked object
cp -r "$tmp/art" "$tmp/other"
sed -i 's/"target": "[^"]*"/"target": "x86_64-unknown-linux-gnu someothercpu +nothing"/; s/"host": "[^"]*"/"host": "0000000000000000"/' \
  "$tmp/other/manifest.json"
run "$coil" run "$tmp/other" --weights "$src/examples/mlp.weights.safetensors" --inputs "$src/examples/mlp.inputs.safetensors" \
  --config "$tmp/llvm.ini"
check "another CPU's object: refused" rc_is 1
check "another CPU's object: says recompile" err_has "recompile"
mkdir "$tmp/link" && cp "$tmp/art"/* "$tmp/link/" && mv "$tmp/link/kernels.o" "$tmp/kernels.o" &&
  ln -s "$tmp/kernels.o" "$tmp/link/kernels.o"
run "$coil" run "$tmp/link" --weights "$src/examples/mlp.weights.safetensors" --inputs "$src/examples/mlp.inputs.safetensors" \
  --config "$tmp/llvm.ini"
check "a symlinked kernels.o: refused" rc_is 1

# a run that finds its artifact loads kernels.o itself: libLLVM never enters the process
run env LD_DEBUG=files "$coil" run "$tmp/art" --weights "$src/examples/mlp.weights.safetensors" \
  --inputs "$src/examples/mlp.inputs.safetensors" --config "$tmp/llvm.ini"
check "an artifact runs without loading libLLVM" rc_is 0
check "an artifact runs without loading libLLVM: none in the loader's log" bash -c "! grep -q 'libLLVM' '$tmp/err'"
# a damaged object: refused by both loaders with a message, no crash
cp -r "$tmp/art" "$tmp/cut"
head -c 300 "$tmp/art/kernels.o" >"$tmp/cut/kernels.o"
run "$coil" run "$tmp/cut" --weights "$src/examples/mlp.weights.safetensors" --inputs "$src/examples/mlp.inputs.safetensors" \
  --config "$tmp/llvm.ini"
check "a cut kernels.o: refused" rc_is 1
check "a cut kernels.o: says so" err_has "kernels.o"

# IR the verifier refuses (a test hook leaves a block without a terminator in the first kernel)
rm -rf "$COIL_CACHE_DIR"
run env COIL_CPU_LLVM_TEST_BREAK_IR=1 TMPDIR="$tmp" "$coil" run "${mlp[@]}" --config "$tmp/llvm.ini"
check "broken IR: the run fails" rc_is 1
check "broken IR: an internal error" err_has "internal error: the IR of kernel coil_"
check "broken IR: the verifier's reason" err_has "does not have terminator"
kept=$(grep -o "the IR is kept in [^ ]*kernels.ll" "$tmp/err" | sed 's/the IR is kept in //')
check "broken IR: the IR is kept" test -n "$kept" -a -f "${kept:-/nonexistent}"
check "broken IR: no cache entry" test -z "$(ls "$COIL_CACHE_DIR" 2>/dev/null | grep -v '^\.')"

# a fatal error inside LLVM (a test hook adds a call x86 cannot select): it ends the compile
# worker, not coil; the compile fails with LLVM's reason and keeps what reproduces it
rm -rf "$COIL_CACHE_DIR"
run env COIL_CPU_LLVM_TEST_FATAL=1 TMPDIR="$tmp" "$coil" run "${mlp[@]}" --config "$tmp/llvm.ini"
check "LLVM's fatal error: the run fails" rc_is 1
check "LLVM's fatal error: coil reports it (coil itself did not die)" err_has "internal error: LLVM's compile of program mlp"
check "LLVM's fatal error: LLVM's reason" err_has "LLVM ERROR: Cannot select"
check "LLVM's fatal error: how the worker ended" err_has "the compile worker exited with status 70"
kept=$(grep -o "are kept in [^ ]*/ " "$tmp/err" | sed 's/are kept in //; s/ $//')
check "LLVM's fatal error: the Wrapper IR is kept" test -n "$kept" -a -f "${kept:-/nonexistent}/program.wir"
check "LLVM's fatal error: LLVM's IR is kept" test -f "${kept:-/nonexistent}/kernels.ll"
check "LLVM's fatal error: no cache entry" test -z "$(ls "$COIL_CACHE_DIR" 2>/dev/null | grep -v '^\.')"
check "LLVM's fatal error: the kept Wrapper IR is the program's" grep -q "^wir " "${kept:-/nonexistent}/program.wir"
check "no compile worker outlives coil" bash -c "! pgrep -x coil-cpu-llvm -P $$ >/dev/null"

# the option's values
printf '[plugin.cpu]\ncodegen = gcc\n' >"$tmp/bad.ini"
run "$coil" run "${mlp[@]}" --config "$tmp/bad.ini"
check "codegen = gcc: refused" rc_is 1
check "codegen = gcc: says what it takes" err_has "expected auto, cc or llvm"

echo "llvm.sh: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
