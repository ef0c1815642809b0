#!/bin/bash
# conformance_template: installs this build into a temporary prefix, builds
# plugin-sdk/template out of tree against it (tools/kit-test.sh), and runs the whole suite on
# the result. The template claims few ops: most op cases are "not supported"; none may fail.
set -euo pipefail
build=$1 conf=$2 csv=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
built=$(bash "$src/tools/kit-test.sh" "$build" | tail -n 3)
compat=$(sed -n 1p <<<"$built") mini=$(sed -n 2p <<<"$built") so=$(sed -n 3p <<<"$built")
[ -f "$so" ] && [ -f "$compat" ] && [ -f "$mini" ] || { echo "template.sh: kit-test.sh gave no plugins" >&2; exit 1; }
"$conf" --plugin "$so" -j 2 --csv "$csv"
passed=$(grep -c ',pass,' "$csv")
[ "$passed" -gt 100 ] || { echo "template.sh: only $passed cases passed; expected the template's ops to run" >&2; exit 1; }
# every unclaimed op of a model is named, not only the first
grep -E '^model,m01_mlp,.*not claimed: .*, .*' "$csv" >/dev/null ||
  { echo "template.sh: the model tier should list every unclaimed op of m01_mlp:" >&2; grep '^model,m01_mlp' "$csv" >&2; exit 1; }
echo "template.sh: the out-of-tree template passes ($passed cases)"

# built against plugin ABI 1.1 (the previous minor), run by this host: the abi tier and the
# template's own ops pass
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$conf" --plugin "$compat" -j 2 --tier abi,op --filter '^(abi/|op/aten\.(add\.Tensor|relu\.default|mul\.Tensor)/f32/)' \
  --csv "$tmp/compat.csv" >"$tmp/compat.out" 2>&1 || { echo "template.sh: the ABI 1.1 template fails:" >&2; tail -20 "$tmp/compat.out" >&2; exit 1; }
grep -q '^abi,metadata,.*,pass,.*ABI 1\.1' "$tmp/compat.csv" ||
  { echo "template.sh: the ABI 1.1 build does not report ABI 1.1:" >&2; grep '^abi,metadata' "$tmp/compat.csv" >&2; exit 1; }
n=$(grep -c '^op,.*,pass,' "$tmp/compat.csv")
[ "$n" -ge 20 ] || { echo "template.sh: the ABI 1.1 template passed only $n op cases" >&2; exit 1; }
echo "template.sh: the template built for plugin ABI 1.1 loads and passes on this host ($n op cases, abi tier)"

# docs/plugin-abi.md's minimal plugin passes the abi tier
"$conf" --plugin "$mini" -j 2 --tier abi --csv "$tmp/mini.csv" >"$tmp/mini.out" 2>&1 ||
  { echo "template.sh: the minimal plugin of docs/plugin-abi.md fails the abi tier:" >&2; tail -20 "$tmp/mini.out" >&2; exit 1; }
echo "template.sh: docs/plugin-abi.md's minimal plugin builds with -Werror and passes the abi tier"
