/* fx_graph.c — graph.py: the program's lines as a torch.fx.Graph, built node by node so that
 * node names are the Wrapper IR's (arg0, s0, buf3, v1, the kernels' names):
 *
 *   input            a placeholder
 *   symbol / assert  x.size(d) / x.stride(d); _coil_expect (torch._check with a message naming
 *                    the input) of the equality; alignment checked
 *   alloc            torch.empty_strided (none for a buffer an extern call produces: its
 *                    result, in the planned layout)
 *   reuse, view      torch.as_strided over the storage they share
 *   kernel_call      a launcher (one per kernel, the kernel's name) that launches the Triton
 *                    kernel through torch.library.wrap_triton (_launch), so the module runs as
 *                    it is and torch.export / make_fx record triton_kernel_wrapper_mutation
 *                    nodes; on CPU tensors the kernel runs in Triton's interpreter
 *   extern_call      torch.ops.aten.OP.OVERLOAD with the scalar parameters by name
 *   multi_output     operator.getitem of the extern call's result
 *   copy_back        aten.copy_ into the input
 *   output           the output node (a tuple)
 *   free, comments   nothing: a GraphModule keeps values until they are last used
 *
 * Size expressions become operator.add/mul/floordiv/mod and torch.sym_min/sym_max nodes over
 * the size symbols. Input labels (untrusted) appear only inside escaped string literals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fx.h"

static const char *
torch_dtype(coil_dtype t)
{
  switch (t) {
  case COIL_F64: return "torch.float64";
  case COIL_F32: return "torch.float32";
  case COIL_F16: return "torch.float16";
  case COIL_BF16: return "torch.bfloat16";
  case COIL_I64: return "torch.int64";
  case COIL_I32: return "torch.int32";
  case COIL_I16: return "torch.int16";
  case COIL_I8: return "torch.int8";
  case COIL_U8: return "torch.uint8";
  default: return "torch.bool";
  }
}

/* A Python string of untrusted text: printable ASCII but quote and backslash as it is; text with
 * any other byte as an escaped bytes literal decoded as UTF-8 (so "é" stays "é"). */
