#!/bin/bash
# On the GPU machine's host CPU (the `device` tool), from the repository root: a row-sum
# micro-benchmark (tools/device/rowsum_bench.c), then `coil bench` and Inductor's CPU baseline
# (../shared/anchors/inductor_cpu_baseline2.py) alternating for three rounds, all pinned to two
# cores with taskset. The machine has none of our Debian packages: build here and carry .deps/
# holding coil (build/tools/coil), plugins/ (libcoil_cpu.so, libcoil_interp.so), lib/ (libcjson,
# libinih, libxxhash, libopenblas and its libgfortran/libquadmath) and a copy of the Inductor
# script. Log: $OUT/side_by_side2.log. docs/benchmarks.md has the results.
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.deps/lib COIL_PLUGIN_PATH=$PWD/.deps/plugins
log=$OUT/side_by_side2.log
{ date -u; lscpu | grep -E "Model name|^CPU\(s\)|L3"; } >"$log" 2>&1
gcc -O3 -march=native -fopenmp tools/device/rowsum_bench.c -o /tmp/sb2 >>"$log" 2>&1
for k in 1 2; do taskset -c 0,1 /tmp/sb2 >>"$log" 2>&1; done
for round in 1 2 3; do
  echo "=== round $round: coil" >>"$log"
  taskset -c 0,1 .deps/coil bench >>"$log" 2>&1
  echo "=== round $round: inductor 1 thread" >>"$log"
  taskset -c 0 python3 .deps/inductor_cpu_baseline2.py 1 >>"$log" 2>&1
  echo "=== round $round: inductor 2 threads" >>"$log"
  taskset -c 0,1 python3 .deps/inductor_cpu_baseline2.py 2 >>"$log" 2>&1
done
echo "=== round 4: coil" >>"$log"
taskset -c 0,1 .deps/coil bench >>"$log" 2>&1
