"""The cuda plugin's generated GEMM with B transposed (x @ w.t(): B stored [N, K] row-major, the
kernel's "bt" variant) and in bf16, against torch in float64, on the GPU machine: as
g7_gemm_check.py, each graph compiled and run by `coil run --backend cuda` (option gemm from
$COIL_CUDA_GEMM) on random inputs, compared element by element with the graph in float64; gemm.txt
must show the generated path with the expected variant words (bt, bf16) where it is wanted.
  usage: g7_gemm_tb_check.py COIL OUTDIR   (a line per check; exit 1 on a failure, 3 on a hang)"""
import os, subprocess, sys, time
import torch
from safetensors.torch import load_file, save_file

coil, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
failures = 0
DT = {"f16": torch.float16, "bf16": torch.bfloat16}


def gelu64(h):
    return 0.5 * h * (1.0 + torch.erf(h * 0.7071067811865476))


def graph(name, dt, ins, body, ret):
    text = "coil 1\ngraph g(" + ", ".join(f"%{n}: {dt}[{', '.join(map(str, s))}]" for n, s in ins) + ") {\n"
    text += "".join(f"  {l}\n" for l in body) + f"  return ({ret})\n}}\n"
    path = f"{out}/{name}.coil"
    open(path, "w").write(text)
    return path


