"""The model tier's eight architectures (tools/export/coil_export/models.py) through
torch.compile(backend="coil") against eager, on every device; the dynamic ones at their other
batch sizes too. Models whose library (torchvision, transformers, timm) is missing are skipped."""
import warnings

import pytest
import torch

import coil
import coil.dynamo
from conftest import assert_matches
from coil._printer import coil_export
from coil_export import models

NEEDS = {"squeezenet": "torchvision", "mobilenet": "torchvision", "gpt2": "transformers", "bert": "transformers",
         "vit": "timm"}


def _to(x, device):
    return tuple(t.to(device) for t in x)


@pytest.mark.parametrize("make", models.ALL, ids=[f.__name__ for f in models.ALL])
def test_model(make, device):
    if make.__name__ in NEEDS:
        pytest.importorskip(NEEDS[make.__name__])
    name, m, example, dynamic, extra = make()
    m = m.eval().to(device)
    fast = torch.compile(m, backend="coil", options={"strict": True})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", coil.FallbackWarning)
        for args in [example] + list(extra):
            args = _to(args, device)
            if dynamic:  # the batch dimension is symbolic, as in the model tier's export
                torch._dynamo.mark_dynamic(args[0], 0)
            assert_matches(fast(*args), m(*args), "%s on %s at %s" % (name, device, [tuple(a.shape) for a in args]))
    assert coil.dynamo.counters["fallbacks"] == 0
    assert coil.dynamo.counters["compiled"] >= 1
    if dynamic:  # one graph for every batch size
        assert coil.dynamo.counters["compiled"] == 1
