// models::Llama on a small random LLaMA that PyTorch built and the gguf package wrote in F32, F16,
// Q8_0 and Q4_0 (tests/data/make_llama_reference.py): the weights dequantize to what gguf makes of
// them, and the logits of a prompt are PyTorch's with the same weights, whole or a token at a time
// with a KV cache. And GPT-2's byte-level BPE from a GGUF's tokens and merges against Hugging
// Face's tokenizers (tests/data/make_bpe_reference.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/models/llama.hpp>
#include <tinyt/nn/text.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::data_file;
namespace fs = std::filesystem;

namespace {
}  // namespace

TEST_CASE("llama: a random LLaMA from GGUF gives PyTorch's logits, weights stored as F32, F16, Q8_0 and Q4_0") {
  const auto ref = nn::state::safe_load(data_file("llama_tiny_reference.safetensors"));
  const Tensor prompt = ref.at("prompt").cast(dtypes::int32);
  const auto n = static_cast<size_t>(prompt.numel());
  for (const std::string tag : {"f32", "f16", "q8_0", "q4_0"}) {
    INFO(tag);
    nn::state::GGUFFile file = nn::state::gguf_load(data_file("llama_tiny_" + tag + ".gguf"));
    if (tag != "f32")  // the packed weights unpack to gguf's values exactly
      for (const std::string name : {"blk.0.attn_q.weight", "blk.1.ffn_down.weight"}) {
        INFO(name);
        CHECK(file.tensors.at(name).cast(dtypes::float32).to_vector<float>() == ref.at(tag + "." + name).to_vector<float>());
      }
    const models::Llama model(std::move(file));
    CHECK(model.config().layers == 2);
    CHECK(model.config().kv_heads == 2);
    const Tensor logits = model(prompt);
    REQUIRE(logits.shape() == Shape{static_cast<int64_t>(n), 400});
    const std::vector<float> got = logits.to_vector<float>(), want = ref.at(tag + ".logits").to_vector<float>();
    float scale = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::abs(want[i])), worst = std::max(worst, std::abs(got[i] - want[i]));
    // measured (x86-64, LLVM): 5.95e-7 of the largest logit at worst (q8_0; f32 5.6e-7, f16 5.1e-7,
    // q4_0 4.9e-7), about 10 float32 roundings; 1e-5 leaves a 17x margin for other summation
    // orders and vector widths
    CHECK(worst <= 1e-5f * scale);
    // greedy: the most likely next token at every position is PyTorch's
    for (size_t t = 0; t < n; ++t) {
      auto row = [&](const std::vector<float>& v) { return std::max_element(v.begin() + t * 400, v.begin() + (t + 1) * 400) - v.begin(); };
      CHECK(row(got) == row(want));
    }
  }
}

TEST_CASE("llama: decoding token by token with a KV cache gives the whole prompt's logits, compiled once for every position") {
  const auto ref = nn::state::safe_load(data_file("llama_tiny_reference.safetensors"));
  const std::vector<int64_t> prompt = ref.at("prompt").to_vector<int64_t>();
  models::Llama model(nn::state::gguf_load(data_file("llama_tiny_q8_0.gguf")));
  const std::vector<float> want = ref.at("q8_0.logits").to_vector<float>();
  const UOp pos = Variable("pos", 0, model.config().context - 1);
  TinyJit step([&](const Tensor& token, const UOp& p) { return model.step(token, p); });
  float scale = 0, worst = 0;
  for (size_t t = 0; t < prompt.size(); ++t) {
    GlobalCounters::reset();
    const Tensor token = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(prompt[t])}, {1});
    const std::vector<float> got = step(token, pos.bind(static_cast<int64_t>(t))).to_vector<float>();
    if (t >= 2) CHECK(GlobalCounters::compile_count == 0);  // replayed: nothing compiled for a new position
    for (size_t v = 0; v < 400; ++v) {
      scale = std::max(scale, std::abs(want[t * 400 + v]));
      worst = std::max(worst, std::abs(got[v] - want[t * 400 + v]));
    }
  }
  // measured (x86-64, LLVM): 4.7e-7 of the largest logit; 1e-5 leaves a 20x margin, as above
  CHECK(worst <= 1e-5f * scale);
}

TEST_CASE("llama: greedy generation with the KV cache continues the prompt as PyTorch does") {
  const auto ref = nn::state::safe_load(data_file("llama_tiny_reference.safetensors"));
  const std::vector<int64_t> prompt = ref.at("prompt").to_vector<int64_t>(), want = ref.at("f32.greedy").to_vector<int64_t>();
  models::Llama model(nn::state::gguf_load(data_file("llama_tiny_f32.gguf")));
  const UOp pos = Variable("pos", 0, model.config().context - 1);
  TinyJit step([&](const Tensor& token, const UOp& p) { return model.step(token, p); });
  std::vector<int64_t> tokens = prompt, generated;
  std::vector<float> logits;
  for (size_t t = 0; t < prompt.size() + want.size(); ++t) {
    if (t >= prompt.size()) {
      generated.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
      tokens.push_back(generated.back());
    }
    logits = step(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(tokens[t])}, {1}), pos.bind(static_cast<int64_t>(t)))
                 .to_vector<float>();
  }
  CHECK(generated == want);
}

TEST_CASE("llama: GPT-2's byte-level BPE from a GGUF gives Hugging Face's token ids, and decodes back") {
  const nn::text::BPETokenizer tok = nn::text::BPETokenizer::from_gguf(nn::state::gguf_load(data_file("bpe_tiny.gguf")).metadata);
  CHECK(tok.size() == 400);
  std::ifstream in(data_file("bpe_reference.txt"));
  REQUIRE(in.good());
  std::string line, text;
  int checked = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "text") {
      std::string hex;
      fields >> hex;
      text = tinyt_test::from_hex(hex);
    } else {
      std::vector<int64_t> want;
      for (int64_t id; fields >> id;) want.push_back(id);
      INFO(text);
      const std::vector<int64_t> got = tok.encode(text);
      CHECK(got == want);
      CHECK(tok.decode(got) == text);
      ++checked;
    }
  }
  CHECK(checked == 8);
  CHECK(nn::text::BPETokenizer::pieces("it's  a\n\nb 12x") == std::vector<std::string>{"it", "'s", " ", " a", "\n", "\n", "b", " 12", "x"});
  CHECK_THROWS_WITH_AS(tok.decode({400}), doctest::Contains("BPETokenizer::decode: id 400 is out of range [0, 400)"), IndexError);
  // malformed UTF-8 (a lone continuation byte, a cut sequence, a surrogate, 0xFF 0xFE) comes back
  // byte for byte, not as U+FFFD
  for (const std::string& bad : {std::string("a\x80 b"), std::string("x\xc3"), std::string("\xed\xa0\x80!"), std::string("\xff\xfe caf\xc3\xa9")}) {
    INFO(bad.size(), " bytes");
    CHECK(tok.decode(tok.encode(bad)) == bad);
  }
}
