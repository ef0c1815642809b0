#!/usr/bin/env bash
# Tests of the coil command line: exit codes, messages, determinism, files it writes.
# usage: cli.sh COIL_BINARY SOURCE_DIR
set -u
coil=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COIL_CACHE_DIR="$tmp/cache" # the compile cache of plugin runs: never the user's own
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
  fi
}

run() { # run CMD...: captures stdout, stderr and status in $tmp
  "$@" >"$tmp/out" 2>"$tmp/err"
  echo $? >"$tmp/rc"
}
rc_is() { [ "$(cat "$tmp/rc")" = "$1" ]; }
out_has() { grep -qF -- "$1" "$tmp/out"; }
err_has() { grep -qF -- "$1" "$tmp/err"; }
err_lacks() { ! grep -qF -- "$1" "$tmp/err"; }

run "$coil" --version
check "--version exits 0" rc_is 0
check "--version prints the version" out_has "coil 0.1.0"

run "$coil" help
check "help exits 0" rc_is 0
check "help lists commands" out_has "check GRAPH"

run "$coil"
check "no command is a usage error" rc_is 2
run "$coil" frobnicate
check "unknown command is a usage error" rc_is 2
check "unknown command is named" err_has "unknown command 'frobnicate'"
run "$coil" run "$src/examples/mlp.coil" --seed
check "option without value" rc_is 2
run "$coil" run "$src/examples/mlp.coil" --seed abc
check "bad seed" rc_is 2
run "$coil" run "$src/examples/mlp.coil" --bogus 1
check "unknown option" rc_is 2
run "$coil" run "$src/examples/mlp.coil" --backend tpu
check "unknown backend" rc_is 1
check "unknown backend is named" err_has "plugin 'tpu' not found"
run "$coil" run "$src/examples/mlp.coil" --backend "bad name"
check "malformed backend name" rc_is 1
check "malformed backend name is explained" err_has "backend must be a plugin name"



