"""Runs PyTorch (CPU, and CUDA where there is one) on the shape, padding, resampling,
normalisation and pooling ops of ops.def's section for them, on fixed inputs, and writes
$OUT/torch_shapes.json: per case the .coil graph, its inputs and PyTorch's outputs. Run it on
the GPU machine (it has PyTorch); tools/torch_shapes_compare.py then runs each graph on coil's
backends with those inputs and compares (coil run --expect)."""
import json
import math
import os

import torch

aten = torch.ops.aten
DT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.bool: "bool"}


def inp(shape, dtype=torch.float32, k=0.731, off=0.3):
    n = math.prod(shape)
    x = torch.sin(torch.arange(n, dtype=torch.float64) * k + off) * 3
    if dtype == torch.int64:
        x = torch.round(x * 10)
    return x.reshape(shape).to(dtype)


def tdesc(t):
    return f"{DT[t.dtype]}[{', '.join(str(s) for s in t.shape)}]"


cases = []


def case(name, body, inputs, fn, nout=None):
    """body: statements over %x, %y, ... defining %r: a tensor, or (nout given) a tuple whose
    first nout elements are returned."""
    names = "xyzuvw"
    sig = ", ".join(f"%{names[i]}: {tdesc(t)}" for i, t in enumerate(inputs))
    outs = []
    for dev in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        r = fn(*[t.to(dev) for t in inputs])
        r = list(r) if isinstance(r, (tuple, list)) else [r]
        outs.append([o.cpu() for o in r[:nout or 1]])
    lines = [f"  {s}" for s in body.split("\n")]
    if nout is None:
        ret = "%r"
    else:
        for k in range(nout):
            lines.append(f"  %o{k} = getitem(%r, {k})")
        ret = ", ".join(f"%o{k}" for k in range(nout))
    graph = "coil 1\ngraph t(" + sig + ") {\n" + "\n".join(lines) + f"\n  return ({ret})\n}}\n"
    enc = lambda t: {"dtype": DT[t.dtype], "shape": list(t.shape),
                     "data": [x if not isinstance(x, float) or math.isfinite(x) else repr(x)
                              for x in t.flatten().tolist()]}
    cases.append({"name": name, "graph": graph,
                  "inputs": {names[i]: enc(t) for i, t in enumerate(inputs)},
                  "outputs": [enc(o) for o in outs[0]],
                  "cuda_same": None if len(outs) < 2 else all(
                      torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
                      for a, b in zip(outs[0], outs[1]))})


x3 = inp([5, 7, 3])
case("flip", "%r = aten.flip.default(%x, [0, -1])", [x3], lambda x: aten.flip.default(x, [0, -1]))
case("repeat", "%r = aten.repeat.default(%x, [2, 1, 3, 2])", [x3], lambda x: aten.repeat.default(x, [2, 1, 3, 2]))
ix = torch.tensor([2, 0, 6, 6, 1])
case("index_select", "%r = aten.index_select.default(%x, 1, %y)", [x3, ix], lambda x, i: aten.index_select.default(x, 1, i))
case("diagonal", "%r = aten.diagonal.default(%x, 2, -1, 1)", [x3], lambda x: aten.diagonal.default(x, 2, -1, 1))
case("diagonal_neg", "%r = aten.diagonal.default(%x, -3, 1, 0)", [x3], lambda x: aten.diagonal.default(x, -3, 1, 0))
case("as_strided", "%r = aten.as_strided.default(%x, [4, 4, 2], [1, 5, 0], 3)", [x3],
     lambda x: aten.as_strided.default(x, [4, 4, 2], [1, 5, 0], 3))
case("var_dim", "%r = aten.var.dim(%x, [0, 2])", [x3], lambda x: aten.var.dim(x, [0, 2]))
case("var_dim_biased", "%r = aten.var.dim(%x, [1], False, True)", [x3], lambda x: aten.var.dim(x, [1], False, True))

