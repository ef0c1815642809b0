"""Side-by-side table of one run of tools/device/cuda_side_by_side.sh: Inductor's JSON
(inductor_baseline.py) and one or more `coil bench --backend cuda --json` files (the median of
them per number). Prints Markdown for docs/benchmarks.md.

Like with like: the anchor times with triton.testing.do_bench, whose default statistic is the
mean of its calls, so coil's side is the mean of its calls too (kernel_mean_ms, graph_mean_ms),
with the median beside it; a coil JSON from before 2026-12-04 has medians only, and the table
says so. Both sides' % copy are against one roofline, the faster of the two copy measures
(torch's copy_ and coil's cuMemcpyDtoDAsync)."""
import json, statistics, sys

args = sys.argv[1:]
tuned = None
if "--tuned" in args:
    i = args.index("--tuned")
    tuned = json.load(open(args[i + 1]))
    del args[i:i + 2]
ind = json.load(open(args[0]))
coils = [json.load(open(f)) for f in args[1:]]
trows = {r["name"]: r for r in tuned["rows"]} if tuned else {}
irows = {r["name"]: r for r in ind["rows"]}
means = all("kernel_mean_ms" in r for c in coils for r in c["rows"])
kkey, gkey = ("kernel_mean_ms", "graph_mean_ms") if means else ("kernel_ms", "graph_ms")

def med(name, key):
    vals = [r[key] for c in coils for r in c["rows"] if r["name"] == name]
    return statistics.median(vals) if vals else float("nan")

copy_c = statistics.median(c["copy_GBps"] for c in coils)
roof = max(ind["copy_GBps"], copy_c)
print(f"GPU: {ind['device']} (coil: {coils[0]['device']}), {coils[0]['date']}; torch {ind['torch']}, triton {ind['triton']}")
print(f"copy bandwidth: {ind['copy_GBps']:.0f} GB/s (torch), {copy_c:.0f} GB/s (coil's measure); % copy against {roof:.0f}; "
      f"coil = median of {len(coils)} runs of {'the mean of its calls, as do_bench' if means else 'the MEDIAN of its calls (an old coil bench: do_bench gives means)'}\n")
print("| graph | Inductor ms | coil ms | Inductor/coil | coil median ms | coil max-autotune ms | Inductor % copy | coil % copy "
      "| TFLOP/s Ind / coil | cudagraph ms Ind / coil | host µs/call Ind / coil | coil graphs µs/call | compile Ind s / coil ms "
      "| coil cache hit ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name, r in irows.items():
    k = med(name, kkey)
    mb = r["min_bytes"]
    ip = 100 * mb / (r["inductor_ms"] * 1e-3) / 1e9 / roof if mb else None
    cp = 100 * mb / (k * 1e-3) / 1e9 / roof if mb else None
    tf = f"{r['tflops']:.0f} / {r['tflops'] * r['inductor_ms'] / k:.0f}" if r["tflops"] else "–"
    pct = lambda v: f"{v:.0f} %" if v is not None else "–"
    tk = f"{trows[name][kkey]:.4f}" if name in trows and kkey in trows[name] else "–"
    print(f"| {name} | {r['inductor_ms']:.4f} | {k:.4f} | {r['inductor_ms'] / k:.2f} | {med(name, 'kernel_ms'):.4f} | {tk} "
          f"| {pct(ip)} | {pct(cp)} | {tf} "
          f"| {r['cudagraph_ms']:.4f} / {med(name, gkey):.4f} | {r['wall_call_us']:.1f} / {med(name, 'call_us'):.1f} "
          f"| {med(name, 'graph_call_us'):.1f} | {r['compile_s']:.2f} / {med(name, 'core_ms') + med(name, 'cold_ms'):.0f} "
          f"| {med(name, 'hit_ms'):.2f} |")
