// A LLaMA model from a GGUF file (models::Llama), the figures of issue 35 that
// benchmarks/vs_llamacpp sets against llama.cpp on the same file:
//
//   bench_llm_gguf MODEL.gguf [--positions N] [--prompt N] [--first-token-only] [--quick]
//
//   llm_first_token_ms     from the process's start (its start time in /proc/self/stat, in clock
//                          ticks of 10 ms) to the first generated token: the file loaded, the model
//                          built and one decoding step on token 1 at position 0 (its kernels
//                          compiled, or found in tinyt's disk cache: TINYT_CACHE_DIR)
//   llm_decode_tok_s       greedy decoding with the KV cache under TinyJit over positions 0..N-1
//                          (default 256), each step's token the argmax of the step before
//   llm_prompt_tok_s       the logits of an N-token prompt (default 512) with models::Llama's
//                          operator() (causal attention over the whole prompt), the last row kept
//   llm_peak_rss_mb        the process's peak resident memory (VmHWM) before memcpy's buffers,
//                          with the file's size and the KV cache's next to it
//   llm_weight_bytes_per_token   the bytes of the GGUF tensors one decoding step reads: all of them
//                          but the embedding table, of which one row (the whole table when it is
//                          the output projection too)
//   llm_weight_gb_s        those bytes times decoding's tokens/s (1 GB = 1e9 bytes)
//   memcpy_gb_s            a 1 GiB memcpy on as many threads as tinyt's pool, in bytes read per
//                          second, the convention of the weights' figure (it writes as many bytes)
//
// --first-token-only stops after the first token (the warm cache's figure, as vs_llamacpp runs
// it). --quick without a file runs the tiny model of tests/data (llama_tiny_q8_0.gguf) on a few
// positions: a smoke test whose figures mean nothing.
#include <tinyt.hpp>
#include <tinyt/models/llama.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "bench.hpp"

using namespace tinyt;

namespace {

/// Seconds since this process started, from its start time in /proc/self/stat (clock ticks since
/// boot) and CLOCK_BOOTTIME, the same clock; resolution a clock tick (10 ms on Linux).
double seconds_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after the command's name
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {  // field 22: starttime
  }
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9 -
         std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// A field of /proc/self/status in MiB ("VmHWM", "VmRSS").
double status_mib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0)
      return std::stod(line.substr(key.size() + 1)) / 1024.0;  // kB
  return 0;
}

/// The byte size of each tensor's data in a GGUF file, by name: the tensor infos read from the
/// header (the metadata skipped), each size the distance to the next tensor's offset (or to the
/// end of the file), so without a table of the types' block sizes (alignment padding included:
/// at most 31 bytes a tensor).
std::map<std::string, uint64_t> gguf_tensor_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  auto u32 = [&] {
    uint32_t v = 0;
    in.read(reinterpret_cast<char*>(&v), 4);
    return v;
  };
  auto u64 = [&] {
    uint64_t v = 0;
    in.read(reinterpret_cast<char*>(&v), 8);
    return v;
  };
  auto str = [&] {
    std::string s(u64(), '\0');
    in.read(s.data(), static_cast<std::streamsize>(s.size()));
    return s;
  };
  const uint64_t sizes[] = {1, 1, 2, 2, 4, 4, 4,
                            1, 0, 0, 8, 8, 8};  // GGUF value types 0-12 (8 string, 9 array)
  std::function<void(uint32_t)> skip = [&](uint32_t type) {
    if (type == 8)
      str();
    else if (type == 9) {
      const uint32_t item = u32();
      const uint64_t n = u64();
      if (item != 8 && item != 9)
        in.seekg(static_cast<std::streamoff>(n * sizes[item]), std::ios::cur);
      else
        for (uint64_t i = 0; i < n; ++i) skip(item);
    } else if (type < 13)
      in.seekg(static_cast<std::streamoff>(sizes[type]), std::ios::cur);
    else
      throw Error("gguf_tensor_bytes: a metadata value of unknown type in " + path);
  };
  if (u32() != 0x46554747u) throw Error(path + " is not a GGUF file");
  u32();  // version
  const uint64_t tensors = u64(), keys = u64();
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < keys; ++i) {
    const std::string key = str();
    const uint32_t type = u32();
    if (key == "general.alignment" && type == 4)
      alignment = u32();
    else
      skip(type);
  }
  std::vector<std::pair<uint64_t, std::string>> offsets;
  for (uint64_t i = 0; i < tensors; ++i) {
    std::string name = str();
    const uint32_t dims = u32();
    for (uint32_t d = 0; d < dims; ++d) u64();
    u32();  // type
    offsets.emplace_back(u64(), std::move(name));
  }
  if (!in) throw Error("gguf_tensor_bytes: " + path + " ends inside its header");
  const uint64_t data = (static_cast<uint64_t>(in.tellg()) + alignment - 1) / alignment * alignment;
  in.seekg(0, std::ios::end);
  const uint64_t end = static_cast<uint64_t>(in.tellg());
  std::sort(offsets.begin(), offsets.end());
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < offsets.size(); ++i)
    out[offsets[i].second] =
        (i + 1 < offsets.size() ? offsets[i + 1].first + data : end) - (offsets[i].first + data);
  return out;
}

