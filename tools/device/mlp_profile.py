"""The MLP benchmark graph (gelu(x @ w1) @ w2, f16 4096^3) through torch.compile, Inductor and
coil in one process: do_bench medians in alternating rounds, then torch.profiler over five calls
of each: every GPU kernel's start, duration and the gap since the previous kernel ended, to see
where a call's time goes besides its kernels. Run with tools/device/g2_gpu.sh run."""
import torch
import torch.nn.functional as F
from triton.testing import do_bench

import coil  # noqa: F401  (registers the backend)

R = lambda: torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
x, w1, w2 = R(), R(), R()
fn = lambda x, w1, w2: F.gelu(x @ w1) @ w2
fs = {"inductor": torch.compile(fn), "coil": torch.compile(fn, backend="coil")}
with torch.no_grad():
    ref = fn(x, w1, w2)
    for name, f in fs.items():
        y = f(x, w1, w2)
        print(name, "max |diff| vs eager", (y.float() - ref.float()).abs().max().item())
    for r in range(3):
        print("round %d: " % r + ", ".join("%s %.4f ms" % (n, do_bench(lambda: f(x, w1, w2), warmup=25, rep=200,
                                                                   return_mode="median")) for n, f in fs.items()))
    for name, f in fs.items():
        for _ in range(3):
            f(x, w1, w2)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                f(x, w1, w2)
            torch.cuda.synchronize()
        ev = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
        print("==", name, "(%d GPU events)" % len(ev))
        prev = None
        t0 = ev[0].time_range.start if ev else 0
        for e in ev[-12:]:
            s, d = e.time_range.start, e.time_range.elapsed_us()
            print("  %-50s +%9.1f us  %7.1f us  gap %6.1f us" % (e.name[:50], s - t0, d, s - prev if prev else 0))
            prev = s + d