x1 = inp([2, 3, 7])
case("reflection_pad1d", "%r = aten.reflection_pad1d.default(%x, [3, 6])", [x1], lambda x: aten.reflection_pad1d.default(x, [3, 6]))
case("reflection_pad1d_crop", "%r = aten.reflection_pad1d.default(%x, [-2, 4])", [x1],
     lambda x: aten.reflection_pad1d.default(x, [-2, 4]))
x4 = inp([2, 3, 5, 7])
case("reflection_pad2d", "%r = aten.reflection_pad2d.default(%x, [4, 6, 1, 2])", [x4],
     lambda x: aten.reflection_pad2d.default(x, [4, 6, 1, 2]))
x5 = inp([2, 2, 3, 4, 5])
case("reflection_pad3d", "%r = aten.reflection_pad3d.default(%x, [1, 2, 3, 0, 2, 1])", [x5],
     lambda x: aten.reflection_pad3d.default(x, [1, 2, 3, 0, 2, 1]))
case("replication_pad2d", "%r = aten.replication_pad2d.default(%x, [3, 8, 6, 2])", [x4],
     lambda x: aten.replication_pad2d.default(x, [3, 8, 6, 2]))
case("replication_pad2d_crop", "%r = aten.replication_pad2d.default(%x, [-1, 2, 3, -2])", [x4],
     lambda x: aten.replication_pad2d.default(x, [-1, 2, 3, -2]))
case("replication_pad3d", "%r = aten.replication_pad3d.default(%x, [1, 2, 3, 0, 2, 4])", [x5],
     lambda x: aten.replication_pad3d.default(x, [1, 2, 3, 0, 2, 4]))

xb = inp([1, 2, 37, 61])
xt = inp([1, 2, 10, 7])
for nm, x, osz, sf in [("out", x4, [9, 13], None), ("scale", x4, None, [1.7, 0.6]), ("double", x4, None, [2.0, 2.0]),
                       ("same", x4, [5, 3], None), ("big", xb, None, [3.3, 2.9]), ("big_out", xb, [100, 71], None),
                       ("near2", xt, None, [2.05, 1.0]), ("third", xt, None, [0.3, 1.0 / 3])]:
    a = "None" if osz is None else str(osz)
    b = "None" if sf is None else "[" + ", ".join(repr(s) for s in sf) + "]"
    case(f"nearest_{nm}", f"%r = aten.upsample_nearest2d.vec(%x, {a}, {b})", [x],
         lambda x, osz=osz, sf=sf: aten.upsample_nearest2d.vec(x, osz, sf))
    for al in [False, True]:
        case(f"bilinear_{nm}_{al}", f"%r = aten.upsample_bilinear2d.vec(%x, {a}, {al}, {b})", [x],
             lambda x, osz=osz, sf=sf, al=al: aten.upsample_bilinear2d.vec(x, osz, al, sf))
x4d = inp([2, 3, 5, 7], torch.float64)
case("bilinear_f64", "%r = aten.upsample_bilinear2d.vec(%x, None, False, [1.7, 2.9])", [x4d],
     lambda x: aten.upsample_bilinear2d.vec(x, None, False, [1.7, 2.9]))
case("bilinear_one", "%r = aten.upsample_bilinear2d.vec(%x, [1, 7], True, None)", [x4],
     lambda x: aten.upsample_bilinear2d.vec(x, [1, 7], True, None))

xg = inp([3, 6, 3, 4])
w6, b6 = inp([6], k=0.5, off=1.0), inp([6], k=0.9, off=0.1)
case("group_norm", "%r = aten.native_group_norm.default(%x, %y, %z, 3, 6, 12, 3, 1e-05)", [xg, w6, b6],
     lambda x, w, b: aten.native_group_norm.default(x, w, b, 3, 6, 12, 3, 1e-5), 3)
case("group_norm_2d", "%r = aten.native_group_norm.default(%x, None, None, 5, 6, 1, 2, 0.001)", [inp([5, 6])],
     lambda x: aten.native_group_norm.default(x, None, None, 5, 6, 1, 2, 1e-3), 3)
