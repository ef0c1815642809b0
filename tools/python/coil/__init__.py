"""coil from Python: the Dynamo backend `torch.compile(model, backend="coil")` (coil.dynamo),
ahead-of-time artifacts (coil.compile / coil.load), and the embedding API underneath (Session,
Model, Binding: core/include/coil/embed.h through ctypes). docs/python.md is the guide.

    import torch, coil
    fast = torch.compile(model, backend="coil")           # the Dynamo backend (entry point)
    m = coil.compile(model, (x,), "out/mlp")              # an artifact dir `coil run` loads
    y = coil.load("out/mlp")(x)                           # ... and so does this, without torch.export

Tensors are torch tensors; they are passed by data pointer (DLPack's layout), never copied,
except a non-dense input, which is made contiguous first."""
import ctypes
import os
import tempfile

from . import _lib
from ._lib import CoilError, Unsupported

__all__ = ["Session", "Model", "Binding", "compile", "load", "op_known", "CoilError", "Unsupported",
           "FallbackWarning", "session"]


class FallbackWarning(UserWarning):
    """A graph coil could not compile runs eagerly instead (torch.compile's option strict=True
    raises instead)."""


def op_known(op):
    """Whether coil's core lowers the ATen op ("aten.add.Tensor")."""
    return bool(_lib.load().coil_op_known(op.encode()))


# ---- tensors as DLPack descriptors ----

_DL = None  # torch dtype -> (code, bits); torch is imported only when a tensor is seen


def _dl_dtypes():
    global _DL
    if _DL is None:
        import torch
        _DL = {torch.float64: (2, 64), torch.float32: (2, 32), torch.float16: (2, 16), torch.bfloat16: (4, 16),
               torch.int64: (0, 64), torch.int32: (0, 32), torch.int16: (0, 16), torch.int8: (0, 8),
               torch.uint8: (1, 8), torch.bool: (6, 8)}
    return _DL


def torch_dtype(coil_dtype):
    """The torch dtype of a coil_dtype value (its index in dtypes.def)."""
    import torch
    return [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
            torch.int8, torch.uint8, torch.bool][coil_dtype]


def _device_of(t):
    """(DLDeviceType, index) of a torch tensor."""
    dev = t.device
    if dev.type == "cpu":
        return _lib.DEVICE_CPU, 0
    if dev.type == "cuda":
        import torch
        return (_lib.DEVICE_ROCM if torch.version.hip else _lib.DEVICE_CUDA), dev.index or 0
    raise Unsupported(_lib.ERR_UNSUPPORTED, "tensors on %s: coil takes cpu and cuda tensors" % dev)


class _Described:
    """DLTensors for a list of torch tensors, with the arrays they point to kept alive."""

    def __init__(self, tensors):
        dl = _dl_dtypes()
        n = len(tensors)
        self.array = (_lib.DLTensor * n)()
        self._keep = []
        for i, t in enumerate(tensors):
            if t.dtype not in dl:
                raise Unsupported(_lib.ERR_UNSUPPORTED, "input %d has dtype %s, which coil has no name for" % (i, t.dtype))
            shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
            strides = (ctypes.c_int64 * max(t.dim(), 1))(*t.stride())
            self._keep += [shape, strides]
            d = self.array[i]
            d.data = t.data_ptr() or None
            d.device.device_type, d.device.device_id = _device_of(t)
            d.ndim = t.dim()
            d.dtype.code, d.dtype.bits = dl[t.dtype]
            d.dtype.lanes = 1
            d.shape = shape
            d.strides = strides
            d.byte_offset = 0


# ---- sessions ----

