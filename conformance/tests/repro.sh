#!/bin/bash
# conformance_repro: bugs that show only with the suite's exact data are reproduced by
# --repro ID alone, with the worst elements (or the guard report) printed; a claim that compile
# refuses is a FAIL; a case's stderr is shown under its failure; a case's data depends on its id
# only. Usage: repro.sh CONFORMANCE BROKEN_PLUGIN_DIR
set -uo pipefail
conf=$1 broken=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

# planted NAME FILTER ID PATTERN...: the suite run with FILTER fails exactly the case ID (and
# shows the plugin's stderr under it); --repro ID alone fails it again and prints every PATTERN
# (fixed strings).
planted() {
  local name=$1 filter=$2 id=$3
  shift 3
  local plugin="$broken/libcoil_broken_$name.so"
  "$conf" --plugin "$plugin" -j 2 --tier op --filter "$filter" --csv "$tmp/$name.csv" >"$tmp/$name.out" 2>&1
  local rc=$?
  local failed
  failed=$(grep ',fail,' "$tmp/$name.csv" | cut -d, -f1-4 | tr ',' '/')
  if [ $rc -ne 1 ] || [ "$failed" != "$id" ]; then
    bad "$name: the suite (exit $rc) failed [$failed], expected exactly $id"; tail -5 "$tmp/$name.out"; return
  fi
  ok "$name: the suite fails $id only"
  if grep -A3 "^  $id: " "$tmp/$name.out" | grep -q "      | broken_$name"; then
    ok "$name: the plugin's stderr is shown under the failure"
  else
    bad "$name: the plugin's stderr is not under its failure:"; sed -n '/^failures:/,$p' "$tmp/$name.out" | head -8
  fi
  "$conf" --plugin "$plugin" --repro "$id" >"$tmp/$name.repro" 2>&1
  rc=$?
  [ $rc -eq 1 ] && ok "$name: --repro $id fails it again" || bad "$name: --repro exit $rc, expected 1"
  for p in "$@"; do
    if grep -qF -- "$p" "$tmp/$name.repro"; then
      ok "$name: --repro prints '$p'"
    else
      bad "$name: --repro does not print '$p':"; cat "$tmp/$name.repro"
    fi
  done
}

# an f32 element written past output 0 only when an input starts off a 64-byte boundary: only
# the unaligned case fails, and the repro hands the inputs over unaligned too
planted unaligned_oob 'op/aten\.add\.Tensor/f32/[a-z0-9]+$' op/aten.add.Tensor/f32/unaligned \
  'handed over one element past a 64-byte boundary' \
  'guard bytes: the plugin wrote outside output 0 (f32, ' \
  'bytes 1 to 4 after it changed (as elements: element 1 past the end = 2.5)'

# element 13 of output 0 left unwritten only when its first size is 11: only the second run of
# the symbolic case sees it; the repro runs both sizes and names the element
planted drop 'op/aten\.add\.Tensor/f32/(symbolic|odd1d|scalar)' op/aten.add.Tensor/f32/symbolic \
  'run 2 of 2, s0 = 11:' \
  'out0: DIFFERS' \
  '[1, 6] (flat 13) is nan, expected'
if grep -E '^ +\[1, 6\] +13 +nan ' "$tmp/drop.repro" >/dev/null; then
  ok "drop: the worst-element table starts with [1, 6], flat 13, got nan"
else
  bad "drop: no worst-element row for [1, 6]:"; cat "$tmp/drop.repro"
fi

# supports() claims f16, compile refuses it: a FAIL, not "not supported"
planted f16claim 'op/aten\.add\.Tensor/(f16|f32)/scalar' op/aten.add.Tensor/f16/scalar \
  'supports() claimed everything this case needs, but compile refused it'

# a case's data is its id's: the same inputs whatever else is selected, and --write-case ID DIR
# writes the very files --write-cases does
"$conf" --write-cases "$tmp/w1" --filter 'op/aten\.add\.Tensor/f32/symbolic' >/dev/null 2>&1
"$conf" --write-cases "$tmp/w2" --filter 'op/aten\.(abs|add)\.' >/dev/null 2>&1
"$conf" --write-case op/aten.add.Tensor/f32/symbolic "$tmp/w3" >/dev/null 2>&1
d=op~aten.add.Tensor~f32~symbolic
same=1
for f in graph.coil inputs.safetensors inputs_1.safetensors expected.safetensors expected_1.safetensors case.json; do
  cmp -s "$tmp/w1/$d/$f" "$tmp/w2/$d/$f" && cmp -s "$tmp/w1/$d/$f" "$tmp/w3/$f" || { same=0; echo "  differs: $f"; }
done
[ $same -eq 1 ] && ok "a case's files are the same under two filters and from --write-case" ||
  bad "a case's files depend on what else is selected"
grep -q '"seed": ' "$tmp/w3/case.json" && grep -q '"guard_bytes": 64' "$tmp/w3/case.json" &&
  ok "case.json carries the seed and guard bytes" || bad "case.json lacks the seed or guard bytes: $(cat "$tmp/w3/case.json")"

# usage errors
"$conf" --plugin interp --repro op/aten.add.Tensor/f32/nosuch >"$tmp/u.out" 2>&1
[ $? -eq 2 ] && grep -q "no case has the id" "$tmp/u.out" && ok "an unknown id is a usage error" ||
  bad "an unknown --repro id: $(cat "$tmp/u.out")"
"$conf" --plugin interp --repro abi/load/-/- >"$tmp/u.out" 2>&1
[ $? -eq 2 ] && grep -q "expected the id of an op or model case" "$tmp/u.out" && ok "an abi id is refused with why" ||
  bad "--repro of an abi id: $(cat "$tmp/u.out")"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "every planted bug was reproduced by --repro"
