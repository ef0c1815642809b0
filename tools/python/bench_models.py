"""Side-by-side timings of coil and Inductor from PyTorch, one process, one run:

  per model of the model tier (tools/export/coil_export/models.py): forward time for eager,
  torch.compile default and reduce-overhead (Inductor), coil default and reduce-overhead, and the
  first-call compile time of Inductor and coil; and the host overhead of one call of a tiny graph
  (coil vs torch.compile default vs eager).

    python tools/python/bench_models.py [--device cuda] [--iters 200] [--json out.json] [--models mlp,gpt2]

Prints a markdown table and writes JSON. A model that fails under one compiler gets its error in
the table, not an abort. Times are medians of --iters calls after warm-up; on cuda each call is
timed with events around the call (the stream is the caller's; nothing synchronizes in between)."""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# `python3 tools/python/bench_models.py` puts tools/python first on the path, where the source
# copy of the package has no libcoil.so: use the installed package, the source one only without
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
try:
    import coil  # noqa: F401
except ImportError:
    sys.path.insert(0, HERE)
import torch  # noqa: E402

import coil  # noqa: E402
import coil.dynamo  # noqa: E402
from coil._printer import coil_export  # noqa: E402,F401
from coil_export import models  # noqa: E402

coil.dynamo.register()
if hasattr(torch.backends, "mha"):
    torch.backends.mha.set_fastpath_enabled(False)  # its fused op has no decomposition (docs/python.md)

