#!/usr/bin/env python3
"""fx_models.py COIL MODELS_DIR [--device cpu|cuda] [--filter REGEX] [--keep DIR]: the conformance
model cases through the fx plugin. Each graph.coil is compiled with `COIL compile --backend fx`,
its graph.py built (coil.fx's loading, done here without the package), and the module run in
PyTorch on the case's inputs and weights (bound by name through INPUTS), for every
inputs*/expected* pair; each output must have PyTorch's shape, dtype and dense strides, and values
within the model tier's tolerances for its dtype (rtol and atol of core/compare.c), NaN where
PyTorch has NaN; a static program called with its first input one row short must fail with
coil's error naming that input. On the CPU the modules' own fallback runs the kernels (Triton's interpreter, with
libdevice's functions through torch: graph.py's _kernel); TRITON_INTERPRET is left as it is. Needs
torch, triton, safetensors; prints a line a case and a summary; exit 1 on any failure."""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile


# the model tier's tolerances (core/compare.c: coil_tolerance_default): |got - want| <= atol +
# rtol * |want| element for element, NaN where PyTorch has NaN, infinities equal
TOL = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def mismatches(got, want):
    import torch
    rtol, atol = TOL[str(want.dtype).replace("torch.", "")]
    g, w = got.double(), want.double()
    ok = (g - w).abs() <= atol + rtol * w.abs()
    ok |= torch.isnan(g) & torch.isnan(w)
    ok |= torch.isinf(w) & (g == w)
    return int((~ok).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("coil")
    ap.add_argument("models")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep")
    a = ap.parse_args()
    import torch
    from safetensors.torch import load_file

    tmp = a.keep or tempfile.mkdtemp(prefix="coil-fx-models-")
    passed = failed = 0
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
        spec = importlib.util.spec_from_file_location("fx_models_" + name, os.path.join(out, "graph.py"))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
            gm = mod.build(a.device)
        except Exception as e:  # noqa: BLE001
            print("FAIL %-32s build: %s: %s" % (name, type(e).__name__, e))
            failed += 1
            continue
        weights = load_file(os.path.join(d, "weights.safetensors")) if os.path.exists(
            os.path.join(d, "weights.safetensors")) else {}
        cases = sorted(f[len("inputs"):-len(".safetensors")] for f in os.listdir(d)
                       if f.startswith("inputs") and f.endswith(".safetensors"))
        for suffix in cases:
            case = name + (suffix or "")
            ins = load_file(os.path.join(d, "inputs%s.safetensors" % suffix))
            want = load_file(os.path.join(d, "expected%s.safetensors" % suffix))
            try:
                args = [(weights if is_param else ins)[label].to(a.device) for _, label, is_param in mod.INPUTS]
                outs = gm(*args)
                if a.device == "cuda":
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print("FAIL %-32s run: %s: %s" % (case, type(e).__name__, str(e).strip().splitlines()[0][:200]))
                failed += 1
                continue
            bad = []
            if len(outs) != len(want):
                bad.append("%d outputs, PyTorch %d" % (len(outs), len(want)))
            for k in range(min(len(outs), len(want))):
                o, w = outs[k].cpu(), want["out%d" % k]
                if o.shape != w.shape or o.dtype != w.dtype:
                    bad.append("out%d is %s%s, PyTorch's %s%s" % (k, o.dtype, list(o.shape), w.dtype, list(w.shape)))
                    continue
                if o.numel() and not o.is_contiguous():
                    bad.append("out%d has strides %s, not dense" % (k, o.stride()))
                if o.dtype.is_floating_point:
                    n = mismatches(o, w)
                    if n:
                        bad.append("out%d differs beyond the model tier's tolerance at %d of %d elements" % (
                            k, n, o.numel()))
                elif not torch.equal(o, w):
                    bad.append("out%d differs (%d of %d elements)" % (k, int((o != w).sum()), o.numel()))
            if not bad and suffix == cases[0] and args and args[0].dim() and not any(
                    "symbol" in line for line in open(os.path.join(out, "program.wir"))):
                # a static program called with its first input one row short: a clear error
                try:
                    gm(args[0][:-1], *args[1:])
                    bad.append("an input one row short ran without an error")
                except RuntimeError as e:
                    if not str(e).startswith("coil: input %s (" % mod.INPUTS[0][0]):
                        bad.append("an input one row short: %r, not coil's error naming it" % str(e)[:160])
            if bad:
                print("FAIL %-32s %s" % (case, "; ".join(bad)))
                failed += 1
            else:
                print("pass %-32s" % case)
                passed += 1
    print("fx models on %s: %d passed, %d failed" % (a.device, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
