#!/usr/bin/env python3
"""onnxruntime's side of benchmarks/vs_onnxruntime: the same runs as bench_onnx_models
(benchmarks/onnx_models.cpp), on the same inputs, printed in the same form (`SUM <sum of the
outputs>`, then `RESULT <name> <value> ms`). Run by the venv that benchmarks/vs_onnxruntime makes.

    ort_bench.py image MODEL.onnx N C H W [--threads T] [--reps R] [--budget S] [--warmup W]
    ort_bench.py vad MODEL.onnx SECONDS [...]
"""
import argparse
import time

import numpy as np
import onnxruntime as ort


def image(n, c, h, w):
    """0.9 sin(0.37 i) at flat index i, as bench_onnx_models makes it."""
    i = np.arange(n * c * h * w, dtype=np.float64)
    return (0.9 * np.sin(0.37 * i)).astype(np.float32).reshape(n, c, h, w)


def audio(seconds):
    """A 220 Hz tone whose loudness swings three times a second, as bench_onnx_models makes it."""
    t = np.arange(int(seconds * 16000), dtype=np.float64) / 16000
    return (0.4 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def measure(args, f):
    """Best of at most --reps timed runs (or --budget seconds of them) after --warmup runs."""
    for _ in range(args.warmup):
        f()
    best, runs, start = float("inf"), 0, time.perf_counter()
    while runs < args.reps and (runs == 0 or time.perf_counter() - start < args.budget):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best, runs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("kind", choices=["image", "vad"])
    p.add_argument("model")
    p.add_argument("sizes", nargs="+")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: onnxruntime's default)")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--budget", type=float, default=3)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: these models carry unused initializers
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    name = args.model.rsplit("/", 1)[-1]
    if args.kind == "image":
        n, c, h, w = map(int, args.sizes)
        feeds = {session.get_inputs()[0].name: image(n, c, h, w)}
        total = float(np.sum(session.run(None, feeds)[0], dtype=np.float64))
        best, runs = measure(args, lambda: session.run(None, feeds))
        what, result = f"{name} {n}x{c}x{h}x{w}", "onnx_image"
    else:
        samples, window, context = audio(float(args.sizes[0])), 512, 64
        chunks, chunk = [], np.zeros(context + window, np.float32)
        for at in range(0, len(samples), window):
            chunk = np.concatenate([chunk[-context:], np.pad(samples[at:at + window], (0, max(0, at + window - len(samples))))])
            chunks.append(chunk[None].copy())
        sr = np.array(16000, np.int64)
        sums = []

        def stream():
            state, total = np.zeros((2, 1, 128), np.float32), 0.0
            for c in chunks:
                probability, state = session.run(None, {"input": c, "state": state, "sr": sr})
                total += float(probability.reshape(-1)[0])
            sums.append(total)

        best, runs = measure(args, stream)
        total, what, result = sums[-1], f"{name}, {len(chunks)} windows ({args.sizes[0]} s)", "onnx_vad"
    print(f"SUM {total:.9g}")
    print(f"{what}, onnxruntime {ort.__version__}, {args.threads or 'default'} threads: {best * 1e3:.3f} ms (best of {runs} runs)")
    print(f"RESULT {result} {best * 1e3:.6g} ms", flush=True)


if __name__ == "__main__":
    main()
