"""llama.cpp's side of benchmarks/vs_llamacpp: bench_llm_gguf's figures (benchmarks/llm_gguf.cpp)
for the same GGUF file, through llama-cpp-python, printed as the same `RESULT name value unit` lines.

    python llamacpp_bench.py MODEL.gguf [--positions N] [--prompt N] [--threads T]
                             [--first-token-only] [--reps N] [--budget S]

The model is loaded with llama_cpp.Llama (n_ctx = the model's context, as tinyt's KV cache holds,
n_batch = n_ubatch = 512, the given threads for both decoding and batches, logits of the last
token only, the file mapped as llama.cpp does by default) and run with Llama.eval, which calls
llama_decode and copies the last token's logits: no sampler, the argmax taken here as tinyt's
program takes it. Time to the first token counts from the process's start (/proc/self/stat, as
bench_llm_gguf), so it includes Python's start and the import of llama_cpp.
"""
import argparse
import os
import sys
import time


def seconds_since_process_start():
    with open("/proc/self/stat") as f:
        stat = f.read()
    start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22: starttime
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def result(name, value, unit):
    print(f"RESULT {name} {value:.6g} {unit}", flush=True)


def measure(f, reps, budget, warmup=0):
    for _ in range(warmup):
        f()
    best, runs, start = float("inf"), 0, time.perf_counter()
    while runs < reps and (runs == 0 or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best, runs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("model")
    p.add_argument("--positions", type=int, default=256)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--first-token-only", action="store_true")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--budget", type=float, default=3.0)
    args = p.parse_args()

    import numpy as np
    import llama_cpp

    # n_ctx 0: the model's context length
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=0, n_batch=512, n_ubatch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=False, verbose=False)
    vocab, context = llm.n_vocab(), llm.n_ctx()

    def step(token):
        llm.eval([token])
        return int(np.argmax(llm.scores[llm.n_tokens - 1]))

    first = step(1)
    first_token_ms = seconds_since_process_start() * 1e3
    print(f"llama-cpp-python {llama_cpp.__version__}: first token {first_token_ms:.1f} ms from process start", flush=True)
    result("llm_first_token_ms", first_token_ms, "ms")
    if args.first_token_only:
        result("llm_peak_rss_mb", peak_rss_mib(), "MiB")
        return 0

    positions = min(args.positions, context)
    decoded = []

    def decode():
        llm.reset()
        decoded[:] = [1]
        for _ in range(positions):
            decoded.append(step(decoded[-1]))
    seconds, runs = measure(decode, args.reps, args.budget)
    assert decoded[1] == first, "the first step's token again"
    print(f"decoding, positions 0..{positions - 1}: {positions / seconds:.3f} tok/s (best of {runs})", flush=True)
    result("llm_decode_tok_s", positions / seconds, "tok/s")

    n = min(args.prompt, context)
    prompt = [(i * 7919 + 13) % (vocab - 3) + 3 for i in range(n)]

    def prefill():
        llm.reset()
        llm.eval(prompt)
    seconds, runs = measure(prefill, min(args.reps, 3), args.budget, warmup=1)
    print(f"prompt of {n} tokens: {n / seconds:.3f} tok/s (best of {runs})", flush=True)
    result("llm_prompt_tok_s", n / seconds, "tok/s")
    result("llm_peak_rss_mb", peak_rss_mib(), "MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
