// Linear algebra: matmul, linear and einsum, each a broadcast multiply followed by a sum over
// the contracted axes (tinygrad's way), so the product is never materialized and a matmul with
// its bias and activation is one kernel.
#pragma once

#include <cctype>
#include <map>
#include <set>

#include "reduce.hpp"

namespace tinyt::inline v0 {

/// torch.matmul's semantics: 1-D operands are vectors, more dims are batches that broadcast.
TINYT_INLINE Tensor Tensor::matmul(const Tensor& w) const {
  const std::vector<sint> xs = shape().dims(), ws = w.shape().dims();
  auto fail = [&](const char* why) {
    return ShapeError(detail::cat("matmul: cannot multiply ", Shape(xs), " by ", Shape(ws), why));
  };
  if (xs.empty() || ws.empty()) throw fail(" (both operands need at least one dimension)");
  const size_t wk = ws.size() >= 2 ? ws.size() - 2 : 0;  // w's contracted dim
  if (!(xs.back() == ws[wk])) throw fail("");
  if (xs.size() > 2 && ws.size() > 2) {
    try {
      broadcast_shape(Shape(std::vector<sint>(xs.begin(), xs.end() - 2)), Shape(std::vector<sint>(ws.begin(), ws.end() - 2)), "matmul");
    } catch (const ShapeError&) {
      throw fail(" (the batch dims do not broadcast)");
    }
  }
  // x (..., n, k) -> (..., n, 1, k) and w (..., k, m) -> (..., 1, m, k): the product is
  // (..., n, m, k), summed over k
  const bool matrices = xs.size() >= 2 && ws.size() >= 2;
  Tensor x = matrices ? unsqueeze(-2) : *this, y = w;
  if (ws.size() >= 2) y = (matrices ? y.unsqueeze(-3) : y).transpose(-1, -2);
  const DType out = least_upper_dtype({dtype(), w.dtype()}), dot = detail::dot_dtype(out);
  return x.cast(dot).mul(y.cast(dot)).sum(-1).cast(out);
}

/// x.matmul(w) + b, with w of shape (in, out) (a 1-D w scales elementwise, as tinygrad).
TINYT_INLINE Tensor Tensor::linear(const Tensor& w, const Tensor& b) const {
  Tensor y = w.ndim() == 1 ? mul(w) : matmul(w);
  return b.defined() ? y.add(b) : y;
}

namespace detail {
// Einsum labels: letters are their character code; the dims an ellipsis covers are
// kEllipsisLabel + j, j counted over the widest ellipsis, so they align from the right.
inline constexpr int kEllipsisLabel = 1000;

inline std::string einsum_label_name(int label) {
  if (label < kEllipsisLabel) return std::string(1, static_cast<char>(label));
  return cat("... dim ", label - kEllipsisLabel);
}

/// The labels of one einsum term ("ij", "b...i"); `ellipsis` is set to where "..." was (or -1).
inline std::vector<int> einsum_term(const std::string& term, const std::string& formula,
                                    int64_t& ellipsis) {
  std::vector<int> labels;
  ellipsis = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(c);
    } else if (c == '.' && term.compare(i, 3, "...") == 0) {
      if (ellipsis >= 0)
        throw Error(cat("einsum: more than one '...' in a term of \"", formula, "\""));
      ellipsis = static_cast<int64_t>(labels.size());
      i += 2;
    } else {
      throw Error(cat("einsum: invalid character '", c, "' in \"", formula, "\""));
    }
  }
  return labels;
}

/// The diagonal over the last two dims of x (which must be equal): (..., n, n) -> (..., n).
inline Tensor diagonal_last2(const Tensor& x) {
  auto s = x.shape().to_vector();
  const int64_t n = s.back();
  s.pop_back(), s.pop_back();
  std::vector<std::pair<sint, sint>> pad(s.size(), {0, 0}), cut;
  for (int64_t d : s) cut.emplace_back(0, d);
  // rows of n+1 over the flat n*n (+n) elements: row i starts at i*(n+1), on the diagonal
  auto flat = s, rows = s;
  flat.push_back(n * n), rows.push_back(n), rows.push_back(n + 1);
  pad.emplace_back(0, n), cut.emplace_back(0, n), cut.emplace_back(0, 1);
  auto out = s;
  out.push_back(n);
  return x.reshape(Shape(flat)).pad(pad).reshape(Shape(rows)).shrink(cut).reshape(Shape(out));
}
}  // namespace detail

