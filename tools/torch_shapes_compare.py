#!/usr/bin/env python3
"""Checks coil against PyTorch on the cases of tools/device/torch_shapes_check.py: for each case
of its JSON (graph, inputs, PyTorch's CPU outputs), writes the inputs and expected outputs as
safetensors and runs `coil run GRAPH --backend B --inputs I --expect E`.

usage: tools/torch_shapes_compare.py COIL TORCH_SHAPES_JSON [BACKEND...]   (default: ref)"""
import json
import os
import struct
import subprocess
import sys
import tempfile

FMT = {"f32": ("F32", "f"), "f64": ("F64", "d"), "i64": ("I64", "q"), "bool": ("BOOL", "?")}


def value(x):
    return float(x) if isinstance(x, str) else x  # 'inf', '-inf', 'nan' come as strings


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        st, code = FMT[t["dtype"]]
        data = struct.pack("<%d%s" % (len(t["data"]), code), *[value(x) for x in t["data"]])
        header[name] = {"dtype": st, "shape": t["shape"], "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    coil, js = sys.argv[1], sys.argv[2]
    backends = sys.argv[3:] or ["ref"]
    cases = json.load(open(js))["cases"]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for c in cases:
            g, i, e = (os.path.join(d, c["name"] + s) for s in (".coil", ".in.safetensors", ".exp.safetensors"))
            open(g, "w").write(c["graph"])
            write_safetensors(i, c["inputs"])
            write_safetensors(e, {f"out{k}": t for k, t in enumerate(c["outputs"])})
            for b in backends:
                r = subprocess.run([coil, "run", g, "--backend", b, "--inputs", i, "--expect", e,
                                    "--rtol", "1e-4", "--atol", "1e-5"], capture_output=True, text=True)
                ok = r.returncode == 0
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {b:6} {c['name']}")
                if not ok:
                    print("   ", (r.stdout + r.stderr).strip().replace("\n", "\n    ")[:2000])
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
