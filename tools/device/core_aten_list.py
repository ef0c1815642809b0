"""Lists PyTorch's Core ATen opset: every aten overload tagged torch.Tag.core (what
torch.export's run_decompositions() keeps), one `aten.NAME.OVERLOAD` a line, sorted, into
$OUT/core_aten_ops.txt. Run on the GPU machine (it has PyTorch); the result is committed as
docs/core_aten_ops.txt, from which `coil ops --markdown` reports coil's coverage."""
import os
import torch

names = set()
for name in dir(torch.ops.aten):
    try:
        packet = getattr(torch.ops.aten, name)
        overloads = packet.overloads()
    except Exception:
        continue
    for ov in overloads:
        try:
            op = getattr(packet, ov)
        except Exception:
            continue
        if torch.Tag.core in op.tags:
            names.add(f"aten.{name}.{ov}")
out = os.environ.get("OUT", "/tmp")
with open(os.path.join(out, "core_aten_ops.txt"), "w") as f:
    f.write(f"# Core ATen opset of PyTorch {torch.__version__}: aten overloads tagged torch.Tag.core "
            f"(tools/device/core_aten_list.py)\n")
    for n in sorted(names):
        f.write(n + "\n")
print(len(names), "core overloads")