# check: prints a typed graph that parses back to itself
for g in "$src"/examples/*.coil; do
  name=$(basename "$g")
  run "$coil" check "$g"
  check "check $name exits 0" rc_is 0
  cp "$tmp/out" "$tmp/once.coil"
  run "$coil" check "$tmp/once.coil"
  check "check $name output parses back identically" cmp -s "$tmp/out" "$tmp/once.coil"
done
run "$coil" check "$src/examples/layernorm_gelu.coil"
check "check fills in inferred types" out_has "%act: f32[4, 32] = aten.gelu.default(%normed, approximate='tanh')"

# check: errors name FILE:LINE:COL and exit 1
printf 'coil 1\ngraph g(%%x: f32[4]) {\n  %%y = aten.nope.default(%%x)\n  return (%%y)\n}\n' >"$tmp/bad.coil"
run "$coil" check "$tmp/bad.coil"
check "bad graph exits 1" rc_is 1
check "bad graph message has file:line:col" err_has "bad.coil:3:8: error: unknown op 'aten.nope.default'"
run "$coil" check "$tmp/does-not-exist.coil"
check "missing file exits 1" rc_is 1
check "missing file is named" err_has "does-not-exist.coil: error: cannot open"

# run: the README's main job, deterministic, writes outputs that --expect accepts
mlp=("$src/examples/mlp.coil" --weights "$src/examples/mlp.weights.safetensors"
  --inputs "$src/examples/mlp.inputs.safetensors")
run "$coil" run "${mlp[@]}" --out "$tmp/o.safetensors"
check "run mlp exits 0" rc_is 0
check "run mlp summarises out0" out_has "out0 (%probs): f32[4, 10]"
check "run mlp summarises out1" out_has "out1 (%activity): f32[4, 1]"
check "run writes --out" test -s "$tmp/o.safetensors"
run "$coil" run "${mlp[@]}" --expect "$tmp/o.safetensors"
check "--expect of the same outputs passes" rc_is 0
check "--expect reports ok" out_has "out0: ok"
run "$coil" run "$src/examples/mlp.coil" --inputs "$src/examples/mlp.inputs.safetensors" --expect "$tmp/o.safetensors"
check "--expect with other (random) weights fails" rc_is 1
check "--expect mismatch is reported" out_has "MISMATCH"
check "random params are noted" err_has "param %w1 was not given"

run "$coil" run "$src/examples/softmax_rows.coil" --seed 7 --size rows=3
cp "$tmp/out" "$tmp/first"
run "$coil" run "$src/examples/softmax_rows.coil" --seed 7 --size rows=3
check "generated inputs are deterministic" cmp -s "$tmp/out" "$tmp/first"
check "--size binds a symbol" out_has "out0 (%y): f32[3, 16]"
run "$coil" run "$src/examples/softmax_rows.coil"
check "unbound symbol defaults to 8 with a note" err_has "note: size rows = 8"
run "$coil" run "$src/examples/softmax_rows.coil" --size cols=3
check "--size of an unknown symbol fails" rc_is 1
check "--size of an unknown symbol is named" err_has "'cols', which is not a size symbol"

# run: bad data files
printf 'garbage' >"$tmp/bad.safetensors"
run "$coil" run "${mlp[@]:0:3}" --inputs "$tmp/bad.safetensors"
check "bad safetensors exits 1" rc_is 1
check "bad safetensors is named" err_has "bad.safetensors"
run "$coil" run "$src/examples/mlp.coil" --inputs "$src/examples/mlp.weights.safetensors" --out "$tmp/sub/dir/o.safetensors"
check "unwritable --out fails" rc_is 1
check "unwritable --out leaves nothing" test ! -e "$tmp/sub"

# plugins and the interp backend: the same outputs as ref
run "$coil" plugins
check "plugins exits 0" rc_is 0
check "plugins lists interp" out_has "interp "
check "plugins lists ref" out_has "ref        built in"
run "$coil" run "${mlp[@]}" --backend interp --expect "$tmp/o.safetensors"
check "interp matches ref on the main job" rc_is 0
run "$coil" run "${mlp[@]}" --backend interp --dump "$tmp/dump"
check "--dump writes program.wir" test -s "$tmp/dump/program.wir"
check "--dump writes ir_post_fusion.txt" test -s "$tmp/dump/ir_post_fusion.txt"
run "$coil" run "${mlp[@]}"
check "the default backend is cpu" out_has "on cpu"
COIL_BACKEND=interp run "$coil" run "${mlp[@]}"
check "COIL_BACKEND selects the backend" out_has "on interp"

# compile: a summary, the dumps, the program text
run "$coil" compile "$src/examples/layernorm_gelu.coil" --dump "$tmp/cdump" -o "$tmp/p.wir"
check "compile exits 0" rc_is 0
check "compile reports one kernel" out_has "-> 1 kernel, 0 library calls"
check "compile writes the dumps" test -s "$tmp/cdump/ir_pre_fusion.txt"
check "compile -o writes the program" grep -q "^kernel_call" "$tmp/p.wir"
run "$coil" compile "$tmp/bad.coil"
check "compile of a bad graph exits 1" rc_is 1
run "$coil" compile "$src/examples/mlp.coil" --backend interp --dump "$tmp/pdump"
check "compile --backend hands the program to the plugin" out_has "plugin interp compiled it into"
check "the plugin's artifact sits beside the dumps" test -s "$tmp/pdump/interp/manifest.json"
run "$coil" compile "$src/examples/mlp.coil" --backend nosuch
check "compile with a missing plugin exits 1" rc_is 1
# convolution: a library call where the plugin claims it (cpu), else a generated kernel
cnn="$src/conformance/models/m02_small_cnn/graph.coil"
run "$coil" compile "$cnn" --backend cpu --dump "$tmp/cnn_cpu"
check "cpu claims convolution: an extern_call" grep -q "^extern_call aten.convolution.default" "$tmp/cnn_cpu/program.wir"
run "$coil" compile "$cnn" --backend interp --dump "$tmp/cnn_interp"
check "interp does not claim it: a generated kernel" grep -q "^kernel_call coil_per_fused_convolution_" "$tmp/cnn_interp/program.wir"
check "interp does not claim it: no extern_call" bash -c "! grep -q '^extern_call aten.convolution' '$tmp/cnn_interp/program.wir'"
COIL_CONVOLUTION=generated run "$coil" compile "$cnn" --backend cpu --dump "$tmp/cnn_gen"
check "convolution = generated overrides the claim" grep -q "^kernel_call coil_per_fused_convolution_" "$tmp/cnn_gen/program.wir"
COIL_CONVOLUTION=library run "$coil" compile "$cnn" -o "$tmp/cnn_lib.wir"
check "convolution = library without a plugin" grep -q "^extern_call aten.convolution.default" "$tmp/cnn_lib.wir"
run "$coil" compile "$cnn"
check "no plugin to ask: auto generates" out_has "coil_per_fused_convolution_"
# artifacts: compile --backend NAME -o DIR writes one; run DIR runs it without the graph
run "$coil" compile "$src/examples/mlp.coil" --backend interp -o "$tmp/art"
check "compile -o DIR exits 0" rc_is 0
check "compile -o DIR says what it wrote" out_has "artifact $tmp/art: compiled by plugin interp 0.1.0"
check "the artifact has the host manifest" grep -q '"plugin_version":' "$tmp/art/coil.json"
check "the artifact has the host's program" grep -q "^kernel_call" "$tmp/art/coil.wir"
check "the artifact has the plugin's manifest" test -s "$tmp/art/manifest.json"
check "no temporary directory is left beside it" test -z "$(ls -A "$tmp" | grep '^\.art\.')"
run "$coil" run "$tmp/art" "${mlp[@]:1}" --expect "$tmp/o.safetensors"
check "run DIR matches the graph on ref" rc_is 0
check "run DIR names the outputs as the graph does" out_has "out0 (%probs): f32[4, 10]"
run "$coil" run "$tmp/art" "${mlp[@]:1}"
cp "$tmp/out" "$tmp/art.out"
run "$coil" run "${mlp[@]}" --backend interp
check "run DIR prints what running the graph on interp prints" cmp -s "$tmp/out" "$tmp/art.out"
run "$coil" run "$tmp/art" --inputs "$src/examples/mlp.inputs.safetensors"
check "run DIR without weights uses random params, saying so" err_has "param %w1 was not given"
run "$coil" compile "$src/examples/mlp.coil" --backend interp -o "$tmp/art" --embed-weights "$src/examples/mlp.weights.safetensors"
check "compile replaces an artifact" rc_is 0
check "--embed-weights stores the weights" test -s "$tmp/art/weights.safetensors"
run "$coil" run "$tmp/art" --inputs "$src/examples/mlp.inputs.safetensors" --expect "$tmp/o.safetensors"
check "embedded weights are bound at load" rc_is 0
check "embedded weights are not noted as random" err_lacks "was not given"
cp -r "$tmp/art" "$tmp/art2"
echo "# edited" >>"$tmp/art2/program.wir"
run "$coil" run "$tmp/art2" --inputs "$src/examples/mlp.inputs.safetensors"
check "a changed artifact file fails" rc_is 1
check "a changed artifact file is named" err_has "art2/program.wir: changed or corrupted since the artifact was written"
rm -r "$tmp/art2" && cp -r "$tmp/art" "$tmp/art2"
sed -i 's/"plugin_version":\t"0.1.0"/"plugin_version":\t"0.2.0"/' "$tmp/art2/coil.json"
run "$coil" run "$tmp/art2" --inputs "$src/examples/mlp.inputs.safetensors"
check "another plugin version fails" rc_is 1
check "another plugin version says to recompile" err_has "artifact was compiled by interp 0.2.0; the plugin found is interp 0.1.0"
rm -r "$tmp/art2" && cp -r "$tmp/art" "$tmp/art2"
sed -i 's/"plugin":\t"interp"/"plugin":\t"nosuch"/' "$tmp/art2/coil.json"
run "$coil" run "$tmp/art2" --inputs "$src/examples/mlp.inputs.safetensors"
check "a missing plugin fails" rc_is 1
check "a missing plugin is named" err_has "artifact was compiled by nosuch 0.1.0, which cannot be opened now"
run "$coil" run "$tmp/art" --backend ref
check "run DIR on another backend fails" rc_is 1
check "run DIR on another backend says which" err_has "was compiled for plugin interp, not ref"
mkdir "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
run "$coil" compile "$src/examples/mlp.coil" --backend interp -o "$tmp/mine"
check "compile -o never replaces a directory that is not an artifact" rc_is 1
check "... and says so" err_has "exists and is not a coil artifact"
check "... and leaves it alone" test "$(ls -A "$tmp/mine")" = notes.txt
run "$coil" run "$tmp/mine"
check "run of a directory that is not an artifact fails" rc_is 1
check "... naming coil.json" err_has "not a coil artifact: cannot read coil.json"
run "$coil" compile "$src/examples/mlp.coil" --backend interp -o -
check "compile --backend -o - is a usage error" rc_is 2
run "$coil" compile "$src/examples/mlp.coil" --embed-weights "$src/examples/mlp.weights.safetensors"
check "--embed-weights without an artifact is a usage error" rc_is 2

# the compile cache: a second run loads the entry, a damaged entry is compiled again
rm -rf "$tmp/cache"
run "$coil" run "${mlp[@]}" --backend interp
check "a cached run exits 0" rc_is 0
entry=$(ls "$tmp/cache")
check "the cache holds one entry" test "$(ls -A -I .key "$tmp/cache" | wc -l)" = 1
check "the cache is private" test "$(stat -c %a "$tmp/cache")" = 700
inode=$(stat -c %i "$tmp/cache/$entry/coil.json")
run "$coil" run "${mlp[@]}" --backend interp
check "the second run uses the entry as it was" test "$(stat -c %i "$tmp/cache/$entry/coil.json")" = "$inode"
check "the second run prints the same" cmp -s "$tmp/out" "$tmp/art.out"
echo "# damaged" >>"$tmp/cache/$entry/program.wir"
run "$coil" run "${mlp[@]}" --backend interp
check "a damaged cache entry is compiled again" rc_is 0
check "the rebuilt entry is whole" cmp -s "$tmp/cache/$entry/program.wir" "$tmp/cache/$entry/coil.wir"
check "and is the only one" test "$(ls -A -I .key "$tmp/cache" | wc -l)" = 1
COIL_CACHE_DIR="$tmp/cache2" run "$coil" run "${mlp[@]}" --backend interp --no-cache
check "--no-cache runs" rc_is 0
check "--no-cache writes no cache" test ! -e "$tmp/cache2"
mkdir -m 777 "$tmp/shared-cache"
COIL_CACHE_DIR="$tmp/shared-cache" run "$coil" run "${mlp[@]}" --backend interp
check "a cache others may write is not used" err_has "note: compiling without the cache: cache_dir $tmp/shared-cache: others may write to it"
check "... and the run goes on" rc_is 0
check "... writing nothing there" test -z "$(ls -A "$tmp/shared-cache")"

run "$coil" config explain
check "config explain exits 0" rc_is 0
check "config explain shows the backend and its origin" out_has "backend"

# cpu: compiler failures name the command and keep the source; no artifact is left
printf '[plugin.cpu]\ncflags = -fno-such-flag\n' >"$tmp/badcc.ini"
TMPDIR="$tmp" run "$coil" run "${mlp[@]}" --backend cpu --config "$tmp/badcc.ini" --no-cache
check "a failing C compiler exits 1" rc_is 1
check "the failing command is shown" err_has "-fno-such-flag"
check "the compiler's output is shown" err_has "unrecognized command-line option"
check "the source is kept" err_has "the source is kept in $tmp/coil-cpu-failed-"
check "the kept source exists" bash -c "ls $tmp/coil-cpu-failed-*/kernels.c"
check "no artifact directory is left" bash -c "! ls -d $tmp/coil-cpu-[A-Za-z0-9]*[!d]/manifest.json 2>/dev/null"
printf '[plugin.cpu]\ncc = /nonexistent/cc\n' >"$tmp/nocc.ini"
run "$coil" run "${mlp[@]}" --backend cpu --config "$tmp/nocc.ini" --no-cache
check "a missing C compiler is named" err_has "cannot run the C compiler '/nonexistent/cc'"
printf '[plugin.cpu]\nthreads = lots\n' >"$tmp/badopt.ini"
run "$coil" run "${mlp[@]}" --backend cpu --config "$tmp/badopt.ini" --no-cache
check "a bad cpu option is named" err_has "option threads: expected 0 (all) to 4096"
run "$coil" run "$src/examples/softmax_rows.coil" --backend cpu --size rows=3 --seed 7 --out "$tmp/c3.st"
run "$coil" run "$src/examples/softmax_rows.coil" --backend ref --size rows=3 --seed 7 --expect "$tmp/c3.st"
check "cpu matches ref on a symbolic size" rc_is 0
run "$coil" run "$src/examples/softmax_rows.coil" --backend cpu --size rows=11 --seed 7 --out "$tmp/c11.st"
run "$coil" run "$src/examples/softmax_rows.coil" --backend ref --size rows=11 --seed 7 --expect "$tmp/c11.st"
check "the same cpu artifact serves another size" rc_is 0

