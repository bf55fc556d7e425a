// Decoding speed of examples/llm.cpp's model: the random tiny LLaMA of tests/data
// (llama_tiny_f32.gguf: 2 layers, width 64, 4 heads sharing 2 key/value heads, vocabulary 400),
// greedy, one token per step with the KV cache under TinyJit, positions 0 to 63. torch_bench.py's
// `llm_decode` runs the same weights and steps in plain PyTorch.
#include <tinyt.hpp>
#include <tinyt/models/llama.hpp>

#include <algorithm>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  models::Llama model(nn::state::gguf_load(TINYT_EXAMPLE_DATA "/llama_tiny_f32.gguf"));
  const int64_t steps = opt.quick ? 8 : model.config().context;
  const UOp pos = Variable("pos", 0, model.config().context - 1);
  TinyJit step([&](const Tensor& token, const UOp& p) { return model.step(token, p); });
  int64_t last = 0;
  const bench::Timing t = bench::measure(opt, [&] {
    int64_t token = 1;
    for (int64_t p = 0; p < steps; ++p) {
      const std::vector<float> logits =
          step(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(token)}, {1}), pos.bind(p)).to_vector<float>();
      token = std::max_element(logits.begin(), logits.end()) - logits.begin();
    }
    last = token;
  });
  bench::check(last >= 0 && last < 400, "a token of the vocabulary");
  bench::report("llm_decode", "tiny LLaMA, greedy decoding with a KV cache", static_cast<double>(steps) / t.best_s, "tok/s", t);
  return 0;
}