static void
py_string(coil_strbuf *b, const char *s)
{
  bool plain = true;
  for (const unsigned char *c = (const unsigned char *)s; c && *c; c++)
    plain = plain && *c >= 0x20 && *c < 0x7f;
  coil_strbuf_puts(b, plain ? "\"" : "b\"");
  for (const unsigned char *c = (const unsigned char *)s; c && *c; c++) {
    if (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\')
      coil_strbuf_putn(b, (const char *)c, 1);
    else
      coil_strbuf_printf(b, "\\x%02x", *c);
  }
  coil_strbuf_puts(b, plain ? "\"" : "\".decode(\"utf-8\", \"replace\")");
}

/* A size expression as nodes (constants as ints), size symbols by their Python names. */
static void
sym_node(const coil_wir_program *p, const coil_sym *e, coil_strbuf *b)
{
  switch (e->kind) {
  case COIL_SYM_CONST:
    coil_strbuf_printf(b, "%lld", (long long)e->value);
    return;
  case COIL_SYM_VAR:
    coil_strbuf_puts(b, coil_sym_var_name(p->sym, e->var));
    return;
  default: {
    const char *f = e->kind == COIL_SYM_ADD ? "operator.add" : e->kind == COIL_SYM_MUL ? "operator.mul"
                    : e->kind == COIL_SYM_FLOORDIV ? "operator.floordiv" : e->kind == COIL_SYM_MOD ? "operator.mod"
                    : e->kind == COIL_SYM_MIN ? "torch.sym_min" : "torch.sym_max";
    /* n-ary sums, products, min and max two at a time, left to right */
    for (int i = 1; i < e->nargs; i++)
      coil_strbuf_printf(b, "g.call_function(%s, (", f);
    sym_node(p, e->args[0], b);
    for (int i = 1; i < e->nargs; i++) {
      coil_strbuf_puts(b, ", ");
      sym_node(p, e->args[i], b);
      coil_strbuf_puts(b, "))");
    }
    return;
  }
  }
}

static void
sym_tuple(const coil_wir_program *p, const coil_sym *const *v, int n, coil_strbuf *b)
{
  coil_strbuf_puts(b, "(");
  for (int i = 0; i < n; i++) {
    sym_node(p, v[i], b);
    coil_strbuf_puts(b, n == 1 ? "," : i + 1 < n ? ", " : "");
  }
  coil_strbuf_puts(b, ")");
}

/* the buffer whose storage b lives in: itself, or the base of a view (transitively) */
static int
storage_of(const coil_wir_program *p, int b)
{
  for (int n = 0; p->buffers[b].kind == COIL_BUF_VIEW && n < p->nbuffers; n++)
    b = p->buffers[b].base;
  return b;
}

/* the extern call that outputs buffer b, its line, or -1; *pos: which output */
static int
extern_producer(const coil_wir_program *p, int b, int *pos)
{
  for (int i = 0; i < p->nlines; i++)
    if (p->lines[i].kind == COIL_LINE_EXTERN_CALL)
      for (int o = 0; o < p->lines[i].nouts; o++)
        if (p->lines[i].outs[o] == b) {
          *pos = o;
          return i;
        }
  return -1;
}

static bool
line_mentions(const coil_line *l, int b)
{
  for (int i = 0; i < l->nargs; i++)
    if (l->args[i] == b)
      return true;
  for (int i = 0; i < l->nouts; i++)
    if (l->outs[i] == b)
      return true;
  return (l->kind != COIL_LINE_COMMENT && l->kind != COIL_LINE_EXTERN_CALL && l->kind != COIL_LINE_KERNEL_CALL &&
          l->kind != COIL_LINE_OUTPUT && l->buffer == b) ||
         ((l->kind == COIL_LINE_MULTI_OUTPUT || l->kind == COIL_LINE_COPY_BACK) && l->source == b);
}

/* Whether alloc line li of buffer b can be left out: an extern call later produces b, and
 * nothing between the two uses it (the call's result then is b). */
static bool
bound_by_extern(const coil_wir_program *p, int li, int b)
{
  int pos, x = extern_producer(p, b, &pos);
  if (x <= li)
    return false;
  for (int i = li + 1; i < x; i++)
    if (line_mentions(&p->lines[i], b))
      return false;
  return true;
}

static void
xparam_value(const coil_xparam *x, coil_strbuf *b)
{
  switch (x->kind) {
  case COIL_XP_NONE: coil_strbuf_puts(b, "None"); return;
  case COIL_XP_INT: coil_strbuf_printf(b, "%lld", (long long)x->i); return;
  case COIL_XP_BOOL: coil_strbuf_puts(b, x->i ? "True" : "False"); return;
  case COIL_XP_FLOAT:
    if (isnan(x->f))
      coil_strbuf_puts(b, "float(\"nan\")");
    else if (isinf(x->f))
      coil_strbuf_puts(b, x->f > 0 ? "float(\"inf\")" : "float(\"-inf\")");
    else
      coil_strbuf_double(b, x->f);
    return;
  case COIL_XP_STR: py_string(b, x->s); return;
  case COIL_XP_INTS:
    coil_strbuf_puts(b, "[");
    for (int i = 0; i < x->n; i++)
      coil_strbuf_printf(b, i ? ", %lld" : "%lld", (long long)x->ints[i]);
    coil_strbuf_puts(b, "]");
    return;
  }
}

/* an aten matrix product, which CUDA's libraries have only for floats */
static bool
integer_matmul(const char *op)
{
  static const char *const names[] = {"aten.mm.", "aten.bmm.", "aten.addmm.", "aten.baddbmm.", "aten.addbmm.",
                                      "aten.matmul.", "aten.mv.", "aten.addmv.", "aten.dot.", "aten.vdot."};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strncmp(op, names[i], strlen(names[i])) == 0)
      return true;
  return false;
}

/* "aten.mm.default" -> torch.ops.aten.mm.default, when it is NAMESPACE.NAME.OVERLOAD of
 * identifiers (the parser's OPNAME: NAMEs joined by '.') */
