"""G7 decompose-K, PyTorch's side (tools/device/decompose_k.sh runs it on the GPU machine): for the
skinny-output, long-K products of coil bench's mm_skinny_k_* graphs, times with triton's do_bench
(L2 flushed before each call, as coil bench does) torch.mm (cuBLAS), the decomposition written in
eager PyTorch for several slice counts (bmm with out_dtype=float32, sum, cast), torch.compile
(Inductor, default mode) and torch.compile max-autotune-no-cudagraphs (whose candidates include
decompose-K for such shapes), and says whether Inductor's code holds a decomposition.
Usage: python3 decompose_k.py OUT.json"""
import json, sys, time
import torch
from triton.testing import do_bench
from torch._inductor.utils import run_and_get_code

SHAPES = [("mm_skinny_k_fp16", 64, 65536, 64, torch.float16), ("mm_tiny_out_fp16", 16, 262144, 16, torch.float16),
          ("mm_skinny_k_f32", 128, 32768, 128, torch.float32)]


def decompose(a, b, ks):
    m, k = a.shape
    p = torch.bmm(a.reshape(m, ks, k // ks).permute(1, 0, 2), b.reshape(ks, k // ks, b.shape[1]), out_dtype=torch.float32)
    return p.sum(0).to(a.dtype)


def mm(a, b):
    return a @ b


def ms(fn):
    return do_bench(fn, warmup=25, rep=200)


def main():
    rows = []
    for name, M, K, N, dt in SHAPES:
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(K, N, device="cuda", dtype=dt)
        ref = (a.double() @ b.double())
        row = {"name": name, "M": M, "K": K, "N": N, "dtype": str(dt)}
        row["torch_mm_ms"] = ms(lambda: a @ b)
        for ks in (4, 8, 16, 32, 64):
            try:
                out = decompose(a, b, ks)
                row[f"eager_dk{ks}_ms"] = ms(lambda: decompose(a, b, ks))
                row[f"eager_dk{ks}_maxerr"] = (out.double() - ref).abs().max().item()
            except Exception as e:  # bmm out_dtype missing: say so
                row[f"eager_dk{ks}_ms"] = None
                row["eager_error"] = repr(e)[:200]
        for mode in ("default", "max-autotune-no-cudagraphs"):
            torch._dynamo.reset()
            t0 = time.time()
            cf = torch.compile(mm, mode=None if mode == "default" else mode)
            out, code = run_and_get_code(cf, a, b)
            row[f"inductor_{mode}_compile_s"] = time.time() - t0
            text = "\n".join(code)
            row[f"inductor_{mode}_decomposes"] = "bmm" in text or "decompose_k" in text
            row[f"inductor_{mode}_ms"] = ms(lambda: cf(a, b))
            row[f"inductor_{mode}_maxerr"] = (out.double() - ref).abs().max().item()
        row["ref_absmax"] = ref.abs().max().item()
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows},
              open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