# aot_eager's first call is Dynamo's and AOT autograd's tracing with the graph run eagerly: the part
# of a first call both compilers pay, which the table subtracts to give each compiler's own time
CONFIGS = [("eager", None, None), ("aot", "aot_eager", "default"),
           ("inductor", "inductor", "default"), ("inductor-ro", "inductor", "reduce-overhead"),
           ("coil", "coil", "default"), ("coil-ro", "coil", "reduce-overhead")]


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _time_calls(fn, args, device, iters):
    """Median milliseconds of one call."""
    for _ in range(5):
        fn(*args)
    _sync(device)
    times = []
    if device == "cuda":
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*args)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_model(make, device, iters):
    name, m, example, dynamic, extra = make()
    m = m.eval().to(device)
    args = tuple(t.to(device) for t in example)
    row = {"model": name}
    with torch.no_grad():
        for label, backend, mode in CONFIGS:
            torch._dynamo.reset()
            try:
                fallbacks = coil.dynamo.counters["fallbacks"]
                coil_s = coil.dynamo.counters["coil_compile_s"]
                if backend is None:
                    fn, compile_s = m, 0.0
                else:
                    # coil strict: a graph it cannot compile is an error here, never eager's time
                    kw = {"options": {"strict": True, "mode": mode}} if backend == "coil" else \
                        {"mode": None if mode == "default" else mode}
                    fn = torch.compile(m, backend=backend, **kw)
                    t0 = time.perf_counter()
                    fn(*args)
                    _sync(device)
                    compile_s = time.perf_counter() - t0
                row[label + "_ms"] = _time_calls(fn, args, device, iters)
                if backend is not None:
                    row[label + "_compile_s"] = compile_s
                if backend == "coil":  # of which coil's own compile (the rest: Dynamo, AOT autograd)
                    row[label + "_coil_s"] = coil.dynamo.counters["coil_compile_s"] - coil_s
                if backend == "coil" and coil.dynamo.counters["fallbacks"] != fallbacks:
                    row[label + "_note"] = "fell back to eager"
            except Exception as e:  # one compiler's failure is a table entry
                row[label + "_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
                traceback.print_exc(file=sys.stderr)
    return row


def host_overhead(device, iters):
    """Microseconds per call of a tiny graph (x + 1 on 16 floats), from Python, no sync between
    calls: the host's cost, since the device work is ~nothing. Besides eager, Inductor and coil
    through torch.compile, the parts: Dynamo alone (backend "eager": its guards and frame, the
    graph run eagerly), Dynamo and AOT autograd ("aot_eager"), and coil's compiled callable
    called directly, as Dynamo calls it (coil's own cost from Python)."""
    x = torch.randn(16, device=device)
    out = {}
    with torch.no_grad():
        for label, backend in [("eager", None), ("dynamo", "eager"), ("dynamo+aot", "aot_eager"),
                               ("inductor", "inductor"), ("coil", "coil"), ("coil-callable", "coil")]:
            torch._dynamo.reset()
            opts = {"options": {"strict": True}} if backend == "coil" else {}
            fn = (lambda t: t + 1) if backend is None else torch.compile(lambda t: t + 1, backend=backend, **opts)
            for _ in range(50):
                fn(x)
            if label == "coil-callable":
                fn = coil.dynamo.last_runner.unboxed()  # what Dynamo calls, called directly
            _sync(device)
            best = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn(x)
                _sync(device)
                best.append((time.perf_counter() - t0) / iters * 1e6)
            out[label + "_us"] = min(best)
    return out


def table(rows, device):
    head = ["model", "eager ms", "inductor ms", "inductor r-o ms", "coil ms", "coil r-o ms", "inductor 1st call s",
            "coil 1st call s", "Dynamo+AOT s", "coil's own s"]
    keys = ["eager_ms", "inductor_ms", "inductor-ro_ms", "coil_ms", "coil-ro_ms", "inductor_compile_s",
            "coil_compile_s", "aot_compile_s", "coil_coil_s"]
    lines = ["| %s |" % " | ".join(head), "|%s" % ("---|" * len(head))]
    for r in rows:
        cells = [r["model"]]
        for k in keys:
            label = k.rsplit("_", 2)[0] if k.endswith(("_compile_s", "_coil_s")) else k[:-3]
            if k in r:
                v = r[k]
                cells.append("%.3f" % v if k.endswith("_ms") else "%.2f" % v)
                if r.get(label + "_note") and k.endswith("_ms"):
                    cells[-1] += " (eager fallback)"
            elif label + "_error" in r:
                cells.append("error")
            else:
                cells.append("-")
        lines.append("| %s |" % " | ".join(cells))
    errors = ["- %s, %s: %s" % (r["model"], k[:-6], v) for r in rows for k, v in r.items() if k.endswith("_error")]
    return "\n".join(["device: %s, torch %s" % (device, torch.__version__)] + lines + errors)


def cold_caches():
    """First calls compile from nothing: Inductor's and Triton's caches in fresh directories (a
    machine that ran this before would hand Inductor its FX graphs and kernels), and coil's too."""
    import tempfile
    root = tempfile.mkdtemp(prefix="bench-caches-")
    for var, sub in [("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton"),
                     ("COIL_CACHE_DIR", "coil")]:
        os.environ[var] = os.path.join(root, sub)
    return root


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--json", default="bench_models.json")
    ap.add_argument("--models", default="", help="comma-separated function names of models.py (default: all)")
    a = ap.parse_args(argv)
    print("compiler caches (cold): %s" % cold_caches(), file=sys.stderr)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    want = set(filter(None, a.models.split(",")))
    rows = []
    for make in models.ALL:
        if want and make.__name__ not in want:
            continue
        try:
            rows.append(bench_model(make, a.device, a.iters))
        except ImportError as e:
            rows.append({"model": make.__name__, "eager_error": "skipped: %s" % e})
        print(json.dumps(rows[-1]), file=sys.stderr)
    overhead = host_overhead(a.device, 2000)
    result = {"device": a.device, "gpu": torch.cuda.get_device_name() if a.device == "cuda" else None,
              "torch": torch.__version__, "rows": rows, "host_overhead": overhead,
              "coil_counters": dict(coil.dynamo.counters)}
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    print(table(rows, a.device))
    print()
    print("host overhead per call of a tiny graph (x + 1, 16 floats): " +
          ", ".join("%s %.1f us" % (k[:-3], v) for k, v in overhead.items()))
    print("JSON: %s" % a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
