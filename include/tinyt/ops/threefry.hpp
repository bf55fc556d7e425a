// The Threefry-2x32 cipher (Salmon et al., SC'11) that random numbers are made from, on host
// words and on uint32 tensors alike, and the key of each random call (ops/random.hpp).
#pragma once

#include <array>
#include <cstring>
#include <mutex>

#include "../graph.hpp"
#include "../tensor.hpp"

namespace tinyt::inline v0 {

namespace detail {

// The word operations Threefry needs, for host words and for uint32 tensors alike.
inline uint32_t tf_word(uint32_t v, uint32_t) { return v; }
inline Tensor tf_word(uint32_t v, const Tensor& like) {
  return Tensor(graph::const_(dtypes::uint32, v, like.device()));
}
inline uint32_t tf_add(uint32_t a, uint32_t b) { return a + b; }
inline Tensor tf_add(const Tensor& a, const Tensor& b) { return a.add(b); }
inline uint32_t tf_xor(uint32_t a, uint32_t b) { return a ^ b; }
inline Tensor tf_xor(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
inline uint32_t tf_rotl(uint32_t x, uint32_t r) { return x << r | x >> (32 - r); }
inline Tensor tf_rotl(const Tensor& x, uint32_t r) {
  return x.lshift(tf_word(r, x)).bitwise_or(x.rshift(tf_word(32 - r, x)));
}

/// Threefry-2x32 with 20 rounds: the block (x0, x1) encrypted under the key (k0, k1).
template <class W> std::array<W, 2> threefry2x32_rounds(W x0, W x1, const W& k0, const W& k1) {
  static constexpr uint32_t rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const W ks[3] = {k0, k1, tf_xor(tf_xor(k0, k1), tf_word(0x1BD11BDA, k0))};
  x0 = tf_add(x0, ks[0]), x1 = tf_add(x1, ks[1]);
  for (uint32_t r = 0; r < 20; ++r) {
    x0 = tf_add(x0, x1);
    x1 = tf_xor(tf_rotl(x1, rotations[r % 8]), x0);
    // after every fourth round, key injection s: the key schedule rotated by s, plus s
    if (r % 4 == 3) {
      const uint32_t s = r / 4 + 1;
      x0 = tf_add(x0, ks[s % 3]);
      x1 = tf_add(x1, tf_add(ks[(s + 1) % 3], tf_word(s, k0)));
    }
  }
  return {x0, x1};
}

/// Threefry-2x32-20 of one block on the host.
inline std::array<uint32_t, 2> threefry2x32(uint32_t x0, uint32_t x1, uint32_t k0, uint32_t k1) {
  return threefry2x32_rounds<uint32_t>(x0, x1, k0, k1);
}
/// Threefry-2x32-20 of uint32 tensors (broadcast together), as tensor ops.
inline std::array<Tensor, 2> threefry2x32(const Tensor& x0, const Tensor& x1, const Tensor& k0,
                                          const Tensor& k1) {
  for (const Tensor* t : {&x0, &x1, &k0, &k1})
    if (t->dtype() != dtypes::uint32)
      throw DTypeError(
          cat("threefry2x32: the counter and key words must be uint32, not ", t->dtype().name()));
  // the ops broadcast; checking first names this op in the error
  Tensor::broadcast_shape(
      Tensor::broadcast_shape(x0.shape().to_vector(), x1.shape().to_vector(), "threefry2x32"),
      Tensor::broadcast_shape(k0.shape().to_vector(), k1.shape().to_vector(), "threefry2x32"),
      "threefry2x32");
  return threefry2x32_rounds<Tensor>(x0, x1, k0, k1);
}
/// Threefry-2x32-20 of uint32 tensors under a host key, which the kernel reads from memory (so
/// the kernel is the same for every key).
inline std::array<Tensor, 2> threefry2x32(const Tensor& x0, const Tensor& x1, uint32_t k0,
                                          uint32_t k1) {
  Tensor key = Tensor::from_vector(std::vector<uint32_t>{k0, k1}, Shape{2}, x0.device());
  return threefry2x32(x0, x1, key.shrink({{0, 1}}).reshape({}), key.shrink({{1, 2}}).reshape({}));
}

struct RandomState {
  std::mutex mu;
  uint64_t seed = 0, calls = 0;
};
inline RandomState& random_state() {
  static RandomState s;
  return s;
}
/// The key of the next random call: the call number encrypted under the seed, so that each
/// (seed, call) pair has its own key and all 64 bits of both count.
inline std::array<uint32_t, 2> next_random_key() {
  RandomState& st = random_state();
  std::lock_guard lock(st.mu);
  const uint64_t call = st.calls++;
  return threefry2x32(static_cast<uint32_t>(call), static_cast<uint32_t>(call >> 32),
                      static_cast<uint32_t>(st.seed), static_cast<uint32_t>(st.seed >> 32));
}

/// Two random words per element for n elements (one Threefry block each) from the next call's key.
inline std::array<Tensor, 2> random_words(int64_t n, const std::string& device) {
  const auto key = next_random_key();
  Tensor key_words = Tensor::from_vector(std::vector<uint32_t>{key[0], key[1]}, Shape{2}, device);
  // under a TinyJit capture: each replay takes the next key, as each call of the step would
  if (std::vector<engine::HostFill>* fills = engine::host_fill_sink())
    fills->push_back({graph::buffer_of(graph::base_buffer(key_words.uop())), [] {
                        const auto next = next_random_key();
                        std::vector<uint8_t> bytes(sizeof next);
                        std::memcpy(bytes.data(), next.data(), sizeof next);
                        return bytes;
                      }});
  // the element index, counted as arange counts (a cumulative sum), 64 bits wide (on a device
  // without 64-bit types, 32: its high word is 0, as it is below 2^32 elements anyway)
  const DType wide = Device::widest_int(device);
  Tensor i = Tensor::full(Shape{n}, 1, wide, device).cumsum().sub(1);
  Tensor lo = i.cast(dtypes::uint32), hi = wide == dtypes::int64 ? i.rshift(32).cast(dtypes::uint32) : Tensor::zeros({n}, dtypes::uint32, device);
  return threefry2x32(lo, hi, key_words.shrink({{0, 1}}).reshape({}), key_words.shrink({{1, 2}}).reshape({}));
}
}  // namespace detail

}  // namespace tinyt::inline v0
