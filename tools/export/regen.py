"""Regenerates every model case of the model tier on a machine with PyTorch (the GPU machine):

    python3 tools/export/regen.py OUT_ROOT [--only NAME] [--coil PATH]

writes OUT_ROOT/<name>/ for each model of coil_export/models.py (conformance/models/ in the
repository), prints what each export lacks in coil's op table, and fails when the cases
together pass 40 MB. A model whose export fails is reported and the others still run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from coil_export import export  # noqa: E402
from coil_export import models  # noqa: E402

LIMIT = 40 << 20


def main(argv):
    if not argv or argv[0].startswith("--"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root, only, coil = argv[0], None, None
    if "--only" in argv:
        only = argv[argv.index("--only") + 1]
    if "--coil" in argv:
        coil = argv[argv.index("--coil") + 1]
    failed = 0
    for make in models.ALL:
        if only and only not in make.__name__:
            continue
        try:
            name, model, args, dyn, extra = make()
            r = export(model, args, os.path.join(root, name), dynamic_shapes=dyn, extra_args=extra, coil=coil)
        except Exception as e:
            print("FAIL %s: %s: %s" % (make.__name__, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            failed += 1
            continue
        size = sum(os.path.getsize(f) for f in r.files)
        from safetensors.torch import load_file
        big = max(float(t.abs().max()) for t in load_file(os.path.join(root, name, "expected.safetensors")).values())
        if big < 1e-2:  # next to atol, such outputs would pass whatever a backend computes
            print("FAIL %s: its outputs are all below %g in magnitude: not a test" % (name, big))
            failed += 1
        print("%-32s %4d statements %8.1f KiB%s" % (name, r.statements, size / 1024,
                                                      "" if not r.unsupported else "  missing: " + ", ".join(
                                                          "%s (%d)" % (op, len(v)) for op, v in sorted(r.unsupported.items()))))
        for op, lines in sorted(r.unsupported.items()):
            print("    %s first from %s" % (op, lines[0]))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    print("all cases under %s: %.1f MB (limit 40 MB)" % (root, total / 1e6))
    return 1 if failed or total > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
