"""Writes tests/data/gguf_types.gguf and gguf_types_reference.safetensors: one small tensor of each
GGUF tensor type tinyt reads, metadata of every value type, and the tensors' values as the `gguf`
package (llama.cpp's gguf-py, from PyPI) dequantizes them, in float32, for test_state_io.cpp.

  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install gguf==0.19.0 numpy
  /tmp/venv/bin/python tests/data/make_gguf_reference.py

Q8_0, Q4_0 and Q4_1 blocks come from gguf's quantizer; gguf cannot quantize to Q4_K or Q6_K, so
those blocks are random bytes with their f16 scales set to moderate values (any bytes are a valid
block; the scales only keep the values finite).
"""
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

import safetensors_file

HERE = Path(__file__).parent
rng = np.random.default_rng(17)


def random_k_blocks(rows, blocks_per_row, block_bytes, scale_offsets):
    b = rng.integers(0, 256, size=(rows * blocks_per_row, block_bytes), dtype=np.uint8)
    for off in scale_offsets:  # f16 scales in [0.01, 0.1)
        b[:, off:off + 2] = rng.uniform(0.01, 0.1, size=(b.shape[0], 1)).astype(np.float16).view(np.uint8)
    return b.reshape(rows, blocks_per_row * block_bytes)


def main():
    w = gguf.GGUFWriter(HERE / "gguf_types.gguf", arch="tinyt-test")
    # metadata: every value type, arrays (of numbers, of strings, nested)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.25)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "héllo, gguf")
    w.add_uint64("test.u64", 18000000000000000000)
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", -1.5e300)
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.strings", ["a", "", "ccc"])
    w.add_key_value("test.nested", [[1, 2], [3]], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.ARRAY)

    tensors = {}
    x = rng.standard_normal((3, 5)).astype(np.float32)
    w.add_tensor("f32", x)
    tensors["f32"] = x
    x = rng.standard_normal((4, 8)).astype(np.float16)
    w.add_tensor("f16", x)
    tensors["f16"] = x.astype(np.float32)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    raw = gguf.quants.quantize(x, T.BF16)
    w.add_tensor("bf16", raw, raw_dtype=T.BF16)
    tensors["bf16"] = gguf.quants.dequantize(raw, T.BF16)
    x = rng.integers(-100, 100, size=(2, 3)).astype(np.int32)
    w.add_tensor("i32", x)
    tensors["i32"] = x.astype(np.float32)
    x = rng.integers(-100, 100, size=(6,)).astype(np.int8)
    w.add_tensor("i8", x)
    tensors["i8"] = x.astype(np.float32)
    for name, qtype, shape in (("q8_0", T.Q8_0, (2, 64)), ("q4_0", T.Q4_0, (3, 32)), ("q4_1", T.Q4_1, (2, 64))):
        x = rng.standard_normal(shape).astype(np.float32)
        raw = gguf.quants.quantize(x, qtype)
        w.add_tensor(name, raw, raw_dtype=qtype)
        tensors[name] = gguf.quants.dequantize(raw, qtype)
    # Q4_K: d and dmin at bytes 0 and 2 of each 144-byte block; Q6_K: d at byte 208 of 210
    raw = random_k_blocks(2, 2, 144, (0, 2))
    w.add_tensor("q4_k", raw, raw_dtype=T.Q4_K)
    tensors["q4_k"] = gguf.quants.dequantize(raw, T.Q4_K)
    raw = random_k_blocks(3, 1, 210, (208,))
    w.add_tensor("q6_k", raw, raw_dtype=T.Q6_K)
    tensors["q6_k"] = gguf.quants.dequantize(raw, T.Q6_K)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    safetensors_file.write(HERE / "gguf_types_reference.safetensors", {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()})

if __name__ == "__main__":
    main()