# the cache as a trust boundary (docs/reliability.md, "The compile cache and artifacts"), on cpu:
# the library it dlopens (codegen = cc) and the object it maps (the default, LLVM where
# cpu-llvm.so is built)
printf '[plugin.cpu]\ncodegen = cc\n' >"$tmp/cc.ini"
for code in default cc; do # cc last: its output is the one the compiler checks below compare with
cfg=()
[ "$code" = cc ] && cfg=(--config "$tmp/cc.ini")
rm -rf "$tmp/tc"
COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu "${cfg[@]}"
check "$code: a cpu run fills the cache" rc_is 0
cp "$tmp/out" "$tmp/tc.out"
e=$(ls "$tmp/tc")
lib=libkernels.so mode=700
[ -e "$tmp/tc/$e/kernels.o" ] && lib=kernels.o mode=600 # mapped by the plugin, never executed by the loader
check "$code: the cache's key is private" test "$(stat -c %a "$tmp/tc/.key")" = 600
check "$code: the cached $lib is private whatever the umask" test "$(stat -c %a "$tmp/tc/$e/$lib")" = $mode
chmod 666 "$tmp/tc/$e/$lib"
COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu "${cfg[@]}"
check "$code: a $lib others may write is not loaded" err_has "$lib: others may write to it (mode 666)"
check "... the entry is rebuilt and the run goes on" rc_is 0
check "... to the same result" cmp -s "$tmp/out" "$tmp/tc.out"
check "... privately again" test "$(stat -c %a "$tmp/tc/$e/$lib")" = $mode
chmod 777 "$tmp/tc/$e"
COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu "${cfg[@]}"
check "$code: an entry directory others may write is not used" err_has "$e: others may write to it (mode 777)"
check "... and is rebuilt" test "$(stat -c %a "$tmp/tc/$e")" = 700
mv "$tmp/tc/$e" "$tmp/planted" && ln -s "$tmp/planted" "$tmp/tc/$e"
COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu "${cfg[@]}"
check "$code: an entry replaced by a symlink is not followed" err_has "a symlink or a file, not an entry directory (never followed)"
check "... a real entry takes its place" test -d "$tmp/tc/$e" -a ! -L "$tmp/tc/$e"
check "... and the run goes on" cmp -s "$tmp/out" "$tmp/tc.out"
rm -rf "$tmp/tc"
done
CC=true COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu --config "$tmp/cc.ini"
check "a compiler that exits 0 writing no library fails the compile" rc_is 1
check "... saying so" err_has "cpu: the C compiler 'true' exited 0 but wrote no usable library"
check "... and installs no cache entry" test -z "$(ls -A -I .key "$tmp/tc")"
CC=true COIL_CONFIG="$tmp/cc.ini" run "$coil" compile "$src/examples/mlp.coil" --backend cpu -o "$tmp/ccart"
check "... nor an artifact" test ! -e "$tmp/ccart"
COIL_CACHE_DIR="$tmp/tc" run "$coil" run "${mlp[@]}" --backend cpu --config "$tmp/cc.ini"
check "... so the next run with a real compiler succeeds" cmp -s "$tmp/out" "$tmp/tc.out"

