"""The decompose-K table from tools/device/decompose_k.sh's JSON: coil bench per setting (median of
the rounds) and PyTorch's side (decompose_k.py). Usage: decompose_k_table.py DIR"""
import glob, json, os, statistics, sys

d = sys.argv[1]
coil = {}  # (graph, setting) -> [ms]
for f in glob.glob(os.path.join(d, "coil_*_*.json")):
    setting = os.path.basename(f)[5:].rsplit("_", 1)[0]
    for r in json.load(open(f))["rows"]:
        coil.setdefault((r["name"], setting), []).append(r["kernel_ms"])
med = {k: statistics.median(v) for k, v in coil.items()}
tj = os.path.join(d, "torch.json")
torch_rows = {r["name"]: r for r in json.load(open(tj))["rows"]} if os.path.exists(tj) else {}
settings = ["off", "auto", "4", "8", "16", "32", "64"]
print("coil bench --backend cuda --decompose-k SETTING (ms, median of rounds):\n")
print("| graph | " + " | ".join(settings) + " |")
print("|---|" + "---|" * len(settings))
for g in sorted({k[0] for k in med}):
    print(f"| {g} | " + " | ".join(f"{med[(g, s)]:.4f}" if (g, s) in med else "–" for s in settings) + " |")
print("\nPyTorch (do_bench, ms): torch.mm, the eager decomposition (best slice count), Inductor default and "
      "max-autotune-no-cudagraphs (decomposes: whether its code holds a bmm), and coil against them:\n")
print("| graph | torch.mm | eager decompose best | Inductor | Inductor max-autotune | coil off | coil auto | "
      "Inductor / coil auto | Ind. max-autotune / coil auto |")
print("|---|---|---|---|---|---|---|---|---|")
for g, r in sorted(torch_rows.items()):
    eager = [(r[k], k[8:-3]) for k in r if k.startswith("eager_dk") and k.endswith("_ms") and r[k]]
    best = min(eager) if eager else None
    ind, mx = r.get("inductor_default_ms"), r.get("inductor_max-autotune-no-cudagraphs_ms")
    c_off, c_auto = med.get((g, "off")), med.get((g, "auto"))
    f = lambda x: f"{x:.4f}" if x else "–"
    ratio = lambda a, b: f"{a / b:.2f}" if a and b else "–"
    print(f"| {g} | {f(r['torch_mm_ms'])} | {f(best[0]) + ' (' + best[1] + ')' if best else '–'} | {f(ind)} | "
          f"{f(mx)}{' (decomposes)' if r.get('inductor_max-autotune-no-cudagraphs_decomposes') else ''} | "
          f"{f(c_off)} | {f(c_auto)} | {ratio(ind, c_auto)} | {ratio(mx, c_auto)} |")
