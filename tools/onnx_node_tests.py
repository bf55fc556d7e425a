#!/usr/bin/env python3
"""Writes the ONNX conformance suite's node test cases in the classic layout.

The onnx wheel (from 1.23) ships its node tests as Python generators, not files. This script,
run by a Python with onnx installed (pinned: the build's venv has onnx==1.23.2), writes each case
as tinyt's runner reads it:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_<n>/input_<k>.pb, output_<k>.pb   (serialized TensorProtos)
    OUT/<case>/tolerance.txt                                    ("rtol atol")

A case whose inputs or outputs are not tensors (sequences, optionals, maps) is not written;
it is listed in OUT/not_written.txt with the reason, so that nothing is dropped silently.

    tools/onnx_node_tests.py OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


def tensor_like(v) -> bool:
    """An array, a numpy scalar (a 0-d tensor) or a TensorProto the case built itself (float8, int4)."""
    return isinstance(v, (np.ndarray, np.generic, onnx.TensorProto))


def as_tensor_proto(v) -> onnx.TensorProto:
    return v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(np.asarray(v))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    written, not_written = 0, []
    for case in collect_testcases(None):
        values = [v for inputs, outputs in case.data_sets for v in list(inputs) + list(outputs)]
        if not all(tensor_like(v) for v in values):
            kinds = sorted({type(v).__name__ for v in values if not tensor_like(v)})
            not_written.append(f"{case.name}: inputs or outputs that are not tensors ({', '.join(kinds)})")
            continue
        folder = os.path.join(out, case.name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for n, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(folder, f"test_data_set_{n}")
            os.makedirs(data, exist_ok=True)
            for prefix, arrays in (("input", inputs), ("output", outputs)):
                for k, a in enumerate(arrays):
                    with open(os.path.join(data, f"{prefix}_{k}.pb"), "wb") as f:
                        f.write(as_tensor_proto(a).SerializeToString())
        with open(os.path.join(folder, "tolerance.txt"), "w") as f:
            f.write(f"{case.rtol!r} {case.atol!r}\n")
        written += 1
    with open(os.path.join(out, "not_written.txt"), "w") as f:
        f.write("\n".join(not_written) + ("\n" if not_written else ""))
    print(f"onnx {onnx.__version__}: {written} node cases written to {out}, {len(not_written)} not (see not_written.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
