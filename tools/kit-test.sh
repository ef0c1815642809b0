#!/usr/bin/env bash
# kit-test.sh BUILD_DIR — tests the out-of-tree plugin kit from a built coil tree:
#   1. installs BUILD_DIR into a fresh temporary prefix (cmake --install);
#   2. checks that the prefix holds the SDK: include/coil/ headers, libcoil_wir.a and
#      libcoil_sdk.a, the CMake package (lib/cmake/coil/coilConfig.cmake and friends), the coil
#      tool and the in-tree plugins;
#   3. configures and builds plugin-sdk/template out of tree against that prefix only
#      (find_package(coil) through CMAKE_PREFIX_PATH), with -Wall -Wextra -Werror, and checks
#      that the plugin exports nothing but coil_plugin_entry;
#   3b. builds the same template against plugin ABI 1.1's and 1.3's frozen headers
#      (plugin-sdk/compat/abi-1.1, abi-1.3) and the prefix: plugins built for older minors,
#      1.3 being the one before this host's;
#   3c. builds docs/plugin-abi.md's "A minimal plugin" block, as printed there, with -Werror;
#   4. smoke test with the installed coil: the template's example graph gives the reference
#      interpreter's results, on host memory and on the template's fake device, a graph with a
#      reduction is refused as not supported, and the MLP example runs split across the template
#      (its kernels, fake device) and cpu (the matmuls), with the partition in --dump.
# Prints the paths of the built libcoil_template_abi13.so, libcoil_template_abi11.so,
# libcoil_mini.so and libcoil_template.so as the last four lines of stdout; everything else
# goes to stderr. Exits non-zero on any failure. The temporary directory holding the prefix and
# the build is removed on failure and kept on success (the printed plugin lives in it).
set -euo pipefail

die() { echo "kit-test: error: $*" >&2; exit 1; }
say() { echo "kit-test: $*" >&2; }

