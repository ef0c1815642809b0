"""G7, 2026-12-02b: coil's rmsnorm cubin and Inductor's compiled rmsnorm in one PyTorch process, on
the same tensors, timed under several L2 flushes and loop forms, to see whether the way `coil bench`
flushes (cuMemsetD8Async of 256 MiB before each call, the calls queued) reads a kernel's time
differently from triton's do_bench (cache.zero_(), a fill kernel). Also the events with nothing
between them after each flush. Usage: python3 g7_flush_probe.py ARTIFACT_DIR (from `coil compile` of
the rmsnorm graph; the kernel k0 of its kernels.cu, the block size of its plans.txt)."""
import ctypes, os, re, statistics, sys
import torch
from triton.testing import do_bench

art = sys.argv[1]
src = open(os.path.join(art, "kernels.cu")).read()
kname = re.search(r'extern "C" __global__[^\n]*\n(\w+)\(', src).group(1)
threads = int(open(os.path.join(art, "plans.txt")).read().split()[2])
f16 = torch.float16


def f(x, r, w):
    return ((x + r) * torch.rsqrt((x + r).float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(f16) * w


torch.manual_seed(0)
x, r = (torch.randn(8192, 4096, device="cuda", dtype=f16) for _ in range(2))
w = torch.randn(4096, device="cuda", dtype=f16)
g = torch.compile(f)
yi = g(x, r, w)
torch.cuda.synchronize()

cu = ctypes.CDLL("libcuda.so.1")
vp, u32 = ctypes.c_void_p, ctypes.c_uint
cu.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
cu.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp, ctypes.POINTER(vp), vp]
cu.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, vp]
cu.cuMemsetD32Async.argtypes = [ctypes.c_uint64, u32, ctypes.c_size_t, vp]
mod, fn = vp(), vp()
assert cu.cuModuleLoadData(ctypes.byref(mod), open(os.path.join(art, "k0.cubin"), "rb").read()) == 0
assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, kname.encode()) == 0
yc = torch.empty_like(x)
ptrs = [ctypes.c_uint64(t.data_ptr()) for t in (x, r, w, yc)]
params = (vp * 4)(*[ctypes.cast(ctypes.pointer(p), vp) for p in ptrs])
stream = vp(torch.cuda.current_stream().cuda_stream)


def coil():
    rc = cu.cuLaunchKernel(fn, 8192, 1, 1, threads, 1, 1, 0, stream, params, None)
    assert rc == 0, rc


coil()
torch.cuda.synchronize()
ref = f(x.double(), r.double(), w.double())
rel = lambda y: ((y.double() - ref).norm() / ref.norm()).item()
print(f"kernel {kname}, {threads} threads; rel err vs f64: coil {rel(yc):.2e}, inductor {rel(yi):.2e}; "
      f"torch {torch.__version__}; x {x.data_ptr():#x} r {r.data_ptr():#x} y {yc.data_ptr():#x}")

cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")  # as triton's do_bench
nb = cache.numel() * 4
flushes = {
    "zero_": lambda i: cache.zero_(),
    "fill_i": lambda i: cache.fill_(i % 251 + 1),
    "d8_i": lambda i: cu.cuMemsetD8Async(cache.data_ptr(), i & 255, nb, stream),
    "d8_0": lambda i: cu.cuMemsetD8Async(cache.data_ptr(), 0, nb, stream),
    "d32_i": lambda i: cu.cuMemsetD32Async(cache.data_ptr(), 0x01010101 * (i & 255), nb // 4, stream),
}
kernels = {"coil": coil, "inductor": lambda: g(x, r, w), "empty": lambda: None}


def timeit(k, fl, sync_each, reps=200, warm=20):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for i in range(warm):
        fl(i), k()
    for i in range(reps):
        fl(i)
        ev[i][0].record()
        k()
        ev[i][1].record()
        if sync_each:
            ev[i][1].synchronize()
    torch.cuda.synchronize()
    t = [a.elapsed_time(b) * 1e3 for a, b in ev]
    return statistics.median(t), statistics.mean(t)


res = {}
for rnd in range(2):
    for fname, fl in flushes.items():
        for se in (False, True):
            for kn, k in (kernels.items() if rnd == 0 else reversed(list(kernels.items()))):
                res.setdefault((fname, se, kn), []).append(timeit(k, fl, se))
print("us, median (mean) of 200, two rounds; queued = calls queued ahead as do_bench and coil bench do, "
      "sync = synchronized on each closing event as rms_variants.sh's harness")
print(f"{'flush':8} {'loop':6} " + " ".join(f"{k:>26}" for k in kernels))
for fname in flushes:
    for se in (False, True):
        cells = [" / ".join(f"{m:5.2f} ({a:5.2f})" for m, a in res[(fname, se, kn)]) for kn in kernels]
        print(f"{fname:8} {'sync' if se else 'queued':6} " + " ".join(f"{c:>26}" for c in cells))
for i in range(2):
    print("do_bench (zero_ flush) mean / median, us: coil %.2f / %.2f, inductor %.2f / %.2f" % (
        do_bench(coil, warmup=25, rep=100) * 1e3, do_bench(coil, warmup=25, rep=100, return_mode="median") * 1e3,
        do_bench(lambda: g(x, r, w), warmup=25, rep=100) * 1e3,
        do_bench(lambda: g(x, r, w), warmup=25, rep=100, return_mode="median") * 1e3))
