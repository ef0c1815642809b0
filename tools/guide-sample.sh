#!/bin/bash
# guide-sample.sh — the sample report in docs/plugin-guide.md §5, made from the CSV of the
# conformance_template test (the template built out of tree, the whole suite), so the numbers
# the guide shows are the ones CI finds, never typed.
#
#   tools/guide-sample.sh CSV                 print the sample
#   tools/guide-sample.sh --update FILE CSV   replace the sample between FILE's markers
#   tools/guide-sample.sh --check FILE CSV    exit 1 if FILE's sample differs
set -euo pipefail
mode=print file=
case "${1:-}" in
--update|--check) mode=${1#--}; file=$2; shift 2 ;;
esac
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: $0 [--update FILE|--check FILE] TEMPLATE_CSV" >&2; exit 2; }
csv=$1
begin='<!-- sample: generated from conformance_template by tools/guide-sample.sh; do not edit -->'
end='<!-- end of sample -->'

sample() {
  echo "$begin"
  echo '```'
  # the console report's shape: tier totals, three op rows, the abi metadata line, the total
  awk -F, -v q='"' '
    function cell(op, dt,   k) { k = op SUBSEP dt
      return fail[k] ? "FAIL" : pass[k] ? "pass" : uns[k] ? "n/s" : "-" }
    NR == 1 { next }
    { t = $1; st = $5; n[t, st]++; total[st]++; all++
      if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
      if (t == "op") { k = $2 SUBSEP $3; if (st == "pass") pass[k] = 1; else if (st == "fail") fail[k] = 1;
                       else if (st == "unsupported") uns[k] = 1
                       if (!($2 in opseen)) { opseen[$2] = 1; ops[++nops] = $2 } }
      if (t == "abi" && $2 == "metadata") { m = $0; sub(/^[^"]*"/, "", m); sub(/"$/, "", m); meta = m } }
    END {
      printf "coil-conformance: plugin template 0.1.0 (…/libcoil_template.so), tiers op,model,abi,emit, 2 at a time\n"
      for (i = 1; i <= nt; i++) {
        t = order[i]
        printf "\n%s tier: %d pass, %d FAIL, %d not supported, %d skipped\n", t, n[t, "pass"], n[t, "fail"], n[t, "unsupported"], n[t, "skipped"]
        if (t == "op") {
          printf "\n%-50s %-8s %-8s %-8s %-8s %-8s\n", "op", "f32", "f16", "bf16", "i64", "bool"
          shown = 0
          for (o = 1; o <= nops && shown < 3; o++)
            if (ops[o] == "aten.abs.default" || ops[o] == "aten.add.Tensor" || ops[o] == "aten.sum.dim_IntList") {
              printf "%-50s %-8s %-8s %-8s %-8s %-8s\n", ops[o], cell(ops[o], "f32"), cell(ops[o], "f16"),
                     cell(ops[o], "bf16"), cell(ops[o], "i64"), cell(ops[o], "bool"); shown++ }
          printf "…\n"
        }
        if (t == "abi") printf "  %-28s %-7s %-14s  %s\n  …\n", "metadata", "", "pass", meta
      }
      printf "\n%s: %d cases: %d pass, %d FAIL, %d not supported, %d skipped\n", total["fail"] ? "FAILED" : "passed",
             all, total["pass"], total["fail"], total["unsupported"], total["skipped"]
    }' "$csv" | sed 's/ *$//'
  echo '```'
  echo "$end"
}

case $mode in
print) sample ;;
update|check)
  grep -qxF "$begin" "$file" && grep -qxF "$end" "$file" || { echo "guide-sample.sh: $file has no sample markers" >&2; exit 2; }
  new=$(mktemp)
  trap 'rm -f "$new"' EXIT
  awk -v b="$begin" -v e="$end" -v s="$(sample)" '
    $0 == b { print s; skip = 1; next }
    skip && $0 == e { skip = 0; next }
    !skip { print }' "$file" >"$new"
  if [ "$mode" = update ]; then
    cat "$new" >"$file"
  elif ! cmp -s "$new" "$file"; then
    echo "guide-sample.sh: the sample report in $file is out of date; regenerate it with" >&2
    echo "  tools/guide-sample.sh --update $file $csv" >&2
    diff -u "$file" "$new" | head -40 >&2 || true
    exit 1
  fi ;;
esac
