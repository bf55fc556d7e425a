// The ONNX recurrent ops, RNN, GRU and LSTM: each direction unrolled over the sequence (its length
// is known), the inputs' share of every gate computed for all steps in one matmul, the hidden
// state's step by step; sequence_lens holds a batch's state past its length, with zeros in Y.
#pragma once

#include "ops_control.hpp"

namespace tinyt::inline v0 {
namespace onnx {
namespace detail {

using Activation = std::function<Tensor(const Tensor&)>;

// The activations of a recurrent node in order, their alpha and beta taken in turn from
// activation_alpha and activation_beta by those that have them (ONNX's defaults otherwise)
inline std::vector<Activation> activations(const OpCall& c, const std::vector<std::string>& defaults, size_t directions) {
  const Attribute* named = c.attribute("activations");
  std::vector<std::string> names = named ? named->strings : std::vector<std::string>{};
  if (names.empty())
    for (size_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  const Attribute* alphas = c.attribute("activation_alpha");
  const Attribute* betas = c.attribute("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  auto alpha = [&](float fallback) { return alphas && next_alpha < alphas->floats.size() ? alphas->floats[next_alpha++] : fallback; };
  auto beta = [&](float fallback) { return betas && next_beta < betas->floats.size() ? betas->floats[next_beta++] : fallback; };
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (n == "sigmoid") {
      out.emplace_back([](const Tensor& x) { return x.sigmoid(); });
    } else if (n == "tanh") {
      out.emplace_back([](const Tensor& x) { return x.tanh(); });
    } else if (n == "relu") {
      out.emplace_back([](const Tensor& x) { return x.relu(); });
    } else if (n == "affine") {
      const float a = alpha(1.0f), b = beta(0.0f);
      out.emplace_back([a, b](const Tensor& x) { return x * a + b; });
    } else if (n == "leakyrelu") {
      const float a = alpha(0.01f);
      out.emplace_back([a](const Tensor& x) { return x.leaky_relu(a); });
    } else if (n == "thresholdedrelu") {
      const float a = alpha(1.0f);
      out.emplace_back([a](const Tensor& x) { return x.gt(Tensor::full(Shape{}, a, x.dtype())).where(x, Tensor::zeros_like(x)); });
    } else if (n == "scaledtanh") {
      const float a = alpha(1.0f), b = beta(1.0f);
      out.emplace_back([a, b](const Tensor& x) { return (x * b).tanh() * a; });
    } else if (n == "hardsigmoid") {
      const float a = alpha(0.2f), b = beta(0.5f);
      out.emplace_back([a, b](const Tensor& x) { return (x * a + b).maximum(Tensor::zeros_like(x)).minimum(Tensor::ones_like(x)); });
    } else if (n == "elu") {
      const float a = alpha(1.0f);
      out.emplace_back([a](const Tensor& x) { return x.elu(a); });
    } else if (n == "softsign") {
      out.emplace_back([](const Tensor& x) { return x / (x.abs() + 1.0f); });
    } else if (n == "softplus") {
      out.emplace_back([](const Tensor& x) { return x.softplus(); });
    } else {
      throw UnsupportedError(tinyt::detail::cat("onnx: ", c.node.op_type, " node '", c.node.name, "': activation '", name, "'"));
    }
  }
  if (out.size() != defaults.size() * directions)
    throw ShapeError(tinyt::detail::cat("onnx: ", c.node.op_type, " node '", c.node.name, "': ", out.size(), " activations for ", directions,
                                        " direction(s) of ", defaults.size()));
  return out;
}

// What one direction's step computes from the step's input share `xw` (batch, gates·hidden: x·Wᵀ
// + Wb), the previous hidden and cell states: the new ones
using RecurrentStep = std::function<std::pair<Tensor, Tensor>(const Tensor& xw, const Tensor& h, const Tensor& cell)>;

// The shared frame of RNN, GRU and LSTM: `gates` blocks of hidden_size per weight, directions,
// layout, sequence_lens; `make_step(direction, R, Rb, P)` gives a direction's step. Outputs Y,
// Y_h and (with cells) Y_c
inline std::vector<Tensor> recurrent(const OpCall& c, int64_t gates, bool cells,
                                     const std::function<RecurrentStep(size_t, const Tensor&, const Tensor&, const Tensor&)>& make_step) {
  using tinyt::detail::cat;
  const bool batch_first = c.int_attr("layout", 0) != 0;
  const Tensor x = batch_first ? c.in(0).permute({1, 0, 2}) : c.in(0);  // (seq, batch, input)
  const std::vector<int64_t> xs = x.shape().to_vector();
  const int64_t steps = xs.at(0), batch = xs.at(1), hidden = c.int_attr("hidden_size", c.in(2).shape().to_vector().at(2));
  const std::string direction = c.string_attr("direction", "forward");
  const size_t directions = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    throw UnsupportedError(cat("onnx: ", c.node.op_type, " node '", c.node.name, "': direction '", direction, "'"));
  const DType dt = x.dtype();
  std::optional<Tensor> lengths;  // (batch, 1): a step counts where it is below its batch's length
  if (c.has(4)) lengths = c.in(4).cast(dtypes::int64).reshape({batch, 1});
  std::vector<Tensor> ys, last_h, last_c;
  for (size_t d = 0; d < directions; ++d) {
    const auto dim = static_cast<int64_t>(d);
    const Tensor w = c.in(1)[{dim}], r = c.in(2)[{dim}];
    const Tensor bias = c.has(3) ? Tensor(c.in(3)[{dim}]) : Tensor::zeros({2 * gates * hidden}, dt);
    const Tensor wb = cut(bias, 0, 0, gates * hidden), rb = cut(bias, 0, gates * hidden, 2 * gates * hidden);
    const Tensor peep = cells && c.has(7) ? Tensor(c.in(7)[{dim}]) : Tensor::zeros({3 * hidden}, dt);
    const RecurrentStep step = make_step(d, r, rb, peep);
    auto initial = [&](size_t input) {
      if (!c.has(input)) return Tensor::zeros({batch, hidden}, dt);
      const Tensor t = c.in(input);
      return Tensor(batch_first ? t.permute({1, 0, 2})[{dim}] : t[{dim}]);
    };
    Tensor h = initial(5), cell = cells ? initial(6) : Tensor::zeros({batch, hidden}, dt);
    const Tensor xw = x.matmul(w.transpose()) + wb;  // (seq, batch, gates·hidden): every step's input share at once
    const bool backwards = direction == "reverse" || d == 1;
    std::vector<Tensor> outputs(static_cast<size_t>(steps));
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = backwards ? steps - 1 - i : i;
      auto [h_new, c_new] = step(xw[{t}], h, cell);
      if (lengths) {
        const Tensor live = Tensor::full(Shape{}, t, dtypes::int64).lt(*lengths);
        h_new = live.where(h_new, h), c_new = live.where(c_new, cell);
        outputs[static_cast<size_t>(t)] = live.where(h_new, Tensor::zeros_like(h_new));
      } else {
        outputs[static_cast<size_t>(t)] = h_new;
      }
      h = h_new, cell = c_new;
    }
    ys.push_back(Tensor::stack(outputs, 0));  // (seq, batch, hidden)
    last_h.push_back(h), last_c.push_back(cell);
  }
  Tensor y = Tensor::stack(ys, 1);  // (seq, directions, batch, hidden)
  Tensor y_h = Tensor::stack(last_h, 0), y_c = Tensor::stack(last_c, 0);  // (directions, batch, hidden)
  if (batch_first) y = y.permute({2, 0, 1, 3}), y_h = y_h.permute({1, 0, 2}), y_c = y_c.permute({1, 0, 2});
  return cells ? std::vector<Tensor>{y, y_h, y_c} : std::vector<Tensor>{y, y_h};
}

// gate k (of hidden each) of a (batch, gates·hidden) tensor, and the same of a bias vector
inline Tensor gate(const Tensor& t, int64_t k, int64_t hidden) { return cut(t, -1, k * hidden, (k + 1) * hidden); }

// a gate's pre-activation, clipped to [-clip, clip] where the node says
inline std::function<Tensor(const Tensor&)> clipper(const OpCall& c) {
  const Attribute* clip = c.attribute("clip");
  if (!clip) return [](const Tensor& t) { return t; };
  const float bound = clip->f;
  return [bound](const Tensor& t) { return t.maximum(Tensor::full(Shape{}, -bound, t.dtype())).minimum(Tensor::full(Shape{}, bound, t.dtype())); };
}

// RNN: H = f(x·Wᵀ + H·Rᵀ + Wb + Rb)
inline std::vector<Tensor> rnn(const OpCall& c) {
  const auto fs = activations(c, {"Tanh"}, c.string_attr("direction", "forward") == "bidirectional" ? 2 : 1);
  const auto clip = clipper(c);
  return recurrent(c, 1, false, [&](size_t d, const Tensor& r, const Tensor& rb, const Tensor&) -> RecurrentStep {
    const Activation f = fs[d];
    return [f, clip, r, rb](const Tensor& xw, const Tensor& h, const Tensor& cell) {
      return std::pair{f(clip(xw + h.matmul(r.transpose()) + rb)), cell};
    };
  });
}

// GRU, gates z, r, h: z = f(..), r = f(..), h̃ = g(x·Whᵀ + (r ⊙ H)·Rhᵀ + Rbh + Wbh), or with
// linear_before_reset g(x·Whᵀ + r ⊙ (H·Rhᵀ + Rbh) + Wbh); H = (1 - z) ⊙ h̃ + z ⊙ H
inline std::vector<Tensor> gru(const OpCall& c) {
  const auto fs = activations(c, {"Sigmoid", "Tanh"}, c.string_attr("direction", "forward") == "bidirectional" ? 2 : 1);
  const auto clip = clipper(c);
  const bool before_reset = c.int_attr("linear_before_reset", 0) != 0;
  const int64_t hidden = c.int_attr("hidden_size", c.in(2).shape().to_vector().at(2));
  return recurrent(c, 3, false, [&](size_t d, const Tensor& r, const Tensor& rb, const Tensor&) -> RecurrentStep {
    const Activation f = fs[2 * d], g = fs[2 * d + 1];
    const Tensor rh = cut(r, 0, 2 * hidden, 3 * hidden).transpose();  // (the candidate's Rhᵀ)
    return [=](const Tensor& xw, const Tensor& h, const Tensor& cell) {
      const Tensor hr = h.matmul(r.transpose());  // (batch, 3·hidden): H·Rᵀ for every gate
      const Tensor z = f(clip(gate(xw, 0, hidden) + gate(hr, 0, hidden) + gate(rb, 0, hidden)));
      const Tensor reset = f(clip(gate(xw, 1, hidden) + gate(hr, 1, hidden) + gate(rb, 1, hidden)));
      const Tensor candidate = before_reset ? g(clip(gate(xw, 2, hidden) + reset * (gate(hr, 2, hidden) + gate(rb, 2, hidden))))
                                            : g(clip(gate(xw, 2, hidden) + (reset * h).matmul(rh) + gate(rb, 2, hidden)));
      return std::pair{(1.0f - z) * candidate + z * h, cell};
    };
  });
}

// LSTM, gates i, o, f, c: i = f(.. + Pi ⊙ C), f = f(.. + Pf ⊙ C) (or 1 - i with input_forget),
// C' = f ⊙ C + i ⊙ g(..), o = f(.. + Po ⊙ C'), H = o ⊙ h(C')
inline std::vector<Tensor> lstm(const OpCall& c) {
  const auto fs = activations(c, {"Sigmoid", "Tanh", "Tanh"}, c.string_attr("direction", "forward") == "bidirectional" ? 2 : 1);
  const auto clip = clipper(c);
  const bool coupled = c.int_attr("input_forget", 0) != 0;
  const int64_t hidden = c.int_attr("hidden_size", c.in(2).shape().to_vector().at(2));
  return recurrent(c, 4, true, [&](size_t d, const Tensor& r, const Tensor& rb, const Tensor& p) -> RecurrentStep {
    const Activation f = fs[3 * d], g = fs[3 * d + 1], h_act = fs[3 * d + 2];
    const Tensor pi = gate(p, 0, hidden), po = gate(p, 1, hidden), pf = gate(p, 2, hidden);
    return [=](const Tensor& xw, const Tensor& h, const Tensor& cell) {
      const Tensor pre = xw + h.matmul(r.transpose()) + rb;  // (batch, 4·hidden)
      const Tensor in = f(clip(gate(pre, 0, hidden) + pi * cell));
      const Tensor forget = coupled ? Tensor(1.0f - in) : f(clip(gate(pre, 2, hidden) + pf * cell));
      const Tensor next = forget * cell + in * g(clip(gate(pre, 3, hidden)));
      const Tensor out = f(clip(gate(pre, 1, hidden) + po * next));
      return std::pair{Tensor(out * h_act(next)), next};
    };
  });
}

}  // namespace detail
}  // namespace onnx
}  // namespace tinyt::inline v0
