"""What the Dynamo backend promises beyond numbers: one graph for many batch sizes, graph
breaks, eager fallback for an op coil lacks (with the op and the user's line named), strict
raising, no copies of dense inputs, eager's strides on outputs, options checked."""
import warnings

import pytest
import torch

import coil
import coil.dynamo
from conftest import assert_matches

C = coil.dynamo.counters
# ops that coil's core does not lower, each as the torch call that makes it
LACKING = [("aten.cummax.default", lambda x: torch.cummax(x, 0)[0] + 1),
           ("aten.erfinv.default", lambda x: torch.erfinv(x * 0.5) + 1)]


def lacking():
    for op, fn in LACKING:
        if not coil.op_known(op):
            return op, fn
    pytest.skip("coil knows every op of LACKING")


def test_dynamic_batch_compiles_once(device):
    lin = torch.nn.Linear(8, 4).to(device)
    fn = torch.compile(lambda x: torch.relu(lin(x)) * 2, backend="coil", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for b in (3, 5, 17, 3):
            x = torch.randn(b, 8, device=device)
            assert_matches(fn(x), torch.relu(lin(x)) * 2, "batch %d" % b)
    assert C["compiled"] == 1 and C["bindings"] == 3


def test_graph_break_compiles_both_sides(device):
    def f(x):
        y = torch.tanh(x) + 1
        torch._dynamo.graph_break()
        return y * y - x

    fn = torch.compile(f, backend="coil", options={"strict": True})
    x = torch.randn(6, 7, device=device)
    with torch.no_grad():
        assert_matches(fn(x), f(x), "graph break")
    assert C["compiled"] == 2 and C["fallbacks"] == 0


def test_an_op_coil_lacks_runs_eagerly_and_is_named(device):
    op, body = lacking()
    x = torch.randn(5, 3, device=device)
    fn = torch.compile(body, backend="coil")
    with torch.no_grad(), pytest.warns(coil.FallbackWarning) as w:
        got = fn(x)
    assert_matches(got, body(x), "fallback")
    text = " ".join(str(m.message) for m in w)
    assert op in text and "test_backend.py" in text, text
    assert C["fallbacks"] == 1


def test_strict_raises(device):
    op, body = lacking()
    fn = torch.compile(body, backend="coil", options={"strict": True})
    with torch.no_grad(), pytest.raises(Exception, match=op.replace(".", r"\.")):
        fn(torch.randn(5, 3, device=device))


def test_autograd_graphs_fall_back_with_a_reason(device):
    lin = torch.nn.Linear(4, 4).to(device)
    fn = torch.compile(lin, backend="coil")
    with pytest.warns(coil.FallbackWarning, match="no_grad"):
        y = fn(torch.randn(2, 4, device=device))
    assert y.requires_grad


def test_dense_inputs_are_not_copied_and_others_are_counted(device):
    fn = torch.compile(lambda a, b: a * b + 1, backend="coil", options={"strict": True})
    a, b = torch.randn(4, 6, device=device), torch.randn(4, 6, device=device)
    with torch.no_grad():
        assert_matches(fn(a, b), a * b + 1, "dense")
        assert C["input_copies"] == 0
        bt = torch.randn(6, 4, device=device).t()
        assert_matches(fn(a, bt), a * bt + 1, "transposed input")
    assert C["input_copies"] >= 1


def test_outputs_keep_eager_strides(device):
    def f(x):
        y = x + 1
        return y.t(), y.sum(1), x  # a transposed view, a reduction and an input returned as is

    fn = torch.compile(f, backend="coil", options={"strict": True})
    x = torch.randn(5, 3, device=device)
    with torch.no_grad():
        got = fn(x)
        assert_matches(got, f(x), "strides")
        assert got[2] is x or got[2].data_ptr() == x.data_ptr()


def test_options_are_checked():
    fn = torch.compile(lambda x: x + 1, backend="coil", options={"no_such_option": 1})
    with pytest.raises(Exception, match="no_such_option"):
        fn(torch.randn(3))


def test_mode_and_plugin_options_reach_the_session():
    fn = torch.compile(lambda x: x * 3, backend="coil", mode="max-autotune")
    x = torch.randn(8)
    with torch.no_grad():
        assert_matches(fn(x), x * 3, "mode")
    assert coil.session({"backend": "cpu", "mode": "max-autotune"}).get("mode") == "max-autotune"


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
def test_cuda_runs_in_the_callers_stream_order():
    """On a side stream, the input is made by slow kernels queued just before the call and the
    output is read by a kernel queued just after: right only if coil's run is ordered between
    them on that stream (it does not synchronize, so nothing else orders it)."""
    w = torch.randn(512, 512, device="cuda") / 23
    fn = torch.compile(lambda x: torch.softmax(x * 3, -1) + x, backend="coil", options={"strict": True})
    s = torch.cuda.Stream()
    with torch.no_grad():
        fn(torch.randn(512, 512, device="cuda"))  # compiled outside the timed order
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            a = torch.randn(512, 512, device="cuda")
            for _ in range(200):
                a = torch.tanh(a @ w)
            got = fn(a) * 2
        s.synchronize()
        want = (torch.softmax(a * 3, -1) + a) * 2
    assert_matches(got, want, "side stream")


@needs_cuda
def test_cuda_reduce_overhead_replays_with_new_inputs():
    lin = torch.nn.Linear(64, 32).cuda()
    fn = torch.compile(lambda x: torch.nn.functional.gelu(lin(x)), backend="coil",
                       options={"mode": "reduce-overhead", "strict": True})
    with torch.no_grad():
        for k in range(4):
            x = torch.randn(16, 64, device="cuda") * (k + 1)
            assert_matches(fn(x), torch.nn.functional.gelu(lin(x)), "replay %d" % k)
    assert C["compiled"] == 1