/// Bytes read per second by a memcpy of `bytes` split over `threads` threads, the best of 3.
double memcpy_gb_s(size_t bytes, unsigned threads) {
  std::unique_ptr<char[]> from(new char[bytes]), to(new char[bytes]);
  std::memset(from.get(), 1, bytes),
      std::memset(to.get(), 2, bytes);  // touched: no page faults timed
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t part = bytes / threads;
    for (unsigned i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        std::memcpy(to.get() + i * part, from.get() + i * part,
                    i + 1 == threads ? bytes - i * part : part);
      });
    for (std::thread& t : pool) t.join();
    best = std::min(best, bench::seconds_since(t0));
  }
  bench::check(to[bytes - 1] == 1, "memcpy copied");
  return static_cast<double>(bytes) / best / 1e9;
}

void result(const char* name, double value, const char* unit) {
  std::printf("RESULT %s %.6g %s\n", name, value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options opt(argc, argv, 0);
  std::string path;
  int64_t positions = 256, prompt_len = 512;
  bool first_token_only = false;
  for (size_t i = 0; i < opt.args.size(); ++i) {
    const std::string& a = opt.args[i];
    if (a == "--positions" && i + 1 < opt.args.size())
      positions = std::stoll(opt.args[++i]);
    else if (a == "--prompt" && i + 1 < opt.args.size())
      prompt_len = std::stoll(opt.args[++i]);
    else if (a == "--first-token-only")
      first_token_only = true;
    else if (path.empty() && a.rfind("--", 0) != 0)
      path = a;
    else
      bench::check(false, "an argument this program knows: " + a);
  }
  if (path.empty() && opt.quick)
    path = TINYT_EXAMPLE_DATA "/llama_tiny_q8_0.gguf", positions = 8, prompt_len = 16;
  if (path.empty()) {
    std::fprintf(
        stderr,
        "usage: %s MODEL.gguf [--positions N] [--prompt N] [--first-token-only] [--quick]\n",
        argv[0]);
    return 2;
  }

  // the first token: load, build, one step
  models::Llama model(nn::state::gguf_load(path));
  const double loaded_s = seconds_since_process_start(), loaded_mib = status_mib("VmHWM");
  const models::Llama::Config& c = model.config();
  const UOp pos = Variable("pos", 0, c.context - 1);
  TinyJit step([&](const Tensor& token, const UOp& p) { return model.step(token, p); });
  auto next = [&](int64_t token, int64_t p) {
    const std::vector<float> logits =
        step(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(token)}, {1}),
             pos.bind(p))
            .to_vector<float>();
    return static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  };
  const int64_t first = next(1, 0);
  const double first_token_ms = seconds_since_process_start() * 1e3;
  bench::check(first >= 0 && first < c.vocab, "a token of the vocabulary");
  std::printf(
      "%s: %lld layers, width %lld, %lld/%lld heads, FFN %lld, vocabulary %lld, context %lld\n",
      path.c_str(), static_cast<long long>(c.layers), static_cast<long long>(c.dim),
      static_cast<long long>(c.heads), static_cast<long long>(c.kv_heads),
      static_cast<long long>(c.hidden), static_cast<long long>(c.vocab),
      static_cast<long long>(c.context));
  std::printf("%-52s %12.1f ms (the file loaded after %.0f ms)\n", "first token from process start",
              first_token_ms, loaded_s * 1e3);
  std::printf("peak resident memory: %.1f MiB loaded, %.1f MiB after the first token\n", loaded_mib,
              status_mib("VmHWM"));
  result("llm_first_token_ms", first_token_ms, "ms");
  if (first_token_only) {
    result("llm_peak_rss_mb", status_mib("VmHWM"), "MiB");
    return 0;
  }

  // decoding: positions 0..N-1 once more, each after a step at every position before it
  positions = std::min(positions, c.context);
  for (int64_t p = 1, token = first; p < std::min<int64_t>(3, positions); ++p)
    token = next(token, p);  // captured, replayed
  std::vector<int64_t> decoded;
  const bench::Timing decode = bench::measure(opt, [&] {
    decoded.assign(1, 1);
    for (int64_t p = 0; p < positions; ++p) decoded.push_back(next(decoded.back(), p));
  });
  const double tok_s = static_cast<double>(positions) / decode.best_s;
  bench::check(decoded[1] == first, "the first step's token again");
  bench::report("llm_decode_tok_s",
                "decoding, greedy, positions 0.." + std::to_string(positions - 1), tok_s, "tok/s",
                decode);
  std::printf("peak resident memory after decoding: %.1f MiB\n", status_mib("VmHWM"));

  // the weights a step reads
  std::map<std::string, uint64_t> bytes = gguf_tensor_bytes(path);
  uint64_t file_bytes = 0, step_bytes = 0;
  for (const auto& [name, n] : bytes) file_bytes += n;
  step_bytes = file_bytes;
  if (bytes.count("output.weight"))
    step_bytes -=
        bytes["token_embd.weight"] - bytes["token_embd.weight"] / static_cast<uint64_t>(c.vocab);
  std::printf("%-52s %12.1f MB (of %.1f MB of tensors)\n", "weight bytes a decoding step reads",
              static_cast<double>(step_bytes) / 1e6, static_cast<double>(file_bytes) / 1e6);
  result("llm_weight_bytes_per_token", static_cast<double>(step_bytes), "B");

  // the prompt: the last row of its logits
  prompt_len = std::min(prompt_len, c.context);
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < prompt_len; ++i)
    ids.push_back(static_cast<int32_t>((i * 7919 + 13) % (c.vocab - 3) + 3));
  const Tensor tokens = Tensor::from_vector(ids, {prompt_len});
  int64_t last = -1;
  bench::Options once = opt;
  once.warmup = 1, once.reps = std::min(opt.reps, 3);
  const bench::Timing prompt = bench::measure(once, [&] {
    const std::vector<float> logits =
        model(tokens)[{Slice(prompt_len - 1, prompt_len)}].to_vector<float>();
    last = std::max_element(logits.begin(), logits.end()) - logits.begin();
  });
  bench::check(last >= 0 && last < c.vocab, "a token of the vocabulary");
  bench::report("llm_prompt_tok_s", "prompt of " + std::to_string(prompt_len) + " tokens",
                static_cast<double>(prompt_len) / prompt.best_s, "tok/s", prompt);

  const double kv_mb = 2.0 *
                       static_cast<double>(c.layers * c.kv_heads * c.context * (c.dim / c.heads)) *
                       4 / (1 << 20);
  const double peak = status_mib("VmHWM");
  std::printf("%-52s %12.1f MiB (the file %.1f MiB, the KV cache %.1f MiB: %.2fx their sum)\n",
              "peak resident memory", peak, static_cast<double>(file_bytes) / (1 << 20), kv_mb,
              peak / (static_cast<double>(file_bytes) / (1 << 20) + kv_mb));
  result("llm_peak_rss_mb", peak, "MiB");
  result("llm_file_mb", static_cast<double>(file_bytes) / (1 << 20), "MiB");
  result("llm_kv_cache_mb", kv_mb, "MiB");

  // memcpy last: its 2 GiB are not the model's peak
  const double weight_gb_s = static_cast<double>(step_bytes) * tok_s / 1e9;
  const unsigned threads = static_cast<unsigned>(std::max<int64_t>(
      1, getenv_int("TINYT_THREADS", std::max(1u, std::thread::hardware_concurrency()))));
  const size_t copied = opt.quick ? size_t{1} << 24 : size_t{1} << 30;
  const double copy = memcpy_gb_s(copied, threads), copy1 = memcpy_gb_s(copied, 1);
  std::printf(
      "%-52s %12.2f GB/s (%.0f%% of memcpy's %.2f GB/s read on %u threads; %.2f GB/s on one)\n",
      "weights read while decoding", weight_gb_s, 100 * weight_gb_s / copy, copy, threads, copy1);
  result("llm_weight_gb_s", weight_gb_s, "GB/s");
  result("memcpy_gb_s", copy, "GB/s");
  result("memcpy_1t_gb_s", copy1, "GB/s");
  return 0;
}