static bool
aten_target(const char *op, coil_strbuf *b)
{
  int dots = 0;
  for (const char *c = op; *c; c++)
    dots += *c == '.';
  if (dots != 2)
    return false;
  char part[3][256];
  const char *s = op;
  for (int i = 0; i < 3; i++) {
    size_t n = strcspn(s, ".");
    if (n == 0 || n >= sizeof part[i])
      return false;
    memcpy(part[i], s, n);
    part[i][n] = '\0';
    s += n + (i < 2);
  }
  for (int i = 0; i < 3; i++) /* Python keywords are attribute names here, which Python takes */
    for (const char *c = part[i]; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
        return false;
  coil_strbuf_printf(b, "torch.ops.%s.%s.%s", part[0], part[1], part[2]);
  return true;
}

static const char header[] =
    "import importlib.util\n"
    "import operator\n"
    "import os\n"
    "import sys\n"
    "\n"
    "import torch\n"
    "import torch.fx\n"
    "import triton\n"
    "from torch.library import wrap_triton\n"
    "\n"
    "try:  # launchers and checks are kept by dead-code elimination\n"
    "    from torch.fx.node import has_side_effect as _side_effect\n"
    "except ImportError:  # an older torch\n"
    "    def _side_effect(fn):\n"
    "        return fn\n"
    "\n"
    "\n"
    "def _sibling(name):\n"
    "    \"\"\"NAME.py beside this file as a module, registered in sys.modules under a name of its own\n"
    "    (torch.compile imports the modules of the functions it traces)\"\"\"\n"
    "    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + \".py\")\n"
    "    spec = importlib.util.spec_from_file_location(\"%s_%s_%d\" % (__name__, name, len(sys.modules)), path)\n"
    "    module = importlib.util.module_from_spec(spec)\n"
    "    sys.modules[spec.name] = module\n"
    "    spec.loader.exec_module(module)\n"
    "    return module\n"
    "\n"
    "\n"
    "K = _sibling(\"kernels\")\n"
    "\n"
    "\n"
    "@_side_effect\n"
    "def _coil_aligned(t, n):\n"
    "    \"\"\"assert BUF aligned N\"\"\"\n"
    "    if torch.compiler.is_compiling():  # torch.compile traces fake tensors: no data to check\n"
    "        return\n"
    "    from torch._subclasses.fake_tensor import is_fake\n"
    "\n"
    "    if not is_fake(t) and t.data_ptr() % n:  # nor has a tensor make_fx traces\n"
    "        raise RuntimeError(\"coil: an input's data is not aligned to %d bytes\" % n)\n"
    "\n"
    "\n"
    "@_side_effect\n"
    "def _coil_expect(t, what, dim, want, name):\n"
    "    \"\"\"assert BUF size|stride D == VALUE: input name is as the program was compiled for\"\"\"\n"
    "    got = t.size(dim) if what == \"size\" else t.stride(dim)\n"
    "    if got != want:  # plain Python, which torch.compile folds for static sizes (no graph break)\n"
    "        label = dict((i[0], i[1]) for i in INPUTS).get(name, \"\")\n"
    "        raise RuntimeError(\"coil: input %s (%r) of program %s: %s %d is %s, compiled for %s\"\n"
    "                           % (name, label, PROGRAM, what, dim, got, want))\n"
    "\n"
    "\n"
    "def _coil_view(t, sizes, strides, offset):\n"
    "    \"\"\"view / reuse: a layout over t's storage, offset elements past t's first\"\"\"\n"
    "    return torch.as_strided(t, sizes, strides, t.storage_offset() + offset)\n"
    "\n"
    "\n"
    "def _coil_on_cpu(op, *args, **kwargs):\n"
    "    \"\"\"an integer matrix product, which CUDA has not: computed on the CPU, exactly, and moved back\"\"\"\n"
    "    dev = next(a.device for a in args if isinstance(a, torch.Tensor))\n"
    "    if dev.type == \"cpu\":\n"
    "        return op(*args, **kwargs)\n"
    "    return op(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args], **kwargs).to(dev)\n"
    "\n"
    "\n"
    "def _coil_sort(t, dim=-1, descending=False):\n"
    "    \"\"\"aten.sort with equal elements in index order\"\"\"\n"
    "    return torch.ops.aten.sort.stable(t, stable=True, dim=dim, descending=descending)\n"
    "\n"
    "\n"
    "def _coil_topk(t, k, dim=-1, largest=True, sorted=True):\n"
    "    \"\"\"aten.topk with equal elements in index order: a stable sort's first k\"\"\"\n"
    "    v, i = torch.ops.aten.sort.stable(t, stable=True, dim=dim, descending=largest)\n"
    "    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)\n"
    "\n"
    "\n"
    "def _coil_layout(t, sizes, strides):\n"
    "    \"\"\"an extern call's result in the layout the program planned for it (copied if not)\"\"\"\n"
    "    if tuple(t.shape) == tuple(sizes) and (t.numel() == 0 or t.stride() == tuple(strides)):\n"
    "        return t\n"
    "    out = torch.empty_strided(sizes, strides, dtype=t.dtype, device=t.device)\n"
    "    return out.copy_(t)\n"
    "\n"
    "\n"
    "# CPU tensors, where this Triton has no CPU backend: the kernels run in Triton's interpreter.\n"
    "_HOST_BACKEND = \"cpu\" in getattr(getattr(triton, \"backends\", None), \"backends\", {})\n"
    "_host = None\n"
    "\n"
    "\n"
    "def _launch(kernel, grid, *args, **meta):\n"
    "    \"\"\"kernel[grid](*args, **meta) where args[0] lives: through wrap_triton (make_fx, torch.export\n"
    "    and torch.compile record the launch) where Triton compiles for that device; on CPU tensors,\n"
    "    where this Triton has no CPU backend, in Triton's interpreter (_host_launch)\"\"\"\n"
    "    if not isinstance(kernel, triton.runtime.jit.JITFunction):  # TRITON_INTERPRET=1 for the process\n"
    "        return kernel[grid](*args, **meta)\n"
    "    if _on_host(args[0]):\n"
    "        return _host_launch(kernel.fn.__name__, grid, args, meta)\n"
    "    wrap_triton(kernel)[grid](*args, **meta)\n"
    "\n"
    "\n"
    "def _on_host(t):\n"
    "    if _HOST_BACKEND or not isinstance(t, torch.Tensor) or t.device.type != \"cpu\":\n"
    "        return False\n"
    "    if torch.compiler.is_compiling() and not torch.compiler.is_exporting():\n"
    "        return True  # torch.compile: the launch runs as it is (a graph break at _host_launch)\n"
    "    from torch._subclasses.fake_tensor import is_fake\n"
    "\n"
    "    return not is_fake(t)  # traced (torch.export, make_fx): recorded as a launch, not run\n"
    "\n"
    "\n"
    "@torch.compiler.disable  # torch.compile runs it as it is, between the graphs it compiles\n"
    "def _host_launch(name, grid, args, meta):\n"
    "    getattr(_host_kernels(), name)[grid](*args, **meta)\n"
    "\n"
    "\n"
    "def _host_kernels():\n"
    "    \"\"\"kernels.py loaded a second time with TRITON_INTERPRET=1, its libdevice calls and its\n"
    "    rounding to bfloat16 (which the interpreter truncates) through torch\"\"\"\n"
    "    global _host\n"
    "    if _host is None:\n"
    "        old = os.environ.get(\"TRITON_INTERPRET\")\n"
    "        os.environ[\"TRITON_INTERPRET\"] = \"1\"\n"
    "        try:\n"
    "            module = _sibling(\"kernels\")\n"
    "        finally:\n"
    "            if old is None:\n"
    "                del os.environ[\"TRITON_INTERPRET\"]\n"
    "            else:\n"
    "                os.environ[\"TRITON_INTERPRET\"] = old\n"
    "        module.libdevice = _HostLibdevice()\n"
    "        # in f32, as on the GPU: an integer or bool kept its dtype and the interpreter's cast of it\n"
    "        # to bfloat16 then reinterprets bits\n"
    "        module._coil_bf16 = lambda x: _host_elementwise(lambda v: v.to(torch.bfloat16).float(), (x,), True)\n"
    "        _host = module\n"
    "    return _host\n"
    "\n"
    "\n"
    "class _HostLibdevice:\n"
    "    \"\"\"libdevice for the interpreter, which has none: each function is torch's, computed in the\n"
    "    arguments' dtype on the numpy arrays the interpreter holds\"\"\"\n"
    "\n"
    "    _torch = {\"nearbyint\": torch.round}  # rounds ties to even, as nearbyint does\n"
    "\n"
    "    def __getattr__(self, name):\n"
    "        fn = self._torch.get(name) or getattr(torch, name)\n"
    "        return lambda *args: _host_elementwise(fn, args)\n"
    "\n"
    "\n"
    "def _host_elementwise(fn, args, f32=False):\n"
    "    import numpy\n"
    "    import triton.language as tl\n"
    "    from triton.runtime.interpreter import TensorHandle\n"
    "\n"
    "    ts = [a for a in args if isinstance(a, tl.tensor)]\n"
    "    nd = ts[0].handle.data.dtype\n"
    "    xs = [torch.from_numpy(numpy.ascontiguousarray(a.handle.data)) if isinstance(a, tl.tensor)\n"
    "          else torch.from_numpy(numpy.asarray(getattr(a, \"value\", a), dtype=nd)) for a in args]\n"
    "    r = numpy.ascontiguousarray(fn(*xs).numpy().astype(numpy.float32 if f32 else nd))\n"
    "    scalar = tl.float32 if f32 else ts[0].dtype\n"
    "    block = any(isinstance(a.type, tl.block_type) for a in ts)\n"
    "    return tl.tensor(TensorHandle(r, scalar), tl.block_type(scalar, list(r.shape)) if block else scalar)\n";

bool
fx_graph_module(const coil_wir_program *p, coil_strbuf *b, char *why, size_t n)
{
  coil_strbuf_printf(b,
                     "# graph.py: coil program %s (Wrapper IR %d.%d) as a torch.fx.GraphModule, written by coil's fx\n"
                     "# plugin %s: build() returns it, its nodes named as the program's buffers and kernels.\n",
                     p->name, p->version_major, p->version_minor, FX_VERSION);
  coil_strbuf_printf(b, "PROGRAM = \"%s\"\n", p->name);
  coil_strbuf_puts(b, "# the inputs: (placeholder, the graph's name for it (as the exporter wrote it), a weight?)\nINPUTS = [\n");
  for (int i = 0; i < p->ninputs; i++) {
    coil_strbuf_printf(b, "    (\"%s\", ", p->buffers[p->inputs[i].buffer].name);
    py_string(b, p->inputs[i].label ? p->inputs[i].label : "");
    coil_strbuf_printf(b, ", %s),\n", p->inputs[i].is_param ? "True" : "False");
  }
  coil_strbuf_puts(b, "]\n\n");
  coil_strbuf_puts(b, header);

  /* the launchers */
  for (int k = 0; k < p->nkernels; k++) {
    const coil_kernel *kk = &p->kernels[k];
    coil_strbuf_printf(b, "\n\n@_side_effect\ndef %s(", kk->name);
    for (int i = 0; i < kk->nparams; i++)
      coil_strbuf_printf(b, i ? ", %s" : "%s", kk->params[i].name);
    for (int i = 0; i < kk->nsyms; i++)
      coil_strbuf_printf(b, ", %s", coil_sym_var_name(p->sym, kk->syms[i]->var));
    coil_strbuf_printf(b, "):\n    \"\"\"kernel_call %s: the Triton kernel K.%s\"\"\"\n", kk->name, kk->name);
    fx_launch_source(p, kk, b);
  }

  coil_strbuf_puts(b, "\n\ndef build(device=\"cuda\"):\n"
                      "    \"\"\"The program as a torch.fx.GraphModule (device: where its buffers go when it has no\n"
                      "    tensor input to take the device from).\"\"\"\n"
                      "    g = torch.fx.Graph()\n");
  int first_input = -1;
  for (int i = 0; i < p->ninputs; i++) {
    const char *nm = p->buffers[p->inputs[i].buffer].name;
    coil_strbuf_printf(b, "    %s = g.placeholder(\"%s\")\n", nm, nm);
    if (first_input < 0)
      first_input = p->inputs[i].buffer;
  }
  if (first_input >= 0)
    coil_strbuf_printf(b, "    _device = g.call_function(getattr, (%s, \"device\"))\n", p->buffers[first_input].name);
  else
    coil_strbuf_puts(b, "    _device = torch.device(device)\n");

  for (int li = 0; li < p->nlines; li++) {
    const coil_line *l = &p->lines[li];
    const coil_buffer *buf = l->buffer >= 0 && l->buffer < p->nbuffers ? &p->buffers[l->buffer] : NULL;
    switch (l->kind) {
    case COIL_LINE_COMMENT:
    case COIL_LINE_FREE:
      break;
    case COIL_LINE_SYMBOL:
      coil_strbuf_printf(b, "    %s = g.create_node(\"call_method\", \"%s\", (%s, %d), name=\"%s\")\n",
                         coil_sym_var_name(p->sym, l->sym->var), l->is_stride ? "stride" : "size", buf->name, l->dim,
                         coil_sym_var_name(p->sym, l->sym->var));
      break;
    case COIL_LINE_ASSERT:
      if (l->assert_kind == COIL_ASSERT_ALIGNED) {
        coil_strbuf_printf(b, "    g.call_function(_coil_aligned, (%s, %lld))\n", buf->name, (long long)l->align);
      } else {
        coil_strbuf_printf(b, "    g.call_function(_coil_expect, (%s, \"%s\", %d, ", buf->name,
                           l->assert_kind == COIL_ASSERT_STRIDE ? "stride" : "size", l->dim);
        sym_node(p, l->value, b);
        coil_strbuf_printf(b, ", \"%s\"))\n", buf->name);
      }
      break;
    case COIL_LINE_ALLOC:
      if (bound_by_extern(p, li, l->buffer))
        break;
      coil_strbuf_printf(b, "    %s = g.create_node(\"call_function\", torch.empty_strided, (", buf->name);
      sym_tuple(p, buf->sizes, buf->rank, b);
      coil_strbuf_puts(b, ", ");
      sym_tuple(p, buf->strides, buf->rank, b);
      coil_strbuf_printf(b, "), {\"dtype\": %s, \"device\": _device}, name=\"%s\")\n", torch_dtype(buf->dtype), buf->name);
      break;
    case COIL_LINE_REUSE:
    case COIL_LINE_VIEW: {
      int root = storage_of(p, buf->base);
      coil_strbuf_printf(b, "    %s = g.create_node(\"call_function\", _coil_view, (%s, ", buf->name, p->buffers[root].name);
      sym_tuple(p, buf->sizes, buf->rank, b);
      coil_strbuf_puts(b, ", ");
      sym_tuple(p, buf->strides, buf->rank, b);
      coil_strbuf_puts(b, ", ");
      if (l->kind == COIL_LINE_VIEW && buf->offset)
        sym_node(p, buf->offset, b);
      else
        coil_strbuf_puts(b, "0");
      coil_strbuf_printf(b, "), name=\"%s\")\n", buf->name);
      break;
    }
    case COIL_LINE_KERNEL_CALL: {
      const coil_kernel *kk = &p->kernels[l->kernel];
      coil_strbuf_printf(b, "    g.create_node(\"call_function\", %s, (", kk->name);
      for (int i = 0; i < l->nargs; i++)
        coil_strbuf_printf(b, "%s, ", p->buffers[l->args[i]].name);
      for (int i = 0; i < kk->nsyms; i++)
        coil_strbuf_printf(b, "%s, ", coil_sym_var_name(p->sym, kk->syms[i]->var));
      coil_strbuf_printf(b, "), name=\"%s\")\n", kk->name);
      break;
    }
    case COIL_LINE_EXTERN_CALL: {
      coil_strbuf target = {0};
      if (!l->op || !aten_target(l->op, &target)) {
        coil_strbuf_free(&target);
        snprintf(why, n, "line %d: extern_call %s is no NAMESPACE.OP.OVERLOAD name", li + 1, l->op ? l->op : "?");
        return false;
      }
      /* CUDA has no integer matmul: those go through the CPU (_coil_on_cpu) */
      bool via_cpu = l->nouts > 0 && !coil_dtype_is_float(p->buffers[l->outs[0]].dtype) && integer_matmul(l->op);
      /* ties in index order, as the reference and coil's generated sort give them: PyTorch's
       * CUDA topk and sort leave their order open (a topk of i64 differed between two runs) */
      const char *stable = strcmp(l->op, "aten.topk.default") == 0   ? "_coil_topk"
                           : strcmp(l->op, "aten.sort.default") == 0 ? "_coil_sort"
                                                                     : NULL;
      if (via_cpu)
        coil_strbuf_printf(b, "    _r%d = g.call_function(_coil_on_cpu, (%s, ", li, target.s);
      else if (stable)
        coil_strbuf_printf(b, "    _r%d = g.call_function(%s, (", li, stable);
      else
        coil_strbuf_printf(b, "    _r%d = g.call_function(%s, (", li, target.s);
      coil_strbuf_free(&target);
      for (int i = 0; i < l->nargs; i++)
        coil_strbuf_printf(b, "%s, ", p->buffers[l->args[i]].name);
      coil_strbuf_puts(b, "), {");
      for (int i = 0; i < l->nxparams; i++) {
        coil_strbuf_printf(b, "\"%s\": ", l->xparams[i].name);
        xparam_value(&l->xparams[i], b);
        coil_strbuf_puts(b, ", ");
      }
      coil_strbuf_puts(b, "})\n");
      for (int o = 0; o < l->nouts; o++) {
        const coil_buffer *ob = &p->buffers[l->outs[o]];
        char res[64];
        if (l->nouts == 1)
          snprintf(res, sizeof res, "_r%d", li);
        else
          snprintf(res, sizeof res, "g.call_function(operator.getitem, (_r%d, %d))", li, o);
        /* its alloc line was left out, or the result is copied into the buffer allocated */
        int al = -1;
        for (int j = 0; j < li && al < 0; j++)
          if (p->lines[j].kind == COIL_LINE_ALLOC && p->lines[j].buffer == l->outs[o])
            al = j;
        if (al >= 0 && !bound_by_extern(p, al, l->outs[o])) {
          coil_strbuf_printf(b, "    g.call_function(torch.ops.aten.copy_.default, (%s, %s))\n", ob->name, res);
          continue;
        }
        coil_strbuf_printf(b, "    %s = g.create_node(\"call_function\", _coil_layout, (%s, ", ob->name, res);
        sym_tuple(p, ob->sizes, ob->rank, b);
        coil_strbuf_puts(b, ", ");
        sym_tuple(p, ob->strides, ob->rank, b);
        coil_strbuf_printf(b, "), name=\"%s\")\n", ob->name);
      }
      break;
    }
    case COIL_LINE_MULTI_OUTPUT: /* the extern call above already bound it */
      break;
    case COIL_LINE_COPY_BACK:
      coil_strbuf_printf(b, "    g.call_function(torch.ops.aten.copy_.default, (%s, %s))\n", buf->name,
                         p->buffers[l->source].name);
      break;
    case COIL_LINE_OUTPUT:
      coil_strbuf_puts(b, "    g.output((");
      for (int i = 0; i < l->nargs; i++)
        coil_strbuf_printf(b, "%s%s", p->buffers[l->args[i]].name, l->nargs == 1 ? "," : i + 1 < l->nargs ? ", " : "");
      coil_strbuf_puts(b, "))\n");
      break;
    }
  }
  coil_strbuf_printf(b, "    g.lint()\n"
                        "    return torch.fx.GraphModule(torch.nn.Module(), g, class_name=PROGRAM)\n");
  return true;
}
