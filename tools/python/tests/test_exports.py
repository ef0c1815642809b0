"""The twelve programs of ../shared/torch-exports (tests/exports.py) through
torch.compile(backend="coil") against eager, on every device, strict (no fallback)."""
import pytest
import torch

import coil.dynamo
from conftest import assert_matches
from exports import CASES


@pytest.mark.parametrize("make", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_export_case(make, device):
    torch.manual_seed(0)
    fn, example, extra = make()
    if isinstance(fn, torch.nn.Module):
        fn = fn.eval().to(device)
    fast = torch.compile(fn, backend="coil", dynamic=True if extra else None, options={"strict": True})
    with torch.no_grad():
        for args in [example] + list(extra or []):
            args = tuple(t.to(device) for t in args)
            assert_matches(fast(*args), fn(*args), "%s on %s" % (make.__name__, device))
    assert coil.dynamo.counters["compiled"] >= 1 and coil.dynamo.counters["fallbacks"] == 0