# a write into the cache that fails (over the file size limit, as on a full disk) says why and
# where, and leaves nothing
(
  trap '' XFSZ
  ulimit -f 1
  COIL_CACHE_DIR="$tmp/fc" "$coil" run "${mlp[@]}" --backend interp >"$tmp/out" 2>"$tmp/err"
  echo $? >"$tmp/rc"
)
check "a failed cache write fails the run" rc_is 1
check "... naming the file and why" err_has "/program.wir: File too large"
check "... leaving no entry or temporary" test -z "$(ls -A -I .key "$tmp/fc")"

# artifacts: eight writers of one directory at once all succeed, the last one's stays
pids=()
for i in 1 2 3 4 5 6 7 8; do
  "$coil" compile "$src/examples/mlp.coil" --backend interp -o "$tmp/race" >/dev/null 2>"$tmp/race.$i.err" &
  pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
check "8 concurrent compile -o into one directory all succeed" test "$ok" = 8
check "... with no error" test -z "$(cat "$tmp"/race.*.err)"
cat "$tmp"/race.*.err >&2 # what went wrong, where a check above failed
run "$coil" run "$tmp/race" "${mlp[@]:1}"
check "... leaving one artifact that runs" rc_is 0
check "... and no temporaries" test -z "$(ls -A "$tmp" | grep '^\.race\.')"
chmod 777 "$tmp/race"
run "$coil" run "$tmp/race" "${mlp[@]:1}"
check "an artifact anyone may write to is refused" err_has "anyone may write to it (mode 777)"
chmod 755 "$tmp/race"