xbn = inp([4, 6, 5])
rm, rv = inp([6], k=0.2), inp([6], k=0.3).abs() + 0.5
case("batch_norm_train", "%r = aten._native_batch_norm_legit.default(%x, %y, %z, %u, %v, True, 0.1, 1e-05)",
     [xbn, w6, b6, rm, rv], lambda x, w, b, m, v: aten._native_batch_norm_legit.default(x, w, b, m.clone(), v.clone(), True, 0.1, 1e-5), 3)
case("batch_norm_eval", "%r = aten._native_batch_norm_legit.default(%x, %y, %z, %u, %v, False, 0.1, 1e-05)",
     [xbn, w6, b6, rm, rv], lambda x, w, b, m, v: aten._native_batch_norm_legit.default(x, w, b, m, v, False, 0.1, 1e-5), 1)
case("batch_norm_no_stats", "%r = aten._native_batch_norm_legit.no_stats(%x, None, None, True, 0.1, 0.001)",
     [inp([3, 4, 2, 5])], lambda x: aten._native_batch_norm_legit.no_stats(x, None, None, True, 0.1, 1e-3), 3)
xd = inp([4, 5])
xd[1, 2], xd[2, 3], xd[3, 1] = float("inf"), float("nan"), -2.0
case("dropout_eval", "%r = aten.native_dropout.default(%x, 0.5, False)", [xd], lambda x: aten.native_dropout.default(x, 0.5, False), 2)
case("dropout_p0", "%r = aten.native_dropout.default(%x, 0.0, True)", [xd], lambda x: aten.native_dropout.default(x, 0.0, True), 2)
case("dropout_p1", "%r = aten.native_dropout.default(%x, 1.0, None)", [xd], lambda x: aten.native_dropout.default(x, 1.0, None), 2)

xa = inp([2, 3, 9, 7])
for osz in [[4, 3], [1, 1], [9, 7], [13, 10], [0, 3]]:
    case(f"adaptive2d_{osz[0]}x{osz[1]}", f"%r = aten._adaptive_avg_pool2d.default(%x, {osz})", [xa],
         lambda x, osz=osz: aten._adaptive_avg_pool2d.default(x, osz))
case("adaptive3d", "%r = aten._adaptive_avg_pool3d.default(%x, [2, 4, 3])", [inp([2, 2, 5, 6, 7])],
     lambda x: aten._adaptive_avg_pool3d.default(x, [2, 4, 3]))
case("adaptive3d_up", "%r = aten._adaptive_avg_pool3d.default(%x, [7, 2, 11])", [inp([3, 4, 5, 9])],
     lambda x: aten._adaptive_avg_pool3d.default(x, [7, 2, 11]))
xp = inp([2, 3, 5, 6, 7])
for nm, args in [("", "[2, 3, 2], [2, 2, 1], [1, 1, 0]"), ("ceil", "[3, 3, 3], [2, 2, 2], [1, 1, 1], True"),
                 ("excl", "[3, 2, 3], [2, 1, 2], [1, 1, 1], True, False"), ("div", "2, [], 0, False, True, 3")]:
    py = eval("[" + args.replace("True", "True").replace("False", "False") + "]")
    case(f"avg_pool3d_{nm}", f"%r = aten.avg_pool3d.default(%x, {args})", [xp], lambda x, py=py: aten.avg_pool3d.default(x, *py))
xm = inp([2, 3, 7, 6, 9])
xm[0, 1, 2, 3, 4] = float("nan")
for nm, args in [("", "[2, 3, 2], [2, 2, 1], [1, 1, 0]"), ("ceil_dil", "[3, 2, 3], [2, 2, 2], [1, 1, 1], [2, 1, 2], True")]:
    py = eval("[" + args + "]")
    case(f"max_pool3d_{nm}", f"%r = aten.max_pool3d_with_indices.default(%x, {args})", [xm],
         lambda x, py=py: aten.max_pool3d_with_indices.default(x, *py), 2)

out = os.environ.get("OUT", "/tmp")
with open(os.path.join(out, "torch_shapes.json"), "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f)
print(torch.__version__, len(cases), "cases;", "cuda differs on:",
      [c["name"] for c in cases if c["cuda_same"] is False])