[[ $# -eq 1 ]] || die "usage: tools/kit-test.sh BUILD_DIR"
build=$(cd "$1" 2>/dev/null && pwd) || die "no directory $1"
[[ -f $build/CMakeCache.txt ]] || die "$build is not a configured CMake build directory"
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
template=$src/plugin-sdk/template
[[ -f $template/CMakeLists.txt ]] || die "no template at $template"

work=$(mktemp -d "${TMPDIR:-/tmp}/coil-kit.XXXXXX")
passed=0
trap '[[ $passed == 1 ]] || rm -rf "$work"' EXIT
prefix=$work/prefix

# ---- 1. install ----
say "installing $build into $prefix"
cmake --install "$build" --prefix "$prefix" >&2 || die "cmake --install $build failed"

# ---- 2. what the prefix must hold ----
missing=()
for f in coil_plugin.h coil_sdk.h base.h wir.h sym.h arena.h strbuf.h dtypes.def kops.def; do
  [[ -f $prefix/include/coil/$f ]] || missing+=("include/coil/$f")
done
# lib/ is CMAKE_INSTALL_LIBDIR: lib64 or lib/<multiarch> on some systems
config=$(find "$prefix" -path '*/cmake/coil/coilConfig.cmake' -print -quit)
if [[ -z $config ]]; then
  missing+=("lib/cmake/coil/coilConfig.cmake")
else
  cmakedir=${config%/coilConfig.cmake}
  libdir=${cmakedir%/cmake/coil}
  for f in coilConfigVersion.cmake coilTargets.cmake coilPluginHelpers.cmake; do
    [[ -f $cmakedir/$f ]] || missing+=("${cmakedir#"$prefix"/}/$f")
  done
  for f in libcoil_wir.a libcoil_sdk.a; do
    [[ -f $libdir/$f ]] || missing+=("${libdir#"$prefix"/}/$f")
  done
fi
for f in bin/coil lib/coil/plugins/libcoil_interp.so lib/coil/plugins/libcoil_cpu.so; do
  [[ -f $prefix/$f ]] || missing+=("$f")
done
((${#missing[@]} == 0)) || die "the installed prefix $prefix lacks: ${missing[*]}"
say "the prefix holds the headers, libraries and CMake package"

# ---- 3. the template, out of tree, against the prefix alone ----
tbuild=$work/template
say "building $template in $tbuild"
cmake -S "$template" -B "$tbuild" -DCMAKE_PREFIX_PATH="$prefix" -DCOIL_TEMPLATE_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2 || die "configuring the template failed"
found=$(sed -n 's/^coil_DIR:PATH=//p' "$tbuild/CMakeCache.txt")
[[ $found == "$cmakedir" ]] || die "find_package(coil) found '$found', not $cmakedir"
cmake --build "$tbuild" -j2 >&2 || die "building the template failed"
plugin=$tbuild/libcoil_template.so
[[ -f $plugin ]] || die "the template build made no $plugin"
if command -v nm >/dev/null; then
  exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | tr '\n' ' ')
  [[ $exported == "coil_plugin_entry " ]] ||
    die "the plugin should export only coil_plugin_entry, it exports: $exported"
fi

# ---- 3b. the template against the previous ABI minor's header ----
cbuild=$work/template-abi11
say "building the template against plugin ABI 1.1's header in $cbuild"
cmake -S "$src/plugin-sdk/compat/abi-1.1" -B "$cbuild" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2 || die "configuring the ABI 1.1 template failed"
cmake --build "$cbuild" -j2 >&2 || die "building the template against ABI 1.1 failed"
compat=$cbuild/libcoil_template_abi11.so
[[ -f $compat ]] || die "the ABI 1.1 build made no $compat"
# and against the minor just before this host's (1.3: no devices yet)
c13build=$work/template-abi13
say "building the template against plugin ABI 1.3's header in $c13build"
cmake -S "$src/plugin-sdk/compat/abi-1.3" -B "$c13build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2 || die "configuring the ABI 1.3 template failed"
cmake --build "$c13build" -j2 >&2 || die "building the template against ABI 1.3 failed"
compat13=$c13build/libcoil_template_abi13.so
[[ -f $compat13 ]] || die "the ABI 1.3 build made no $compat13"

# ---- 3c. plugin-abi.md's minimal plugin, exactly as the page prints it ----
mini=$work/mini
mkdir -p "$mini"
awk '/^## A minimal plugin/ {s = 1} s && /^```c$/ {c = 1; next} c && /^```$/ {exit} c' \
  "$src/docs/plugin-abi.md" >"$mini/mini.c"
[[ -s $mini/mini.c ]] || die "no c block under '## A minimal plugin' in docs/plugin-abi.md"
cat >"$mini/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(mini C)
set(CMAKE_C_STANDARD 11)
add_compile_options(-Wall -Wextra -Werror)
find_package(coil 0.1 REQUIRED)
coil_add_plugin(TARGET mini NAME mini SOURCES mini.c)
CMAKE
cmake -S "$mini" -B "$mini/build" -DCMAKE_PREFIX_PATH="$prefix" >&2 || die "configuring the minimal plugin failed"
cmake --build "$mini/build" >&2 || die "docs/plugin-abi.md's minimal plugin does not build with -Werror"
[[ -f $mini/build/libcoil_mini.so ]] || die "the minimal plugin's build made no libcoil_mini.so"

# ---- 4. smoke test: run on the template and on the reference interpreter ----
coil=$prefix/bin/coil
smoke() ( # run coil in the work directory, with no ini file and no cache of the caller's
  cd "$work" && env -u COIL_CONFIG COIL_PLUGIN_PATH="$tbuild" "$coil" "$@"
)
smoke run "$template/example.coil" --backend ref --seed 1 --size rows=5 --out "$work/ref.st" >&2 ||
  die "coil run on the reference interpreter failed"
smoke run "$template/example.coil" --backend template --no-cache --seed 1 --size rows=5 \
  --expect "$work/ref.st" >&2 || die "the template's results differ from the reference's"
cat > "$work/reduction.coil" <<'GRAPH'
coil 1
graph reduction(%x: f32[4, 8]) {
  %s = aten.sum.dim_IntList(%x, [1])
  return (%s)
}
GRAPH
if out=$(smoke run "$work/reduction.coil" --backend template --no-cache 2>&1); then
  die "the template ran a reduction; it should refuse it as not supported"
fi
[[ $out == *UNSUPPORTED*"not supported"* ]] ||
  die "a reduction should be refused as not supported, got: $out"
say "the template runs the example graph and refuses a reduction"
# the same on its fake device (ABI 1.4): the host places every tensor through mem_alloc/mem_copy
printf '[plugin.template]\ndevice = fake\n' >"$work/fake.ini"
smoke run "$template/example.coil" --config "$work/fake.ini" --backend template --no-cache --seed 1 \
  --size rows=5 --expect "$work/ref.st" >&2 || die "the template on its fake device differs from the reference"
say "the template runs the example graph on its fake device"
# partial offload: the MLP example, its library calls (mm) on cpu and the kernels the template
# claims on the template's fake device, against the reference
mlp=$src/examples/mlp.coil
smoke run "$mlp" --backend ref --weights "$src/examples/mlp.weights.safetensors" \
  --inputs "$src/examples/mlp.inputs.safetensors" --out "$work/mlp-ref.st" >&2 ||
  die "coil run of the MLP example on the reference interpreter failed"
smoke run "$mlp" --config "$work/fake.ini" --backend template,cpu --no-cache \
  --weights "$src/examples/mlp.weights.safetensors" --inputs "$src/examples/mlp.inputs.safetensors" \
  --expect "$work/mlp-ref.st" >&2 || die "the MLP example split across template and cpu differs from the reference"
smoke compile "$mlp" --backend template,cpu --dump "$work/mlp-dump" >"$work/mlp-plan.txt" ||
  die "coil compile --backend template,cpu --dump failed"
grep -q 'transfer buf0: cpu -> template' "$work/mlp-dump/partition.txt" && grep -q '^part 1 on template' "$work/mlp-plan.txt" ||
  die "the MLP's partition should move buf0 from cpu to the template: $(cat "$work/mlp-plan.txt")"
say "the MLP example runs split across template (fake device) and cpu"

passed=1
echo "$compat13"
echo "$compat"
echo "$mini/build/libcoil_mini.so"
echo "$plugin"
