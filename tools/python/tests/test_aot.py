"""coil.compile: an artifact directory that coil.load (the C API) and `coil run DIR` load and run
without Python's export, the parameters embedded."""
import os
import subprocess

import pytest
import torch

import coil
from coil import _lib
from conftest import assert_matches


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 5)).eval()


def test_compile_then_load(tmp_path):
    m, x = _mlp(), torch.randn(4, 12)
    out = str(tmp_path / "mlp")
    model = coil.compile(m, (x,), out)
    assert model.ninputs == 1, model.input_names  # the weights are in the artifact
    with torch.no_grad():
        want = m(x)
    assert_matches(model(x), want, "compiled")
    again = coil.load(out, options={"backend": "cpu"})
    assert_matches(again(x), want, "loaded")
    assert_matches(coil.Session(config_file="").load(out)(x), want, "loaded by a fresh session")


def test_coil_run_takes_the_artifact(tmp_path):
    tool = _lib.tool_path()
    if tool is None:
        pytest.skip("no coil tool (set $COIL, or build build/tools/coil)")
    from safetensors.torch import save_file
    m, x = _mlp(), torch.randn(3, 12)
    out = str(tmp_path / "mlp")
    model = coil.compile(m, (x,), out)
    with torch.no_grad():
        want = m(x)
    save_file({model.input_names[0]: x}, str(tmp_path / "in.safetensors"))
    save_file({"out0": want}, str(tmp_path / "want.safetensors"))
    r = subprocess.run([tool, "run", out, "--inputs", str(tmp_path / "in.safetensors"), "--expect",
                        str(tmp_path / "want.safetensors")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_dynamic_batch_artifact(tmp_path):
    m, x = _mlp(), torch.randn(4, 12)
    batch = torch.export.Dim("batch", min=2, max=64)
    model = coil.compile(m, (x,), str(tmp_path / "dyn"), dynamic_shapes=({0: batch},))
    with torch.no_grad():
        for b in (2, 9, 33):
            x = torch.randn(b, 12)
            assert_matches(model(x), m(x), "batch %d" % b)


def test_unsupported_ops_are_named(tmp_path):
    from test_backend import LACKING
    op, fn = next(((op, fn) for op, fn in LACKING if not coil.op_known(op)), (None, None))
    if op is None:
        pytest.skip("coil knows every op of LACKING")
    with pytest.raises(coil.Unsupported, match=op.replace(".", r"\.")):
        coil.compile(fn, (torch.randn(5, 3),), str(tmp_path / "bad"))


def test_errors_are_values(tmp_path):
    s = coil.Session(config_file="")
    with pytest.raises(coil.CoilError) as e:
        s.compile("coil 1\ngraph g(%x: f32[4]) {\n  %y = aten.no_such_op.default(%x)\n  return (%y)\n}\n", file="bad.coil")
    assert "bad.coil" in str(e.value)
    with pytest.raises(coil.CoilError):
        s.load(str(tmp_path / "missing"))
    model = s.compile("coil 1\ngraph g(%x: f32[4]) {\n  %y: f32[4] = aten.relu.default(%x)\n  return (%y)\n}\n")
    with pytest.raises(coil.CoilError):
        model(torch.randn(5))  # sizes the graph does not take
    x = torch.randn(4)
    assert_matches(model(x), torch.relu(x), "relu")