# an index out of range: a clear error on every executing backend, naming the op, never a
# wild read (indices made by arange, so no input file is needed)
printf 'coil 1\ngraph bad_embedding(%%w: f32[10, 4]) {\n  %%i = aten.arange.start_step(0, 11, 1)\n  %%out = aten.embedding.default(%%w, %%i)\n  return (%%out)\n}\n' >"$tmp/bad_emb.coil"
printf 'coil 1\ngraph bad_gather(%%x: f32[3, 4]) {\n  %%i = aten.arange.start_step(-1, 2, 1)\n  %%u = aten.unsqueeze.default(%%i, 0)\n  %%e = aten.expand.default(%%u, [3, -1])\n  %%out = aten.gather.default(%%x, 1, %%e)\n  return (%%out)\n}\n' >"$tmp/bad_gather.coil"
printf 'coil 1\ngraph bad_index(%%x: f32[5, 6]) {\n  %%i = aten.arange.start_step(-7, 0, 1)\n  %%out = aten.index.Tensor(%%x, [%%i])\n  return (%%out)\n}\n' >"$tmp/bad_index.coil"
for b in ref interp cpu; do
  run "$coil" run "$tmp/bad_emb.coil" --backend "$b" --no-cache
  check "$b: embedding index 10 of 10 rows fails" rc_is 1
  check "$b: the embedding error names the index" err_has "index 10 is out of range"
  check "$b: the embedding error names the op" err_has "aten.embedding.default"
  run "$coil" run "$tmp/bad_gather.coil" --backend "$b" --no-cache
  check "$b: a negative gather index fails" rc_is 1
  check "$b: the gather error names the index and op" err_has "index -1 is out of"
  check "$b: the gather error names the op" err_has "aten.gather.default"
  run "$coil" run "$tmp/bad_index.coil" --backend "$b" --no-cache
  check "$b: index -7 of 5 rows fails" rc_is 1
  check "$b: the index.Tensor error names the index as written" err_has "index -7 is out of"
  check "$b: the index.Tensor error names the op" err_has "aten.index.Tensor"
