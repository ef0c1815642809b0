"""coil_export: PyTorch programs to coil graphs (docs/graph-format.md).

    from coil_export import export
    report = export(model, (x,), "out/mlp", dynamic_shapes=None, extra_args=[(x2,)])

runs torch.export.export(...).run_decompositions() (core ATen), prints the graph in the `.coil`
format with the type PyTorch inferred on every statement, and writes beside it:

    graph.coil              the graph
    weights.safetensors     parameters, buffers and constant tensors, by input name (if any)
    inputs.safetensors      the user inputs, by input name
    expected.safetensors    PyTorch's own outputs (eager), out0, out1, ...
    inputs_K / expected_K   the same for extra_args[K] (other sizes of a dynamic graph)

Ops coil does not know (its op table, from `coil ops`) are reported by name with the model line
that produced each; the graph is written anyway. The command line is `python3 -m coil_export`.
"""
import math
import operator
import os
import re
import shutil
import subprocess

__all__ = ["export", "ExportReport", "coil_ops", "print_graph", "PrintedGraph", "exported_graph"]

_DTYPES = None


def _dtype_names():
    import torch
    return {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
            torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
            torch.bool: "bool"}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}$")


class ExportReport:
    """What an export did: the files written, the ops coil lacks (op -> model lines)."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.files = []
        self.unsupported = {}
        self.statements = 0

    def __repr__(self):
        return "ExportReport(%s: %d statements, %d unsupported ops)" % (self.out_dir, self.statements,
                                                                        len(self.unsupported))


def coil_ops(coil=None):
    """The op names of coil's op table (`coil ops`), or None when no coil binary is found."""
    exe = coil or os.environ.get("COIL") or shutil.which("coil")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "ops"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {line.split()[0] for line in out.splitlines() if line.startswith("aten.")}


def _dim(d):
    """A size: an int, or a SymInt printed as a Python expression of its symbols."""
    if isinstance(d, int):
        return str(d)
    text = str(d.node.expr) if hasattr(d, "node") else str(d)
    text = text.replace("FloorDiv(", "floordiv(")
    m = re.fullmatch(r"floordiv\((.*), (.*)\)", text)
    if m:
        text = "(%s) // (%s)" % m.groups()
    if not re.fullmatch(r"[A-Za-z0-9_ +\-*/%()]+", text):
        raise ValueError("size %r cannot be written in the .coil format" % text)
    return text


def _type(val):
    import torch
    if isinstance(val, (tuple, list)):
        return "(" + ", ".join(_type(v) for v in val) + ")"
    if not isinstance(val, torch.Tensor):
        raise ValueError("a value of type %s is not a tensor" % type(val).__name__)
    names = _dtype_names()
    if val.dtype not in names:
        raise ValueError("dtype %s has no coil name" % val.dtype)
    return "%s[%s]" % (names[val.dtype], ", ".join(_dim(d) for d in val.shape))


def _float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    return r if ("." in r or "e" in r) else r + ".0"


def _string(s):
    out = []
    for ch in s:
        if ch in "\\'\"":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) > 126:
            if ord(ch) > 255:
                raise ValueError("string %r has a character the format cannot hold" % s)
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def _value(v, names):
    import torch
    import torch.fx
    if isinstance(v, torch.fx.Node):
        return "%" + names[v.name]
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, torch.SymInt) or (hasattr(v, "node") and hasattr(v.node, "expr")):
        return _dim(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, torch.dtype):
        return _dtype_names()[v]
    if isinstance(v, torch.memory_format):
        return {torch.contiguous_format: "contiguous_format", torch.channels_last: "channels_last",
                torch.preserve_format: "preserve_format"}[v]
    if isinstance(v, torch.layout):
        if v != torch.strided:
            raise ValueError("layout %s is not strided" % v)
        return "strided"
    if isinstance(v, torch.device):
        return v.type if v.index is None else "%s:%d" % (v.type, v.index)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, names) for x in v) + "]"
    raise ValueError("argument %r (%s) cannot be written in the .coil format" % (v, type(v).__name__))


_VIEWS = {"aten.view.default", "aten.reshape.default", "aten._unsafe_view.default"}


def _is_sym(v):
    """A symbolic size: a SymInt, or an FX node computing one (sym_size, arithmetic on sizes)."""
    import torch
    import torch.fx
    if isinstance(v, torch.fx.Node):
        val = v.meta.get("val")
        return val is not None and not isinstance(val, (torch.Tensor, tuple, list))
    return isinstance(v, torch.SymInt)


def _size_list(op, node):
    """The size list of a view or expand with its symbolic entries written as -1, which the
    format can hold: a view infers one -1 from the element count, an expand keeps the input's
    size. None when that cannot express the sizes."""
    if op not in _VIEWS and op != "aten.expand.default":
        return None
    sizes = node.args[1] if len(node.args) > 1 else None
    if not isinstance(sizes, (list, tuple)) or not any(_is_sym(x) for x in sizes):
        return None
    if op in _VIEWS:
        return [-1 if _is_sym(x) else x for x in sizes] if sum(map(_is_sym, sizes)) == 1 else None
    src = node.args[0].meta["val"].shape
    out = node.meta["val"].shape
    off = len(sizes) - len(src)
    new = []
    for i, x in enumerate(sizes):
        if not _is_sym(x):
            new.append(x)
        elif i >= off and str(src[i - off]) == str(out[i]):
            new.append(-1)
        else:
            return None
    return new


