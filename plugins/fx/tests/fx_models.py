#!/usr/bin/env python3
"""fx_models.py COIL CASES_DIR [--device cpu|cuda] [--filter REGEX] [-j N] [--keep DIR]
[--deadline S]: cases
through the fx plugin. CASES_DIR holds a directory per case with graph.coil, inputs*.safetensors,
expected*.safetensors and maybe weights.safetensors: conformance/models (the model tier), or what
`coil-conformance --write-cases DIR` writes (the op tier; those also have case.json).

Each graph.coil is compiled with `COIL compile --backend fx`, its graph.py built (coil.fx's
loading, done here without the package), and the module run in PyTorch on the case's inputs and
weights (bound by name through INPUTS), for every inputs*/expected* pair. Each output must have
the expected shape and dtype, dense strides, and values that agree: model cases within the model
tier's tolerances (rtol and atol of core/compare.c), op cases by the op tier's rule (case.json:
NMSE under the dtype's threshold against the reference interpreter); integers and bools exactly;
NaN and Inf where expected. A static program called with its first input one row short must fail
with coil's error naming that input.

On the CPU the modules' own fallback runs the kernels (Triton's interpreter, with libdevice's
functions through torch: graph.py's _launch); TRITON_INTERPRET is left as it is. Needs torch,
triton, safetensors; prints a line a case and a summary; exit 1 on any failure.

--deadline S starts no case after S seconds (for a run with a time limit): the summary counts the
cases not run, and a run cut short exits 1 as a failing one does."""
import argparse
import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time


# the model tier's tolerances (core/compare.c: coil_tolerance_default): |got - want| <= atol +
# rtol * |want| element for element, NaN where PyTorch has NaN, infinities equal
TOL = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def disagreement(got, want, spec):
    """None when got agrees with want (both floating), else what differs"""
    import torch
    g, w = got.double(), want.double()
    special = torch.isnan(w) | torch.isinf(w) | torch.isnan(g) | torch.isinf(g)
    same = (torch.isnan(g) & torch.isnan(w)) | (torch.isinf(w) & (g == w))
    if bool((special & ~same).any()):
        return "NaN or Inf at %d elements where expected has none there (or the reverse)" % int((special & ~same).sum())
    dt = str(want.dtype).replace("torch.", "")
    if spec and spec.get("compare") == "nmse":
        g, w = g[~special], w[~special]
        err, ref = float(((g - w) ** 2).sum()), float((w ** 2).sum())
        nmse = err / ref if ref > 0 else err
        limit = spec["nmse_max"][dt]
        return None if nmse <= limit else "NMSE %.3g above %g for %s" % (nmse, limit, dt)
    rtol, atol = TOL[dt]
    ok = ((g - w).abs() <= atol + rtol * w.abs()) | same
    n = int((~ok).sum())
    return None if n == 0 else "differs beyond the model tier's tolerance at %d of %d elements" % (n, got.numel())


