#!/usr/bin/env python3
"""fx_check.py [--triton] [-j N] DIR...: checks fx plugin artifacts. Every DIR's kernels.py and
graph.py must compile as Python (py_compile); with --triton, every kernel of kernels.py is also
compiled by Triton for sm_90 (triton.compile with a GPUTarget: no GPU needed), at the blocks its
launch would pick. Prints a line per failure and a summary; exit 1 on any failure."""
import importlib.util
import multiprocessing
import os
import py_compile
import sys
import tempfile
import traceback


def check_python(d):
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in ("kernels.py", "graph.py"):
            try:
                py_compile.compile(os.path.join(d, f), cfile=os.path.join(tmp, f + "c"), doraise=True)
            except py_compile.PyCompileError as e:
                bad.append("%s/%s: %s" % (d, f, e.msg.strip().splitlines()[-1]))
    return bad


def check_triton(d):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path = os.path.join(d, "kernels.py")
    spec = importlib.util.spec_from_file_location("fx_check_" + os.path.basename(d), path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - any import failure is the finding
        return ["%s: import: %s" % (path, e)], 0
    bad, n = [], 0
    for name, (fn, kind, sig) in mod.KERNELS.items():
        xb, rb, nw = mod._blocks(kind, 1 << 20, 100 if kind == "persistent" else 5000)
        sig = dict(sig, _XBLOCK="constexpr")
        cons = {"_XBLOCK": xb}
        if kind != "pointwise":
            sig["_RBLOCK"] = "constexpr"
            cons["_RBLOCK"] = rb
        try:
            triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cons), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": nw})
            n += 1
        except Exception as e:  # noqa: BLE001
            lines = [ln for ln in traceback.format_exception_only(type(e), e) if ln.strip()]
            msg = " ".join(ln.strip() for ln in str(e).strip().splitlines()[-3:]) or lines[-1].strip()
            bad.append("%s: kernel %s: %s" % (d, name, msg))
    return bad, n


def one(args):
    d, triton = args
    bad = check_python(d)
    n = 0
    if triton and not bad:
        tb, n = check_triton(d)
        bad += tb
    return d, bad, n


def main(argv):
    triton = "--triton" in argv
    jobs = 1
    dirs = []
    it = iter(argv)
    for a in it:
        if a == "--triton":
            continue
        if a == "-j":
            jobs = int(next(it))
            continue
        dirs.append(a)
    failed = kernels = 0
    with multiprocessing.Pool(jobs) as pool:
        for d, bad, n in pool.imap_unordered(one, [(d, triton) for d in dirs]):
            kernels += n
            for b in bad:
                print("FAIL: " + b)
            failed += bool(bad)
    what = "Python%s" % (" and Triton (sm_90, %d kernels)" % kernels if triton else "")
    print("fx_check: %d artifacts checked as %s; %d failed" % (len(dirs), what, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
