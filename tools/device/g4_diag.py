"""Where a case's GraphModule on the GPU parts from the same module in Triton's interpreter
(its CPU fallback) and from the expected outputs: per output, the number of elements that differ
and the first few with their indices. Then the same with variants of kernels.py (a helper swapped
for another formulation), to find which construct the GPU compiles differently.

    python3 tools/device/g4_diag.py COIL CASE_DIR [CASE_DIR ...]"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file

VARIANTS = {
    "max_inline": [(r"(?<!def )_coil_max\(", "tl.maximum(")],
    "floordiv_float": [(r"_coil_floordiv\(", "_dbg_floordiv(")],
    "mod_float": [(r"_coil_mod\(", "_dbg_mod(")],
    "both_float": [(r"_coil_floordiv\(", "_dbg_floordiv("), (r"_coil_mod\(", "_dbg_mod(")],
    "xblock_1": [(r"return max\(1, min\(64, 4096 // rb\)\), rb", "return 1, rb")],
}
HELPERS = '''

@triton.jit
def _dbg_floordiv(a, b):
    return tl.floor(a.to(tl.float64) / b).to(tl.int64)


@triton.jit
def _dbg_mod(a, b):
    return a - b * tl.floor(a.to(tl.float64) / b).to(tl.int64)
'''
n_mod = 0


def run(art, case, device):
    global n_mod
    n_mod += 1
    spec = importlib.util.spec_from_file_location("g4_diag_%d" % n_mod, os.path.join(art, "graph.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    ins = load_file(os.path.join(case, "inputs.safetensors"))
    args = [ins[label].to(device) for _, label, _ in mod.INPUTS]
    outs = mod.build(device)(*args)
    return [o.detach().cpu() for o in outs]


def report(tag, got, ref, want):
    for k, (g, r, w) in enumerate(zip(got, ref, want)):
        bad = ~((g.double() == r.double()) | (torch.isnan(g.double()) & torch.isnan(r.double())))
        n = int(bad.sum())
        print("  %-16s out%d: %d of %d elements differ from the interpreter%s" % (
            tag, k, n, g.numel(), "" if n else " (none)"))
        for idx in bad.nonzero()[:8].tolist():
            print("      at %s: gpu %r interpreter %r expected %r" % (
                idx, g[tuple(idx)].item(), r[tuple(idx)].item(), w[tuple(idx)].item()))


def main():
    coil = sys.argv[1]
    for case in sys.argv[2:]:
        name = os.path.basename(case.rstrip("/"))
        art = tempfile.mkdtemp(prefix="g4-diag-")
        subprocess.run([coil, "compile", os.path.join(case, "graph.coil"), "--backend", "fx", "-o", art], check=True)
        print(name)
        want = [t for _, t in sorted(load_file(os.path.join(case, "expected.safetensors")).items())]
        ref = run(art, case, "cpu")
        report("as written", run(art, case, "cuda"), ref, want)
        src = open(os.path.join(art, "kernels.py")).read()
        graph_src = open(os.path.join(art, "graph.py")).read()
        for tag, subs in VARIANTS.items():
            k, g = src, graph_src
            for pat, rep in subs:
                k, g = re.sub(pat, rep, k), re.sub(pat, rep, g)
            if k == src and g == graph_src:
                continue
            v = tempfile.mkdtemp(prefix="g4-diag-v-")
            shutil.copytree(art, v, dirs_exist_ok=True)
            with open(os.path.join(v, "kernels.py"), "w") as f:
                f.write(k + HELPERS)
            with open(os.path.join(v, "graph.py"), "w") as f:
                f.write(g)
            try:
                report(tag, run(v, case, "cuda"), ref, want)
            except Exception as e:  # noqa: BLE001
                print("  %-16s %s: %s" % (tag, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""))


if __name__ == "__main__":
    main()
