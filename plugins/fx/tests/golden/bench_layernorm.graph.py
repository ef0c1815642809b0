# graph.py: coil program g (Wrapper IR 1.4) as a torch.fx.GraphModule, written by coil's fx
# plugin 0.1.0: build() returns it, its nodes named as the program's buffers and kernels.
PROGRAM = "g"
# the inputs: (placeholder, the graph's name for it (as the exporter wrote it), a weight?)
INPUTS = [
    ("arg0", "x", False),
    ("arg1", "w", False),
    ("arg2", "b", False),
]

import importlib.util
import operator
import os
import sys

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
    """NAME.py beside this file as a module, registered in sys.modules under a name of its own
    (torch.compile imports the modules of the functions it traces)"""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("%s_%s_%d" % (__name__, name, len(sys.modules)), path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


K = _sibling("kernels")


@_side_effect
def _coil_aligned(t, n):
    """assert BUF aligned N"""
    if torch.compiler.is_compiling():  # torch.compile traces fake tensors: no data to check
        return
    from torch._subclasses.fake_tensor import is_fake

    if not is_fake(t) and t.data_ptr() % n:  # nor has a tensor make_fx traces
        raise RuntimeError("coil: an input's data is not aligned to %d bytes" % n)


@_side_effect
def _coil_expect(t, what, dim, want, name):
    """assert BUF size|stride D == VALUE: input name is as the program was compiled for"""
    got = t.size(dim) if what == "size" else t.stride(dim)
    if got != want:  # plain Python, which torch.compile folds for static sizes (no graph break)
        label = dict((i[0], i[1]) for i in INPUTS).get(name, "")
        raise RuntimeError("coil: input %s (%r) of program %s: %s %d is %s, compiled for %s"
                           % (name, label, PROGRAM, what, dim, got, want))


def _coil_view(t, sizes, strides, offset):
    """view / reuse: a layout over t's storage, offset elements past t's first"""
    return torch.as_strided(t, sizes, strides, t.storage_offset() + offset)


def _coil_on_cpu(op, *args, **kwargs):
    """an integer matrix product, which CUDA has not: computed on the CPU, exactly, and moved back"""
    dev = next(a.device for a in args if isinstance(a, torch.Tensor))
    if dev.type == "cpu":
        return op(*args, **kwargs)
    return op(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args], **kwargs).to(dev)


def _coil_sort(t, dim=-1, descending=False):
    """aten.sort with equal elements in index order"""
    return torch.ops.aten.sort.stable(t, stable=True, dim=dim, descending=descending)


def _coil_topk(t, k, dim=-1, largest=True, sorted=True):
    """aten.topk with equal elements in index order: a stable sort's first k"""
    v, i = torch.ops.aten.sort.stable(t, stable=True, dim=dim, descending=largest)
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


def _coil_layout(t, sizes, strides):
    """an extern call's result in the layout the program planned for it (copied if not)"""
    if tuple(t.shape) == tuple(sizes) and (t.numel() == 0 or t.stride() == tuple(strides)):
        return t
    out = torch.empty_strided(sizes, strides, dtype=t.dtype, device=t.device)
    return out.copy_(t)


# CPU tensors, where this Triton has no CPU backend: the kernels run in Triton's interpreter.
_HOST_BACKEND = "cpu" in getattr(getattr(triton, "backends", None), "backends", {})
_host = None


def _launch(kernel, grid, *args, **meta):
    """kernel[grid](*args, **meta) where args[0] lives: through wrap_triton (make_fx, torch.export
    and torch.compile record the launch) where Triton compiles for that device; on CPU tensors,
    where this Triton has no CPU backend, in Triton's interpreter (_host_launch)"""
    if not isinstance(kernel, triton.runtime.jit.JITFunction):  # TRITON_INTERPRET=1 for the process
        return kernel[grid](*args, **meta)
    if _on_host(args[0]):
        return _host_launch(kernel.fn.__name__, grid, args, meta)
    wrap_triton(kernel)[grid](*args, **meta)


def _on_host(t):
    if _HOST_BACKEND or not isinstance(t, torch.Tensor) or t.device.type != "cpu":
        return False
    if torch.compiler.is_compiling() and not torch.compiler.is_exporting():
        return True  # torch.compile: the launch runs as it is (a graph break at _host_launch)
    from torch._subclasses.fake_tensor import is_fake

    return not is_fake(t)  # traced (torch.export, make_fx): recorded as a launch, not run