def run(name, path, tensors, gemm):
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
    except subprocess.TimeoutExpired:
        print(f"check {name} (gemm={gemm}): TIMEOUT after 45 s (plan {plan or 'none'}): stopping", flush=True)
        sys.exit(3)
    log = c.stdout + c.stderr + r.stdout + r.stderr
    open(f"{out}/{name}.{gemm}.log", "w").write(log)
    if "not the generated GEMM" in log:
        plan += " [FELL BACK to cuBLAS at run time]"
    if r.returncode != 0:
        return None, plan, (c.stderr + r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
    return load_file(res)["out0"].cuda(), plan, "%.1f s" % (time.time() - t0)


def check(name, path, tensors, ref, gemm, want, tol):
    """want: None (no generated GEMM) or the words each planned kernel line must hold (e.g. 'bt')."""
    global failures
    got, plan, info = run(name, path, tensors, gemm)
    if got is None:
        print(f"check {name} (gemm={gemm}): run FAILED: {info} (plan {plan or 'none'})", flush=True)
        failures += 1
        return None
    g = got.double()
    rel = ((g - ref).norm() / ref.norm()).item()
    nan = int(torch.isnan(g).sum().item())
    mx = (g - ref).abs().max().item()
    took = bool(plan) and "FELL BACK" not in plan
    words_ok = True
    if want is not None and took:
        for seg in plan.split("kernel ")[1:]:
            ws = seg.split(" line ")[0].split()[3:]
            words_ok &= sorted(ws) == sorted(want.split())
    ok = rel <= tol and nan == 0 and took == (want is not None) and words_ok
    failures += not ok
    print(f"check {name} (gemm={gemm}): rel L2 {rel:.3e} (limit {tol:g}), max abs err {mx:.3g} of {ref.abs().max().item():.3g}, "
          f"{nan} NaN; generated GEMM: {plan or 'none'} (expected {'[' + want + ']' if want is not None else 'none'}) -> "
          f"{'ok' if ok else 'FAIL'}", flush=True)
    return got


gen = torch.Generator(device="cuda").manual_seed(4321)


def randn(dt, *s, scale=1.0):
    return (torch.randn(*s, generator=gen, device="cuda", dtype=torch.float64) * scale).to(DT[dt])


def gelu_case(name, dt, M, N, K, bt, gemm, want, tol):
    x = randn(dt, M, K)
    w = randn(dt, N, K, scale=2.0 / K ** 0.5) if bt else randn(dt, K, N, scale=2.0 / K ** 0.5)
    body = (["%wt = aten.t.default(%w)", "%h = aten.mm.default(%x, %wt)"] if bt else ["%h = aten.mm.default(%x, %w)"])
    p = graph(name, dt, [("x", [M, K]), ("w", [N, K] if bt else [K, N])], body + ["%y = aten.gelu.default(%h)"], "%y")
    wd = w.double().t() if bt else w.double()
    return check(name, p, {"x": x, "w": w}, gelu64(x.double() @ wd), gemm, want, tol), x, w


print(torch.cuda.get_device_name(), torch.__version__, flush=True)
T16, T16B = 1e-3, 4e-3  # f16; bf16 (8 bits of mantissa: output rounding ~1e-3 rel L2)
# transposed B, f16: the rule takes 4096^3 and the odd 4096 x 4000 x 4104; library none
g_tb, xt, wt = gelu_case("tb_gelu_4096", "f16", 4096, 4096, 4096, True, "auto", "bt", T16)
gelu_case("tb_gelu_4096", "f16", 4096, 4096, 4096, True, "library", None, T16)
gelu_case("tb_gelu_odd", "f16", 4096, 4000, 4104, True, "auto", "bt", T16)
for M, N, K in ((1, 8, 8), (130, 264, 72), (257, 520, 1000), (1999, 1032, 520)):
    gelu_case(f"tb_gelu_{M}x{N}x{K}", "f16", M, N, K, True, "generated", "bt", T16)
# bf16, B row-major and transposed
g_bf, xb, wb = gelu_case("bf_gelu_4096", "bf16", 4096, 4096, 4096, False, "auto", "bf16", T16B)
gelu_case("bf_gelu_4096", "bf16", 4096, 4096, 4096, False, "library", None, T16B)
gelu_case("bf_gelu_odd", "bf16", 4096, 4000, 4104, False, "auto", "bf16", T16B)
gelu_case("bftb_gelu_4096", "bf16", 4096, 4096, 4096, True, "auto", "bf16 bt", T16B)
for M, N, K in ((1, 8, 8), (130, 264, 72), (257, 520, 1000)):
    gelu_case(f"bf_gelu_{M}x{N}x{K}", "bf16", M, N, K, False, "generated", "bf16", T16B)
    gelu_case(f"bftb_gelu_{M}x{N}x{K}", "bf16", M, N, K, True, "generated", "bf16 bt", T16B)

# bit for bit, bf16 and f16-bt: the plain generated GEMM's product, then coil's gelu kernel on it,
# against the fused kernel's output on the same inputs
for tag, dt, x, w, fused, bt, words in (("bf", "bf16", xb, wb, g_bf, False, "bf16"), ("tb", "f16", xt, wt, g_tb, True, "bt")):
    body = ["%wt = aten.t.default(%w)", "%h = aten.mm.default(%x, %wt)"] if bt else ["%h = aten.mm.default(%x, %w)"]
    pm = graph(f"{tag}_mm", dt, [("x", [4096, 4096]), ("w", [4096, 4096])], body, "%h")
    prod, plan, info = run(f"{tag}_mm", pm, {"x": x, "w": w}, "generated")
    pg = graph(f"{tag}_gelu_only", dt, [("h", [4096, 4096])], ["%y = aten.gelu.default(%h)"], "%y")
    if prod is None or fused is None:
        print(f"check bitwise {tag}: a run FAILED: {info}", flush=True)
        failures += 1
        continue
    ref = x.double() @ (w.double().t() if bt else w.double())
    prel = ((prod.double() - ref).norm() / ref.norm()).item()
    unf, plan2, info2 = run(f"{tag}_gelu_only", pg, {"h": prod}, "auto")
    if unf is None:
        print(f"check bitwise {tag}: the gelu kernel's run FAILED: {info2}", flush=True)
        failures += 1
        continue
    diff = int((unf.view(torch.int16) != fused.view(torch.int16)).sum().item())
    ok = diff == 0 and prel < (T16B if dt == "bf16" else T16) and "FELL" not in plan and words in plan
    print(f"check bitwise {tag}: plain generated GEMM 4096^3 {dt} (plan {plan}) rel L2 {prel:.3e} vs float64; coil's gelu "
          f"kernel on its product vs the fused GEMM: {diff} of {unf.numel()} elements differ -> {'ok' if ok else 'FAIL'}",
          flush=True)
    failures += not ok

# addmm(b, x, w.t()), nn.Linear's form, f16 and bf16, 4096 x 2056 x 1032: cuBLASLt's BIAS epilogue
# under auto, the generated bt kernel with the bias folded under generated
for dt, tol, words in (("f16", T16, "bt"), ("bf16", T16B, "bf16 bt")):
    M, N, K = 4096, 2056, 1032
    x, w, b = randn(dt, M, K), randn(dt, N, K, scale=1.0 / K ** 0.5), randn(dt, N)
    p = graph(f"addmm_{dt}", dt, [("x", [M, K]), ("w", [N, K]), ("b", [N])],
              ["%wt = aten.t.default(%w)", "%y = aten.addmm.default(%b, %x, %wt)"], "%y")
    ref = x.double() @ w.double().t() + b.double()
    check(f"addmm_{dt}", p, {"x": x, "w": w, "b": b}, ref, "generated", words, tol)
    check(f"addmm_{dt}", p, {"x": x, "w": w, "b": b}, ref, "auto", None, tol)

# the MLP with nn.Linear weights, gelu(x @ w1.t()) @ w2.t(), f16 and bf16 at 4096^3
for dt, tol, words in (("f16", 2e-3, "bt"), ("bf16", 8e-3, "bf16 bt")):
    x, w1, w2 = randn(dt, 4096, 4096), randn(dt, 4096, 4096, scale=2.0 / 64), randn(dt, 4096, 4096, scale=1.0 / 64)
    p = graph(f"mlp_t_{dt}", dt, [("x", [4096, 4096]), ("w1", [4096, 4096]), ("w2", [4096, 4096])],
              ["%a = aten.t.default(%w1)", "%h = aten.mm.default(%x, %a)", "%g = aten.gelu.default(%h)",
               "%c = aten.permute.default(%w2, [1, 0])", "%y = aten.mm.default(%g, %c)"], "%y")
    ref = gelu64(x.double() @ w1.double().t()) @ w2.double().t()
    check(f"mlp_t_{dt}", p, {"x": x, "w1": w1, "w2": w2}, ref, "auto", words, tol)
    check(f"mlp_t_{dt}", p, {"x": x, "w1": w1, "w2": w2}, ref, "generated", words, tol)
print(f"{failures} failures", flush=True)
sys.exit(1 if failures else 0)
