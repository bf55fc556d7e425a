// A LLaMA-architecture language model from a GGUF file, generating text: the GGUF's byte-level BPE
// tokenizer (nn/text.hpp), the model (models/llama.hpp; quantized weights stay packed), a KV cache
// indexed by a bound Variable and the decoding step under TinyJit (compiled once for every
// position), temperature and top-k sampling with a seed, tokens streamed to stdout as they come.
//
//   llm [--model FILE.gguf] [--prompt TEXT] [--max-tokens N] [--temperature T] [--top-k K] [--seed S]
//
// The default model is tests/data/llama_tiny_q8_0.gguf: random weights (its text is noise), made
// by tests/data/make_llama_reference.py; any llama.cpp "llama" GGUF with a "gpt2" tokenizer works.
#include <tinyt.hpp>
#include <tinyt/models/llama.hpp>
#include <tinyt/nn/text.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace tinyt;

namespace {
struct Options {
  std::string model = TINYT_EXAMPLE_DATA "/llama_tiny_q8_0.gguf", prompt = "The quick brown fox";
  int64_t max_tokens = 32, top_k = 40;
  double temperature = 0.8;
  uint64_t seed = 1;
};
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error("llm: " + flag + " needs a value (llm --help)");
    const std::string value = argv[++i];
    if (flag == "--model") o.model = value;
    else if (flag == "--prompt") o.prompt = value;
    else if (flag == "--max-tokens") o.max_tokens = std::stoll(value);
    else if (flag == "--temperature") o.temperature = std::stod(value);
    else if (flag == "--top-k") o.top_k = std::stoll(value);
    else if (flag == "--seed") o.seed = std::stoull(value);
    else throw Error("llm: unknown flag " + flag + " (flags: --model --prompt --max-tokens --temperature --top-k --seed)");
  }
  return o;
}

/// The next token: the most likely at temperature 0, else drawn from the softmax of logits /
/// temperature over the top_k most likely.
int64_t sample(const std::vector<float>& logits, double temperature, int64_t top_k, std::mt19937_64& rng) {
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const auto k = static_cast<size_t>(std::clamp<int64_t>(top_k, 1, static_cast<int64_t>(logits.size())));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int64_t a, int64_t b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
  if (temperature <= 0) return order[0];
  std::vector<double> weights(k);
  for (size_t i = 0; i < k; ++i)
    weights[i] = std::exp((logits[static_cast<size_t>(order[i])] - logits[static_cast<size_t>(order[0])]) / temperature);
  return order[std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng)];
}

/// How many bytes at the start of `bytes` are whole UTF-8 characters: a token may end inside one,
/// which the next token completes.
size_t complete_utf8(const std::string& bytes) {
  size_t end = bytes.size();
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const auto b = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back for the lead
    const size_t length = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    if (length > back) end = bytes.size() - back;  // the lead of a character not finished yet
    break;
  }
  return end;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "--help") {
      std::printf("llm [--model FILE.gguf] [--prompt TEXT] [--max-tokens N] [--temperature T] [--top-k K] [--seed S]\n");
      return 0;
    }
    const Options o = parse(argc, argv);
    nn::state::GGUFFile file = nn::state::gguf_load(o.model);
    const nn::text::BPETokenizer tokenizer = nn::text::BPETokenizer::from_gguf(file.metadata);
    std::vector<int64_t> tokens;
    if (auto bos = file.metadata.find("tokenizer.ggml.bos_token_id"); bos != file.metadata.end()) tokens.push_back(bos->second.as_int());
    for (int64_t t : tokenizer.encode(o.prompt)) tokens.push_back(t);
    models::Llama model(std::move(file));
    const int64_t context = model.config().context;
    if (static_cast<int64_t>(tokens.size()) >= context) throw Error("llm: the prompt fills the model's context");

    const UOp pos = Variable("pos", 0, context - 1);
    TinyJit step([&](const Tensor& token, const UOp& p) { return model.step(token, p); });
    std::mt19937_64 rng(o.seed);
    std::printf("%s", o.prompt.c_str());
    std::fflush(stdout);
    std::vector<float> logits;
    auto feed = [&](int64_t token, int64_t at) {
      logits = step(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(token)}, {1}), pos.bind(at)).to_vector<float>();
    };
    for (size_t i = 0; i < tokens.size(); ++i) feed(tokens[i], static_cast<int64_t>(i));  // the prompt
    const auto start = std::chrono::steady_clock::now();
    int64_t generated = 0;
    std::string pending;  // bytes of a character that the tokens so far have not finished
    for (int64_t at = static_cast<int64_t>(tokens.size()); generated < o.max_tokens && at < context; ++at, ++generated) {
      const int64_t next = sample(logits, o.temperature, o.top_k, rng);
      pending += tokenizer.decode({next});
      const size_t whole = complete_utf8(pending);
      std::fwrite(pending.data(), 1, whole, stdout);
      std::fflush(stdout);
      pending.erase(0, whole);
      feed(next, at);
    }
    std::fwrite(pending.data(), 1, pending.size(), stdout);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("\n\n%lld tokens in %.3f s: %.1f tokens/s\n", static_cast<long long>(generated), seconds,
                static_cast<double>(generated) / seconds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
