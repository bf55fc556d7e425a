// Causal self-attention with a KV cache, one token at a time, under TinyJit.
//
// A one-layer attention language model (tests/data/make_kv_attention.py made its weights and
// PyTorch's logits) reads a sequence token by token. Each step embeds one token, writes its key
// and value into the caches at `start_pos`, attends over the first start_pos + 1 entries and gives
// the next token's logits. `start_pos` is a bound Variable: every kernel of the step takes it as an
// argument, so the kernels are compiled in the first steps only (DEBUG=2 shows where), and from
// the third step on TinyJit replays them. The logits must equal a full causal recompute of the
// whole sequence (no cache) and PyTorch's.
//
//   build/examples/kv_cache [tests/data/kv_attention.bin]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>

using namespace tinyt;

namespace {
constexpr int64_t V = 48, D = 32, H = 4, HD = 8, L = 12;

struct Model {
  Tensor tok_emb, wq, wk, wv, wo, lm_head;
};

// The file's layout is in tests/data/make_kv_attention.py: a text header, then little-endian
// int32 tokens and float32 arrays.
struct Reference {
  std::vector<int32_t> tokens;
  Model model;
  std::vector<float> logits;  // (L, V), PyTorch in float64, rounded
};

Reference load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("kv_cache: cannot open " + path);
  std::string header;
  std::getline(in, header);
  if (header != "tinyt-kv-attention V=48 D=32 H=4 L=12") throw std::runtime_error("kv_cache: " + path + " is not the expected file");
  auto read = [&](auto& out, size_t n) {
    out.resize(n);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n * sizeof(out[0])));
    if (!in) throw std::runtime_error("kv_cache: " + path + " is too short");
  };
  Reference r;
  read(r.tokens, L);
  auto matrix = [&](int64_t rows, int64_t cols) {
    std::vector<float> v;
    read(v, static_cast<size_t>(rows * cols));
    return Tensor::from_vector(v, {rows, cols}).realize();
  };
  r.model = {matrix(V, D), matrix(D, D), matrix(D, D), matrix(D, D), matrix(D, D), matrix(D, V)};
  read(r.logits, static_cast<size_t>(L * V));
  return r;
}

// The whole sequence at once, with a causal mask: what the cached steps must reproduce.
Tensor full_recompute(const Model& m, const Tensor& tokens) {
  const Tensor x = m.tok_emb[{tokens}];  // (L, D)
  auto heads = [](const Tensor& t) { return t.reshape({L, H, HD}).transpose(0, 1); };  // (H, L, HD)
  const Tensor att = heads(x.matmul(m.wq)).scaled_dot_product_attention(heads(x.matmul(m.wk)), heads(x.matmul(m.wv)), {}, true);
  return (x + att.transpose(0, 1).reshape({L, D}).matmul(m.wo)).matmul(m.lm_head);  // (L, V)
}
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : TINYT_EXAMPLE_DATA "/kv_attention.bin";
  const Reference ref = load(path);
  const Model& m = ref.model;

  Tensor cache_k = Tensor::zeros({H, L, HD}).contiguous().realize();
  Tensor cache_v = Tensor::zeros({H, L, HD}).contiguous().realize();
  const UOp start_pos = Variable("start_pos", 0, L - 1);

  // one step: the logits after `token` at position `pos` (a bound start_pos)
  TinyJit step([&](const Tensor& token, const UOp& pos) {
    const Tensor x = m.tok_emb[{token}];  // (1, D)
    auto heads = [](const Tensor& t) { return t.reshape({1, H, HD}).transpose(0, 1); };  // (H, 1, HD)
    const sint p = sint(pos);
    cache_k[{Slice(), Slice(p, p + 1)}] = heads(x.matmul(m.wk));
    cache_v[{Slice(), Slice(p, p + 1)}] = heads(x.matmul(m.wv));
    const Tensor keys = cache_k[{Slice(), Slice(0, p + 1)}], values = cache_v[{Slice(), Slice(0, p + 1)}];
    const Tensor scores = heads(x.matmul(m.wq)).matmul(keys.transpose(-1, -2)).mul(1.0 / std::sqrt(double(HD)));
    const Tensor att = scores.softmax(-1).matmul(values);  // (H, 1, HD)
    return (x + att.transpose(0, 1).reshape({1, D}).matmul(m.wo)).matmul(m.lm_head);  // (1, V)
  });

  std::vector<float> cached;
  for (int64_t pos = 0; pos < L; ++pos) {
    GlobalCounters::reset();
    const Tensor token = Tensor::from_vector(std::vector<int32_t>{ref.tokens[static_cast<size_t>(pos)]}, {1});
    const std::vector<float> logits = step(token, start_pos.bind(pos)).to_vector<float>();
    cached.insert(cached.end(), logits.begin(), logits.end());
    std::printf("step %2lld: %lld kernels, %lld compiled%s\n", static_cast<long long>(pos),
                static_cast<long long>(GlobalCounters::kernel_count.load()),
                static_cast<long long>(GlobalCounters::compile_count.load()),
                pos == 0 ? " (runs)" : pos == 1 ? " (captures)" : " (replays)");
  }

  const std::vector<float> full = full_recompute(m, Tensor::from_vector(ref.tokens, {L})).to_vector<float>();
  double vs_full = 0, vs_torch = 0, largest = 0;
  for (size_t i = 0; i < cached.size(); ++i) {
    vs_full = std::max(vs_full, std::fabs(double(cached[i]) - full[i]));
    vs_torch = std::max(vs_torch, std::fabs(double(cached[i]) - ref.logits[i]));
    largest = std::max(largest, std::fabs(double(ref.logits[i])));
  }
  std::printf("max |cached - full recompute| = %.3g, max |cached - PyTorch| = %.3g (logits up to %.2f)\n", vs_full,
              vs_torch, largest);
  // float32 through two matmuls of 32 terms and a softmax: a few 1e-6 relative to logits near 5
  const bool ok = vs_full <= 1e-4 && vs_torch <= 1e-4;
  std::printf("%s\n", ok ? "ok: the KV-cache steps give the full recompute's and PyTorch's logits" : "MISMATCH");
  return ok ? 0 : 1;
}
