#!/usr/bin/env python3
"""Writes the real models' test cases: fixed inputs and onnxruntime's outputs for them.

Run by the venv of the ONNX fixture (onnx, onnxruntime, rapidocr-onnxruntime and silero-vad
installed, pinned in tests/CMakeLists.txt: tests/onnx/write_cases.cmake). For each case it writes

    OUT/<case>/model.txt                    the .onnx file's path (in the installed package)
    OUT/<case>/input_<k>.pb, output_<k>.pb  serialized TensorProtos, in the model's order
    OUT/<case>/tolerance.txt                "rtol atol" the comparison uses

The inputs are seeded random images (PaddleOCR's detector, recognizer and direction classifier at
shapes rapidocr uses, smaller for the detector) and a seeded chirp for silero-vad's models.

    tools/onnx_model_references.py OUT
"""
import importlib.util
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def cases():
    # the packages' folders, found without importing them (they import OpenCV and PyTorch)
    folder = lambda package: importlib.util.find_spec(package).submodule_search_locations[0]
    ocr = os.path.join(folder("rapidocr_onnxruntime"), "models")
    vad = os.path.join(folder("silero_vad"), "data")
    rng = np.random.RandomState(33)
    image = lambda h, w: rng.rand(1, 3, h, w).astype(np.float32) * 2 - 1  # normalized as rapidocr feeds them
    t = np.arange(512, dtype=np.float64) / 16000
    chirp = (0.4 * np.sin(2 * np.pi * (200 + 3000 * t) * t))[None].astype(np.float32)
    state = np.zeros((2, 1, 128), np.float32)
    sr = np.array(16000, np.int64)
    # the outputs are sigmoids, softmaxes and LSTM states of sums of thousands of float32 products,
    # which another order of summation moves by about 1e-6 relative: 1e-4 leaves room for that,
    # and none for a wrong op (tinyt's worst was 9% of it, on CPU and CL, 2026-11-28)
    yield "ppocr_det", os.path.join(ocr, "ch_PP-OCRv4_det_infer.onnx"), {"x": image(96, 128)}, (1e-4, 1e-6)
    yield "ppocr_rec", os.path.join(ocr, "ch_PP-OCRv4_rec_infer.onnx"), {"x": image(48, 160)}, (1e-4, 1e-6)
    yield "ppocr_cls", os.path.join(ocr, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), {"x": image(48, 192)}, (1e-4, 1e-6)
    yield "silero_vad", os.path.join(vad, "silero_vad.onnx"), {"input": chirp, "state": state, "sr": sr}, (1e-4, 1e-6)
    yield "silero_vad_op18_ifless", os.path.join(vad, "silero_vad_op18_ifless.onnx"), {"input": chirp, "sr": sr, "state": state}, (1e-4, 1e-6)
    yield "silero_vad_16k_op15", os.path.join(vad, "silero_vad_16k_op15.onnx"), {"input": chirp, "state": state, "sr": sr}, (1e-4, 1e-6)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    for name, model, feeds, (rtol, atol) in cases():
        options = ort.SessionOptions()
        options.log_severity_level = 3  # (errors only: these models carry unused initializers)
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        order = [i.name for i in session.get_inputs()]
        outputs = session.run(None, feeds)
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.txt"), "w") as f:
            f.write(model + "\n")
        for k, input_name in enumerate(order):
            with open(os.path.join(folder, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[input_name], input_name).SerializeToString())
        for k, (o, value) in enumerate(zip(session.get_outputs(), outputs)):
            with open(os.path.join(folder, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(value), o.name).SerializeToString())
        with open(os.path.join(folder, "tolerance.txt"), "w") as f:
            f.write(f"{rtol!r} {atol!r}\n")
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}: the real models' cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
