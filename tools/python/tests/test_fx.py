"""The fx backend (torch.compile(..., options={"backend": "fx"})): coil's schedule run as the fx
plugin's GraphModule with Triton kernels; on cpu tensors the kernels run in Triton's interpreter
(docs/fx.md, "On CPU tensors"). coil.fx.load of an artifact directory, and what a loaded module
says when called with an input of the wrong size. Skipped without Triton."""
import os
import subprocess
import sys

import pytest
import torch

import coil
import coil.fx
from conftest import assert_matches

pytest.importorskip("triton", reason="the fx backend's kernels are Triton's")
COIL_CLI = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "tools", "coil"))


def test_fx_backend_matches_eager(device):
    w = torch.randn(16, 8, device=device)

    def f(x, b):
        h = torch.relu(x @ w + b)
        return torch.softmax(h, -1), h.sum(0)

    fn = torch.compile(f, backend="coil", options={"backend": "fx", "strict": True})
    x, b = torch.randn(5, 16, device=device), torch.randn(8, device=device)
    with torch.no_grad():
        assert_matches(fn(x, b), f(x, b), "fx")
    assert coil.dynamo.counters["fallbacks"] == 0


@pytest.mark.skipif(not os.access(COIL_CLI, os.X_OK), reason="no coil CLI in build/tools")
def test_loaded_module_names_a_wrong_input(tmp_path, device):
    g = tmp_path / "g.coil"
    g.write_text("coil 1\ngraph g(%x: f32[4, 6], %y: f32[6]) {\n  %z = aten.add.Tensor(%x, %y)\n"
                 "  %o = aten.tanh.default(%z)\n  return (%o)\n}\n")
    out = tmp_path / "out"
    r = subprocess.run([COIL_CLI, "compile", str(g), "--backend", "fx", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    gm = coil.fx.load(str(out), device=device)
    assert [i[1] for i in gm.coil_inputs] == ["x", "y"]
    x, y = torch.randn(4, 6, device=device), torch.randn(6, device=device)
    (got,) = gm(x, y)
    assert_matches(got, torch.tanh(x + y), "loaded module")
    with pytest.raises(RuntimeError, match=r"coil: input arg0 \('x'\) of program g: size 0 is 3, compiled for 4"):
        gm(x[:3], y)
    assert "coil_poi" in gm.print_readable(print_output=False)