done

# integer fmod / remainder by zero: ref and interp stop with an error (PyTorch raises
# ZeroDivisionError on the CPU), generated code gives 0 (docs/wrapper-ir.md, fmod), and no
# backend traps on it or on INT64_MIN % -1 (0, as torch's remainder)
printf 'coil 1\ngraph mod0(%%a: i64[6]) {\n  %%z = aten.zeros_like.default(%%a)\n  %%f = aten.fmod.Tensor(%%a, %%z)\n  %%r = aten.remainder.Tensor(%%a, %%z)\n  return (%%f, %%r)\n}\n' >"$tmp/mod0.coil"
printf 'coil 1\ngraph modmin(%%a: i64[3]) {\n  %%m = aten.full_like.default(%%a, -9223372036854775808)\n  %%f = aten.fmod.Scalar(%%m, -1)\n  %%r = aten.remainder.Scalar(%%m, -1)\n  return (%%f, %%r)\n}\n' >"$tmp/modmin.coil"
run "$coil" run "$tmp/mod0.coil" --backend ref
check "ref: integer fmod by zero fails" rc_is 1
check "ref: ... naming ZeroDivisionError and the op" err_has "aten.fmod.Tensor (%f): integer division by zero (ZeroDivisionError)"
run "$coil" run "$tmp/mod0.coil" --backend interp --no-cache
check "interp: integer fmod by zero fails" rc_is 1
check "interp: ... saying so" err_has "fmod: integer division by zero"
run "$coil" run "$tmp/mod0.coil" --backend cpu --no-cache
check "cpu: integer fmod and remainder by zero give 0" bash -c "rc=\$(cat '$tmp/rc'); [ \$rc = 0 ] && [ \$(grep -c '\[0, 0, 0, 0, 0, 0\]' '$tmp/out') = 2 ]"
for b in ref interp cpu; do
  run "$coil" run "$tmp/modmin.coil" --backend "$b" --no-cache
  check "$b: INT64_MIN fmod and remainder -1 are 0" bash -c "rc=\$(cat '$tmp/rc'); [ \$rc = 0 ] && [ \$(grep -c '\[0, 0, 0\]' '$tmp/out') = 2 ]"
