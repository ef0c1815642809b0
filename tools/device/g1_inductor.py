"""torch.compile (Inductor) on the G1 benchmark graphs of `coil bench --backend cuda`
(embedding_layernorm, conv_bn_relu_maxpool, cumsum_rows), timed as ../shared/anchors/inductor_baseline.py
times its graphs (triton's do_bench, L2 flushed; compile time of the first call; host us per call
over 200 queued calls; reduce-overhead). Writes $OUT/inductor_g1.json in that script's format,
so tools/device/cuda_table.py joins it with coil's rows by name."""
import json, os, time
import torch, torch.nn.functional as F
import triton
from triton.testing import do_bench

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False  # coil's convolution is exact f32: compare like with like
dev = "cuda"
rows = []


def bench_case(name, fn, args, min_bytes, flops=0.0):
    torch._dynamo.reset()
    eager_ms = do_bench(lambda: fn(*args), warmup=25, rep=100)
    cf = torch.compile(fn)
    torch.cuda.synchronize(); t0 = time.perf_counter(); out = cf(*args); torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    comp_ms = do_bench(lambda: cf(*args), warmup=25, rep=100)
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(200):
        cf(*args)
    torch.cuda.synchronize(); wall_call_us = (time.perf_counter() - t0) / 200 * 1e6
    torch._dynamo.reset()
    cg = torch.compile(fn, mode="reduce-overhead")
    for _ in range(3):
        cg(*args)
    torch.cuda.synchronize()
    cg_ms = do_bench(lambda: cg(*args), warmup=25, rep=100)
    ref, out = fn(*args), cf(*args)
    if isinstance(ref, (tuple, list)):
        ref, out = ref[-1], out[-1]
    row = dict(name=name, eager_ms=eager_ms, inductor_ms=comp_ms, cudagraph_ms=cg_ms, compile_s=compile_s,
               wall_call_us=wall_call_us, min_bytes=min_bytes,
               inductor_GBps=min_bytes / (comp_ms * 1e-3) / 1e9 if min_bytes else 0.0,
               tflops=flops / (comp_ms * 1e-3) / 1e12 if flops else 0.0,
               max_abs_err=(ref.float() - out.float()).abs().max().item())
    rows.append(row)
    print(json.dumps(row), flush=True)


def copy_bw():
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
    ms = do_bench(lambda: y.copy_(x), warmup=10, rep=50)
    return 2 * x.numel() / (ms * 1e-3) / 1e9


peak = copy_bw()
print("copy GB/s", peak, flush=True)
U = lambda *s: torch.rand(*s, device=dev) * 2 - 1  # coil bench: uniform in [-1, 1)


def embedding_layernorm(ids, wte, wpe, w, b):
    h = F.embedding(ids, wte) + F.embedding(torch.arange(1024, device=ids.device), wpe)
    return h, F.layer_norm(h, (768,), w, b, 1e-5)


bench_case("embedding_layernorm", embedding_layernorm,
           (torch.randint(0, 50257, (8, 1024), device=dev), U(50257, 768), U(1024, 768), U(768), U(768)),
           min_bytes=8 * 1024 * 8 + 8 * 1024 * 768 * 4 + 1024 * 768 * 4 + 2 * 8 * 1024 * 768 * 4)


def conv_bn_relu_maxpool(x, w, g, bb, rm, rv):
    c = F.conv2d(x, w, None, 1, 1)
    n = F.batch_norm(c, rm, rv.abs(), g, bb, False, 0.1, 1e-5)
    return F.max_pool2d(F.relu(n), 3, 2, 1)


bench_case("conv_bn_relu_maxpool", conv_bn_relu_maxpool,
           (U(8, 64, 56, 56), U(64, 64, 3, 3), U(64), U(64), U(64), U(64)),
           min_bytes=8 * 64 * 56 * 56 * 4 + 8 * 64 * 28 * 28 * 4, flops=2.0 * 8 * 64 * 56 * 56 * 64 * 9)

bench_case("cumsum_rows", lambda x: torch.cumsum(x, 1), (U(4096, 4096),), min_bytes=2 * 4096 * 4096 * 4)

out = os.environ.get("OUT", "/tmp")
json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
               copy_GBps=peak, rows=rows), open(os.path.join(out, "inductor_g1.json"), "w"), indent=1)
