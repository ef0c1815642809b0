"""The cuda plugin's generated GEMM (plugins/cuda/cuda_gemm.c) against torch in float64, on the GPU
machine: each graph compiled and run by `coil run --backend cuda` (a subprocess, option gemm from
$COIL_CUDA_GEMM) on random inputs, its output compared element by element with the same graph in
float64; which lines took the generated GEMM is read from the artifact's gemm.txt. Then the
bit-for-bit check: gelu(x @ w) fused must equal coil's unfused gelu kernel applied to the generated
GEMM's own f16 product (two runs of coil on that product).
  usage: g7_gemm_check.py COIL OUTDIR   (prints a line per check, exits 1 on a failure)"""
import os, subprocess, sys, time
import torch
from safetensors.torch import load_file, save_file

coil, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
f16 = torch.float16
failures = 0


def gelu64(h):
    return 0.5 * h * (1.0 + torch.erf(h * 0.7071067811865476))


def graph(name, ins, body, ret):
    text = "coil 1\ngraph g(" + ", ".join(f"%{n}: f16[{', '.join(map(str, s))}]" for n, s in ins) + ") {\n"
    text += "".join(f"  {l}\n" for l in body) + f"  return ({ret})\n}}\n"
    path = f"{out}/{name}.coil"
    open(path, "w").write(text)
    return path