done

# scatters: an index shape that does not fit is a compile-time error naming the statement; an
# index value out of range fails the run on every executing backend, naming the op
printf 'coil 1\ngraph bad_scatter_shape(%%x: f32[5, 4], %%i: i64[3, 6], %%s: f32[3, 6]) {\n  %%out = aten.scatter_add.default(%%x, 0, %%i, %%s)\n  return (%%out)\n}\n' >"$tmp/bad_scatter_shape.coil"
run "$coil" check "$tmp/bad_scatter_shape.coil"
check "check: a scatter index larger than self fails" rc_is 1
check "check: the scatter shape error names the statement" err_has "bad_scatter_shape.coil:3:42: error: aten.scatter_add.default: index has size 6 in dimension 1, larger than self's 4"
printf 'coil 1\ngraph bad_put(%%x: f32[5, 4], %%v: f32[3, 5]) {\n  %%i = aten.arange.start_step(0, 3, 1)\n  %%out = aten.index_put.default(%%x, [%%i], %%v, True)\n  return (%%out)\n}\n' >"$tmp/bad_put_shape.coil"
run "$coil" check "$tmp/bad_put_shape.coil"
check "check: index_put values that do not broadcast fail" rc_is 1
check "check: the index_put error names the statement" err_has "bad_put_shape.coil:4:43: error: aten.index_put.default: values have size 5"
printf 'coil 1\ngraph bad_scatter(%%x: f32[5, 4], %%s: f32[6, 4]) {\n  %%i = aten.arange.start_step(0, 6, 1)\n  %%u = aten.unsqueeze.default(%%i, 1)\n  %%e = aten.expand.default(%%u, [-1, 4])\n  %%out = aten.scatter_add.default(%%x, 0, %%e, %%s)\n  return (%%out)\n}\n' >"$tmp/bad_scatter.coil"
printf 'coil 1\ngraph bad_put(%%x: f32[5, 4], %%v: f32[4]) {\n  %%i = aten.arange.start_step(-6, 0, 1)\n  %%out = aten.index_put.default(%%x, [%%i], %%v, True)\n  return (%%out)\n}\n' >"$tmp/bad_put.coil"
for b in ref interp cpu; do
  run "$coil" run "$tmp/bad_scatter.coil" --backend "$b" --no-cache
  check "$b: scatter_add index 5 of 5 rows fails" rc_is 1
  check "$b: the scatter_add error names the index" err_has "index 5 is out of"
  check "$b: the scatter_add error names the op" err_has "aten.scatter_add.default"
  run "$coil" run "$tmp/bad_put.coil" --backend "$b" --no-cache
  check "$b: index_put index -6 of 5 rows fails" rc_is 1
  check "$b: the index_put error names the index as written" err_has "index -6 is out of"
  check "$b: the index_put error names the op" err_has "aten.index_put.default"
done

# ops: docs/ops.md is generated from the op table and must be up to date
run "$coil" ops --markdown
check "ops --markdown exits 0" rc_is 0
sed '/^<!-- support matrix:/,$d' "$src/docs/ops.md" >"$tmp/ops_table.md" # the matrix: tools/support-matrix.sh
check "docs/ops.md equals 'coil ops --markdown' (regenerate it)" cmp -s "$tmp/out" "$tmp/ops_table.md"
run "$coil" ops
check "ops lists aten.add.Tensor" out_has "aten.add.Tensor"
run bash "$src/tools/core-aten-coverage.sh" "$coil" "$src"
check "docs/core-aten.md equals tools/core-aten-coverage.sh's output (regenerate it)" cmp -s "$tmp/out" "$src/docs/core-aten.md"