class Session:
    """A configuration (ini file, COIL_* environment, options) and the plugins it finds.

    options: [coil] keys ("backend", "mode", "cache_dir", ...) and "plugin.NAME.KEY" for plugin
    options, applied over the file and environment. config_file: None finds one as the `coil`
    tool does ($COIL_CONFIG, else ./coil.ini); "" reads none. use_env: apply COIL_* variables."""

    def __init__(self, options=None, config_file=None, use_env=True):
        self._lib = _lib.load()
        items = [(str(k), _option_text(v)) for k, v in (options or {}).items()]
        keys = (ctypes.c_char_p * max(len(items), 1))(*[k.encode() for k, _ in items])
        values = (ctypes.c_char_p * max(len(items), 1))(*[v.encode() for _, v in items])
        o = _lib.SessionOptions(ctypes.sizeof(_lib.SessionOptions), None if config_file is None else config_file.encode(),
                                1 if use_env else 0, len(items), keys, values)
        h = ctypes.c_void_p()
        d = _lib.Diag()
        _lib.check(self._lib.coil_session_new(ctypes.byref(o), ctypes.byref(h), ctypes.byref(d)), d)
        self._h = h
        self.options = dict(items)

    def get(self, key):
        """The effective [coil] value of key, or None."""
        v = self._lib.coil_session_get(self._h, key.encode())
        return None if v is None else v.decode()

    def compile(self, text, file="graph.coil"):
        """Compiles .coil text for the session's backend and loads it: a Model."""
        data = text.encode() if isinstance(text, str) else text
        h = ctypes.c_void_p()
        d = _lib.Diag()
        _lib.check(self._lib.coil_model_compile(self._h, file.encode(), data, len(data), ctypes.byref(h),
                                                ctypes.byref(d)), d)
        return Model(self, h)

    def compile_artifact(self, text, out_dir, weights=None, file="graph.coil"):
        """Writes .coil text compiled as an artifact directory (weights: a safetensors file whose
        tensors named like param inputs are embedded)."""
        data = text.encode() if isinstance(text, str) else text
        d = _lib.Diag()
        _lib.check(self._lib.coil_artifact_compile(self._h, file.encode(), data, len(data),
                                                   None if weights is None else os.fsencode(weights),
                                                   os.fsencode(out_dir), ctypes.byref(d)), d)

    def load(self, path):
        """Loads an artifact directory: a Model."""
        h = ctypes.c_void_p()
        d = _lib.Diag()
        _lib.check(self._lib.coil_model_load(self._h, os.fsencode(path), ctypes.byref(h), ctypes.byref(d)), d)
        return Model(self, h)

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._lib.coil_session_free(h)


def _option_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_sessions = {}


def session(options=None):
    """The shared Session for these options (one per distinct set, kept for the process)."""
    key = tuple(sorted((str(k), _option_text(v)) for k, v in (options or {}).items()))
    s = _sessions.get(key)
    if s is None:
        s = _sessions[key] = Session(dict(key))
    return s


# ---- models and bindings ----

class Model:
    """A compiled graph, loaded by its backend. Call it with torch tensors: a tuple of outputs."""

    def __init__(self, session, handle):
        self.session = session  # a model must be freed before its session
        self._lib = session._lib
        self._h = handle
        lib, h = self._lib, handle
        self.ninputs = lib.coil_model_ninputs(h)
        self.noutputs = lib.coil_model_noutputs(h)
        self.input_names = [lib.coil_model_input_name(h, i).decode() for i in range(self.ninputs)]
        self.input_dtypes = [lib.coil_model_input_dtype(h, i) for i in range(self.ninputs)]
        self.input_ranks = [lib.coil_model_input_rank(h, i) for i in range(self.ninputs)]
        self.backend = lib.coil_model_backend(h).decode()
        self.device_type = lib.coil_model_device_type(h)
        self._bindings = {}

    def bind(self, tensors):
        """A Binding for tensors' sizes (checked against the program: dtype, rank, sizes,
        strides, device)."""
        if len(tensors) != self.ninputs:
            raise CoilError(_lib.ERR_INVALID_ARGUMENT, "%d inputs given, the model takes %d (%s)" % (
                len(tensors), self.ninputs, ", ".join(self.input_names)))
        desc = _Described(tensors)
        h = ctypes.c_void_p()
        d = _lib.Diag()
        _lib.check(self._lib.coil_model_bind(self._h, len(tensors), desc.array, ctypes.byref(h), ctypes.byref(d)), d)
        return Binding(self, h, tensors[0].device if tensors else None)

    def __call__(self, *tensors, stream=None):
        """Runs on tensors (made contiguous where they are not): a tuple of new output tensors.
        stream: a CUDA stream (torch.cuda.Stream or a raw handle) to queue on without
        synchronizing; default: the current stream for CUDA tensors."""
        ts = [t if t.is_contiguous() else t.contiguous() for t in tensors]
        key = tuple((t.shape, t.dtype, t.device) for t in ts)
        b = self._bindings.get(key)
        if b is None:
            b = self._bindings[key] = self.bind(ts)
        return b.run(ts, stream=stream)

    def __repr__(self):
        return "coil.Model(%s, inputs %s -> %d outputs)" % (self.backend, ", ".join(self.input_names), self.noutputs)

    def __del__(self):
        # the bindings it caches point back at it (a cycle the collector may finalize in any
        # order): free them first, while the model is alive
        for b in getattr(self, "_bindings", {}).values():
            b._free()
        self._bindings = {}
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._lib.coil_model_free(h)


