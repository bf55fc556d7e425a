// nn functional: the statistical reductions (var, std, argmax, logsumexp, softmax), convolution
// and pooling as views of sliding windows followed by a reduce (tinygrad's way: windows are
// built from pad/reshape/expand/permute, nothing is copied), normalization, attention and the
// losses. Numerics follow PyTorch.
#pragma once

#include <cmath>

#include "linalg.hpp"

namespace tinyt::inline v0 {

// -- statistics ------------------------------------------------------------------------------

namespace detail {
/// t.max, except that reducing an axis of size 0 gives a placeholder 0 instead of throwing:
/// softmax, logsumexp and argmax of an empty axis then give empty results, as in PyTorch.
inline Tensor max_over(const Tensor& t, std::vector<int> axes, bool keepdim) {
  if (t.numel() != 0) return t.max(std::move(axes), keepdim);
  return Tensor::zeros_like(t).sum(std::move(axes), keepdim).cast(t.dtype());
}
}  // namespace detail

namespace detail {
// The variance in the dtype statistics compute in (float32 for float16), before the one rounding
// to the result's dtype: std takes its square root first, as PyTorch does.
inline Tensor var_in_acc(const Tensor& t, const std::vector<int>& axes, bool keepdim, double correction) {
  const auto s = graph::concrete_shape(t.uop());
  int64_t n = 1;
  for (int a : axes)
    n *= s.empty() ? 1 : s[static_cast<size_t>(normalize_axis(a, s.size(), "var"))];
  Tensor x = t.cast(stats_acc_dtype(t.dtype()));
  Tensor squares = x.sub(x.mean(axes, true)).square();
  // as PyTorch: n <= correction divides by 0 (inf, or NaN for 0/0)
  return squares.sum(axes, keepdim).div(std::max(0.0, static_cast<double>(n) - correction));
}
}  // namespace detail

TINYT_INLINE Tensor Tensor::var(std::vector<int> axes, bool keepdim, double correction) const {
  return detail::var_in_acc(*this, axes, keepdim, correction).cast(least_upper_float(dtype()));
}
TINYT_INLINE Tensor Tensor::var(int axis, bool keepdim, double correction) const {
  return var(std::vector<int>{axis}, keepdim, correction);
}
TINYT_INLINE Tensor Tensor::var(bool keepdim, double correction) const {
  return var(detail::all_axes(ndim()), keepdim, correction);
}
TINYT_INLINE Tensor Tensor::std(std::vector<int> axes, bool keepdim, double correction) const {
  return detail::var_in_acc(*this, axes, keepdim, correction).sqrt().cast(least_upper_float(dtype()));
}
TINYT_INLINE Tensor Tensor::std(int axis, bool keepdim, double correction) const {
  return std(std::vector<int>{axis}, keepdim, correction);
}
TINYT_INLINE Tensor Tensor::std(bool keepdim, double correction) const {
  return std(detail::all_axes(ndim()), keepdim, correction);
}

/// The first index of the largest value (of a NaN, if there is one, as PyTorch), as int32.
TINYT_INLINE Tensor Tensor::argmax(int axis, bool keepdim) const {
  if (ndim() == 0) {
    normalize_axis(axis, 0, "argmax");
    return Tensor(graph::const_(dtypes::int32, 0, device()));
  }
  const int ax = normalize_axis(axis, ndim(), "argmax");
  const auto s = cshape();
  const int64_t n = s[static_cast<size_t>(ax)];
  if (n == 0)
    throw ShapeError(detail::cat("argmax: axis ", axis, " of shape ", shape(), " is empty"));
  Tensor hit = eq(detail::max_over(*this, {ax}, true));
  if (dtype().is_float()) hit = hit.logical_or(isnan());  // max is NaN then, and equals nothing
  // n - i for index i: the largest marked value is the first hit
  std::vector<int64_t> col(s.size() - static_cast<size_t>(ax), 1);
  col[0] = n;
  Tensor reversed = arange_values(static_cast<double>(n), -1.0, n, dtypes::default_int, device()).reshape(Shape(col));
  Tensor first = detail::max_over(hit.where(reversed, 0), {ax}, keepdim);
  return Tensor(graph::const_(dtypes::int32, n, device())).sub(first).cast(dtypes::int32);
}
TINYT_INLINE Tensor Tensor::argmax() const { return flatten().argmax(0); }
TINYT_INLINE Tensor Tensor::argmin(int axis, bool keepdim) const {
  // an order-reversing map: -x for floats (NaN stays NaN), ~x for integers, !x for bools
  if (dtype().is_float()) return neg().argmax(axis, keepdim);
  return bitwise_not().argmax(axis, keepdim);
}
TINYT_INLINE Tensor Tensor::argmin() const { return flatten().argmin(0); }

namespace detail {
/// The shape without `axis` (which a keepdim reduce left as 1).
inline Shape drop_axis(std::vector<int64_t> s, int axis) {
  if (!s.empty()) s.erase(s.begin() + axis);
  return Shape(s);
}
}  // namespace detail

// logsumexp, softmax and log_softmax compute in float32 for float16 and bfloat16 (the sum of
// exponentials would lose what float16 cannot hold) and round once at the end.
TINYT_INLINE Tensor Tensor::logsumexp(int axis, bool keepdim) const {
  const int ax = normalize_axis(axis, ndim(), "logsumexp");
  Tensor x = cast(detail::stats_acc_dtype(dtype()));
  Tensor m = detail::max_over(x, {ax}, true);
  m = m.isinf().where(0.0, m);  // an infinite max would give inf - inf; as PyTorch, shift by 0 then
  Tensor r = x.sub(m).exp().sum(ax, true).log().add(m).cast(least_upper_float(dtype()));
  return keepdim ? r : r.reshape(detail::drop_axis(r.cshape(), ax));
}

TINYT_INLINE Tensor Tensor::softmax(int axis) const {
  const int ax = normalize_axis(axis, ndim(), "softmax");
  Tensor x = cast(detail::stats_acc_dtype(dtype()));
  Tensor e = x.sub(detail::max_over(x, {ax}, true)).exp();
  return e.div(e.sum(ax, true)).cast(least_upper_float(dtype()));
}
TINYT_INLINE Tensor Tensor::log_softmax(int axis) const {
  const int ax = normalize_axis(axis, ndim(), "log_softmax");
  Tensor x = cast(detail::stats_acc_dtype(dtype()));
  Tensor shifted = x.sub(detail::max_over(x, {ax}, true));
  return shifted.sub(shifted.exp().sum(ax, true).log()).cast(least_upper_float(dtype()));
}

// -- sliding windows -------------------------------------------------------------------------

namespace detail {
/// One size per spatial dim from an int or a list ("stride", "dilation", ...).
inline std::vector<int64_t> per_dim(const IntOrVec& v, size_t dims, const char* op,
                                    const char* what) {
  if (v.v.size() == 1) return std::vector<int64_t>(dims, v.v[0]);
  if (v.v.size() != dims)
    throw ShapeError(cat(op, ": ", what, " needs 1 or ", dims, " values, got ", v.v.size()));
  return v.v;
}
/// (before, after) padding per spatial dim from an int, one per dim, or 2 per dim given as
/// (left, right, top, bottom): the last dim first, as tinygrad and PyTorch's F.pad.
inline std::vector<std::pair<int64_t, int64_t>> pool_pads(const IntOrVec& p, size_t dims,
                                                          const char* op) {
  std::vector<std::pair<int64_t, int64_t>> out(dims);
  if (p.v.size() == 2 * dims) {
    for (size_t i = 0; i < dims; ++i) out[dims - 1 - i] = {p.v[2 * i], p.v[2 * i + 1]};
    return out;
  }
  if (p.v.size() != 1 && p.v.size() != dims)
    throw ShapeError(
        cat(op, ": padding needs 1, ", dims, " or ", 2 * dims, " values, got ", p.v.size()));
  for (size_t i = 0; i < dims; ++i)
    out[i] = {p.v[p.v.size() == 1 ? 0 : i], p.v[p.v.size() == 1 ? 0 : i]};
  return out;
}
/// x padded on its last dims only.
inline Tensor pad_last(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& p,
                       double value = 0.0) {
  std::vector<std::pair<sint, sint>> all(x.ndim() - p.size(), {0, 0});
  for (auto [b, a] : p) all.emplace_back(b, a);
  return x.pad(all, value);
}

/// Sliding windows over the last k.size() dims: (..., i...) -> (..., o..., k...) where
/// out[..., o, j] = x[..., o*stride + j*dilation]. Views only.
inline Tensor sliding_windows(const Tensor& x, const std::vector<int64_t>& k,
                              const std::vector<int64_t>& stride,
                              const std::vector<int64_t>& dilation, const char* op) {
  using Dims = std::vector<int64_t>;
  // s with dim `at` replaced by `mid`
  auto replace = [](const Dims& s, size_t at, std::initializer_list<int64_t> mid) {
    Dims r(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(at));
    r.insert(r.end(), mid);
    r.insert(r.end(), s.begin() + static_cast<std::ptrdiff_t>(at) + 1, s.end());
    return Shape(r);
  };
  auto pad_end = [](const Tensor& t, size_t axis, int64_t n) {
    std::vector<std::pair<sint, sint>> p(t.ndim(), {0, 0});
    p[axis] = {0, n};
    return t.pad(p);
  };
  auto keep_first = [](const Tensor& t, size_t axis, int64_t n) {
    std::vector<std::pair<sint, sint>> p;
    for (const sint& d : t.shape()) p.emplace_back(0, d);
    p[axis] = {0, n};
    return t.shrink(p);
  };
  const size_t dims = k.size(), lead = x.ndim() - dims;
  Tensor y = x;
  for (size_t j = 0; j < dims; ++j) {
    // the dim at `at` (size i) becomes (o, k)
    const size_t at = lead + 2 * j;
    const Dims s = y.shape().to_vector();
    const int64_t i = s[at], kk = k[j], st = stride[j], d = dilation[j];
    if (kk < 1 || st < 1 || d < 1)
      throw ShapeError(
          cat(op, ": kernel ", kk, ", stride ", st, " and dilation ", d, " must be positive"));
    const int64_t span = d * (kk - 1) + 1;
    if (span > i)
      throw ShapeError(cat(op, ": the kernel (", kk, " with dilation ", d,
                           ") is larger than the input (", i, ") in shape ", x.shape()));
    const int64_t o = (i - span) / st + 1;
    if (d == 1 && kk <= st) {
      // windows that do not overlap: (o*s) -> (o, s), keep the first k of each
      y = o * st > i ? pad_end(y, at, o * st - i) : keep_first(y, at, o * st);
      y = keep_first(y.reshape(replace(s, at, {o, st})), at + 1, kk);
      continue;
    }
    // k copies of the row (k, i), padded to rows of R, laid out again as rows of R + d: row r
    // then starts r*d further into the data. Of each row, every st-th of the first o*st.
    const int64_t rows = std::max(i, o * st - d);
    y = y.reshape(replace(s, at, {1, i})).expand(replace(s, at, {kk, i}));
    if (rows > i) y = pad_end(y, at + 1, rows - i);
    y = pad_end(y.reshape(replace(s, at, {kk * rows})), at, kk * d)
            .reshape(replace(s, at, {kk, rows + d}));
    y = keep_first(y, at + 1, o * st).reshape(replace(s, at, {kk, o, st}));
    y = keep_first(y, at + 2, 1).reshape(replace(s, at, {kk, o}));
    std::vector<int> order;
    for (size_t a = 0; a < y.ndim(); ++a) order.push_back(static_cast<int>(a));
    std::swap(order[at], order[at + 1]);
    y = y.permute(order);
  }
  // (..., o0, k0, o1, k1) -> (..., o0, o1, k0, k1)
  std::vector<int> order;
  for (size_t a = 0; a < lead; ++a) order.push_back(static_cast<int>(a));
  for (size_t j = 0; j < dims; ++j) order.push_back(static_cast<int>(lead + 2 * j));
  for (size_t j = 0; j < dims; ++j) order.push_back(static_cast<int>(lead + 2 * j + 1));
  return y.permute(order);
}

inline std::vector<int> last_axes(size_t n) {
  std::vector<int> axes;
  for (size_t j = 0; j < n; ++j) axes.push_back(-1 - static_cast<int>(j));
  return axes;
}
}  // namespace detail

/// Cross-correlation over the spatial dims of x (N, Cin, ...) with w (Cout, Cin/groups, k...);
/// an unbatched x (Cin, ...) works too. Any number of spatial dims, as tinygrad.
TINYT_INLINE Tensor Tensor::conv2d(const Tensor& w, const Tensor& b, int64_t groups, IntOrVec stride,
                             IntOrVec dilation, IntOrVec padding) const {
  const auto xs = cshape(), ws = w.cshape();
  auto fail = [&](const std::string& why) {
    return ShapeError(detail::cat("conv2d: input ", detail::shape_str(xs), " does not fit weight ",
                                  detail::shape_str(ws), ": ", why));
  };
  if (ws.size() < 3) throw fail("the weight needs (cout, cin/groups, kernel...) dims");
  if (xs.size() == ws.size() - 1)  // unbatched
    return unsqueeze(0).conv2d(w, b, groups, stride, dilation, padding).squeeze(0);
  if (xs.size() != ws.size()) throw fail("they need the same number of dims");
  const size_t dims = ws.size() - 2;
  const int64_t cout = ws[0], cin = ws[1], bs = xs[0];
  if (groups < 1) throw fail(detail::cat("groups must be positive, got ", groups));
  if (cin * groups != xs[1])
    throw fail(detail::cat(groups, " group(s) of ", cin, " input channels"));
  if (cout % groups != 0)
    throw fail(detail::cat(cout, " output channels do not split into ", groups, " groups"));
  if (b.defined() && b.cshape() != std::vector<int64_t>{cout})
    throw fail(detail::cat("the bias has shape ", b.shape(), ", not (", cout, ",)"));
  const std::vector<int64_t> k(ws.begin() + 2, ws.end());
  const auto pads = detail::pool_pads(padding, dims, "conv2d");
  Tensor x = detail::pad_last(*this, pads);
  // A padded input is copied once, padded: the convolution then reads it without masks (a masked
  // load is a branch per element, and keeps the kernel's rows out of vector registers).
  if (std::any_of(pads.begin(), pads.end(), [](const auto& p) { return p.first > 0 || p.second > 0; })) x = x.contiguous();
  x = detail::sliding_windows(x, k, detail::per_dim(stride, dims, "conv2d", "stride"),
                              detail::per_dim(dilation, dims, "conv2d", "dilation"), "conv2d");
  // x (bs, groups*cin, o..., k...) against w (groups, cout/groups, cin, k...): broadcast to
  // (bs, groups, cout/groups, o..., cin, k...) and sum over cin and k
  const auto ps = x.cshape();
  const std::vector<int64_t> o(ps.begin() + 2, ps.begin() + 2 + static_cast<std::ptrdiff_t>(dims));
  std::vector<int64_t> xv{bs, groups, cin, 1};
  xv.insert(xv.end(), ps.begin() + 2, ps.end());
  std::vector<int> order{0, 1, 3};
  for (size_t j = 0; j < dims; ++j) order.push_back(static_cast<int>(4 + j));
  order.push_back(2);
  for (size_t j = 0; j < dims; ++j) order.push_back(static_cast<int>(4 + dims + j));
  std::vector<int64_t> wv{1, groups, cout / groups};
  wv.insert(wv.end(), dims, 1);
  wv.push_back(cin);
  wv.insert(wv.end(), k.begin(), k.end());
  std::vector<int64_t> out{bs, cout};
  out.insert(out.end(), o.begin(), o.end());
  const DType out_dtype = least_upper_dtype({dtype(), w.dtype()}), dot = detail::dot_dtype(out_dtype);
  Tensor y = x.reshape(Shape(xv)).permute(order).cast(dot).mul(w.reshape(Shape(wv)).cast(dot));
  y = y.sum(detail::last_axes(dims + 1)).reshape(Shape(out)).cast(out_dtype);
  if (!b.defined()) return y;
  std::vector<int64_t> bv{1, cout};
  bv.insert(bv.end(), dims, 1);
  return y.add(b.reshape(Shape(bv)));
}

namespace detail {
/// conv_transpose2d with a kernel as large as its stride (PaddleOCR's and U-Net's 2x2 upsampling):
/// each input element's products fill a block of the output of their own, so the output is one
/// matmul per group, (cout/g * k..., cin/g) @ (cin/g, spatial), viewed with the blocks
/// interleaved: y[n, o, i*k + r] = sum_c x[n, c, i] * w[c, o, r]. No zeros are inserted and
/// multiplied, and the input is read in place. Padding crops, output_padding adds zeros, then bias.
inline Tensor conv_transpose_blocks(const Tensor& x, const Tensor& w, const Tensor& b, int64_t groups,
                                    const std::vector<std::pair<int64_t, int64_t>>& pads, const std::vector<int64_t>& outpad) {
  const auto xs = concrete_shape(x), ws = concrete_shape(w);
  const size_t dims = ws.size() - 2;
  const int64_t n = xs[0], cin_g = ws[0] / groups, cout_g = ws[1];
  int64_t spatial = 1, kernel = 1;
  for (size_t j = 0; j < dims; ++j) spatial *= xs[2 + j], kernel *= ws[2 + j];
  const Tensor wt = w.reshape({groups, cin_g, cout_g * kernel}).transpose(1, 2);  // (g, cout/g * k..., cin/g)
  const Tensor y = wt.matmul(x.reshape({n, groups, cin_g, spatial}));               // (n, g, cout/g * k..., spatial)
  // (n, g, cout/g, k1..kd, i1..id) -> (n, g, cout/g, i1, k1, ..., id, kd) -> (n, cout, i1*k1, ...)
  std::vector<int64_t> split{n, groups, cout_g}, merged{n, groups * cout_g};
  std::vector<int> order{0, 1, 2};
  for (size_t j = 0; j < dims; ++j) split.push_back(ws[2 + j]);
  for (size_t j = 0; j < dims; ++j) split.push_back(xs[2 + j]);
  for (size_t j = 0; j < dims; ++j) {
    order.push_back(static_cast<int>(3 + dims + j)), order.push_back(static_cast<int>(3 + j));
    merged.push_back(xs[2 + j] * ws[2 + j]);
  }
  Tensor out = y.reshape(Shape(split)).permute(order).reshape(Shape(merged));
  // the padding cut from each end, then output_padding's zeros (where the cut at the end leaves
  // fewer than it adds) after it
  std::vector<std::pair<sint, sint>> keep{{0, n}, {0, groups * cout_g}}, zeros(dims + 2, {0, 0});
  bool cuts = false, pads_out = false;
  for (size_t j = 0; j < dims; ++j) {
    const int64_t size = merged[2 + j], end = size - pads[j].second + outpad[j];
    keep.emplace_back(pads[j].first, std::min(size, end));
    zeros[2 + j].second = std::max<int64_t>(0, end - size);
    cuts |= pads[j].first != 0 || end < size, pads_out |= end > size;
  }
  if (cuts) out = out.shrink(keep);
  if (pads_out) out = out.pad(zeros);
  if (b.defined()) {
    std::vector<int64_t> bias_shape(dims + 2, 1);
    bias_shape[1] = groups * cout_g;
    out = out + b.reshape(Shape(bias_shape));
  }
  return out;
}
}  // namespace detail

/// The gradient of conv2d with respect to its input, as PyTorch's: w is (Cin, Cout/groups, k...).
/// A conv2d of the input with zeros inserted between elements (stride), padded by
/// dilation*(k-1) - padding, against the flipped weight with its channel axes swapped.
TINYT_INLINE Tensor Tensor::conv_transpose2d(const Tensor& w, const Tensor& b, int64_t groups,
                                       IntOrVec stride, IntOrVec dilation, IntOrVec padding,
                                       IntOrVec output_padding) const {
  const auto xs = cshape(), ws = w.cshape();
  auto fail = [&](const std::string& why) {
    return ShapeError(detail::cat("conv_transpose2d: input ", detail::shape_str(xs),
                                  " does not fit weight ", detail::shape_str(ws), ": ", why));
  };
  if (ws.size() < 3) throw fail("the weight needs (cin, cout/groups, kernel...) dims");
  if (xs.size() == ws.size() - 1)
    return unsqueeze(0)
        .conv_transpose2d(w, b, groups, stride, dilation, padding, output_padding)
        .squeeze(0);
  if (xs.size() != ws.size()) throw fail("they need the same number of dims");
  if (groups < 1) throw fail(detail::cat("groups must be positive, got ", groups));
  if (ws[0] != xs[1] || ws[0] % groups != 0)
    throw fail(
        detail::cat("the weight's ", ws[0], " input channels in ", groups, " group(s) vs ", xs[1]));
  const size_t dims = ws.size() - 2;
  const auto st = detail::per_dim(stride, dims, "conv_transpose2d", "stride");
  const auto dil = detail::per_dim(dilation, dims, "conv_transpose2d", "dilation");
  const auto outpad = detail::per_dim(output_padding, dims, "conv_transpose2d", "output_padding");
  const auto pads = detail::pool_pads(padding, dims, "conv_transpose2d");
  bool blocks = true;  // a kernel as large as its stride in every dim, undilated
  for (size_t j = 0; j < dims; ++j) {
    if (st[j] < 1) throw fail(detail::cat("stride must be positive, got ", st[j]));
    if (outpad[j] < 0 || (outpad[j] >= st[j] && outpad[j] >= dil[j]))
      throw fail(detail::cat("output_padding ", outpad[j],
                             " must be smaller than the stride or the dilation"));
    blocks &= ws[2 + j] == st[j] && dil[j] == 1;
  }
  if (blocks) return detail::conv_transpose_blocks(*this, w, b, groups, pads, outpad);
  // the weight as conv2d's: (cin, cout/g, k...) split into groups, in and out swapped, kernel
  // flipped, groups merged into (cout, cin/g, k...)
  std::vector<int> swap_io{0, 2, 1}, flip_k;
  for (size_t j = 0; j < dims; ++j)
    swap_io.push_back(static_cast<int>(3 + j)), flip_k.push_back(static_cast<int>(3 + j));
  std::vector<int64_t> split{groups, ws[0] / groups};
  split.insert(split.end(), ws.begin() + 1, ws.end());
  Tensor wt = w.reshape(Shape(split)).permute(swap_io).flip(flip_k).flatten(0, 1);
  // zeros between input elements: (i) -> (i, 1) -> (i, s) -> (i*s) -> the first (i-1)*s+1
  Tensor x = *this;
  for (size_t j = 0; j < dims; ++j) {
    if (st[j] == 1) continue;
    auto s = x.cshape();
    const size_t at = 2 + j;
    const int64_t i = s[at];
    std::vector<int64_t> two(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(at));
    two.push_back(i), two.push_back(1);
    two.insert(two.end(), s.begin() + static_cast<std::ptrdiff_t>(at) + 1, s.end());
    std::vector<std::pair<sint, sint>> p(two.size(), {0, 0});
    p[at + 1] = {0, st[j] - 1};
    std::vector<int64_t> flat = s;
    flat[at] = i * st[j];
    std::vector<std::pair<sint, sint>> cut;
    for (size_t a = 0; a < flat.size(); ++a)
      cut.emplace_back(0, a == at ? std::max<int64_t>(0, (i - 1) * st[j] + 1) : flat[a]);
    x = x.reshape(Shape(two)).pad(p).reshape(Shape(flat)).shrink(cut);
  }
  std::vector<int64_t> conv_pads;  // (left, right, top, bottom) order: last dim first
  for (size_t j = dims; j-- > 0;) {
    const int64_t edge = dil[j] * (ws[2 + j] - 1);
    conv_pads.push_back(edge - pads[j].first);
    conv_pads.push_back(edge - pads[j].second + outpad[j]);
  }
  return x.conv2d(wt, b, groups, 1, dil, conv_pads);
}

namespace detail {
/// The window setup both pools share: the kernel (over the last 2 dims, or as many as it lists),
/// stride (default: the kernel), dilation, pads, and with ceil_mode the padding after each dim
/// that a last, partial window needs.
struct PoolWindows {
  size_t dims;
  std::vector<int64_t> k, s, d;
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<std::pair<int64_t, int64_t>> ceil_pads;  // (0, extra) per dim; all 0 without ceil_mode
  PoolWindows(const Tensor& x, const IntOrVec& kernel, const IntOrVec& stride, const IntOrVec& dilation,
              const IntOrVec& padding, bool ceil_mode, const char* op)
      : dims(kernel.v.size() > 2 ? kernel.v.size() : 2),
        k(per_dim(kernel, dims, op, "kernel")),
        s(stride.empty() ? k : per_dim(stride, dims, op, "stride")),
        d(per_dim(dilation, dims, op, "dilation")),
        pads(pool_pads(padding, dims, op)),
        ceil_pads(dims, {0, 0}) {
    if (x.ndim() < dims) throw ShapeError(cat(op, ": a kernel of ", dims, " dims needs at least ", dims, " dims, got shape ", x.shape()));
    const std::vector<int64_t> xs = x.shape().to_vector();
    for (size_t j = 0; j < dims; ++j) {
      // every window reaches into the input: padding less than the (dilated) kernel (PyTorch
      // allows half of it, ONNX and tinygrad more)
      const int64_t span = d[j] * (k[j] - 1) + 1;
      for (int64_t p : {pads[j].first, pads[j].second})
        if (p < 0 || p >= span)
          throw ShapeError(cat(op, ": padding ", p, " must be at least 0 and less than the kernel's extent ", span));
      if (!ceil_mode || s[j] < 1) continue;
      // one more window where the last one would start inside the input or its left padding
      const int64_t in = xs[xs.size() - dims + j], padded = in + pads[j].first + pads[j].second, window = d[j] * (k[j] - 1) + 1;
      if (padded < window) continue;  // (sliding_windows names the error)
      int64_t out = (padded - window + s[j] - 1) / s[j] + 1;
      if ((out - 1) * s[j] >= in + pads[j].first) --out;
      ceil_pads[j].second = std::max<int64_t>(0, (out - 1) * s[j] + window - padded);
    }
  }
  bool partial_windows() const {
    return std::any_of(ceil_pads.begin(), ceil_pads.end(), [](const auto& p) { return p.second > 0; });
  }
  /// `t`'s windows: (..., o..., k...), padded with `pad_value` and then, for ceil_mode, `ceil_value`.
  Tensor windows(const Tensor& t, double pad_value, double ceil_value, const char* op) const {
    Tensor padded = pad_last(t, pads, pad_value);
    if (partial_windows()) padded = pad_last(padded, ceil_pads, ceil_value);
    return sliding_windows(padded, k, s, d, op);
  }
};
}  // namespace detail

TINYT_INLINE Tensor Tensor::max_pool2d(IntOrVec kernel, IntOrVec stride, IntOrVec dilation,
                                 IntOrVec padding, bool ceil_mode) const {
  detail::PoolWindows p(*this, kernel, stride, dilation, padding, ceil_mode, "max_pool2d");
  const double lowest =
      dtype().is_float() ? -INFINITY : static_cast<double>(dtypes::min_int(dtype()));
  return detail::max_over(p.windows(*this, lowest, lowest, "max_pool2d"), detail::last_axes(p.dims), false);
}

/// max_pool2d's values and, as PyTorch's return_indices, where each came from: an int64 index
/// into its plane (the pooled dims, row-major), the first of equal maxima in the window.
TINYT_INLINE std::pair<Tensor, Tensor> Tensor::max_pool2d_with_indices(IntOrVec kernel, IntOrVec stride, IntOrVec dilation,
                                                                       IntOrVec padding, bool ceil_mode) const {
  detail::PoolWindows p(*this, kernel, stride, dilation, padding, ceil_mode, "max_pool2d_with_indices");
  const double lowest = dtype().is_float() ? -INFINITY : static_cast<double>(dtypes::min_int(dtype()));
  // each element's index in its plane, windowed as the values are (padding: -1, never a maximum)
  const std::vector<int64_t> s = shape().to_vector();
  const std::vector<int64_t> plane(s.end() - static_cast<std::ptrdiff_t>(p.dims), s.end());
  int64_t size = 1;
  for (const int64_t d : plane) size *= d;
  const DType index = Device::widest_int(device());  // (int64, as PyTorch's; int32 on WEBGPU)
  const Tensor where_from = detail::positions_on(size, index, device()).reshape(Shape(plane)).expand(shape());
  const int kernel_axis = static_cast<int>(ndim());  // the windows are (..., out..., kernel...)
  const Tensor values = p.windows(*this, lowest, lowest, "max_pool2d_with_indices").flatten(kernel_axis);
  const Tensor from = p.windows(where_from, -1, -1, "max_pool2d_with_indices").flatten(kernel_axis);
  const Tensor top = detail::max_over(values, {-1}, true);
  // the first position holding the maximum (a NaN is its own maximum, as in max)
  const Tensor hit = values.eq(top).logical_or(values.isnan());
  const Tensor none = Tensor::full(Shape{}, static_cast<int64_t>(dtypes::max_int(index)), index, device());
  return {top.squeeze(-1), hit.where(from, none).min(-1)};
}

TINYT_INLINE Tensor Tensor::avg_pool2d(IntOrVec kernel, IntOrVec stride, IntOrVec dilation,
                                 IntOrVec padding, bool count_include_pad, bool ceil_mode) const {
  detail::PoolWindows p(*this, kernel, stride, dilation, padding, ceil_mode, "avg_pool2d");
  const std::vector<int> window_axes = detail::last_axes(p.dims);
  if (count_include_pad && !p.partial_windows()) return p.windows(*this, 0, 0, "avg_pool2d").mean(window_axes);
  // divide by how many of each window's elements count: the input's, the padding's where
  // count_include_pad, never those past the padding that ceil_mode adds (PyTorch's)
  Tensor x = cast(detail::stats_acc_dtype(dtype()));  // float16 sums and divides in float32, as mean
  const Tensor counted = p.windows(Tensor::ones_like(x), count_include_pad ? 1 : 0, 0, "avg_pool2d").sum(window_axes);
  return p.windows(x, 0, 0, "avg_pool2d").sum(window_axes).div(counted).cast(least_upper_float(dtype()));
}

// -- normalization ---------------------------------------------------------------------------

TINYT_INLINE Tensor Tensor::layernorm(int axis, double eps) const {
  const int ax = normalize_axis(axis, ndim(), "layernorm");
  Tensor x = cast(detail::stats_acc_dtype(dtype()));  // float16 normalizes in float32, as PyTorch
  Tensor centered = x.sub(x.mean(ax, true));
  return centered.mul(centered.square().mean(ax, true).add(eps).rsqrt()).cast(least_upper_float(dtype()));
}

TINYT_INLINE Tensor Tensor::batchnorm(const Tensor& weight, const Tensor& bias, const Tensor& mean,
                                const Tensor& invstd) const {
  const auto s = cshape();
  if (s.size() < 2)
    throw ShapeError(detail::cat("batchnorm: needs (N, C, ...) input, got shape ", shape()));
  std::vector<int64_t> per_channel(s.size(), 1);
  per_channel[1] = s[1];
  auto channel = [&](const Tensor& t, const char* what) {
    if (t.numel() != s[1])
      throw ShapeError(detail::cat("batchnorm: ", what, " of shape ", t.shape(), " does not match ",
                                   s[1], " channels of input ", shape()));
    return t.reshape(Shape(per_channel));
  };
  Tensor x = sub(channel(mean, "mean"));
  if (weight.defined()) x = x.mul(channel(weight, "weight"));
  x = x.mul(channel(invstd, "invstd"));
  return bias.defined() ? x.add(channel(bias, "bias")) : x;
}

// -- attention -------------------------------------------------------------------------------

TINYT_INLINE Tensor Tensor::scaled_dot_product_attention(const Tensor& k, const Tensor& v,
                                                   const Tensor& mask, bool is_causal) const {
  if (ndim() < 2 || k.ndim() < 2 || v.ndim() < 2)
    throw ShapeError(detail::cat("scaled_dot_product_attention: query ", shape(), ", key ",
                                 k.shape(), " and value ", v.shape(), " need at least 2 dims"));
  if (is_causal && mask.defined())
    throw Error("scaled_dot_product_attention: give a mask or is_causal, not both");
  const DType dt = least_upper_dtype({dtype(), k.dtype(), dtypes::float32});
  // the lengths may be symbolic (a KV cache's keys so far); the head's width scales the scores
  const Shape qs = shape(), ks = k.shape();
  const sint head = qs[qs.size() - 1];
  if (!head.is_int())
    throw ShapeError(detail::cat("scaled_dot_product_attention: the query's last dim (", head, ") must be concrete: it scales the scores"));
  Tensor scores = cast(dt)
                      .matmul(k.cast(dt).transpose(-1, -2))
                      .mul(1.0 / std::sqrt(static_cast<double>(head.as_int())));
  Tensor keep = mask;
  if (is_causal) {  // query i sees keys j <= i
    const sint L = qs[qs.size() - 2], S = ks[ks.size() - 2];
    if (!L.is_int() || !S.is_int())
      throw ShapeError(detail::cat("scaled_dot_product_attention: is_causal needs concrete lengths, got query ", shape(), " and key ",
                                   k.shape(), "; give a mask instead"));
    keep = arange_values(0, 1, S.as_int(), dtypes::default_int, scores.device()).reshape({1, S.as_int()})
               .le(arange_values(0, 1, L.as_int(), dtypes::default_int, scores.device()).reshape({L.as_int(), 1}));
  }
  if (keep.defined())
    scores = scores.add(keep.dtype().is_bool() ? keep.where(0.0, -INFINITY) : keep);
  return scores.softmax(-1).cast(dtype()).matmul(v);
}

// -- losses ----------------------------------------------------------------------------------

TINYT_INLINE Tensor Tensor::cross_entropy(const Tensor& target, double label_smoothing) const {
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    throw Error(
        detail::cat("cross_entropy: label_smoothing ", label_smoothing, " is not in [0, 1]"));
  const auto xs = cshape(), ts = target.cshape();
  if (xs.empty()) throw ShapeError("cross_entropy: the input needs a class dim, got a 0-d tensor");
  const int ax = xs.size() >= 2 ? 1 : 0;  // PyTorch: (N, C, ...) or unbatched (C,)
  const int64_t classes = xs[static_cast<size_t>(ax)];
  Tensor logp = log_softmax(ax);
  const double eps = label_smoothing / static_cast<double>(classes);
  if (ts == xs) {  // class probabilities
    if (!target.dtype().is_float())
      throw DTypeError(
          detail::cat("cross_entropy: a target of class probabilities must be float, not ",
                      target.dtype().name()));
    return logp.mul(target.mul(1.0 - label_smoothing).add(eps)).sum(ax).neg().mean();
  }
  if (ts != detail::drop_axis(xs, ax).to_vector())
    throw ShapeError(detail::cat("cross_entropy: target of shape ", target.shape(),
                                 " fits neither input ", shape(),
                                 " (probabilities) nor its shape without the class dim (indices)"));
  if (!target.dtype().is_int())
    throw DTypeError(
        detail::cat("cross_entropy: class indices must be integers, not ", target.dtype().name()));
  // one-hot along the class axis, smoothed; PyTorch's ignore_index -100 drops a sample
  std::vector<int64_t> cls(xs.size() - static_cast<size_t>(ax), 1);
  cls[0] = classes;
  Tensor t = target.unsqueeze(ax);
  Tensor y =
      t.eq(arange_values(0, 1, classes, dtypes::default_int, device()).reshape(Shape(cls))).where(1.0 - label_smoothing + eps, eps);
  Tensor keep = target.ne(-100);
  Tensor loss = keep.where(logp.mul(y).sum(ax).neg(), 0.0);
  return loss.sum().div(keep.sum().cast(loss.dtype()));
}

/// Cross entropy of logits (..., C) against integer labels (...), averaged over the labels that
/// are not ignore_index.
TINYT_INLINE Tensor Tensor::sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index,
                                                      double label_smoothing) const {
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    throw Error(detail::cat("sparse_categorical_crossentropy: label_smoothing ", label_smoothing,
                            " is not in [0, 1]"));
  const auto xs = cshape();
  if (xs.empty() || labels.cshape() != std::vector<int64_t>(xs.begin(), xs.end() - 1))
    throw ShapeError(detail::cat("sparse_categorical_crossentropy: labels of shape ",
                                 labels.shape(), " do not fit logits of shape ", shape(),
                                 " (expected its shape without the last dim)"));
  if (!labels.dtype().is_int())
    throw DTypeError(detail::cat("sparse_categorical_crossentropy: labels must be integers, not ",
                                 labels.dtype().name()));
  const int64_t classes = xs.back();
  Tensor logp = log_softmax(-1);
  Tensor keep = labels.ne(Tensor(ignore_index).cast(labels.dtype()));
  Tensor hit = labels.unsqueeze(-1).eq(arange_values(0, 1, classes, dtypes::default_int, labels.device()));
  // (1 - ls) * log p[label] + ls * mean(log p)
  Tensor picked = hit.where(logp, 0.0)
                      .sum(-1)
                      .mul(1.0 - label_smoothing)
                      .add(logp.mean(-1).mul(label_smoothing));
  Tensor loss = keep.where(picked, 0.0).sum().neg();
  return loss.div(keep.sum().cast(loss.dtype()));
}

