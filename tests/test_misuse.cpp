// Misuse: each wrong call throws its tinyt::Error subclass, whose message names the op, the
// argument and the value (issue 31). Misuse of TinyJit and of allreduce sits in test_jit.cpp and
// test_multi.cpp, next to their other tests.
#include <doctest/doctest.h>

#include <filesystem>

#include <tinyt.hpp>
#include <tinyt/models/bert.hpp>
#include <tinyt/models/llama.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::data_file;
using doctest::Contains;

namespace {
// The fewest weights Bert's constructor takes: one layer's query, the word embeddings (4 wide).
std::map<std::string, Tensor> tiny_bert_weights() {
  return {{"embeddings.word_embeddings.weight", Tensor::ones({10, 4})},
          {"encoder.layer.0.attention.self.query.weight", Tensor::ones({4, 4})}};
}
// two CPU devices, as test_multi.cpp shards across
const std::vector<std::string> two_cpus{"CPU", "CPU:1"};
}  // namespace

TEST_CASE("misuse: Bert with 0 heads, and ids or a mask not (batch, tokens), are ShapeErrors naming the value") {
  CHECK_THROWS_WITH_AS(models::Bert(tiny_bert_weights(), 0), Contains("Bert: heads must be positive, got 0"), ShapeError);
  CHECK_THROWS_WITH_AS(models::Bert(tiny_bert_weights(), -2), Contains("got -2"), ShapeError);
  CHECK_THROWS_WITH_AS(models::Bert(tiny_bert_weights(), 3), Contains("3 heads do not divide the width 4"), ShapeError);
  const models::Bert bert(tiny_bert_weights(), 2);
  const Tensor ids1 = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  CHECK_THROWS_WITH_AS(bert(ids1, Tensor::ones({3})), Contains("Bert: ids must be 2-d (batch, tokens), got shape (3,)"), ShapeError);
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH_AS(bert(ids, Tensor::ones({2, 3})), Contains("Bert: mask shape (2, 3) differs from ids shape (2, 2)"), ShapeError);
}

TEST_CASE("misuse: with CHECK_OOB=1 an index out of range into or of a sharded tensor is an IndexError naming it") {
  tinyt_test::ScopedEnv env;
  env.set("CHECK_OOB", "1");
  const Tensor x = Tensor::arange(int64_t{12}).cast(dtypes::float32).reshape({6, 2});
  const Tensor idx = Tensor::from_vector(std::vector<int32_t>{0, 5, 6, 1}, {4});
  const char* want = "index: index 6 is out of range for axis 0 with size 6 (element (2,) of the index tensor of shape (4,))";
  // the tensor split across the devices by rows, by columns; then the index itself split
  CHECK_THROWS_WITH_AS(x.shard(two_cpus, 0)[{idx}], Contains(want), IndexError);
  CHECK_THROWS_WITH_AS(x.shard(two_cpus, 1)[{idx}], Contains(want), IndexError);
  CHECK_THROWS_WITH_AS(x[{idx.shard(two_cpus, 0)}], Contains(want), IndexError);
  // in range, the check lets it through and the rows are those asked for
  const Tensor ok = Tensor::from_vector(std::vector<int32_t>{5, 0, -1}, {3});
  CHECK(x.shard(two_cpus, 0)[{ok}].to_vector<float>() == std::vector<float>{10, 11, 0, 1, 10, 11});
}

TEST_CASE("misuse: one_hot follows CHECK_OOB: a row of zeros without it, an IndexError naming the value with it") {
  const Tensor labels = Tensor::from_vector(std::vector<int32_t>{2, 0, 3}, {3});
  CHECK(labels.one_hot(3).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 1, 1, 0, 0, 0, 0, 0});
  tinyt_test::ScopedEnv env;
  env.set("CHECK_OOB", "1");
  CHECK_THROWS_WITH_AS(labels.one_hot(3), Contains("one_hot: index 3 is out of range for axis 1 with size 3 (element (2,)"), IndexError);
  const Tensor negative = Tensor::from_vector(std::vector<int64_t>{1, -1}, {1, 2});
  CHECK_THROWS_WITH_AS(negative.one_hot(4), Contains("one_hot: index -1 is out of range for axis 2 with size 4 (element (0, 1)"), IndexError);
  CHECK(Tensor::from_vector(std::vector<int32_t>{1, 0}, {2}).one_hot(2).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 0});
  CHECK_THROWS_WITH_AS(labels.one_hot(-3), Contains("one_hot: num_classes must be -1 or non-negative, got -3"), ShapeError);
}

