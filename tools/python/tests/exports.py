"""The twelve programs of ../shared/torch-exports as PyTorch code, written back from their graphs
(the export has no Python source): each CASES entry is (name, make) where make() returns
(function or module, example args, other-size args for a dynamic graph or None). Inputs are seeded
random tensors of the graphs' sizes; the stored outputs are not used: tests compare with eager."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _r(*shape):
    return torch.randn(*shape)


def e01_add_relu():
    return (lambda a, b: torch.relu(a + b)), (_r(16, 32), _r(16, 32)), None


def e02_silu_mlp():
    m = nn.Sequential(nn.Linear(24, 40), nn.SiLU(), nn.Linear(40, 24))
    return m, (_r(6, 24),), None


def e03_log_softmax_dim0():
    return (lambda a: torch.log_softmax(a, 0)), (_r(50, 7),), None


def e04_mean_var():
    return (lambda a: (a.mean(-1), a.var(-1, correction=0), a.amin(0), a.prod(1))), (_r(9, 11),), None


def e05_exp_log_pow():
    def f(a):
        return torch.log1p(torch.exp(-a.abs())) + a ** 3 - torch.sigmoid(a) / (a * a + 1)
    return f, (_r(1000),), None


def e06_bf16_cast():
    def f(a, b):
        return (a.to(torch.bfloat16) * b.to(torch.bfloat16)).to(torch.float32).sum(0)
    return f, (_r(12, 20), _r(20)), None


def e07_cat_split():
    def f(a, b):
        x, y, z = torch.cat([a, b]).split([3, 5, 2])
        return x * 1, y * 2, z * 3
    return f, (_r(4, 8), _r(6, 8)), None


def e08_transpose_contig():
    return (lambda a: a.t().contiguous() - a.mean()), (_r(33, 65),), None


def e09_dynamic_rows():
    def f(x, b):
        return torch.softmax(x + b, -1).amax(-1)
    return f, (_r(5, 48), _r(48)), [(_r(9, 48), _r(48))]


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.l(x)


def e10_encoder_layer():
    return _Encoder(), (_r(2, 7, 32),), None


class _Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)

    def forward(self, x):
        return F.avg_pool2d(F.leaky_relu(self.c(x), 0.1), 2)


def e11_conv_groups_avgpool():
    return _Conv(), (_r(1, 4, 12, 12),), None


def e12_argmin_any_where():
    def f(a):
        return a.argmin(0), (a > 1.5).any(1), torch.where(a < 0, torch.zeros_like(a), a).sum()
    return f, (_r(10, 6),), None


CASES = [(f.__name__, f) for f in [e01_add_relu, e02_silu_mlp, e03_log_softmax_dim0, e04_mean_var, e05_exp_log_pow,
                                   e06_bf16_cast, e07_cat_split, e08_transpose_contig, e09_dynamic_rows,
                                   e10_encoder_layer, e11_conv_groups_avgpool, e12_argmin_any_where]]