# coil cache stats | clear | prune: the local cache's upkeep, on a cache of its own
cc_dir="$tmp/upkeep"
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache stats
check "cache stats before any entry: exit 0" rc_is 0
check "cache stats before any entry: none yet" out_has "none yet (0 entries)"
check "cache stats creates nothing" test ! -e "$cc_dir"
for g in layernorm_gelu mixed_precision softmax_rows; do
  run env COIL_CACHE_DIR="$cc_dir" "$coil" run "$src/examples/$g.coil" --backend interp
done
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache stats
check "cache stats: three entries" out_has "3 entries"
check "cache stats: the key file" out_has "secret key: present"
entries=$(ls "$cc_dir" | sort)
# last use: ages made by hand (softmax_rows oldest, then layernorm_gelu), then a hit refreshes one
i=0
for e in $entries; do touch -d "@$((1700000000 + i))" "$cc_dir/$e"; i=$((i + 1)); done
run env COIL_CACHE_DIR="$cc_dir" "$coil" run "$src/examples/layernorm_gelu.coil" --backend interp
newest=$(ls -t "$cc_dir" | head -1)
check "a cache hit marks its entry as just used" test "$(stat -c %Y "$cc_dir/$newest")" -gt 1700000100
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache prune --max-size 0.1K
check "cache prune --max-size 0.1K: exit 0" rc_is 0
check "cache prune: says what it removed" out_has "removed 3 entries"
check "cache prune: the key file stays" test -f "$cc_dir/.key"
for g in layernorm_gelu mixed_precision softmax_rows; do
  run env COIL_CACHE_DIR="$cc_dir" "$coil" run "$src/examples/$g.coil" --backend interp
done
i=0
for e in $(ls "$cc_dir" | sort); do touch -d "@$((1700000000 + i))" "$cc_dir/$e"; i=$((i + 1)); done
first=$(ls -tr "$cc_dir" | head -1)
total=$(du -sB1 "$cc_dir"/[0-9a-f]* | awk '{ n += $1 } END { print n }') # blocks on disk, as coil counts
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache prune --max-size "$((total - 1))"
check "cache prune to one byte under the total: the least recently used goes" test ! -e "$cc_dir/$first"
check "cache prune: only that one" out_has "removed 1 entry"
check "cache prune: the other two stay" test "$(ls "$cc_dir" | wc -l)" = 2
# an entry a process has open (a shared flock, as a loading coil holds) is kept
busy=$(ls -tr "$cc_dir" | head -1)
flock -s "$cc_dir/$busy" sleep 2 &
holder=$!
sleep 0.5
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache clear
check "cache clear: exit 0" rc_is 0
check "cache clear: an entry in use is kept" test -d "$cc_dir/$busy"
check "cache clear: says one is in use" out_has "1 of them in use by a running process"
check "cache clear: the rest is gone" test "$(ls "$cc_dir" | wc -l)" = 1
wait "$holder" # the lock goes with its holder
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache clear
check "cache clear, nothing in use: empty" test "$(ls "$cc_dir" | wc -l)" = 0
check "cache clear: no temporaries left" test "$(ls -A "$cc_dir" | grep -vc '^\.key$')" = 0
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache prune --max-size 2X
check "cache prune with a bad size: usage error" rc_is 2
check "cache prune with a bad size: says what it takes" err_has "--max-size takes a size such as 500M"
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache prune
check "cache prune without --max-size: usage error" rc_is 2
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache evict
check "cache evict: names what it expects" err_has "expected stats, clear or prune"
printf '[coil]\ncache_dir =\n' >"$tmp/nocache.ini"
run env -u COIL_CACHE_DIR "$coil" cache stats --config "$tmp/nocache.ini"
check "cache stats with the cache off: says so" err_has "the compile cache is off"
chmod 777 "$cc_dir"
run env COIL_CACHE_DIR="$cc_dir" "$coil" cache clear
check "cache clear of a directory others may write: refused" err_has "others may write to it"
chmod 700 "$cc_dir"

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
