"""The coil bench graphs three ways in one process, on the GPU machine: torch.compile with Inductor,
with coil's fx backend (torch.compile(fn, backend="coil", options={"backend": "fx"}): coil's
schedule as a GraphModule launching Triton kernels), and with coil's cuda plugin. The graphs and
sizes are those of ../shared/anchors/inductor_baseline.py and tools/device/g1_inductor.py.

Per graph and path: the call's time (triton.testing.do_bench: host and GPU), the time of its
kernels alone (torch.profiler: the GPU time of every kernel and copy of 20 calls, divided by 20),
the number of kernels a call launches, and the largest difference from eager. The issue's ratio
is fx kernels / Inductor kernels (same language, same GPU, same run).

    python3 tools/device/g4_fx_bench.py [--only NAME,...] [--json FILE] [--device cpu]
Needs the coil package installed (tools/device/g2_gpu.sh install). --device cpu is a smoke test of
the script (the fx path then runs Triton's interpreter; no kernel times)."""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

import coil.dynamo

coil.dynamo.register()  # where the package's entry point is not installed (a checkout)

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
f16 = torch.float16
R = lambda *s, dt=torch.float32: torch.randn(*s, device=dev, dtype=dt)  # noqa: E731
U = lambda *s: torch.rand(*s, device=dev) * 2 - 1  # noqa: E731


def small_chain(x):
    for _ in range(10):
        x = torch.sin(x) * 1.01 + 0.1
    return x


def small_8mm(x, w):
    for _ in range(8):
        x = torch.relu(x @ w)
    return x


def embedding_layernorm(ids, wte, wpe, w, b):
    h = F.embedding(ids, wte) + F.embedding(torch.arange(1024, device=ids.device), wpe)
    return h, F.layer_norm(h, (768,), w, b, 1e-5)


def conv_bn_relu_maxpool(x, w, g, bb, rm, rv):
    c = F.conv2d(x, w, None, 1, 1)
    n = F.batch_norm(c, rm, rv.abs(), g, bb, False, 0.1, 1e-5)
    return F.max_pool2d(F.relu(n), 3, 2, 1)


GRAPHS = [
    ("pointwise_gelu_affine", lambda x, w, b: F.gelu(x * w + b), lambda: (R(8192, 8192), R(8192), R(8192))),
    ("softmax_lastdim", lambda x: torch.softmax(x, -1), lambda: (R(8192, 4096),)),
    ("layernorm", lambda x, w, b: F.layer_norm(x, (4096,), w, b), lambda: (R(8192, 4096), R(4096), R(4096))),
    ("sum_dim1", lambda x: x.sum(1), lambda: (R(16384, 8192),)),
    ("rmsnorm_residual_fp16",
     lambda x, r, w: ((x + r) * torch.rsqrt((x + r).float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(f16) * w,
     lambda: (R(8192, 4096, dt=f16), R(8192, 4096, dt=f16), R(4096, dt=f16))),
    ("mlp_fp16", lambda x, w1, w2: F.gelu(x @ w1) @ w2,
     lambda: (R(4096, 4096, dt=f16), R(4096, 4096, dt=f16), R(4096, 4096, dt=f16))),
    ("attention_fp16", lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1) @ v,
     lambda: (R(8, 16, 1024, 64, dt=f16), R(8, 16, 1024, 64, dt=f16), R(8, 16, 1024, 64, dt=f16))),
    ("small_chain_10ops_1k", small_chain, lambda: (R(1024),)),
    ("small_8mm_64", small_8mm, lambda: (R(64, 64), R(64, 64))),
    ("embedding_layernorm", embedding_layernorm,
     lambda: (torch.randint(0, 50257, (8, 1024), device=dev), U(50257, 768), U(1024, 768), U(768), U(768))),
    ("conv_bn_relu_maxpool", conv_bn_relu_maxpool,
     lambda: (U(8, 64, 56, 56), U(64, 64, 3, 3), U(64), U(64), U(64), U(64))),
    ("cumsum_rows", lambda x: torch.cumsum(x, 1), lambda: (U(4096, 4096),)),
]


def gpu_time(f, args, calls=20):
    """(GPU microseconds of a call's kernels and copies, kernels a call launches)"""
    if dev != "cuda":
        return float("nan"), float("nan")
    f(*args)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(calls):
            f(*args)
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    us = sum(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0) for e in evs)
    return us / calls, len(evs) / calls


def cpu_bench(f, calls=3):
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls * 1e3


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


def first(x):
    return x[-1] if isinstance(x, (tuple, list)) else x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    global dev
    dev = a.device
    only = set(filter(None, a.only.split(",")))
    rows = []
    for name, fn, make in GRAPHS:
        if only and name not in only:
            continue
        args = make()
        ref = first(fn(*args)).float()
        row = {"name": name}
        for path, compile_ in [("inductor", lambda: torch.compile(fn)),
                               ("fx", lambda: torch.compile(fn, backend="coil", options={"backend": "fx"})),
                               ("cuda", lambda: torch.compile(fn, backend="coil"))]:
            torch._dynamo.reset()
            try:
                f = compile_()
                sync()
                t0 = time.perf_counter()
                out = first(f(*args))
                sync()
                row[path + "_compile_s"] = time.perf_counter() - t0
                row[path + "_err"] = (out.float() - ref).abs().max().item()
                row[path + "_ms"] = do_bench(lambda: f(*args), warmup=25, rep=100) if dev == "cuda" else cpu_bench(
                    lambda: f(*args))
                row[path + "_kernel_us"], row[path + "_launches"] = gpu_time(f, args)
            except Exception as e:  # noqa: BLE001
                row[path + "_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
        if "fx_kernel_us" in row and row.get("inductor_kernel_us"):
            row["fx_kernels_vs_inductor"] = row["fx_kernel_us"] / row["inductor_kernel_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n%-24s %10s %10s %10s | %9s %9s %9s | %6s %6s %6s | %8s" % (
        "graph", "ind kern", "fx kern", "cuda kern", "ind ms", "fx ms", "cuda ms", "ind n", "fx n", "cuda n",
        "fx/ind"))
    for r in rows:
        g = lambda k, f="%10.1f": f % r[k] if k in r else "%10s" % "-"  # noqa: E731
        print("%-24s %s %s %s | %s %s %s | %s %s %s | %s" % (
            r["name"], g("inductor_kernel_us"), g("fx_kernel_us"), g("cuda_kernel_us"),
            g("inductor_ms", "%9.4f"), g("fx_ms", "%9.4f"), g("cuda_ms", "%9.4f"),
            g("inductor_launches", "%6.0f"), g("fx_launches", "%6.0f"), g("cuda_launches", "%6.0f"),
            g("fx_kernels_vs_inductor", "%8.3f")))
        for k in r:
            if k.endswith("_error"):
                print("    %s: %s" % (k, r[k]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name() if dev == "cuda" else "cpu", torch=torch.__version__, triton=triton.__version__,
                           date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/inductor-cache-g4")
    main()
