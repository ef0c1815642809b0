"""ctypes binding of coil's embedding API (core/include/coil/embed.h), mirrored struct for
struct. The library is $COIL_LIBRARY when set, else this package's lib/libcoil.so (a wheel), else
the source tree's build/core/libcoil.so (a checkout used without installing). Every fallible
call goes through check(), which turns a negative return into CoilError or Unsupported."""
import ctypes
import os

API_VERSION = 1  # COIL_EMBED_API_VERSION this binding was written against

# coil_error_code (coil/coil_plugin.h)
ERR_INVALID_ARGUMENT = 1
ERR_UNSUPPORTED = 2
ERR_COMPILE_FAILED = 3
ERR_RUNTIME = 4
ERR_OUT_OF_MEMORY = 5
ERR_INTERNAL = 6
ERR_VERSION = 7
ERR_IO = 8
ERROR_NAMES = {1: "invalid argument", 2: "unsupported", 3: "compile failed", 4: "runtime", 5: "out of memory",
               6: "internal", 7: "version", 8: "io"}

# coil_device_type / DLDeviceType
DEVICE_CPU = 1
DEVICE_CUDA = 2
DEVICE_CUDA_HOST = 3
DEVICE_ROCM = 10

# coil_dtype, in the order of wrapper-ir/include/coil/dtypes.def
DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]


class CoilError(RuntimeError):
    """An error coil returned: .code is the coil_error_code (ERR_*), .message coil's text."""

    def __init__(self, code, message):
        self.code = code
        self.message = message
        super().__init__("coil: %s: %s" % (ERROR_NAMES.get(code, "error %d" % code), message))


class Unsupported(CoilError):
    """What coil does not do (an op, a dtype, a device): a graph that may run eagerly instead."""


class Diag(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 2048)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("config_file", ctypes.c_char_p), ("use_env", ctypes.c_int),
                ("noptions", ctypes.c_size_t), ("keys", ctypes.POINTER(ctypes.c_char_p)),
                ("values", ctypes.POINTER(ctypes.c_char_p))]


class RunOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("has_stream", ctypes.c_int), ("stream", ctypes.c_void_p)]


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_I, _S, _Z = ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t
_DIAG = ctypes.POINTER(Diag)
_DLT = ctypes.POINTER(DLTensor)

# name: (restype, argtypes)
_SIGNATURES = {
    "coil_embed_api_version": (_I, []),
    "coil_dtype_to_dl": (DLDataType, [_I]),
    "coil_dtype_from_dl": (_I, [DLDataType]),
    "coil_session_new": (_I, [ctypes.POINTER(SessionOptions), _PP, _DIAG]),
    "coil_session_free": (None, [_P]),
    "coil_session_get": (_S, [_P, _S]),
    "coil_op_known": (_I, [_S]),
    "coil_model_compile": (_I, [_P, _S, _S, _Z, _PP, _DIAG]),
    "coil_artifact_compile": (_I, [_P, _S, _S, _Z, _S, _S, _DIAG]),
    "coil_model_load": (_I, [_P, _S, _PP, _DIAG]),
    "coil_model_free": (None, [_P]),
    "coil_model_ninputs": (_I, [_P]),
    "coil_model_noutputs": (_I, [_P]),
    "coil_model_input_name": (_S, [_P, _I]),
    "coil_model_input_dtype": (_I, [_P, _I]),
    "coil_model_input_rank": (_I, [_P, _I]),
    "coil_model_backend": (_S, [_P]),
    "coil_model_device_type": (_I, [_P]),
    "coil_model_bind": (_I, [_P, _I, _DLT, _PP, _DIAG]),
    "coil_binding_free": (None, [_P]),
    "coil_binding_output": (_I, [_P, _I, _DLT]),
    "coil_binding_symbol": (ctypes.c_int64, [_P, _S]),
    "coil_binding_run": (_I, [_P, _PP, ctypes.POINTER(RunOptions), _DIAG]),
    "coil_model_run": (_I, [_P, _I, _DLT, _I, _DLT, ctypes.POINTER(RunOptions), _DIAG]),
}


def _candidates():
    env = os.environ.get("COIL_LIBRARY")  # overrides the others
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "lib", "libcoil.so")  # the wheel: coil/lib/libcoil.so
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))  # tools/python/coil -> repo
    yield os.path.join(repo, "build", "core", "libcoil.so")


_lib = None


def tool_path():
    """The `coil` command line tool: the wheel's coil/bin/coil, else $COIL, else the source
    tree's build/tools/coil; None when none exists."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    for p in (os.path.join(here, "bin", "coil"), os.environ.get("COIL"), os.path.join(repo, "build", "tools", "coil")):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def library_path():
    """The libcoil.so that load() opens (the first candidate that exists), or None."""
    for p in _candidates():
        if p and os.path.isfile(p):
            return p
    return None


def load():
    """The loaded library with every signature set (once per process)."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if path is None:
        raise CoilError(ERR_IO, "libcoil.so not found: looked in %s; set $COIL_LIBRARY to the library"
                        % ", ".join(p for p in _candidates() if p))
    lib = ctypes.CDLL(path)
    lib.coil_embed_api_version.restype = _I
    lib.coil_embed_api_version.argtypes = []
    built = lib.coil_embed_api_version()
    if built != API_VERSION:
        raise CoilError(ERR_VERSION, "%s has embedding API version %d; this package was written for %d: install the "
                        "package and the library together" % (path, built, API_VERSION))
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def check(rc, diag):
    """Raises the error a negative return code and its diagnostics say; returns rc otherwise."""
    if rc >= 0:
        return rc
    code = -rc
    msg = diag.msg.decode("utf-8", "replace") if diag is not None else ""
    msg = msg or "(no message)"
    raise (Unsupported if code == ERR_UNSUPPORTED else CoilError)(code, msg)