def run_case(coil, d, name, out, device):
    """(lines, passed, failed) of one case directory"""
    import torch
    from safetensors.torch import load_file

    # extern convolutions and matmuls run in PyTorch under its precision flags, as eager code does;
    # cuDNN's default TF32 for convolutions is far outside the f32 tolerances checked here
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    lines, passed, failed = [], 0, 0
    r = subprocess.run([coil, "compile", os.path.join(d, "graph.coil"), "--backend", "fx", "-o", out],
                       capture_output=True, text=True)
    if r.returncode:
        msg = (r.stderr or r.stdout).strip().splitlines()
        if r.returncode == 1 and any("not supported" in m or "UNSUPPORTED" in m for m in msg):
            return ["unsupported %-40s %s" % (name, msg[-1] if msg else "")], 0, 0
        return ["FAIL %-40s compile: %s" % (name, msg[-1] if msg else r.returncode)], 0, 1
    spec = None
    if os.path.exists(os.path.join(d, "case.json")):
        with open(os.path.join(d, "case.json")) as f:
            spec = json.load(f)
    mspec = importlib.util.spec_from_file_location("fx_case_" + re.sub(r"\W", "_", name), os.path.join(out, "graph.py"))
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[mspec.name] = mod
    try:
        mspec.loader.exec_module(mod)
        gm = mod.build(device)
    except Exception as e:  # noqa: BLE001
        return ["FAIL %-40s build: %s: %s" % (name, type(e).__name__, e)], 0, 1
    weights = load_file(os.path.join(d, "weights.safetensors")) if os.path.exists(
        os.path.join(d, "weights.safetensors")) else {}
    cases = sorted(f[len("inputs"):-len(".safetensors")] for f in os.listdir(d)
                   if f.startswith("inputs") and f.endswith(".safetensors"))
    with open(os.path.join(out, "program.wir")) as f:
        static = not any("symbol" in line for line in f)
    for suffix in cases:
        case = name + (suffix or "")
        ins = load_file(os.path.join(d, "inputs%s.safetensors" % suffix))
        want = load_file(os.path.join(d, "expected%s.safetensors" % suffix))
        try:
            args = [(weights if is_param else ins)[label].to(device) for _, label, is_param in mod.INPUTS]
            outs = gm(*args)
            if device == "cuda":
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            lines.append("FAIL %-40s run: %s: %s" % (case, type(e).__name__, str(e).strip().splitlines()[0][:200]))
            failed += 1
            continue
        bad = []
        if len(outs) != len(want):
            bad.append("%d outputs, expected %d" % (len(outs), len(want)))
        for k in range(min(len(outs), len(want))):
            o, w = outs[k].cpu(), want["out%d" % k]
            if o.shape != w.shape or o.dtype != w.dtype:
                bad.append("out%d is %s%s, expected %s%s" % (k, o.dtype, list(o.shape), w.dtype, list(w.shape)))
                continue
            if o.numel() and not o.is_contiguous():
                bad.append("out%d has strides %s, not dense" % (k, o.stride()))
            if o.dtype.is_floating_point:
                why = disagreement(o, w, spec)
                if why:
                    bad.append("out%d %s" % (k, why))
            elif not torch.equal(o, w):
                bad.append("out%d differs (%d of %d elements)" % (k, int((o != w).sum()), o.numel()))
        if not bad and suffix == cases[0] and static and args and args[0].dim() and args[0].shape[0] > 0:
            # a static program called with its first input one row short: a clear error
            try:
                gm(args[0][:-1], *args[1:])
                bad.append("an input one row short ran without an error")
            except RuntimeError as e:
                if not str(e).startswith("coil: input %s (" % mod.INPUTS[0][0]):
                    bad.append("an input one row short: %r, not coil's error naming it" % str(e)[:160])
        if bad:
            lines.append("FAIL %-40s %s" % (case, "; ".join(bad)))
            failed += 1
        else:
            lines.append("pass %-40s" % case)
            passed += 1
    return lines, passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("coil")
    ap.add_argument("cases")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--filter", default="")
    ap.add_argument("-j", type=int, default=1, help="cases at a time, each worker a process of its own")
    ap.add_argument("--keep")
    ap.add_argument("--deadline", type=float, default=0, help="seconds after which no case starts")
    a = ap.parse_args()
    t0 = time.monotonic()
    tmp = a.keep or tempfile.mkdtemp(prefix="coil-fx-cases-")
    os.makedirs(tmp, exist_ok=True)
    names = [n for n in sorted(os.listdir(a.cases))
             if os.path.isfile(os.path.join(a.cases, n, "graph.coil")) and re.search(a.filter, n)]
    jobs = [(a.coil, os.path.join(a.cases, n), n, os.path.join(tmp, n), a.device) for n in names]
    passed = failed = unsupported = 0

    def report(res):
        nonlocal passed, failed, unsupported
        lines, p, f = res
        for line in lines:
            print(line, flush=True)
        unsupported += sum(line.startswith("unsupported") for line in lines)
        passed, failed = passed + p, failed + f

    late = lambda: a.deadline and time.monotonic() - t0 > a.deadline  # noqa: E731
    notrun = 0
    if a.j > 1:  # spawned workers: a CUDA context does not survive fork
        ex = concurrent.futures.ProcessPoolExecutor(a.j, mp_context=multiprocessing.get_context("spawn"))
        pending, queued = set(), list(reversed(jobs))
        while queued or pending:
            while queued and len(pending) < 2 * a.j and not late():
                pending.add(ex.submit(run_case, *queued.pop()))
            if not pending:
                break
            finished, pending = concurrent.futures.wait(pending, timeout=5, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in finished:
                report(fut.result())
        notrun = len(queued)
        ex.shutdown(wait=True)
    else:
        for job in jobs:
            if late():
                notrun += 1
                continue
            report(run_case(*job))
    print("fx cases on %s: %d passed, %d failed, %d not supported%s" % (
        a.device, passed, failed, unsupported, ", %d not run (--deadline %g s)" % (notrun, a.deadline) if notrun else ""))
    return 1 if failed or notrun else 0


if __name__ == "__main__":
    sys.exit(main())
