"""What PyTorch's tools make of the fx plugin's GraphModules, per model case of conformance/models:
print_readable() (node names as the Wrapper IR's), torch.export.export of the loaded module (the
kernel launches must appear as triton_kernel_wrapper nodes, and the exported program must give
the module's outputs), and torch.compile of the module itself (Inductor compiling coil's graph
further; the same outputs within the model tier's tolerances).

    python3 tools/device/g4_export.py COIL MODELS_DIR [--device cuda] [--filter REGEX]
A line per case and check; exit 1 if any fails."""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file


def close(a, b):
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.dtype.is_floating_point:
        return torch.equal(a, b)
    return torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-5, equal_nan=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("coil")
    ap.add_argument("models")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    # f32 at f32 precision: cuDNN's default TF32 differs between eager and Inductor's choices
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    tmp = tempfile.mkdtemp(prefix="coil-g4-export-")
    failed = 0
    for name in sorted(os.listdir(a.models)):
        d = os.path.join(a.models, name)
        if not os.path.isfile(os.path.join(d, "graph.coil")) or not re.search(a.filter, name):
            continue
        out = os.path.join(tmp, name)
        r = subprocess.run([a.coil, "compile", os.path.join(d, "graph.coil"), "--backend", "fx", "-o", out],
                           capture_output=True, text=True)
        if r.returncode:
            print("FAIL %-32s compile: %s" % (name, (r.stderr or r.stdout).strip().splitlines()[-1]))
            failed += 1
            continue
        spec = importlib.util.spec_from_file_location("g4_export_" + name, os.path.join(out, "graph.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        gm = mod.build(a.device)
        weights = load_file(os.path.join(d, "weights.safetensors")) if os.path.exists(
            os.path.join(d, "weights.safetensors")) else {}
        ins = load_file(os.path.join(d, "inputs.safetensors"))
        args = tuple((weights if p else ins)[label].to(a.device) for _, label, p in mod.INPUTS)
        want = gm(*args)

        text = gm.print_readable(print_output=False)
        kernels = [line.split()[1] for line in open(os.path.join(out, "program.wir"))
                   if line.startswith("kernel ")]
        missing = [k for k in kernels if k not in text]
        print("%s %-32s print_readable: %d lines, %d kernels named%s" % (
            "FAIL" if missing else "pass", name, text.count("\n"), len(kernels) - len(missing),
            ", missing " + ", ".join(missing[:3]) if missing else ""))
        failed += bool(missing)

        try:
            ep = torch.export.export(gm, args)
            wrapped = sum("triton_kernel_wrapper" in str(n.target) for n in ep.graph.nodes)
            got = ep.module()(*args)
            ok = wrapped >= len(kernels) and len(got) == len(want) and all(close(g, w) for g, w in zip(got, want))
            print("%s %-32s torch.export: %d nodes, %d triton_kernel_wrapper (%d kernels), outputs %s" % (
                "pass" if ok else "FAIL", name, len(ep.graph.nodes), wrapped, len(kernels),
                "equal" if ok else "differ or are missing"))
            failed += not ok
        except Exception as e:  # noqa: BLE001
            print("FAIL %-32s torch.export: %s: %s" % (name, type(e).__name__, str(e).strip().splitlines()[0][:200]))
            failed += 1

        try:
            torch._dynamo.reset()
            got = torch.compile(gm)(*args)
            ok = len(got) == len(want) and all(close(g, w) for g, w in zip(got, want))
            print("%s %-32s torch.compile(gm): outputs %s" % ("pass" if ok else "FAIL", name,
                                                               "agree" if ok else "differ"))
            failed += not ok
        except Exception as e:  # noqa: BLE001
            print("FAIL %-32s torch.compile(gm): %s: %s" % (name, type(e).__name__,
                                                            str(e).strip().splitlines()[0][:200]))
            failed += 1
    print("g4_export: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
