#!/bin/bash
# conformance_template: installs this build into a temporary prefix, builds
# plugin-sdk/template out of tree against it (tools/kit-test.sh), and runs the whole suite on
# the result. The template claims few ops: most op cases are "not supported"; none may fail.
set -euo pipefail
build=$1 conf=$2 csv=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
so=$(bash "$src/tools/kit-test.sh" "$build" | tail -n 1)
[ -f "$so" ] || { echo "template.sh: kit-test.sh gave no plugin" >&2; exit 1; }
"$conf" --plugin "$so" -j 2 --csv "$csv"
passed=$(grep -c ',pass,' "$csv")
[ "$passed" -gt 100 ] || { echo "template.sh: only $passed cases passed; expected the template's ops to run" >&2; exit 1; }
echo "template.sh: the out-of-tree template passes ($passed cases)"