def run(name, path, tensors, gemm):
    """coil compile (for gemm.txt) and coil run with option gemm; the output and the plan."""
    inp = f"{out}/{name}.in.safetensors"
    save_file({k: v.contiguous().cpu() for k, v in tensors.items()}, inp)
    env = dict(os.environ, COIL_CUDA_GEMM=gemm)
    art = f"{out}/art_{name}_{gemm}"
    subprocess.run(["rm", "-rf", art])
    c = subprocess.run([coil, "compile", path, "--backend", "cuda", "-o", art], env=env, capture_output=True, text=True,
                       timeout=60)
    plan = ""
    if os.path.exists(f"{art}/gemm.txt"):
        plan = " ".join(l.strip() for l in open(f"{art}/gemm.txt") if not l.startswith("#"))
    res = f"{out}/{name}.{gemm}.out.safetensors"
    t0 = time.time()
    try:
        r = subprocess.run([coil, "run", art, "--inputs", inp, "--out", res], env=env, capture_output=True, text=True,
                           timeout=45)
    except subprocess.TimeoutExpired:  # a hang: the rest would hang too, and the device time is short
        print(f"check {name} (gemm={gemm}): TIMEOUT after 45 s (plan {plan or 'none'}): stopping", flush=True)
        sys.exit(3)
    log = c.stdout + c.stderr + r.stdout + r.stderr
    open(f"{out}/{name}.{gemm}.log", "w").write(log)
    if "not the generated GEMM" in log:  # the run's checks sent a planned line to cuBLAS (a warning)
        plan += " [FELL BACK to cuBLAS at run time]"
    if r.returncode != 0:
        return None, plan, (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
    return load_file(res)["out0"].cuda(), plan, "%.1f s" % (time.time() - t0)


def check(name, path, tensors, ref, gemm, want_gemm, tol):
    global failures
    got, plan, info = run(name, path, tensors, gemm)
    if got is None:
        print(f"check {name} (gemm={gemm}): run FAILED: {info}")
        failures += 1
        return None
    g = got.double()
    rel = ((g - ref).norm() / ref.norm()).item()
    nan = int(torch.isnan(g).sum().item())
    mx = (g - ref).abs().max().item()
    took = bool(plan) and "FELL BACK" not in plan
    ok = rel <= tol and nan == 0 and took == want_gemm
    failures += not ok
    print(f"check {name} (gemm={gemm}): rel L2 {rel:.3e} (limit {tol:g}), max abs err {mx:.3g} of {ref.abs().max().item():.3g}, "
          f"{nan} NaN; generated GEMM: {plan or 'none'} (expected {'yes' if want_gemm else 'none'}) -> {'ok' if ok else 'FAIL'}")
    return got


gen = torch.Generator(device="cuda").manual_seed(1234)


def randn(*s, scale=1.0):
    return (torch.randn(*s, generator=gen, device="cuda", dtype=torch.float64) * scale).to(f16)


def gelu_case(name, M, N, K, gemm, want):
    x, w = randn(M, K), randn(K, N, scale=2.0 / K ** 0.5)  # the product ~ N(0, 4): gelu's curved part
    p = graph(name, [("x", [M, K]), ("w", [K, N])], ["%h = aten.mm.default(%x, %w)", "%y = aten.gelu.default(%h)"], "%y")
    ref = gelu64(x.double() @ w.double())
    return check(name, p, {"x": x, "w": w}, ref, gemm, want, 1e-3), x, w


print(torch.cuda.get_device_name(), torch.__version__, flush=True)
# the rule takes 4096^3 (512 tiles, K 4096) and the odd 4096 x 4000 x 4104 (512 tiles); it refuses
# 1999 x 1032 x 520 (80 tiles, K 520), which gemm = generated still takes (one tile a CTA: the
# register epilogue alone)
g_auto, x, w = gelu_case("gelu_4096", 4096, 4096, 4096, "auto", True)
gelu_case("gelu_4096", 4096, 4096, 4096, "library", False)
gelu_case("gelu_odd", 4096, 4000, 4104, "auto", True)
gelu_case("gelu_small", 1999, 1032, 520, "auto", False)
gelu_case("gelu_small", 1999, 1032, 520, "generated", True)
# edges under gemm = generated: one row and the narrowest N and K (TMA's zero fill past the box),
# partial tiles everywhere
for M, N, K in ((1, 8, 8), (130, 264, 72), (257, 520, 1000)):
    gelu_case(f"gelu_{M}x{N}x{K}", M, N, K, "generated", True)

# bit for bit: the generated GEMM's plain f16 product, then coil's own gelu kernel on it, against
# the fused kernel's output on the same x and w
pm = graph("mm_4096", [("x", [4096, 4096]), ("w", [4096, 4096])], ["%h = aten.mm.default(%x, %w)"], "%h")
prod, plan, info = run("mm_4096", pm, {"x": x, "w": w}, "generated")
pg = graph("gelu_only", [("h", [4096, 4096])], ["%y = aten.gelu.default(%h)"], "%y")
if prod is not None and g_auto is not None:
    ref = (x.double() @ w.double())
    prel = ((prod.double() - ref).norm() / ref.norm()).item()
    unf, plan2, info2 = run("gelu_only", pg, {"h": prod}, "auto")
    if unf is None:
        print(f"check bitwise: the gelu kernel's run FAILED: {info2}")
        failures += 1
    else:
        diff = int((unf.view(torch.int16) != g_auto.view(torch.int16)).sum().item())
        mx = (unf.double() - g_auto.double()).abs().max().item()
        print(f"check bitwise: plain generated GEMM 4096^3 (plan {plan}) rel L2 {prel:.3e} vs float64; coil's gelu kernel on "
              f"its product vs the fused GEMM: {diff} of {unf.numel()} elements differ (max abs {mx:.3g}) -> "
              f"{'ok' if diff == 0 and prel < 1e-3 and 'FELL' not in plan else 'FAIL'}")
        failures += not (diff == 0 and prel < 1e-3 and "FELL" not in plan)
else:
    print(f"check bitwise: the plain GEMM's run FAILED: {info}")
    failures += 1

# an epilogue with a bias (x1), a per-row scale (x0) and a residual around a tanh, 4096 x 2056 x
# 1032 (288 tiles, the last column of tiles partial: both epilogue paths), under gemm = generated
M, N, K = 4096, 2056, 1032
x, w, b, r, s = randn(M, K), randn(K, N, scale=1.0 / K ** 0.5), randn(N), randn(M, N), randn(M, 1)
pe = graph("epi", [("x", [M, K]), ("w", [K, N]), ("b", [N]), ("r", [M, N]), ("s", [M, 1])],
           ["%h = aten.mm.default(%x, %w)", "%a = aten.add.Tensor(%h, %b)", "%t = aten.tanh.default(%a)",
            "%u = aten.mul.Tensor(%t, %s)", "%y = aten.add.Tensor(%u, %r)"], "%y")
ref = torch.tanh(x.double() @ w.double() + b.double()) * s.double() + r.double()
check("epi", pe, {"x": x, "w": w, "b": b, "r": r, "s": s}, ref, "generated", True, 3e-3)
# (288 tiles, K 1032 and a body cuBLASLt's epilogues cannot do: the rule takes it under auto too)
check("epi", pe, {"x": x, "w": w, "b": b, "r": r, "s": s}, ref, "auto", True, 3e-3)

# the benchmark's MLP, gelu(x @ w1) @ w2 at 4096^3 (the second mm has no kernel after it: cuBLASLt)
x, w1, w2 = randn(4096, 4096), randn(4096, 4096, scale=2.0 / 64), randn(4096, 4096, scale=1.0 / 64)
pm = graph("mlp", [("x", [4096, 4096]), ("w1", [4096, 4096]), ("w2", [4096, 4096])],
           ["%h = aten.mm.default(%x, %w1)", "%g = aten.gelu.default(%h)", "%y = aten.mm.default(%g, %w2)"], "%y")
ref = gelu64(x.double() @ w1.double()) @ w2.double()
check("mlp", pm, {"x": x, "w1": w1, "w2": w2}, ref, "auto", True, 2e-3)
check("mlp", pm, {"x": x, "w1": w1, "w2": w2}, ref, "generated", True, 2e-3)
print(f"{failures} failures", flush=True)
sys.exit(1 if failures else 0)
