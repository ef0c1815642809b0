# kernels.py: the Triton kernels of coil program g (Wrapper IR 1.4), written by coil's fx
# plugin 0.1.0. graph.py launches them; KERNELS lists each with its argument types.
import triton
import triton.language as tl
from triton.language.extra import libdevice

# Helpers (PyTorch's semantics where Triton's operators differ): integer floor division and
# remainder (Triton's truncate), division by zero of integers giving 0 as in coil's other
# generated code, NaN-propagating max and min, and the combine functions of reductions.
@triton.jit
def _coil_floordiv(a, b):
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)

@triton.jit
def _coil_mod(a, b):
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)

@triton.jit
def _coil_min(a, b):
    return tl.minimum(a, b)

@triton.jit
def _coil_max(a, b):
    return tl.maximum(a, b)

@triton.jit
def _coil_floordiv_v(a, b):
    s = tl.where(b == 0, 1, b)
    return tl.where(b == 0, 0, _coil_floordiv(a, s))

@triton.jit
def _coil_truncdiv_v(a, b):
    s = tl.where(b == 0, 1, b)
    return tl.where(b == 0, 0, a // s)

@triton.jit
def _coil_fmod_v(a, b):
    s = tl.where(b == 0, 1, b)
    return tl.where(b == 0, 0, a % s)

@triton.jit
def _coil_floordiv_f(a, b):
    # PyTorch's div_floor for floats: from fmod, so that a == b * q + r holds where it can
    m = libdevice.fmod(a, b)
    d = (a - m) / b
    d = tl.where((m != 0) & ((b < 0) != (m < 0)), d - 1.0, d)
    q = tl.floor(d)
    q = tl.where(d - q > 0.5, q + 1.0, q)
    q = tl.where(d == 0, libdevice.copysign(0.0 * d, a / b), q)
    return tl.where(b == 0, a / b, q)

@triton.jit
def _coil_fmax(a, b):
    return tl.where((a > b) | (a != a), a, b)

@triton.jit
def _coil_fmin(a, b):
    return tl.where((a < b) | (a != a), a, b)

@triton.jit
def _coil_imax(a, b):
    return tl.maximum(a, b)

@triton.jit
def _coil_imin(a, b):
    return tl.minimum(a, b)

@triton.jit
def _coil_or(a, b):
    return a | b

@triton.jit
def _coil_and(a, b):
    return a & b

@triton.jit
def _coil_add(a, b):
    return a + b

@triton.jit
def _coil_mul(a, b):
    return a * b

@triton.jit
def _coil_bf16(x):
    # float rounded to bfloat16, to nearest even, and back
    return x.to(tl.bfloat16).to(tl.float32)

@triton.jit
def _coil_argmax(av, ai, bv, bi):
    # the first largest; NaN is larger than everything (torch.argmax)
    an = av != av
    bn = bv != bv
    a = (av > bv) | (an & ~bn) | (((av == bv) | (an & bn)) & (ai < bi))
    return tl.where(a, av, bv), tl.where(a, ai, bi)

@triton.jit
def _coil_argmin(av, ai, bv, bi):
    # the first smallest; NaN is smaller than everything (torch.argmin)
    an = av != av
    bn = bv != bv
    a = (av < bv) | (an & ~bn) | (((av == bv) | (an & bn)) & (ai < bi))
    return tl.where(a, av, bv), tl.where(a, ai, bi)


def _blocks(kind, xnumel, rnumel):
    """(_XBLOCK, _RBLOCK, num_warps) of a launch: 1024 points a program for pointwise kernels,
    down to 128 while that gives fewer than 8 programs (a small kernel on one SM runs its chain of
    math serially: 1,024 points of ten sin took 5x Inductor's time on the H200); a persistent
    reduction holds its whole row (a power of two), with as many rows as make 4096 points; a
    looped one walks r by up to 1024 points, 2048 points a chunk."""
    if kind == "pointwise":
        xb = 1024
        while xb > 128 and (int(xnumel) + xb - 1) // xb < 8:
            xb //= 2
        return xb, 1, 4
    rb = 1 << (max(int(rnumel), 1) - 1).bit_length()  # the next power of two, in plain Python
    if kind == "persistent":
        return max(1, min(64, 4096 // rb)), rb, (8 if rb >= 2048 else 4)
    rb = min(rb, 1024)
    return max(1, min(64, 2048 // rb)), rb, 8


@triton.jit
def coil_red_fused_native_layer_norm_0(in0, in1, in2, out0, _xnumel, _rnumel, _XBLOCK: tl.constexpr, _RBLOCK: tl.constexpr):
    # aten.native_layer_norm.default
    _xindex = (tl.program_id(0).to(tl.int64) * _XBLOCK + tl.arange(0, _XBLOCK).to(tl.int64))[:, None]
    _xmask = _xindex < _xnumel
    _xz = tl.full([_XBLOCK, 1], 0, tl.int64)
    x0 = _xindex
    _rindex = tl.arange(0, _RBLOCK).to(tl.int64)[None, :]
    _rmask = _rindex < _rnumel
    r0 = _rindex
    _t0 = tl.load(in0 + ((r0 + (4096 * x0)) + _xz), _xmask & _rmask, other=0)
    _w1 = tl.broadcast_to(_t0, [_XBLOCK, _RBLOCK])
    _t1 = tl.reduce(tl.where(_rmask, _w1, 0.0), 1, _coil_add)[:, None] / _rnumel
    _w2 = tl.broadcast_to(_t0, [_XBLOCK, _RBLOCK])
    _m2 = _t1
    _d2 = tl.where(_rmask, _w2 - _m2, 0.0)
    _t2 = tl.reduce(_d2 * _d2, 1, _coil_add)[:, None]
    _t3 = (_t0 - _t1)
    _t4 = (4096 + _xz)
    _t5 = _t4.to(tl.float32)
    _t6 = tl.div_rn(_t2, _t5)
    _t7 = tl.full([_XBLOCK, 1], 1e-05, tl.float32)
    _t8 = (_t6 + _t7)
    _t9 = tl.rsqrt(_t8)
    _t10 = (_t3 * _t9)
    _t11 = tl.load(in1 + (r0 + _xz), _xmask & _rmask, other=0)
    _t12 = (_t10 * _t11)
    _t13 = tl.load(in2 + (r0 + _xz), _xmask & _rmask, other=0)
    _t14 = (_t12 + _t13)
    tl.store(out0 + ((r0 + (4096 * x0)) + _xz), _t14.to(tl.float32), _xmask & _rmask)


KERNELS = {
    "coil_red_fused_native_layer_norm_0": (coil_red_fused_native_layer_norm_0, "persistent", {"in0": "*fp32", "in1": "*fp32", "in2": "*fp32", "out0": "*fp32", "_xnumel": "i64", "_rnumel": "i64"}),
}