/// Einstein summation: "ij,jk->ik", the implicit form "ij,jk", "...", repeated labels within
/// an operand (diagonals, traces), and size-1 dims that broadcast.
TINYT_INLINE Tensor Tensor::einsum(const std::string& formula, const std::vector<Tensor>& operands) {
  using detail::cat;
  std::string f;
  for (char c : formula)
    if (!std::isspace(static_cast<unsigned char>(c))) f += c;
  const size_t arrow = f.find("->");
  const std::string lhs = f.substr(0, arrow);
  if (arrow != std::string::npos && f.find("->", arrow + 2) != std::string::npos)
    throw Error(cat("einsum: more than one '->' in \"", formula, "\""));
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (operands.empty()) throw Error(cat("einsum: no operands for \"", formula, "\""));
  if (terms.size() != operands.size())
    throw Error(cat("einsum: \"", formula, "\" has ", terms.size(), " input terms for ",
                    operands.size(), " operands"));

  // labels per operand, with ellipsis dims given their own labels
  std::vector<std::vector<int>> labels(operands.size());
  std::vector<int64_t> ell_dims(operands.size(), 0);
  int64_t widest = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t at = -1;
    labels[i] = detail::einsum_term(terms[i], formula, at);
    const auto nd = static_cast<int64_t>(operands[i].ndim()),
               nl = static_cast<int64_t>(labels[i].size());
    if (at < 0 ? nl != nd : nl > nd)
      throw ShapeError(cat("einsum: term \"", terms[i], "\" of \"", formula,
                           "\" does not fit operand ", i, " of shape ", operands[i].shape()));
    if (at >= 0) {
      ell_dims[i] = nd - nl, widest = std::max(widest, nd - nl);
      // placeholders -1, -2, ...: numbered once the widest ellipsis is known
      for (int64_t j = 0; j < ell_dims[i]; ++j)
        labels[i].insert(labels[i].begin() + at + j, static_cast<int>(-1 - j));
    }
  }
  for (size_t i = 0; i < labels.size(); ++i)
    for (int& l : labels[i])
      if (l < 0) l = static_cast<int>(detail::kEllipsisLabel + widest - ell_dims[i] + (-1 - l));

  // the output labels
  std::vector<int> out;
  std::map<int, int> count;
  for (const auto& ls : labels)
    for (int l : ls) ++count[l];
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < widest; ++j)
      out.push_back(static_cast<int>(detail::kEllipsisLabel + j));
    for (auto [l, n] : count)
      if (l < detail::kEllipsisLabel && n == 1) out.push_back(l);
  } else {
    int64_t at = -1;
    const std::string rhs = f.substr(arrow + 2);
    out = detail::einsum_term(rhs, formula, at);
    std::set<int> seen;
    for (int l : out) {
      if (!count.contains(l))
        throw Error(cat("einsum: output label '", static_cast<char>(l), "' of \"", formula,
                        "\" is in no input"));
      if (!seen.insert(l).second)
        throw Error(
            cat("einsum: output label '", static_cast<char>(l), "' repeats in \"", formula, "\""));
    }
    if (at >= 0)
      for (int64_t j = widest - 1; j >= 0; --j)
        out.insert(out.begin() + at, static_cast<int>(detail::kEllipsisLabel + j));
  }

  // diagonals first, then the sizes of each label across operands (1 broadcasts)
  std::vector<Tensor> xs = operands;
  std::map<int, int64_t> size;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto& ls = labels[i];
    for (;;) {  // a label twice in one operand: keep the diagonal, as one dim at the end
      size_t p = 0, q = 0;
      for (size_t a = 0; a < ls.size() && q == 0; ++a)
        for (size_t c = a + 1; c < ls.size() && q == 0; ++c)
          if (ls[a] == ls[c]) p = a, q = c;
      if (q == 0) break;
      const auto s = xs[i].shape().to_vector();
      if (s[p] != s[q])
        throw ShapeError(cat("einsum: label '", detail::einsum_label_name(ls[p]), "' of \"",
                             formula, "\" has sizes ", s[p], " and ", s[q], " in operand ", i,
                             " of shape ", operands[i].shape()));
      std::vector<int> order;
      for (size_t a = 0; a < ls.size(); ++a)
        if (a != p && a != q) order.push_back(static_cast<int>(a));
      order.push_back(static_cast<int>(p)), order.push_back(static_cast<int>(q));
      xs[i] = detail::diagonal_last2(xs[i].permute(order));
      const int l = ls[p];
      ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(q));
      ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(p));
      ls.push_back(l);
    }
    const auto s = xs[i].shape().to_vector();
    for (size_t a = 0; a < ls.size(); ++a) {
      auto [it, fresh] = size.try_emplace(ls[a], s[a]);
      if (fresh || it->second == s[a] || s[a] == 1) continue;
      if (it->second != 1)
        throw ShapeError(cat("einsum: label '", detail::einsum_label_name(ls[a]), "' of \"",
                             formula, "\" has sizes ", it->second, " and ", s[a], " (operand ", i,
                             " has shape ", operands[i].shape(), ")"));
      it->second = s[a];
    }
  }

  // every operand as a view over all labels (output ones first), multiplied and summed
  std::vector<int> all = out;
  for (auto [l, n] : size)
    if (std::find(out.begin(), out.end(), l) == out.end()) all.push_back(l);
  Tensor product;
  DType dt = xs[0].dtype();
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<int> order;
    std::vector<int64_t> view;
    const auto s = xs[i].shape().to_vector();
    for (int l : all) {
      auto it = std::find(labels[i].begin(), labels[i].end(), l);
      if (it == labels[i].end()) {
        view.push_back(1);
      } else {
        order.push_back(static_cast<int>(it - labels[i].begin()));
        view.push_back(s[static_cast<size_t>(order.back())]);
      }
    }
    Tensor v = xs[i].permute(order).reshape(Shape(view));
    product = i == 0 ? v : product.mul(v);
    dt = least_upper_dtype({dt, xs[i].dtype()});
  }
  std::vector<int> summed;
  for (size_t a = out.size(); a < all.size(); ++a) summed.push_back(static_cast<int>(a));
  return (summed.empty() ? product : product.sum(summed)).cast(dt);
}

}  // namespace tinyt::inline v0