@torch.compiler.disable  # torch.compile runs it as it is, between the graphs it compiles
def _host_launch(name, grid, args, meta):
    getattr(_host_kernels(), name)[grid](*args, **meta)


def _host_kernels():
    """kernels.py loaded a second time with TRITON_INTERPRET=1, its libdevice calls and its
    rounding to bfloat16 (which the interpreter truncates) through torch"""
    global _host
    if _host is None:
        old = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            module = _sibling("kernels")
        finally:
            if old is None:
                del os.environ["TRITON_INTERPRET"]
            else:
                os.environ["TRITON_INTERPRET"] = old
        module.libdevice = _HostLibdevice()
        # in f32, as on the GPU: an integer or bool kept its dtype and the interpreter's cast of it
        # to bfloat16 then reinterprets bits
        module._coil_bf16 = lambda x: _host_elementwise(lambda v: v.to(torch.bfloat16).float(), (x,), True)
        _host = module
    return _host


class _HostLibdevice:
    """libdevice for the interpreter, which has none: each function is torch's, computed in the
    arguments' dtype on the numpy arrays the interpreter holds"""

    _torch = {"nearbyint": torch.round}  # rounds ties to even, as nearbyint does

    def __getattr__(self, name):
        fn = self._torch.get(name) or getattr(torch, name)
        return lambda *args: _host_elementwise(fn, args)


def _host_elementwise(fn, args, f32=False):
    import numpy
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    ts = [a for a in args if isinstance(a, tl.tensor)]
    nd = ts[0].handle.data.dtype
    xs = [torch.from_numpy(numpy.ascontiguousarray(a.handle.data)) if isinstance(a, tl.tensor)
          else torch.from_numpy(numpy.asarray(getattr(a, "value", a), dtype=nd)) for a in args]
    r = numpy.ascontiguousarray(fn(*xs).numpy().astype(numpy.float32 if f32 else nd))
    scalar = tl.float32 if f32 else ts[0].dtype
    block = any(isinstance(a.type, tl.block_type) for a in ts)
    return tl.tensor(TensorHandle(r, scalar), tl.block_type(scalar, list(r.shape)) if block else scalar)


@_side_effect
def coil_red_fused_native_layer_norm_0(in0, in1, in2, out0):
    """kernel_call coil_red_fused_native_layer_norm_0: the Triton kernel K.coil_red_fused_native_layer_norm_0"""
    _xnumel = 1 * (8192)
    _rnumel = 1 * (4096)
    if _xnumel <= 0:
        return
    _xb, _rb, _nw = K._blocks("persistent", _xnumel, _rnumel)
    _launch(K.coil_red_fused_native_layer_norm_0, ((_xnumel + _xb - 1) // _xb, 1, 1), in0, in1, in2, out0, _xnumel, _rnumel, _XBLOCK=_xb, _RBLOCK=_rb, num_warps=_nw)


def build(device="cuda"):
    """The program as a torch.fx.GraphModule (device: where its buffers go when it has no
    tensor input to take the device from)."""
    g = torch.fx.Graph()
    arg0 = g.placeholder("arg0")
    arg1 = g.placeholder("arg1")
    arg2 = g.placeholder("arg2")
    _device = g.call_function(getattr, (arg0, "device"))
    g.call_function(_coil_expect, (arg0, "size", 0, 8192, "arg0"))
    g.call_function(_coil_expect, (arg0, "size", 1, 4096, "arg0"))
    g.call_function(_coil_expect, (arg0, "stride", 0, 4096, "arg0"))
    g.call_function(_coil_expect, (arg0, "stride", 1, 1, "arg0"))
    g.call_function(_coil_expect, (arg1, "size", 0, 4096, "arg1"))
    g.call_function(_coil_expect, (arg1, "stride", 0, 1, "arg1"))
    g.call_function(_coil_expect, (arg2, "size", 0, 4096, "arg2"))
    g.call_function(_coil_expect, (arg2, "stride", 0, 1, "arg2"))
    buf0 = g.create_node("call_function", torch.empty_strided, ((8192, 4096), (4096, 1)), {"dtype": torch.float32, "device": _device}, name="buf0")
    g.create_node("call_function", coil_red_fused_native_layer_norm_0, (arg0, arg1, arg2, buf0, ), name="coil_red_fused_native_layer_norm_0")
    g.output((buf0,))
    g.lint()
    return torch.fx.GraphModule(torch.nn.Module(), g, class_name=PROGRAM)
