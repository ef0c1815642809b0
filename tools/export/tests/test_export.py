"""The exporter's tests. The formatting tests need only Python; the export tests need PyTorch and
safetensors (the GPU machine has them, CI does not: they are skipped there, saying so). With
$COIL set to a coil binary, each export is also read back by `coil check` and run by coil's
reference interpreter against PyTorch's own outputs."""
import math
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import coil_export  # noqa: E402

try:
    import torch  # noqa: F401
    import safetensors  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
COIL = os.environ.get("COIL")


class Formatting(unittest.TestCase):
    def test_floats_read_back(self):
        self.assertEqual(coil_export._float(1e-05), "1e-05")
        self.assertEqual(coil_export._float(2.0), "2.0")
        self.assertEqual(coil_export._float(-0.5), "-0.5")
        self.assertEqual(coil_export._float(float("inf")), "inf")
        self.assertEqual(coil_export._float(-math.inf), "-inf")
        self.assertEqual(coil_export._float(float("nan")), "nan")
        self.assertEqual(float(coil_export._float(0.1)), 0.1)

    def test_strings_are_escaped(self):
        self.assertEqual(coil_export._string("tanh"), "'tanh'")
        self.assertEqual(coil_export._string("a'b\n"), "'a\\'b\\n'")
        self.assertEqual(coil_export._string("\x01"), "'\\x01'")
        with self.assertRaises(ValueError):
            coil_export._string("\u2603")


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
class Export(unittest.TestCase):
    def export(self, model, args, **kw):
        d = tempfile.mkdtemp(prefix="coil-export-")
        return d, coil_export.export(model, args, d, coil=COIL, **kw)

    def check_with_coil(self, d, extra=0):
        if not COIL:
            return
        g = os.path.join(d, "graph.coil")
        r = subprocess.run([COIL, "check", g], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        for k in [""] + ["_%d" % i for i in range(extra)]:
            cmd = [COIL, "run", g, "--backend", "ref", "--inputs", os.path.join(d, "inputs%s.safetensors" % k),
                   "--expect", os.path.join(d, "expected%s.safetensors" % k)]
            if os.path.exists(os.path.join(d, "weights.safetensors")):
                cmd += ["--weights", os.path.join(d, "weights.safetensors")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_params_buffers_and_a_dynamic_batch(self):
        import torch
        from safetensors.torch import load_file

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(6, 4)
                self.register_buffer("scale", torch.full((4,), 0.5))

            def forward(self, x):
                return torch.softmax(self.lin(x) * self.scale, -1), x.sum(1)

        torch.manual_seed(0)
        batch = torch.export.Dim("batch", min=2, max=64)
        d, r = self.export(M(), (torch.randn(5, 6),), dynamic_shapes=({0: batch},), extra_args=[(torch.randn(3, 6),)])
        text = open(os.path.join(d, "graph.coil")).read()
        self.assertTrue(text.startswith("coil 1\n"))
        self.assertRegex(text, r"%p_lin_weight: f32\[4, 6\] param")
        self.assertRegex(text, r"%b_scale: f32\[4\] buffer")
        self.assertRegex(text, r"%x: f32\[s\w+, 6\]")
        self.assertRegex(text, r"= aten\.addmm\.default\(")
        self.assertIn("  return (", text)
        for line in text.splitlines()[3:-2]:  # every statement carries its type
            self.assertRegex(line, r"^  %\w+: [\w(\[]")
        w = load_file(os.path.join(d, "weights.safetensors"))
        self.assertEqual(sorted(w), ["b_scale", "p_lin_bias", "p_lin_weight"])
        self.assertEqual(sorted(load_file(os.path.join(d, "expected_0.safetensors"))), ["out0", "out1"])
        self.assertEqual(tuple(load_file(os.path.join(d, "inputs_0.safetensors"))["x"].shape), (3, 6))
        self.assertEqual(r.unsupported, {})
        self.check_with_coil(d, extra=1)

    def test_an_op_coil_lacks_is_named_with_its_line(self):
        import torch
        if not COIL:
            self.skipTest("$COIL not set: the op table comes from `coil ops`")
        class Scan(torch.nn.Module):
            def forward(self, x):
                return torch.cummax(x, 0)[0] + 1  # the line the report names (coil has no cummax)

        d, r = self.export(Scan(), (torch.randn(4),))
        self.assertIn("aten.cummax.default", r.unsupported)
        self.assertIn("test_export.py", r.unsupported["aten.cummax.default"][0])
        with open(os.path.join(d, "graph.coil")) as f:
            self.assertIn("aten.cummax.default(", f.read())  # still written

    def test_dtypes_and_keywords(self):
        import torch
        d, r = self.export(lambda x: (x.to(torch.float16) * 2).to(torch.float32).clone(memory_format=torch.contiguous_format),
                           (torch.randn(3, 5),))
        text = open(os.path.join(d, "graph.coil")).read()
        self.assertIn("dtype=f16", text)
        self.check_with_coil(d)


if __name__ == "__main__":
    if not HAVE_TORCH:
        print("note: torch/safetensors are not installed here: the export tests are skipped "
              "(they run on the GPU machine); the formatting tests run")
    unittest.main()
