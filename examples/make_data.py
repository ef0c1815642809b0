"""Writes the example data files (weights and inputs for mlp.coil) with a fixed seed.
Standard library only; run from the repository root: python3 examples/make_data.py"""
import json, random, struct

def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

rng = random.Random(1234)
def normal(n, scale):
    return [rng.gauss(0.0, scale) for _ in range(n)]

write_safetensors("examples/mlp.weights.safetensors", {
    "w1": ([64, 32], normal(64 * 32, 0.125)), "b1": ([32], normal(32, 0.1)),
    "w2": ([32, 10], normal(32 * 10, 0.18)), "b2": ([10], normal(10, 0.1)),
})
write_safetensors("examples/mlp.inputs.safetensors", {"x": ([4, 64], normal(4 * 64, 1.0))})
