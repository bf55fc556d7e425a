#!/usr/bin/env python3
"""PyTorch (eager) side of benchmarks/vs_torch: the workloads of the tinyt benchmark programs,
with the same sizes, dtypes and flop/byte accounting, printed in the same format (a line for
people, then `RESULT <name> <value> <unit>`). On the CPU unless --device names another (cuda: the
matmul, elementwise, sum, softmax and conv2d workloads, against the programs run with DEV=CUDA).

    torch_bench.py [--reps N] [--budget S] [--threads T] [--device D] [WORKLOAD ...]   (default: all)
    torch_bench.py --info        JSON: torch version, BLAS, the kernel it picked, threads, env
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
import warnings

# torch warns when NumPy is missing; nothing here needs NumPy.
warnings.filterwarnings("ignore", message=".*NumPy.*")
import torch  # noqa: E402

M = 16 << 20  # elements of the elementwise and sum workloads


def threads():
    return len(os.sched_getaffinity(0))


def finish():
    """Waits for the GPU's queued work (a CPU op has finished when its call returns)."""
    if torch.get_default_device().type == "cuda":
        torch.cuda.synchronize()


def measure(f, reps, budget, warmup=1):
    """Best wall time of f over at most `reps` runs or `budget` seconds, after `warmup` runs."""
    for _ in range(warmup):
        f()
        finish()
    best, runs, start = float("inf"), 0, time.perf_counter()
    while runs < reps and (runs == 0 or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        f()
        finish()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best, runs


def report(name, what, value, unit, best, runs):
    plural = "s" if runs != 1 else ""
    print(f"{what:<52} {value:12.3f} {unit:<6} (best of {runs} run{plural}, {best:.4g} s)")
    print(f"RESULT {name} {value:.6g} {unit}", flush=True)


def matmul(n, dtype=torch.float32, transposed=False):
    """a @ b, or with transposed a @ b.T (b stored (out, in), as a Linear's weight)."""
    def run(reps, budget):
        a, b = torch.rand(n, n).to(dtype), torch.rand(n, n).to(dtype)
        best, runs = measure((lambda: a @ b.T) if transposed else (lambda: a @ b), reps, budget)
        tag = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")
        name = "matmul_" + ("t_" if transposed else "") + ("" if tag == "fp32" else tag + "_") + str(n)
        report(name, f"matmul {n}^2 {tag}" + (", a.matmul(b.T())" if transposed else ""),
               2 * n**3 / best / 1e9, "GFLOPS", best, runs)
    return run


def elementwise(reps, budget):
    x = torch.rand(M)
    # the tinyt chain, run op by op (eager); counted as one read and one write like tinyt's
    best, runs = measure(lambda: torch.exp2(torch.relu(x * 2 + 1) * x - 0.5), reps, budget)
    report("elementwise_16M", "elementwise chain 16M fp32 (eager, 5 ops)", 2 * 4 * M / best / 1e9,
           "GB/s", best, runs)


def sum_(reps, budget):
    x = torch.rand(M)
    best, runs = measure(lambda: x.sum(), reps, budget)
    report("sum_16M", "sum 16M fp32", 4 * M / best / 1e9, "GB/s", best, runs)


def softmax(reps, budget):
    n = 4096
    x = torch.rand(n, n)
    best, runs = measure(lambda: torch.softmax(x, -1), reps, budget)
    print(f"softmax 4096^2: {2 * 4 * n * n / best / 1e9:.2f} GB/s (one read + one write)")
    report("softmax_4096", "softmax 4096^2 fp32, last axis", best * 1e3, "ms", best, runs)


def conv2d(dtype=torch.float32):
    def run(reps, budget):
        x, w = torch.rand(8, 64, 56, 56).to(dtype), (torch.rand(64, 64, 3, 3) - 0.5).to(dtype)
        best, runs = measure(lambda: torch.nn.functional.conv2d(x, w, None, 1, 1), reps, budget)
        flops = 2 * 8 * 64 * 56 * 56 * 64 * 3 * 3
        fp16 = dtype == torch.float16
        report("conv2d_fp16" if fp16 else "conv2d", "conv2d 8x64x56x56, 64 3x3 filters, pad 1" +
               (", fp16" if fp16 else ""), flops / best / 1e9, "GFLOPS", best, runs)
    return run


def first_call_child():
    """One sample: the first 512 matmul of a fresh process, and a warm one."""
    torch.set_num_threads(threads())
    a, b = torch.rand(512, 512), torch.rand(512, 512)
    t0 = time.perf_counter()
    a @ b
    first = time.perf_counter() - t0
    warm, _ = measure(lambda: a @ b, 3, 1.0, warmup=0)
    print(f"CHILD {first:.9f} {warm:.9f}")


def first_call(reps, budget):
    # eager torch compiles nothing: the figure is what the first call costs over a warm one
    # (library and thread-pool start-up), each sample in a fresh process
    latency, total, runs, start = float("inf"), float("inf"), 0, time.perf_counter()
    while runs < min(reps, 5) and (runs == 0 or time.perf_counter() - start < budget):
        out = subprocess.run([sys.executable, __file__, "--first-call-child"], check=True,
                             capture_output=True, text=True).stdout
        first, warm = map(float, out.split("CHILD", 1)[1].split())
        latency, total, runs = min(latency, first - warm), min(total, first), runs + 1
    report("first_call_512_total", "first call, matmul 512^2 (incl. running it)", total * 1e3,
           "ms", total, runs)
    report("first_call_512", "first call, matmul 512^2, over a warm call", latency * 1e3, "ms",
           latency, runs)


def launch_overhead(reps, budget):
    iterations = 2000
    a = torch.rand(16)

    def loop():
        for _ in range(iterations):
            a + 1
    best, runs = measure(loop, reps, budget)
    report("launch_overhead", "host time per op (a + 1 on 16 floats)", best / iterations * 1e6,
           "us", best, runs)


def jit_replay(reps, budget):
    """A step of 10 small ops (16 floats), eager: what tinyt's 10-kernel step is compared with."""
    iterations = 2000
    x = torch.rand(16)

    def loop():
        for _ in range(iterations):
            y = x
            for _ in range(10):
                y = y + 1
    best, runs = measure(loop, reps, budget)
    report("jit_replay_per_kernel", "10-op step, eager, per op", best / iterations / 10 * 1e6, "us", best, runs)


def train_step(reps, budget):
    """One training step of examples/fashion_mnist_model.hpp's FashionNet, batch 512, Adam."""
    nn = torch.nn
    torch.manual_seed(42)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),    # 24x24 -> 12x12
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),   # 10x10 -> 5x5
        nn.Flatten(1), nn.Linear(32 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.rand(512, 1, 28, 28), torch.randint(0, 10, (512,))  # cross_entropy wants int64

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # as tinyt's benchmark reads its loss
    # like tinyt's: a few untimed steps first (tinyt's first compiles its kernels)
    best, runs = measure(step, reps, budget, warmup=3)
    report("train_step", "FashionNet train step, batch 512, Adam", best * 1e3, "ms", best, runs)


def cnn_train_step(reps, budget):
    """benchmarks/cnn_train_step.cpp's CNN: 5x5 convs of 32 and 64 channels, batch 512, Adam."""
    nn = torch.nn
    torch.manual_seed(42)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),   # 24x24 -> 12x12
        nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),  # 8x8 -> 4x4
        nn.Flatten(1), nn.Linear(64 * 4 * 4, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.rand(512, 1, 28, 28), torch.randint(0, 10, (512,))

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    best, runs = measure(step, reps, budget, warmup=3)
    report("cnn_train_step", "CNN (5x5 convs of 32, 64) train step, batch 512, Adam", best * 1e3,
           "ms", best, runs)


def read_safetensors(path):
    """The tensors of a safetensors file (read by hand: no other package)."""
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = json.loads(f.read(n)), f.read()
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    return {k: torch.frombuffer(bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]), dtype=dtypes[v["dtype"]])
            .reshape(v["shape"]) for k, v in header.items() if k != "__metadata__"}


