"""The coil package's tests. Without torch they are skipped (CI); where torch is, they run on cpu,
and on cuda where a GPU is. From a checkout (the package not installed) the package and the
exporter are found in the source tree and libcoil.so in build/core ($COIL_LIBRARY overrides).

Comparisons follow the model tier (conformance/tier_model.c): torch.testing.assert_close's
default tolerances for the dtype, integers and bools exactly, and the normalized mean squared
error under conformance's bound (1e-7 for f32). TF32 is off on cuda, so eager computes in f32
as coil does."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import coil  # noqa: F401  (installed)
except ImportError:
    sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))

torch = pytest.importorskip("torch", reason="torch is not installed: the coil package's tests need it")

import coil  # noqa: E402
import coil.dynamo  # noqa: E402

coil.dynamo.register()  # a checkout has no entry point; an installed package's is found first

# TransformerEncoderLayer's inference fast path is one fused op (_transformer_encoder_layer_fwd)
# that has no decomposition: with it off, the layer traces as its ATen ops (eager: the same math)
if hasattr(torch.backends, "mha"):
    torch.backends.mha.set_fastpath_enabled(False)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
NMSE_MAX = {torch.float64: 1e-20, torch.float32: 1e-7, torch.float16: 1e-5, torch.bfloat16: 1e-4}


def flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in flat(y)]
    if isinstance(x, dict):
        return [t for k in x for t in flat(x[k])]
    if hasattr(x, "to_tuple"):
        return flat(x.to_tuple())
    return [x]


def assert_matches(got, want, what=""):
    """got (coil) against want (eager) as the model tier compares, plus eager's strides."""
    got, want = flat(got), flat(want)
    assert len(got) == len(want), "%s: %d outputs, eager has %d" % (what, len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        name = "%s out%d" % (what, k)
        assert isinstance(g, torch.Tensor), "%s is a %s" % (name, type(g).__name__)
        assert g.dtype == w.dtype and g.shape == w.shape and g.device == w.device, "%s: %s %s %s, eager %s %s %s" % (
            name, g.dtype, tuple(g.shape), g.device, w.dtype, tuple(w.shape), w.device)
        strides = [(a, b) for a, b, s in zip(g.stride(), w.stride(), w.shape) if s > 1]
        assert all(a == b for a, b in strides), "%s: strides %s, eager's %s" % (name, g.stride(), w.stride())
        if w.dtype.is_floating_point:
            torch.testing.assert_close(g, w, msg=lambda m: "%s: %s" % (name, m))
            gd, wd = g.double(), w.double()
            fin = torch.isfinite(wd)
            err = ((gd - wd)[fin] ** 2).sum().item()
            ref = (wd[fin] ** 2).sum().item()
            nmse = err / ref if ref > 0 else err
            assert nmse <= NMSE_MAX[w.dtype], "%s: NMSE %.3g above %.0e" % (name, nmse, NMSE_MAX[w.dtype])
        else:
            assert torch.equal(g, w), "%s differs (integers and bools compare exactly)" % name


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    for k in coil.dynamo.counters:
        coil.dynamo.counters[k] = 0
    yield
    torch._dynamo.reset()


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
