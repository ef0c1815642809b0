"""gelu_variants.py LIB — times tools/device/gelu_variants.cu's kernels (LIB, a shared library with
coil's own kernel in it) against Inductor's compiled gelu(x*w+b), f32 8192 x 8192, in one process,
on the same tensors, each with triton's do_bench (L2 flushed, median). Each variant is first
checked against torch in float64. Rounds alternate over all of them; the table is the median of
the rounds' medians, with the copy (y.copy_(x)) as the bandwidth ceiling."""
import ctypes
import os
import statistics
import sys

import torch
import triton
from triton.testing import do_bench

N = 8192
lib = ctypes.CDLL(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
names = lib.gv_names
names.restype = ctypes.c_char_p
variants = names().decode().split() + os.environ.get("GV_EXTRA", "").split()  # GV_EXTRA: gelu_variants.sh's src*

torch.manual_seed(0)
x = torch.randn(N, N, device="cuda")
w = torch.randn(N, device="cuda")
b = torch.randn(N, device="cuda")
y = torch.empty_like(x)


def f(x, w, b):
    return torch.nn.functional.gelu(x * w + b)


g = torch.compile(f)
yi = g(x, w, b)
ref = f(x.double(), w.double(), b.double())
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
print(f"inductor vs f64: max abs err {(yi.double() - ref).abs().max().item():.2e}")


def launcher(name):
    fn = getattr(lib, "gv_" + name)
    fn.restype = ctypes.c_int
    args = [ctypes.c_void_p(t.data_ptr()) for t in (x, w, b, y)]

    def run():
        rc = fn(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc:
            raise SystemExit(f"{name}: launch failed ({rc})")

    return run


runs = {}
for v in variants:
    run = launcher(v)
    y.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    err = (y.double() - ref).abs().max().item()
    ok = err < 1e-4 and not torch.isnan(y).any().item()
    print(f"check {v:8} max abs err vs f64 {err:.2e} {'ok' if ok else 'FAIL'}")
    if ok:
        runs[v] = run
# GV_CUBINS="LABEL=CUBIN:KERNEL:THREADS:GRID ...": coil's NVRTC cubins (artifacts' k0.cubin, as the
# plugin runs them) launched through the driver API on the same tensors, checked and timed as above
cubins = os.environ.get("GV_CUBINS", "").split()
if cubins:
    cu = ctypes.CDLL("libcuda.so.1")
    vp, u32 = ctypes.c_void_p, ctypes.c_uint
    cu.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
    cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
    cu.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp, ctypes.POINTER(vp), vp]
    cptrs = [ctypes.c_uint64(t.data_ptr()) for t in (x, w, b, y)]
    cparams = (vp * 4)(*[ctypes.cast(ctypes.pointer(p), vp) for p in cptrs])
for spec in cubins:
    label, rest = spec.split("=", 1)
    path, kname, threads, grid = rest.split(":")
    mod, fn = vp(), vp()
    assert cu.cuModuleLoadData(ctypes.byref(mod), open(path, "rb").read()) == 0, path
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, kname.encode()) == 0, kname

    def run(fn=fn, mod=mod, threads=int(threads), grid=int(grid)):
        rc = cu.cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, 0, vp(torch.cuda.current_stream().cuda_stream), cparams, None)
        if rc:
            raise SystemExit(f"cuLaunchKernel: {rc}")

    y.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    err = (y.double() - ref).abs().max().item()
    ok = err < 1e-4 and not torch.isnan(y).any().item()
    print(f"check {label:8} ({threads} x grid {grid}) max abs err vs f64 {err:.2e} {'ok' if ok else 'FAIL'}")
    if ok:
        runs[label] = run
runs["inductor"] = lambda: g(x, w, b)
runs["copy"] = lambda: y.copy_(x)

times = {k: [] for k in runs}
for r in range(rounds):
    for k, run in runs.items():
        times[k].append(do_bench(run, warmup=25, rep=200, return_mode="median"))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"\n{'kernel':10} {'ms':>8} {'vs Inductor':>12} {'% of copy':>10}   rounds")
for k in runs:
    print(f"{k:10} {med[k]:8.4f} {med['inductor'] / med[k]:11.3f}x {100 * med['copy'] / med[k]:9.1f}%   "
          + " ".join(f"{t:.4f}" for t in times[k]))