def minilm(batch):
    """benchmarks/minilm.cpp: all-MiniLM-L6-v2 (the package's weights) in plain PyTorch, on the
    first `batch` sentences of bench_minilm's."""
    return lambda reps, budget: minilm_run(batch, reps, budget)


def minilm_run(batch, reps, budget):
    import torch.nn.functional as F
    with open(os.environ["TINYT_MINILM_PATH_FILE"]) as f:
        w = read_safetensors(os.path.join(f.read().strip(), "model.safetensors"))
    heads = 12
    longest = max(16 + i * 7 % 49 for i in range(batch))  # padded to the longest, as models::padded_batch
    ids, mask = torch.zeros(batch, longest, dtype=torch.int64), torch.zeros(batch, longest)
    for i in range(batch):  # the token ids bench_minilm builds
        n = 16 + i * 7 % 49
        for j in range(n):
            ids[i, j] = 101 if j == 0 else 102 if j == n - 1 else 1000 + (i * 131 + j * 17) % 28000
            mask[i, j] = 1

    def ln(x, name):
        return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], 1e-12)

    def dense(x, name):
        return F.linear(x, w[name + ".weight"], w[name + ".bias"])

    def embed():
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:longest] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = ln(x, "embeddings.LayerNorm")
        keep = mask[:, None, None, :].bool()
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (dense(x, p + "attention.self." + n).view(batch, longest, heads, -1).transpose(1, 2)
                       for n in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(batch, longest, -1)
            x = ln(dense(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            x = ln(dense(F.gelu(dense(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
        m = mask[:, :, None]
        return F.normalize((x * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    with torch.inference_mode():
        best, runs = measure(embed, reps, budget)
    what = "batch 32 of 16-58 tokens" if batch == 32 else f"batch {batch} of {longest} tokens"
    report(f"minilm_{batch}", "MiniLM-L6 sentence embeddings, " + what, batch / best, "sent/s", best, runs)


def read_gguf_f32(path):
    """The metadata and float32 tensors of a GGUF file (read by hand: no other package)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    at = 0

    def take(fmt):
        nonlocal at
        v = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal at
        n = take("Q")
        at += n
        return data[at - n:at].decode()

    sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(kind):
        if kind == 8:
            return string()
        if kind == 9:
            item, n = take("I"), take("Q")
            return [value(item) for _ in range(n)]
        return take(sizes[kind])

    assert data[:4] == b"GGUF"
    at = 8
    tensors, kvs = take("Q"), take("Q")
    meta = {}
    for _ in range(kvs):
        key = string()
        meta[key] = value(take("I"))
    infos = []
    for _ in range(tensors):
        name, dims = string(), take("I")
        shape = [take("Q") for _ in range(dims)][::-1]
        kind, offset = take("I"), take("Q")
        assert kind == 0, "float32 tensors only"
        infos.append((name, shape, offset))
    align = meta.get("general.alignment", 32)
    start = (at + align - 1) // align * align
    out = {}
    for name, shape, offset in infos:
        n = 1
        for d in shape:
            n *= d
        out[name] = torch.frombuffer(bytearray(data[start + offset:start + offset + 4 * n]), dtype=torch.float32).reshape(shape)
    return meta, out


def llm_decode(reps, budget):
    """benchmarks/llm_decode.cpp: the tiny LLaMA, greedy, a KV cache, positions 0 to context-1."""
    meta, w = read_gguf_f32(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                                         "llama_tiny_f32.gguf"))
    w = {name: t.to(torch.get_default_device()) for name, t in w.items()}  # (read into host memory)
    dim, layers = meta["llama.embedding_length"], meta["llama.block_count"]
    heads, kv, context = meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"], meta["llama.context_length"]
    eps, theta, hd = meta["llama.attention.layer_norm_rms_epsilon"], meta["llama.rope.freq_base"], dim // heads
    angles = torch.outer(torch.arange(context).double(), 1.0 / theta ** (torch.arange(0, hd, 2).double() / hd))
    cos, sin = angles.cos().float(), angles.sin().float()
    rms = lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g

    def rope(x, p):
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos[p] - b * sin[p], a * sin[p] + b * cos[p]], -1).flatten(-2)

    caches = [(torch.zeros(kv, context, hd), torch.zeros(kv, context, hd)) for _ in range(layers)]

    def decode():
        token = 1
        for p in range(context):
            x = w["token_embd.weight"][token][None]
            for i, (ck, cv) in enumerate(caches):
                b = f"blk.{i}."
                h = rms(x, w[b + "attn_norm.weight"])
                q = rope((h @ w[b + "attn_q.weight"].T).view(heads, hd), p)
                ck[:, p] = rope((h @ w[b + "attn_k.weight"].T).view(kv, hd), p)
                cv[:, p] = (h @ w[b + "attn_v.weight"].T).view(kv, hd)
                k = ck[:, :p + 1].repeat_interleave(heads // kv, 0)
                v = cv[:, :p + 1].repeat_interleave(heads // kv, 0)
                a = ((q[:, None] @ k.transpose(1, 2)) / hd ** 0.5).softmax(-1) @ v
                x = x + a.reshape(1, dim) @ w[b + "attn_output.weight"].T
                h = rms(x, w[b + "ffn_norm.weight"])
                x = x + (torch.nn.functional.silu(h @ w[b + "ffn_gate.weight"].T) * (h @ w[b + "ffn_up.weight"].T)) @ w[b + "ffn_down.weight"].T
            token = int((rms(x, w["output_norm.weight"]) @ w["output.weight"].T).argmax())

    with torch.inference_mode():
        best, runs = measure(decode, reps, budget)
    report("llm_decode", "tiny LLaMA, greedy decoding with a KV cache", context / best, "tok/s", best, runs)


WORKLOADS = {
    "matmul_512": matmul(512),
    "matmul_1024": matmul(1024),
    "matmul_2048": matmul(2048),
    "matmul_bf16_2048": matmul(2048, torch.bfloat16),
    "matmul_t_512": matmul(512, transposed=True),
    "matmul_t_1024": matmul(1024, transposed=True),
    # on a GPU (issue 32): 4096^2 in each dtype, and conv2d in fp16
    "matmul_4096": matmul(4096),
    "matmul_fp16_4096": matmul(4096, torch.float16),
    "matmul_bf16_4096": matmul(4096, torch.bfloat16),
    "elementwise_16M": elementwise,
    "sum_16M": sum_,
    "softmax_4096": softmax,
    "conv2d": conv2d(),
    "conv2d_fp16": conv2d(torch.float16),
    "first_call_512": first_call,
    "launch_overhead": launch_overhead,
    "jit_replay_per_kernel": jit_replay,
    "train_step": train_step,
    "cnn_train_step": cnn_train_step,
    "minilm_32": minilm(32),
    "minilm_1": minilm(1),
    "llm_decode": llm_decode,
}

# Environment variables that change which BLAS kernels run, and how many threads.
ENV_PREFIXES = ("OPENBLAS", "GOTO", "MKL", "OMP", "KMP", "GOMP", "DNNL", "ONEDNN", "ATEN",
                "TORCH", "LD_PRELOAD")


def openblas_info():
    """The core type and config of an OpenBLAS loaded in this process, if any."""
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        info = {"library": path}
        for what in ("corename", "config"):
            # plain builds export openblas_get_corename; scipy-openblas ones prefix and suffix it
            for name in (f"{pre}openblas_get_{what}{post}" for pre in ("", "scipy_")
                         for post in ("", "64_", "_")):
                f = getattr(lib, name, None)
                if f:
                    f.restype = ctypes.c_char_p
                    info[what] = f().decode()
                    break
        return info
    return None


def mkl_verbose_line():
    """MKL's banner under MKL_VERBOSE=1: its version and the code path it chose for this CPU."""
    env = dict(os.environ, MKL_VERBOSE="1")
    code = "import torch; a = torch.rand(64, 64); a @ a"
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env,
                         capture_output=True, text=True).stdout
    return next((line.strip() for line in out.splitlines()
                 if line.startswith("MKL_VERBOSE") and "SGEMM" not in line), None)


def info():
    torch.set_num_threads(threads())
    (torch.rand(64, 64) @ torch.rand(64, 64)).sum()  # loads the BLAS
    config = torch.__config__.show()
    settings = dict(map(str.strip, kv.split("=", 1)) for kv in
                    config.split("Build settings:", 1)[-1].replace("\n", " ").split(", ")
                    if "=" in kv)
    mkl = next((line.strip(" -") for line in config.splitlines() if "Math Kernel Library" in line),
               None)
    blas = settings.get("BLAS_INFO", "?")
    result = {
        "torch": torch.__version__,
        "blas": blas,
        "mkl_available": torch.backends.mkl.is_available(),
        "mkl": mkl,
        "mkl_verbose": mkl_verbose_line() if torch.backends.mkl.is_available() else None,
        "mkldnn": next((line.strip(" -") for line in config.splitlines() if "MKL-DNN" in line),
                       None),
        # only torch's own: NumPy, when installed, brings an OpenBLAS of its own into the process
        "openblas": openblas_info() if "openblas" in blas.lower() else None,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "parallel": next((line.split(":", 1)[1].strip() for line in
                          torch.__config__.parallel_info().splitlines()
                          if line.startswith("ATen parallel backend")), None),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
    }
    print(json.dumps(result))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                   help="any of: " + " ".join(WORKLOADS))
    p.add_argument("--reps", type=int, default=20, help="at most this many timed runs")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timed runs at most")
    p.add_argument("--threads", type=int, default=threads(), help="torch.set_num_threads")
    p.add_argument("--info", action="store_true", help="print what torch runs on, as JSON")
    p.add_argument("--device", default="cpu", help="where the tensors go (cpu, cuda)")
    p.add_argument("--first-call-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.first_call_child:
        return first_call_child()
    if args.info:
        return info()
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload {' '.join(unknown)}; the workloads are: {' '.join(WORKLOADS)}")
    torch.set_num_threads(args.threads)
    torch.set_default_device(args.device)
    for name in args.workloads or WORKLOADS:
        WORKLOADS[name](args.reps, args.budget)


if __name__ == "__main__":
    main()
