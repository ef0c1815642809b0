"""python3 -m coil_export MODULE:FUNCTION OUT_DIR [--coil PATH]

FUNCTION() returns (model, example_args) or (model, example_args, dynamic_shapes, extra_args);
the export goes to OUT_DIR. Exit 0 when written (unsupported ops are listed, not fatal), 1 on an
export error, 2 on a usage error."""
import importlib
import sys

from . import export


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    coil = None
    if "--coil" in argv:
        i = argv.index("--coil")
        if i + 1 >= len(argv):
            print("coil_export: --coil needs a path", file=sys.stderr)
            return 2
        coil = argv[i + 1]
        args.remove(coil)
    if len(args) != 2 or ":" not in args[0]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mod, fn = args[0].split(":", 1)
    try:
        made = getattr(importlib.import_module(mod), fn)()
    except Exception as e:  # the user's module: report, do not trace back into ours
        print("coil_export: %s: %s" % (args[0], e), file=sys.stderr)
        return 1
    model, ex = made[0], made[1]
    dyn = made[2] if len(made) > 2 else None
    extra = made[3] if len(made) > 3 else ()
    try:
        r = export(model, ex, args[1], dynamic_shapes=dyn, extra_args=extra, coil=coil)
    except Exception as e:
        print("coil_export: %s: export failed: %s: %s" % (args[0], type(e).__name__, e), file=sys.stderr)
        return 1
    print("coil_export: %s: %d statements -> %s" % (args[0], r.statements, args[1]))
    for op, lines in sorted(r.unsupported.items()):
        print("  not in coil's op table: %s (%d uses), first from %s" % (op, len(lines), lines[0]))
    return 0


sys.exit(main(sys.argv[1:]))