TEST_CASE("misuse: OMPI_COMM_WORLD_SIZE without mpirun is a DeviceError saying the ranks were not started by mpirun") {
  tinyt_test::ScopedEnv env;
  env.set("OMPI_COMM_WORLD_SIZE", std::nullopt).set("PMIX_RANK", std::nullopt);
  CHECK(dist::detail::launched_size() == 0);  // no launcher: this process alone
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  CHECK_THROWS_WITH_AS(dist::detail::launched_size(), Contains("OMPI_COMM_WORLD_SIZE=2 but the ranks were not started by mpirun"), DeviceError);
  env.set("OMPI_COMM_WORLD_SIZE", "two");
  CHECK_THROWS_WITH_AS(dist::detail::launched_size(), Contains("OMPI_COMM_WORLD_SIZE='two' is not a number of ranks"), DeviceError);
  env.set("OMPI_COMM_WORLD_SIZE", "2").set("PMIX_RANK", "1");  // what mpirun -np 2 gives rank 1
  CHECK(dist::detail::launched_size() == 2);
}

namespace {
}  // namespace

TEST_CASE("misuse: a GGUF metadata value read as another type is a DTypeError naming the key and both types") {
  const nn::state::GGUFFile file = nn::state::gguf_load(data_file("llama_tiny_f32.gguf"));
  CHECK_THROWS_WITH_AS(file.metadata.at("general.architecture").as_int(),
                       Contains("gguf: the metadata value of 'general.architecture' is a string, not an integer"), DTypeError);
  CHECK_THROWS_WITH_AS(file.metadata.at("llama.block_count").as_string(),
                       Contains("gguf: the metadata value of 'llama.block_count' is an unsigned integer, not a string"), DTypeError);
}

TEST_CASE("misuse: Llama's weights are checked against the metadata, a ShapeError naming the tensor and both shapes") {
  const nn::state::GGUFFile good = nn::state::gguf_load(data_file("llama_tiny_f32.gguf"));
  const models::Llama model(good);  // the file as written agrees with itself
  const models::Llama::Config c = model.config();
  const int64_t kv = c.kv_heads * (c.dim / c.heads);
  {  // a key/value projection one head too narrow
    nn::state::GGUFFile file = good;
    file.tensors["blk.1.attn_k.weight"] = Tensor::zeros({kv - c.dim / c.heads, c.dim});
    CHECK_THROWS_WITH_AS(models::Llama(std::move(file)),
                         Contains(tinyt::detail::cat("Llama: tensor 'blk.1.attn_k.weight' has shape ", Shape{kv - c.dim / c.heads, c.dim}).c_str()),
                         ShapeError);
  }
  {  // metadata that says another feed-forward width than the tensors have
    nn::state::GGUFFile file = good;
    file.metadata["llama.feed_forward_length"].value = int64_t{c.hidden + 1};
    CHECK_THROWS_WITH_AS(models::Llama(std::move(file)),
                         Contains(tinyt::detail::cat("Llama: tensor 'blk.0.ffn_gate.weight' has shape ", Shape{c.hidden, c.dim},
                                                     "; the metadata (width ", c.dim).c_str()),
                         ShapeError);
  }
}

TEST_CASE("misuse: messages name the op, the argument and the value (a handful of those issue 31 made clearer)") {
  const Tensor x = Tensor::ones({2, 3});
  CHECK_THROWS_WITH_AS(x.flip({1, -1}), Contains("flip: axis -1 repeats among the axes for shape (2, 3)"), ShapeError);
  CHECK_THROWS_WITH_AS(x.sum({0, -2}), Contains("sum: axis -2 repeats among the axes for shape (2, 3)"), IndexError);
  CHECK_THROWS_WITH_AS(x.shard(two_cpus, 2), Contains("shard: axis 2 is out of range for a (2, 3) tensor (2 dims)"), ShapeError);
  CHECK_THROWS_WITH_AS(x.cast(dtypes::index), Contains("cast: cannot cast float32 to index"), DTypeError);
  CHECK_THROWS_WITH_AS(nn::optim::SGD({Tensor::ones({2}).requires_grad(true)}, 0.1, 0.0, 0.0, true),
                       Contains("SGD: nesterov needs a momentum > 0, got momentum 0"), Error);
  TinyJit step([](const Tensor& t, const UOp&) { return t + 1; });
  CHECK_THROWS_WITH_AS(step(x, Variable("n", 1, 4)), Contains("a UOp argument must be a bound Variable (v.bind(n)), not a DEFINE_VAR"), Error);
  CHECK_THROWS_WITH_AS(models::Bert({{"pooler.dense.weight", Tensor::ones({4, 4})}}, 2),
                       Contains("Bert: none of the 1 weights is 'encoder.layer.0.attention.self.query.weight'"), Error);
}
