#!/usr/bin/env bash
# The reliability defects of issue 13 (D1-D7), each as the situation that showed it: long graphs,
# files the user names that are not plain files, full disks, memory limits, huge sizes.
# usage: reliability.sh COIL_BINARY SOURCE_DIR SANITIZED(ON|OFF)
set -u
coil=$1
src=$2
sanitized=${3:-OFF}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
    [ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | head -5
  fi
}
run() { # run CMD...: captures stdout, stderr and status in $tmp
  "$@" >"$tmp/out" 2>"$tmp/err"
  echo $? >"$tmp/rc"
}
rc_is() { [ "$(cat "$tmp/rc")" = "$1" ]; }
rc_not() { [ "$(cat "$tmp/rc")" != "$1" ]; }
err_has() { grep -qF -- "$1" "$tmp/err"; }
no_tmp_left() { ! ls "$1"/*.tmp* >/dev/null 2>&1; }

# A chain of n pointwise statements, each reading the last (and every fifth the input too).
chain() {
  awk -v n="$1" 'BEGIN {
    print "coil 1"; print "graph chain(%x: f32[16, 32]) {"
    split("relu neg sigmoid abs", u, " "); last = "x"
    for (i = 0; i < n; i++) {
      if (i % 5 == 4) printf "  %%v%d = aten.add.Tensor(%%%s, %%x)\n", i, last
      else printf "  %%v%d = aten.%s.default(%%%s)\n", i, u[i % 5 + 1], last
      last = "v" i
    }
    printf "  return (%%%s)\n}\n", last }'
}

# ---- D1: compile time and memory linear in the graph's length ----
chain 20000 >"$tmp/chain20k.coil"
if [ "$sanitized" = ON ]; then # ASan reserves terabytes of address space: no ulimit -v there
  run timeout 120 "$coil" compile "$tmp/chain20k.coil" -o "$tmp/chain20k.wir"
else # before the fix: 73 s and 18.8 GB
  run bash -c 'ulimit -v 1000000; exec timeout 20 "$0" compile "$1" -o "$2"' "$coil" "$tmp/chain20k.coil" "$tmp/chain20k.wir"
fi
check "D1: a 20,000-statement chain compiles within 1 GB and 20 s" rc_is 0
check "D1: ... into a program" grep -q "^kernel " "$tmp/chain20k.wir"
chain 300 >"$tmp/chain300.coil"
run "$coil" run "$tmp/chain300.coil" --backend interp --seed 3 --out "$tmp/interp.st"
check "D1: a 300-statement chain runs on interp" rc_is 0
run "$coil" run "$tmp/chain300.coil" --backend ref --seed 3 --expect "$tmp/interp.st" --rtol 1e-5 --atol 1e-6
check "D1: ... and matches ref" rc_is 0

# ---- D2: --out never replaces what is not a regular file ----
mlp="$src/examples/mlp.coil"
if [ -c /dev/full ]; then
  run "$coil" run "$mlp" --backend ref --seed 1 --out /dev/full
  check "D2: --out /dev/full fails" rc_is 1
  check "D2: ... saying why" err_has "No space left on device"
  check "D2: ... and /dev/full stays a device" test -c /dev/full
fi
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
run "$coil" run "$mlp" --backend ref --seed 1 --out "$tmp/fifo"
wait $reader
check "D2: --out FIFO succeeds" rc_is 0
check "D2: ... writing through the FIFO" test -s "$tmp/from-fifo"
check "D2: ... which stays a FIFO" test -p "$tmp/fifo"
echo old >"$tmp/target.st"
ln -s target.st "$tmp/link.st"
run "$coil" run "$mlp" --backend ref --seed 1 --out "$tmp/link.st"
check "D2: --out through a symbolic link succeeds" rc_is 0
check "D2: ... the link stays a link" test -L "$tmp/link.st"
check "D2: ... and its target holds the outputs" cmp -s "$tmp/from-fifo" "$tmp/target.st"
mkdir "$tmp/adir"
run "$coil" run "$mlp" --backend ref --seed 1 --out "$tmp/adir"
check "D2: --out DIRECTORY is refused" rc_is 1
check "D2: ... saying so" err_has "is a directory"

# ---- D7: output errors: no partial files, no exit status 0 ----
mkdir "$tmp/small"
run bash -c 'trap "" XFSZ; ulimit -f 1; exec "$0" compile "$1" -o "$2"' "$coil" "$tmp/chain300.coil" "$tmp/small/prog.wir"
check "D7: compile -o on a full disk (ulimit -f) fails" rc_is 1
check "D7: ... saying why" err_has "File too large"
check "D7: ... and leaves no file" test ! -e "$tmp/small/prog.wir"
check "D7: ... and no temporary file" no_tmp_left "$tmp/small"
echo "keep me" >"$tmp/small/old.wir"
run bash -c 'trap "" XFSZ; ulimit -f 1; exec "$0" compile "$1" -o "$2"' "$coil" "$tmp/chain300.coil" "$tmp/small/old.wir"
check "D7: a failed compile -o leaves the old file as it was" grep -qx "keep me" "$tmp/small/old.wir"
run bash -c 'trap "" XFSZ; ulimit -f 1; exec "$0" run "$1" --backend ref --seed 1 --size s0=64 --out "$2"' "$coil" "$mlp" "$tmp/small/out.st"
check "D7: run --out on a full disk fails" rc_is 1
check "D7: ... and leaves no file" test ! -e "$tmp/small/out.st"
if [ -c /dev/full ]; then
  run bash -c 'exec "$0" check "$1" >/dev/full' "$coil" "$mlp"
  check "D7: check > /dev/full fails" rc_is 1
  check "D7: ... saying why" err_has "cannot write the standard output"
  run bash -c 'exec "$0" compile "$1" -o - >/dev/full' "$coil" "$mlp"
  check "D7: compile -o - > /dev/full fails" rc_is 1
fi

# ---- D5: tuples of any length print and parse back ----
printf 'coil 1\ngraph g(%%x: f32[65, 2]) {\n  %%s = aten.split.Tensor(%%x, 1)\n  %%a = getitem(%%s, 64)\n  return (%%a)\n}\n' >"$tmp/split65.coil"
run "$coil" check "$tmp/split65.coil"
check "D5: a 65-way split type-checks" rc_is 0
cp "$tmp/out" "$tmp/split65.printed.coil"
run "$coil" check "$tmp/split65.printed.coil"
check "D5: ... its printed form (a 65-element tuple type) parses back" rc_is 0
check "D5: ... to the same text" cmp -s "$tmp/out" "$tmp/split65.printed.coil"
awk 'BEGIN { print "coil 1"; print "graph g(%x: f32[4]) {"
  for (i = 0; i < 70; i++) printf "  %%v%d = aten.mul.Scalar(%%x, %d.0)\n", i, i
  printf "  return (%%v0"; for (i = 1; i < 70; i++) printf ", %%v%d", i; print ")"; print "}" }' >"$tmp/out70.coil"
run "$coil" run "$tmp/out70.coil" --backend interp --seed 2 --out "$tmp/out70.st"
check "D5: a graph with 70 outputs runs on interp (kernels keep to 64 buffers)" rc_is 0
run "$coil" run "$tmp/out70.coil" --backend ref --seed 2 --expect "$tmp/out70.st"
check "D5: ... and matches ref" rc_is 0

# ---- D6: check refuses graphs that can never run, naming file and line ----
for t in 'f32[4294967296, 4294967296]' 'f32[s0 // 0]' 'f32[s0, s0 % (2 - 2)]'; do
  printf 'coil 1\ngraph g(%%x: %s) {\n  %%y = aten.relu.default(%%x)\n  return (%%y)\n}\n' "$t" >"$tmp/huge.coil"
  run "$coil" check "$tmp/huge.coil"
  check "D6: check refuses $t" rc_is 1
  check "D6: ... naming the file and line" err_has "huge.coil:2:"
done
printf 'coil 1\ngraph g(%%x: f32[65536]) {\n  %%a = aten.unsqueeze.default(%%x, 1)\n  %%b = aten.expand.default(%%a, [65536, 65536, 65536, 65536, 65536])\n  return (%%b)\n}\n' >"$tmp/huge2.coil"
run "$coil" check "$tmp/huge2.coil"
check "D6: check refuses a statement whose result is too large" rc_is 1
check "D6: ... naming its line" err_has "huge2.coil:4:"

run "$coil" run "$mlp" --backend ref --size s0=4611686018427387904
check "D6: a run whose size binding makes an input too large fails" rc_is 1
check "D6: ... naming the file and the input" err_has "mlp.coil: error: the inputs: %x (f32 of 2 dimensions)"

# ---- D3: memory limits: an error or a result, never a hang ----
if [ "$sanitized" != ON ]; then
  for kib in 100000 200000; do
    rm -rf "$tmp/art"
    run bash -c 'ulimit -v $0; exec timeout 60 "$1" compile "$2" --backend cpu -o "$3"' "$kib" "$coil" "$mlp" "$tmp/art"
    check "D3: compile --backend cpu under ulimit -v $kib exits" rc_not 124
    check "D3: ... successfully (the plugin reads its 2 KB program)" rc_is 0
    run bash -c 'ulimit -v $0; exec timeout 60 "$1" run "$2" --backend cpu --seed 1' "$kib" "$coil" "$mlp"
    check "D3: run --backend cpu under ulimit -v $kib exits (a result or an error)" rc_not 124
    if ! rc_is 0; then
      check "D3: ... and an error says why" err_has "not enough memory"
    fi
  done
fi

# ---- the dump option: [coil] debug_dump and COIL_DEBUG_DUMP are read ----
run env COIL_DEBUG_DUMP="$tmp/dumps" "$coil" run "$mlp" --backend interp --seed 1
check "COIL_DEBUG_DUMP: run succeeds" rc_is 0
check "COIL_DEBUG_DUMP: ... and writes the stages" test -s "$tmp/dumps/ir_post_fusion.txt"
check "COIL_DEBUG_DUMP: ... and the program" test -s "$tmp/dumps/program.wir"
printf '[coil]\ndebug_dump = %s\n' "$tmp/dumps2" >"$tmp/dump.ini"
run "$coil" run "$mlp" --backend interp --seed 1 --config "$tmp/dump.ini"
check "debug_dump in an ini file: the stages are written" test -s "$tmp/dumps2/graph.txt"
run env COIL_DEBUG_DUMP="$tmp/dumps3" "$coil" compile "$mlp"
check "COIL_DEBUG_DUMP: compile writes the stages too" test -s "$tmp/dumps3/program.wir"

echo "reliability: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
