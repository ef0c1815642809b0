"""coil.fx: a program compiled by coil's fx plugin, handed back as a torch.fx.GraphModule.

    # coil compile graph.coil --backend fx -o out/g   (or torch.compile(..., options={"backend": "fx"}))
    gm = coil.fx.load("out/g")       # the GraphModule: placeholders arg0.., Triton launches, outputs
    gm.print_readable()
    outs = gm(*inputs)               # a tuple, one tensor per output of the program

The directory holds kernels.py (a @triton.jit function per kernel of the program) and graph.py
(build() -> GraphModule); docs/fx.md describes both. Loading, printing and running need torch and
an importable triton: on a GPU the kernels are compiled by Triton, on CPU tensors they run in
Triton's interpreter (slow; docs/fx.md, "On CPU tensors")."""
import importlib.util
import json
import os
import sys

__all__ = ["load"]

_count = 0


def load(path, device="cuda"):
    """The GraphModule of an fx artifact directory. device: where its buffers go when the program
    has no tensor input to take the device from. gm.coil_inputs lists the inputs as (placeholder,
    the graph's name for it, whether it is a weight)."""
    global _count
    manifest = os.path.join(path, "manifest.json")
    try:
        with open(manifest) as f:
            plugin = json.load(f).get("plugin")
    except (OSError, ValueError) as e:
        raise ValueError("coil.fx.load: %s is not an artifact directory (%s)" % (path, e)) from None
    if plugin != "fx":
        raise ValueError("coil.fx.load: %s was written by plugin %r, not fx" % (path, plugin))
    _count += 1
    spec = importlib.util.spec_from_file_location("coil_fx_graph_%d" % _count, os.path.join(path, "graph.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # torch.compile imports the modules of the functions it traces
    spec.loader.exec_module(module)
    gm = module.build(device)
    gm.coil_inputs = list(module.INPUTS)
    return gm
