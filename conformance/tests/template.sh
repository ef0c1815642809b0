#!/bin/bash
# conformance_template: installs this build into a temporary prefix, builds
# plugin-sdk/template out of tree against it (tools/kit-test.sh), and runs the whole suite on
# the result. The template claims few ops: most op cases are "not supported"; none may fail.
set -euo pipefail
build=$1 conf=$2 csv=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
built=$(bash "$src/tools/kit-test.sh" "$build" | tail -n 4)
compat13=$(sed -n 1p <<<"$built") compat=$(sed -n 2p <<<"$built") mini=$(sed -n 3p <<<"$built") so=$(sed -n 4p <<<"$built")
[ -f "$so" ] && [ -f "$compat" ] && [ -f "$compat13" ] && [ -f "$mini" ] ||
  { echo "template.sh: kit-test.sh gave no plugins" >&2; exit 1; }
"$conf" --plugin "$so" -j 2 --csv "$csv"
passed=$(grep -c ',pass,' "$csv")
[ "$passed" -gt 100 ] || { echo "template.sh: only $passed cases passed; expected the template's ops to run" >&2; exit 1; }
# every unclaimed op of a model is named, not only the first
grep -E '^model,m01_mlp,.*not claimed: .*, .*' "$csv" >/dev/null ||
  { echo "template.sh: the model tier should list every unclaimed op of m01_mlp:" >&2; grep '^model,m01_mlp' "$csv" >&2; exit 1; }
echo "template.sh: the out-of-tree template passes ($passed cases)"
# the ABI 1.4 device checks pass on host memory (a host-visible device)
for check in devices device_memory device_run device_async_error; do
  grep -q "^abi,$check,.*,pass," "$csv" ||
    { echo "template.sh: abi/$check does not pass on the template:" >&2; grep "^abi,$check," "$csv" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# on its fake device (device = fake): every case's tensors go through mem_alloc and mem_copy,
# guard bytes and unaligned starts included; the same cases pass
printf '[plugin.template]\ndevice = fake\n' >"$tmp/fake.ini"
"$conf" --plugin "$so" --config "$tmp/fake.ini" -j 2 --csv "$tmp/fake.csv" >"$tmp/fake.out" 2>&1 ||
  { echo "template.sh: the template fails on its fake device:" >&2; tail -30 "$tmp/fake.out" >&2; exit 1; }
fake_passed=$(grep -c ',pass,' "$tmp/fake.csv")
[ "$fake_passed" -eq "$passed" ] ||
  { echo "template.sh: $fake_passed cases pass on the fake device, $passed on host memory" >&2; exit 1; }
grep -q '^abi,devices,.*,pass,.*not host-visible' "$tmp/fake.csv" ||
  { echo "template.sh: the fake device should not be host-visible:" >&2; grep '^abi,devices' "$tmp/fake.csv" >&2; exit 1; }
echo "template.sh: the template passes on its fake device too ($fake_passed cases, every tensor placed through the ABI)"

# built against plugin ABI 1.3 (the previous minor: no devices), run by this host
"$conf" --plugin "$compat13" -j 2 --tier abi,op --filter '^(abi/|op/aten\.(add\.Tensor|relu\.default|mul\.Tensor)/f32/)' \
  --csv "$tmp/compat13.csv" >"$tmp/compat13.out" 2>&1 || { echo "template.sh: the ABI 1.3 template fails:" >&2; tail -20 "$tmp/compat13.out" >&2; exit 1; }
grep -q '^abi,metadata,.*,pass,.*ABI 1\.3' "$tmp/compat13.csv" ||
  { echo "template.sh: the ABI 1.3 build does not report ABI 1.3:" >&2; grep '^abi,metadata' "$tmp/compat13.csv" >&2; exit 1; }
grep -q '^abi,device_run,.*,skipped,' "$tmp/compat13.csv" ||
  { echo "template.sh: the ABI 1.3 build has no devices; device_run should be skipped:" >&2; grep '^abi,device_run' "$tmp/compat13.csv" >&2; exit 1; }
n=$(grep -c '^op,.*,pass,' "$tmp/compat13.csv")
[ "$n" -ge 20 ] || { echo "template.sh: the ABI 1.3 template passed only $n op cases" >&2; exit 1; }
echo "template.sh: the template built for plugin ABI 1.3 loads and passes on this host ($n op cases, abi tier)"

# built against plugin ABI 1.1 (the previous minor), run by this host: the abi tier and the
# template's own ops pass
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