namespace detail {
inline void same_shape(const Tensor& x, const Tensor& target, const char* op) {
  if (x.shape() != target.shape())
    throw ShapeError(
        cat(op, ": target of shape ", target.shape(), " differs from input ", x.shape()));
}
}  // namespace detail

TINYT_INLINE Tensor Tensor::binary_crossentropy(const Tensor& target) const {
  detail::same_shape(*this, target, "binary_crossentropy");
  // log is clamped at -100, as PyTorch, so p = 0 or 1 gives a finite loss
  Tensor p = cast(least_upper_float(dtype()));
  Tensor lp = p.log().maximum(-100.0), lq = p.neg().add(1).log().maximum(-100.0);
  return target.mul(lp).add(target.neg().add(1).mul(lq)).neg().mean();
}

TINYT_INLINE Tensor Tensor::binary_crossentropy_logits(const Tensor& target) const {
  detail::same_shape(*this, target, "binary_crossentropy_logits");
  // max(x, 0) - x*t + log(1 + exp(-|x|))
  Tensor x = cast(least_upper_float(dtype()));
  return x.relu().sub(x.mul(target)).add(x.abs().neg().exp().add(1).log()).mean();
}

// -- dropout ---------------------------------------------------------------------------------

TINYT_INLINE Tensor Tensor::dropout(double p) const {
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(detail::cat("dropout: probability ", p, " is not in [0, 1]"));
  if (!Tensor::training || p == 0.0) return *this;
  if (!dtype().is_float())
    throw DTypeError(detail::cat("dropout: needs a float tensor, not ", dtype().name()));
  if (p == 1.0) return Tensor::zeros_like(*this);
  return Tensor::rand_like(*this).ge(p).where(mul(1.0 / (1.0 - p)), 0.0);
}

}  // namespace tinyt::inline v0
