"""write(path, arrays): a safetensors file of NumPy arrays (float32 and int64), written by hand so
that the scripts making tests/data need no other package."""
import json
import struct

import numpy as np

DTYPES = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}


def write(path, arrays):
    header, data = {}, b""
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"))
        header[name] = {"dtype": DTYPES[np.dtype(a.dtype.name)], "shape": list(a.shape),
                        "data_offsets": [len(data), len(data) + a.nbytes]}
        data += a.tobytes()
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