class Binding:
    """The sizes of one call: outputs' dtypes and sizes known, the hot path only data pointers.
    .outputs: [(shape tuple, torch dtype)]."""

    def __init__(self, model, handle, device):
        self.model = model
        self._lib = model._lib
        self._h = handle
        self.device = device
        self.outputs = []
        for i in range(model.noutputs):
            t = _lib.DLTensor()
            if self._lib.coil_binding_output(handle, i, ctypes.byref(t)) < 0:
                raise CoilError(_lib.ERR_INTERNAL, "binding has no output %d" % i)
            shape = tuple(t.shape[k] for k in range(t.ndim))
            code = self._lib.coil_dtype_from_dl(t.dtype)
            self.outputs.append((shape, torch_dtype(code)))
        self._ptrs = ctypes.c_void_p * (model.ninputs + model.noutputs)
        self._run = self._lib.coil_binding_run
        self._diag = _lib.Diag()
        self._diag_p = ctypes.pointer(self._diag)
        self._ro = _lib.RunOptions(ctypes.sizeof(_lib.RunOptions), 0, None)

    def symbol(self, name):
        """The value size symbol name took in this binding, or None."""
        v = self._lib.coil_binding_symbol(self._h, name.encode())
        return None if v < 0 else v

    def run(self, tensors, outputs=None, stream=None):
        """Runs on tensors (at the bound sizes, dense) into outputs (allocated here when None);
        returns the outputs as a tuple."""
        import torch
        if outputs is None:
            dev = tensors[0].device if tensors else torch.device("cpu")
            outputs = [torch.empty(s, dtype=dt, device=dev) for s, dt in self.outputs]
        ptrs = self._ptrs(*[t.data_ptr() for t in tensors], *[o.data_ptr() for o in outputs])
        ro = None
        if tensors and tensors[0].is_cuda:
            if stream is None:
                stream = torch.cuda.current_stream(tensors[0].device)
            ro = _lib.RunOptions(ctypes.sizeof(_lib.RunOptions), 1, getattr(stream, "cuda_stream", stream))
        _lib.check(self._run(self._h, ptrs, ro, self._diag_p), self._diag)
        return tuple(outputs)

    def _free(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._lib.coil_binding_free(h)

    __del__ = _free


# ---- ahead of time ----

def load(path, options=None):
    """Loads an artifact directory written by coil.compile or `coil compile --embed-weights`."""
    return session(options).load(path)


def compile(model, example_inputs, out_dir, options=None, dynamic_shapes=None):  # noqa: A001
    """Exports model(*example_inputs) (torch.export + core ATen decompositions, eval, no grad),
    compiles it for options' backend (default: the session's, cpu) into the artifact directory
    out_dir with the parameters and buffers embedded, and returns it loaded (a Model). The
    directory is what `coil run out_dir` and coil_model_load() take, without Python: its inputs
    are the model's user inputs only. dynamic_shapes: as torch.export takes it. Raises
    Unsupported naming the ops coil lacks."""
    from ._printer import coil_export
    from safetensors.torch import save_file
    model, gm, kinds = coil_export.exported_graph(model, example_inputs, dynamic_shapes)
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in os.path.basename(os.path.normpath(out_dir)))
    name = name if name[:1].isalpha() or name[:1] == "_" else "g_" + name
    pg = coil_export.print_graph(gm, name, kinds=kinds, known=op_known,
                                 comment="compiled from PyTorch by coil.compile (torch.export + run_decompositions)")
    if pg.unsupported:
        raise Unsupported(_lib.ERR_UNSUPPORTED, "ops coil lacks: " + "; ".join(
            "%s (%s)" % (op, lines[0]) for op, lines in sorted(pg.unsupported.items())))
    s = session(options)
    with tempfile.TemporaryDirectory(prefix="coil-aot-") as tmp:
        weights = None
        if pg.weights:
            weights = os.path.join(tmp, "weights.safetensors")
            save_file({k: v.detach().contiguous().cpu() for k, v in pg.weights.items()}, weights)
        s.compile_artifact(pg.text, out_dir, weights=weights, file=name + ".coil")
    return s.load(out_dir)

