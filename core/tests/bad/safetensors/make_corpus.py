#!/usr/bin/env python3
"""Regenerates the malformed-safetensors corpus in this directory.

Each case is NAME.safetensors (the bad file) plus NAME.expect (one line: a substring the
reader's error message must contain). test_safetensors.c reads every pair. Run from anywhere:
    python3 core/tests/bad/safetensors/make_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def st(header, data=b"", length=None):
    """A safetensors file: u64 LE header length, header bytes, data bytes."""
    if isinstance(header, str):
        header = header.encode()
    n = len(header) if length is None else length
    return struct.pack("<Q", n) + header + data


def f32_entry(name, shape, begin, end, dtype="F32"):
    return '"%s":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}' % (
        name, dtype, shape, begin, end)


CASES = {
    # file too small to hold the header length
    "truncated_length": (b"\x10\x00\x00", "too short for the 8-byte header length"),
    # header length points past the end of the file
    "header_past_eof": (st('{"a":1}', length=4096), "is larger than the 7 bytes that follow"),
    # header length far beyond any real header
    "header_absurd": (st("{}", length=1 << 40), "absurdly large"),
    # JSON cut off in the middle of a key
    "json_truncated": (st('{"w":{"dtype":"F32","sha'), "header is not valid JSON near byte"),
    # top level is an array
    "json_not_object": (st("[1,2,3]  "), "header is not a JSON object"),
    # a byte sequence that is not UTF-8 inside a name
    "bad_utf8": (st(b'{"\xc3\x28":{}}'), "header is not valid UTF-8 at byte 10"),
    # unknown element type
    "unknown_dtype": (st("{" + f32_entry("w", "[2]", 0, 2, "F8_E4M3") + "}", b"\0\0"),
                      'unknown dtype "F8_E4M3"'),
    # a negative dimension
    "negative_dim": (st("{" + f32_entry("w", "[2,-1]", 0, 0) + "}"),
                     "shape[1] is not a non-negative integer"),
    # entry without data_offsets
    "missing_offsets": (st('{"w":{"dtype":"F32","shape":[1]}}', b"\0" * 4),
                        'entry has no "data_offsets"'),
    # data_offsets reversed
    "offsets_reversed": (st("{" + f32_entry("w", "[1]", 8, 4) + "}", b"\0" * 8),
                         "have begin after end"),
    # data runs past the end of the file
    "offsets_past_eof": (st("{" + f32_entry("w", "[4]", 0, 16) + "}", b"\0" * 12),
                         "run past the end of the data section, which is 12 bytes"),
    # 3 f32 need 12 bytes, 8 given
    "size_mismatch": (st("{" + f32_entry("w", "[3]", 0, 8) + "}", b"\0" * 12),
                      "span 8 bytes, but F32[3] needs 12 bytes"),
    # two tensors sharing bytes
    "overlap": (st("{" + f32_entry("a", "[4]", 0, 16) + "," + f32_entry("b", "[2]", 8, 16) + "}",
                   b"\0" * 16), "tensors 'a' and 'b' overlap"),
    # one name twice (json.loads would silently keep the last)
    "duplicate_name": (st("{" + f32_entry("w", "[1]", 0, 4) + "," + f32_entry("w", "[1]", 4, 8)
                          + "}", b"\0" * 8), "duplicate tensor name 'w'"),
}


def main():
    for old in os.listdir(HERE):
        if old.endswith(".safetensors") or old.endswith(".expect"):
            os.remove(os.path.join(HERE, old))
    for name, (data, expect) in sorted(CASES.items()):
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(data)
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write(expect + "\n")
    print("wrote %d cases to %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
