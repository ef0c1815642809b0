# graph.py: coil program conformance_case (Wrapper IR 1.4) as a torch.fx.GraphModule, written by coil's fx
# plugin 0.1.0: build() returns it, its nodes named as the program's buffers and kernels.
PROGRAM = "conformance_case"
# the inputs: (placeholder, the graph's name for it (as the exporter wrote it), a weight?)
INPUTS = [
    ("arg0", "a", False),
    ("arg1", "b", False),
    ("arg2", "c", False),
]

import importlib.util
import operator
import os

import torch
import torch.fx
import triton
from torch.library import wrap_triton

try:  # launchers and checks are kept by dead-code elimination
    from torch.fx.node import has_side_effect as _side_effect
except ImportError:  # an older torch
    def _side_effect(fn):
        return fn


def _sibling(name):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("coil_fx_" + PROGRAM + "_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


K = _sibling("kernels")


@_side_effect
def _coil_aligned(t, n):
    """assert BUF aligned N"""
    if t.data_ptr() % n:
        raise RuntimeError("coil: an input's data is not aligned to %d bytes" % n)


def _coil_view(t, sizes, strides, offset):
    """view / reuse: a layout over t's storage, offset elements past t's first"""
    return torch.as_strided(t, sizes, strides, t.storage_offset() + offset)


def _coil_layout(t, sizes, strides):
    """an extern call's result in the layout the program planned for it (copied if not)"""
    if tuple(t.shape) == tuple(sizes) and (t.numel() == 0 or t.stride() == tuple(strides)):
        return t
    out = torch.empty_strided(sizes, strides, dtype=t.dtype, device=t.device)
    return out.copy_(t)


@_side_effect
def coil_poi_fused_index_put_0(in0, out0):
    """kernel_call coil_poi_fused_index_put_0: the Triton kernel K.coil_poi_fused_index_put_0"""
    _xnumel = 1 * (5) * (7)
    _rnumel = 1
    if _xnumel <= 0:
        return
    _xb, _rb, _nw = K._blocks("pointwise", _xnumel, _rnumel)
    wrap_triton(K.coil_poi_fused_index_put_0)[(triton.cdiv(_xnumel, _xb), 1, 1)](in0, out0, _xnumel, _XBLOCK=_xb, num_warps=_nw)


@_side_effect
def coil_poi_fused_index_put_1(in0, in1, out0):
    """kernel_call coil_poi_fused_index_put_1: the Triton kernel K.coil_poi_fused_index_put_1"""
    _xnumel = 1 * (3) * (7)
    _rnumel = 1
    if _xnumel <= 0:
        return
    _xb, _rb, _nw = K._blocks("pointwise", _xnumel, _rnumel)
    wrap_triton(K.coil_poi_fused_index_put_1)[(triton.cdiv(_xnumel, _xb), 1, 1)](in0, in1, out0, _xnumel, _XBLOCK=_xb, num_warps=_nw)


def build(device="cuda"):
    """The program as a torch.fx.GraphModule (device: where its buffers go when it has no
    tensor input to take the device from)."""
    g = torch.fx.Graph()
    arg0 = g.placeholder("arg0")
    arg1 = g.placeholder("arg1")
    arg2 = g.placeholder("arg2")
    _device = g.call_function(getattr, (arg0, "device"))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("size", (arg0, 0)), 5)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("size", (arg0, 1)), 7)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("stride", (arg0, 0)), 7)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("stride", (arg0, 1)), 1)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("size", (arg1, 0)), 3)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("stride", (arg1, 0)), 1)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("size", (arg2, 0)), 3)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("size", (arg2, 1)), 7)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("stride", (arg2, 0)), 7)),))
    g.call_function(torch._check, (g.call_function(operator.eq, (g.call_method("stride", (arg2, 1)), 1)),))
    buf0 = g.create_node("call_function", torch.empty_strided, ((5, 7), (7, 1)), {"dtype": torch.float32, "device": _device}, name="buf0")
    g.create_node("call_function", coil_poi_fused_index_put_0, (arg0, buf0, ), name="coil_poi_fused_index_put_0")
    g.create_node("call_function", coil_poi_fused_index_put_1, (arg2, arg1, buf0, ), name="coil_poi_fused_index_put_1")
    g.output((buf0,))
    g.lint()
    return torch.fx.GraphModule(torch.nn.Module(), g, class_name=PROGRAM)