def _model_line(node):
    """The last frame of the user's code that produced node (for messages)."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    if not frames:
        return "(no stack trace)"
    own = os.path.dirname(os.path.abspath(__file__))
    mine = [fr for fr in frames if not os.path.abspath(fr[0]).startswith(own + os.sep)]
    f, line, fn, code = (mine or frames)[-1]
    return "%s:%s in %s: %s" % (os.path.basename(f), line, fn, code.strip())


def _flat(x):
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _flat(y)]
    if isinstance(x, dict):
        return [t for k in x for t in _flat(x[k])]
    if hasattr(x, "to_tuple"):  # transformers' ModelOutput
        return _flat(x.to_tuple())
    raise ValueError("an output of type %s is not a tensor" % type(x).__name__)


class GraphInput:
    """One input of a printed graph: the FX node (a placeholder, or a get_attr constant), its
    name in the .coil text, its kind ("input", "param", "buffer") and, for params, buffers and
    constants, the tensor."""

    def __init__(self, node, name, kind, tensor):
        self.node, self.name, self.kind, self.tensor = node, name, kind, tensor


class PrintedGraph:
    """What print_graph made: the .coil text, its inputs in order (GraphInput), the tensors of
    the param and buffer inputs by name, the FX nodes it returns, the ops the `known` predicate
    rejected (op -> model lines) and the number of statements."""

    def __init__(self):
        self.text = ""
        self.inputs = []
        self.weights = {}
        self.outputs = []
        self.unsupported = {}
        self.statements = 0


def print_graph(gm, name, kinds=None, known=None, outputs=None, comment=None):
    """Prints an ATen-level FX GraphModule (torch.export's after run_decompositions, or AOT
    autograd's) as `.coil` text, with PyTorch's inferred type on every statement.

    kinds: placeholder name -> (kind, tensor) with kind "input", "param" or "buffer" (default:
    every placeholder an input). get_attr nodes (constants AOT autograd lifts into the module)
    become inputs too, with their tensor. Placeholders holding a symbolic size (SymInt) are not
    inputs: coil binds sizes from the tensors. known: a predicate on op names ("aten.add.Tensor");
    the ops it rejects are collected in .unsupported with the user's line that made each, and
    printed anyway. outputs: the FX nodes to return (default: the graph's output node's).
    Raises ValueError for what the format cannot hold."""
    import torch
    import torch.fx
    kinds = kinds or {}
    pg = PrintedGraph()
    names = {}
    for n in gm.graph.nodes:
        nm = n.name if _NAME.match(n.name) else re.sub(r"[^A-Za-z0-9_]", "_", n.name)[:256]
        if not re.match(r"[A-Za-z_]", nm):
            nm = "v_" + nm
        while nm in names.values():
            nm += "_"
        names[n.name] = nm

    inputs, body = [], []
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            if n.op == "placeholder":
                if _is_sym(n):
                    continue  # a size: bound from the tensors' sizes
                kind, t = kinds.get(n.name, ("input", None))
                val = n.meta["val"]
            else:
                t = gm
                for part in n.target.split("."):
                    t = getattr(t, part)
                if not isinstance(t, torch.Tensor):
                    raise ValueError("constant %s of type %s is not a tensor" % (n.target, type(t).__name__))
                kind, val = "input", n.meta.get("val", t)
            suffix = "" if kind == "input" else " " + kind
            inputs.append("%%%s: %s%s" % (names[n.name], _type(val), suffix))
            pg.inputs.append(GraphInput(n, names[n.name], kind, t))
            if kind != "input":
                pg.weights[names[n.name]] = t
        elif n.op == "call_function":
            if _is_sym(n):  # a size computation: its uses are rewritten (_size_list) or reported
                continue
            if n.target is operator.getitem:
                op = "getitem"
            else:
                op = str(n.target)
                if not op.startswith("aten."):
                    op = "aten." + op if "." in op else op
                if known is not None and not known(op):
                    pg.unsupported.setdefault(op, []).append(_model_line(n))
            fixed = _size_list(op, n)
            pos = list(n.args) if fixed is None else [n.args[0], fixed] + list(n.args[2:])
            if fixed is None and any(_is_sym(x) for a in n.args for x in (a if isinstance(a, (list, tuple)) else [a])):
                pg.unsupported.setdefault("%s (with a symbolic size argument)" % op, []).append(_model_line(n))
            args = [_value(a, names) for a in pos]
            args += ["%s=%s" % (k, _value(v, names)) for k, v in n.kwargs.items()]
            val = n.meta.get("val")
            typ = ": " + _type(val) if val is not None else ""
            body.append("  %%%s%s = %s(%s)" % (names[n.name], typ, op, ", ".join(args)))
        elif n.op == "output":
            outs = outputs
            if outs is None:
                outs = n.args[0] if isinstance(n.args[0], (tuple, list)) else [n.args[0]]
            for o in outs:
                if not isinstance(o, torch.fx.Node):
                    raise ValueError("output %r is not a tensor computed by the graph" % (o,))
            pg.outputs = list(outs)
            body.append("  return (%s)" % ", ".join("%" + names[o.name] for o in outs))
        else:
            raise ValueError("FX node %s of kind %s cannot be exported" % (n.name, n.op))
    pg.statements = len(body) - 1
    head = ["coil 1"] + (["# " + comment] if comment else [])
    pg.text = "\n".join(head + ["graph %s(%s) {" % (name, ", ".join(inputs))] + body + ["}", ""])
    return pg


def _save(tensors, path, report):
    from safetensors.torch import save_file
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, path)
    report.files.append(path)


def exported_graph(model, example_args, dynamic_shapes=None, strict=False):
    """torch.export.export(model, example_args).run_decompositions() (core ATen), in eval mode
    without grad: returns (model, graph_module, kinds), model wrapped as a Module if it was a
    function, kinds the print_graph() argument (params, buffers and constants with their
    tensors)."""
    import torch
    if not isinstance(model, torch.nn.Module):  # a plain function: torch.export takes modules
        fn = model

        class _Fn(torch.nn.Module):
            def forward(self, *a):
                return fn(*a)

        model = _Fn()
    model.eval()
    with torch.no_grad():
        ep = torch.export.export(model, tuple(example_args), dynamic_shapes=dynamic_shapes, strict=strict)
        ep = ep.run_decompositions()
    gm, sig = ep.graph_module, ep.graph_signature

    kinds = {}  # placeholder name -> (kind, tensor or None)
    state = dict(ep.state_dict)
    consts = dict(getattr(ep, "constants", {}) or {})
    for spec in sig.input_specs:
        kind = spec.kind.name
        arg = spec.arg.name
        if kind == "PARAMETER":
            kinds[arg] = ("param", state[spec.target])
        elif kind == "BUFFER":
            kinds[arg] = ("buffer", state[spec.target] if spec.target in state else consts[spec.target])
        elif kind == "CONSTANT_TENSOR":
            kinds[arg] = ("buffer", consts[spec.target])
        elif kind == "USER_INPUT":
            kinds[arg] = ("input", None)
        else:
            raise ValueError("input %s of kind %s cannot be exported" % (arg, kind))
    return model, gm, kinds


def export(model, example_args, out_dir, dynamic_shapes=None, extra_args=(), name=None, coil=None,
           strict=False):
    """Exports model(*example_args) into out_dir (created; files there are replaced).

    dynamic_shapes: as torch.export.export takes it. extra_args: more argument tuples (other
    sizes of the dynamic dims) whose inputs and eager outputs are written as inputs_K /
    expected_K. name: the graph's name (default: the directory's). coil: the coil binary for the
    op check (default: $COIL, else `coil` on PATH). Returns an ExportReport."""
    import torch
    os.makedirs(out_dir, exist_ok=True)
    report = ExportReport(out_dir)
    gname = re.sub(r"[^A-Za-z0-9_]", "_", name or os.path.basename(os.path.normpath(out_dir)))
    if not re.match(r"[A-Za-z_]", gname):
        gname = "g_" + gname
    model, gm, kinds = exported_graph(model, example_args, dynamic_shapes, strict)
    known = coil_ops(coil)
    printed = print_graph(gm, gname, kinds=kinds, known=None if known is None else known.__contains__,
                          comment="exported from PyTorch %s by torch.export + run_decompositions (tools/export)"
                          % torch.__version__)
    report.unsupported = printed.unsupported
    report.statements = printed.statements
    weights = printed.weights
    user = [p.name for p in printed.inputs if p.kind == "input"]
    path = os.path.join(out_dir, "graph.coil")
    with open(path + ".tmp", "w") as f:
        f.write(printed.text)
    os.replace(path + ".tmp", path)
    report.files.append(path)
    if weights:
        _save(weights, os.path.join(out_dir, "weights.safetensors"), report)

    def run(args, suffix):
        flat_in = _flat(list(args))
        if len(flat_in) != len(user):
            raise ValueError("%d user inputs in the graph, %d tensors given" % (len(user), len(flat_in)))
        with torch.no_grad():
            out = _flat(model(*args))
        _save(dict(zip(user, flat_in)), os.path.join(out_dir, "inputs%s.safetensors" % suffix), report)
        _save({"out%d" % i: t for i, t in enumerate(out)}, os.path.join(out_dir, "expected%s.safetensors" % suffix),
              report)

    run(example_args, "")
    for k, more in enumerate(extra_args):
        run(more, "_%d" % k)
    return report
