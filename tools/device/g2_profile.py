"""Where a model's forward time goes under Inductor and under coil, on the GPU machine: the CUDA
kernels of 20 forward calls (torch.profiler), per compiler the number of launches per call, the
kernels' total time per call and the ten most expensive kernels.

    python3 tools/device/g2_profile.py small_cnn [mobilenet ...] [--mode reduce-overhead]

Run after the package is installed (tools/device/g2_gpu.sh). Prints a plain-text report."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import coil.dynamo  # noqa: E402
from coil_export import models  # noqa: E402

CALLS = 20


def kernels(fn, args):
    with torch.no_grad():
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS):
                fn(*args)
            torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    return rows


def main(argv):
    mode = "default"
    if "--mode" in argv:
        mode = argv[argv.index("--mode") + 1]
        argv = [a for a in argv if a not in ("--mode", mode)]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in argv:
        make = getattr(models, name)
        label, m, example, _, _ = make()
        m = m.eval().cuda()
        args = tuple(t.cuda() for t in example)
        for backend in ("inductor", "coil"):
            torch._dynamo.reset()
            kw = {"options": {"strict": True, "mode": mode}} if backend == "coil" else \
                {"mode": None if mode == "default" else mode}
            fn = torch.compile(m, backend=backend, **kw)
            rows = kernels(fn, args)
            launches = sum(r.count for r in rows) / CALLS
            total = sum(r.device_time_total for r in rows) / CALLS
            print("%s %s (%s): %.1f kernel launches per call, %.1f us of kernels per call" % (
                label, backend, mode, launches, total))
            for r in sorted(rows, key=lambda r: -r.device_time_total)[:10]:
                print("   %8.1f us/call  x%-5.1f %s" % (r.device_time_total / CALLS, r.count / CALLS, r.key[:110]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
