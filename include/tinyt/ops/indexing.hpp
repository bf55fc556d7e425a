// Indexing: t[{...}] (NumPy/PyTorch basic and advanced indexing), assignment through it, gather
// and one_hot.
//
// Basic indexing (ints, slices, NewAxis, Ellipsis) is a pure view: a shrink, a flip for negative
// steps, a pad-reshape-shrink for steps above 1, and a reshape. Integer tensor indices select
// with a one-hot mask (the index compared against an arange) and a sum over the indexed axes,
// so gathering is a kernel like any other, with no host loop. Out-of-range values in an index
// tensor are MASKED by default: they match no position, so a read gives 0 and a write writes
// nothing. CHECK_OOB=1 makes them an IndexError instead (as PyTorch): before the op is built, a
// small kernel finds the first offending element of the index into a one-element buffer, and
// only that number comes back to the host. It realizes the index tensor there and then (a sync
// point per indexing op), which is why it is a knob and not the default.
#pragma once

#include "combine.hpp"

namespace tinyt::inline v0 {

namespace detail {

/// A scalar of exactly `dt` (not weak), for selects and sums that must keep a dtype.
template <class V> Tensor scalar_of(DType dt, V v, const std::string& device) {
  return Tensor(graph::const_(dt, v, device));
}

/// A tensor's shape as numbers (indexing needs concrete shapes).
inline std::vector<int64_t> dims_of(const Tensor& t) { return graph::concrete_shape(t.uop()); }

/// What an index does to one dim of the base: it keeps `count` elements start, start+step, ...
/// (start and count may be symbolic where step is 1).
struct DimSelect {
  sint start = 0;
  int64_t step = 1;
  sint count = 0;
};

/// An index resolved against a shape: per base dim what it keeps; the shape of the view (ints
/// dropped, NewAxis added); and the tensor indices with the view dim each applies to.
struct ParsedIndex {
  std::vector<DimSelect> dims;
  std::vector<sint> view_shape;
  std::vector<std::pair<size_t, Tensor>> tensors;
};

// The dtype an index is compared in: wide enough for the index and for every position of x.
inline DType index_compare_dtype(DType dt) {
  if (dt.itemsize() < 4) return dtypes::int32;
  if (dt == dtypes::uint32) return dtypes::int64;
  return dt;
}

/// Whether index tensors are checked for out-of-range values (CHECK_OOB=1).
inline bool check_oob() { return getenv_int("CHECK_OOB", 0) != 0; }

/// The IndexError of `op` for the index value `value` (as text) at flat element `first` of an
/// index tensor of `shape` into an axis of `size`.
inline IndexError index_error(const char* op, const std::string& value, size_t axis, int64_t size, int64_t first,
                              const std::vector<int64_t>& shape) {
  std::vector<int64_t> where(shape.size());
  for (size_t d = shape.size(), rest = static_cast<size_t>(first); d-- > 0;)
    where[d] = static_cast<int64_t>(rest % static_cast<size_t>(shape[d])), rest /= static_cast<size_t>(shape[d]);
  return IndexError(cat(op, ": index ", value, " is out of range for axis ", axis, " with size ", size, " (element ",
                        shape_str(where), " of the index tensor of shape ", shape_str(shape), ")"));
}

/// With CHECK_OOB=1, an IndexError from `op` when a value of `idx` is outside [-size, size)
/// (`wrap`: negative values count from the end) or [0, size), naming the axis, the value and
/// where it sits in the index. Under a TinyJit capture the check is recorded too, so that every
/// replay makes it on that call's index.
inline void check_index_values(const Tensor& idx, int64_t size, bool wrap, const char* op, size_t axis) {
  if (!check_oob() || idx.numel() == 0) return;
  const std::vector<int64_t> shape = dims_of(idx);
  const int64_t n = idx.numel();
  Tensor(idx).realize();  // once: the check and the op both read it
  // 64 bits hold -size, size and every index value; unsigned stays unsigned so a value past
  // INT64_MAX prints as itself. An index split across devices is checked whole on the first
  // (flattening it there would move elements between devices). On a device without 64-bit types
  // 32 bits do: its tensors are of 32-bit types and fewer than 2^31 elements.
  const std::string dev = idx.device().substr(0, idx.device().find(','));
  const bool is_unsigned = idx.dtype().is_unsigned(), wide = Device::holds_wide_types(dev);
  const DType dt = is_unsigned ? (wide ? dtypes::uint64 : dtypes::uint32) : Device::widest_int(dev);
  const Tensor i = idx.to(dev).reshape({n}).cast(dt);
  Tensor bad = i.ge(scalar_of(dt, size, dev));
  if (!is_unsigned) bad = bad.logical_or(i.lt(scalar_of(dt, wrap ? -size : 0, dev)));
  // the first offending position (n when there is none), and the value there, computed only
  // when needed: the first is the one number that comes back when all is well
  const Tensor at = positions_on(n, Device::widest_int(dev), dev);
  Tensor first = bad.where(at, scalar_of(Device::widest_int(dev), n, dev)).min();
  Tensor value = at.eq(first).where(i, scalar_of(dt, 0, dev)).sum().cast(dt);
  // a number's bits (64, or 32 sign- or zero-extended) read from the memory holding it
  const auto read = [wide, is_unsigned](const std::shared_ptr<Buffer>& m) {
    if (wide) {
      uint64_t bits = 0;
      m->copyout(&bits, sizeof bits);
      return bits;
    }
    uint32_t bits = 0;
    m->copyout(&bits, sizeof bits);
    return is_unsigned ? uint64_t{bits} : static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(bits)));
  };
  const auto fail = [=, op = std::string(op)](int64_t at_first, uint64_t bits) {
    const std::string text = is_unsigned ? std::to_string(bits) : std::to_string(static_cast<int64_t>(bits));
    return index_error(op.c_str(), text, axis, size, at_first, shape);
  };
  if (std::vector<engine::HostCheck>* checks = engine::host_check_sink()) {
    // a TinyJit capture: both numbers are kernels of the step, which each replay reads back
    realize_tensors({first, value});
    const std::shared_ptr<Buffer> first_mem = graph::buffer_of(graph::base_buffer(first.uop())),
                                  value_mem = graph::buffer_of(graph::base_buffer(value.uop()));
    checks->push_back({engine::capture_sink() ? engine::capture_sink()->size() : 0, {first_mem, value_mem}, [=] {
                         if (const auto at_first = static_cast<int64_t>(read(first_mem)); at_first != n) throw fail(at_first, read(value_mem));
                       }});
  }
  const auto read_now = [&](const Tensor& t) {
    realize_tensors({t});
    return read(graph::buffer_of(graph::base_buffer(t.uop())));
  };
  if (const auto at_first = static_cast<int64_t>(read_now(first)); at_first != n) throw fail(at_first, read_now(value));
}

/// A slice where a bound or the size is symbolic: step 1, bounds within the dim (a negative
/// concrete bound counts from the end), no clamping.
inline DimSelect resolve_symbolic_slice(const Slice& s, const sint& size) {
  if (s.step.value_or(1) != 1) throw IndexError(cat("index: a symbolic slice takes step 1, not ", *s.step));
  auto bound = [&](const std::optional<sint>& v, const sint& fallback) {
    if (!v) return fallback;
    return v->is_int() && v->as_int() < 0 ? *v + size : *v;
  };
  const sint start = bound(s.start, 0), stop = bound(s.stop, size);
  if (start.vmin() < 0 || (stop - start).vmin() < 0 || stop.vmax() > size.vmax())
    throw IndexError(cat("index: the slice ", start, ":", stop, " may leave the dim of size ", size));
  return {start, 1, stop - start};
}

/// Python's slice.indices(size) followed by the length of the range.
inline DimSelect resolve_slice(const Slice& slice, const sint& symbolic_size) {
  if (!symbolic_size.is_int() || (slice.start && !slice.start->is_int()) || (slice.stop && !slice.stop->is_int()))
    return resolve_symbolic_slice(slice, symbolic_size);
  const int64_t size = symbolic_size.as_int();
  const int64_t step = slice.step.value_or(1);
  if (step == 0) throw Error("index: a slice step cannot be 0");
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? size : size - 1;
  auto clamp = [&](const std::optional<sint>& v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = v->as_int();
    if (x < 0)
      x = std::max(x + size, lower);
    else
      x = std::min(x, upper);
    return x;
  };
  const int64_t start = clamp(slice.start, step > 0 ? lower : upper),
                stop = clamp(slice.stop, step > 0 ? upper : lower);
  const int64_t diff = step > 0 ? stop - start : start - stop;
  // |step| may be INT64_MIN's magnitude: a count from (diff - 1) / |step| cannot overflow
  const uint64_t k =
      step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  const int64_t count =
      diff > 0 ? static_cast<int64_t>(static_cast<uint64_t>(diff - 1) / k) + 1 : 0;
  // one element or none: the step no longer matters
  if (count <= 1) return {count ? start : 0, 1, count};
  return {start, step, count};
}

inline ParsedIndex parse_index(const Shape& shape, const std::vector<Index>& index) {
  size_t ellipses = 0, consuming = 0;
  for (const Index& i : index) {
    if (std::holds_alternative<EllipsisT>(i.value))
      ++ellipses;
    else if (!std::holds_alternative<NewAxisT>(i.value))
      ++consuming;
  }
  if (ellipses > 1) throw IndexError(cat("index: at most one Ellipsis is allowed, got ", ellipses));
  if (consuming > shape.size())
    throw IndexError(
        cat("index: too many indices (", consuming, ") for a tensor of shape ", shape));
  ParsedIndex p;
  size_t dim = 0;
  auto keep_all = [&] {
    p.dims.push_back({0, 1, shape[dim]});
    p.view_shape.push_back(shape[dim++]);
  };
  for (const Index& entry : index) {
    if (std::holds_alternative<EllipsisT>(entry.value)) {
      for (size_t n = shape.size() - consuming; n > 0; --n) keep_all();
    } else if (std::holds_alternative<NewAxisT>(entry.value)) {
      p.view_shape.push_back(1);
    } else if (const int64_t* i = std::get_if<int64_t>(&entry.value)) {
      const sint& size = shape[dim];  // symbolic: the index must be in range at its smallest
      if (*i < -size.vmin() || *i >= size.vmin())
        throw IndexError(cat("index: index ", *i, " is out of range for axis ", dim, " with size ",
                             size, " (shape ", shape, ")"));
      p.dims.push_back({*i < 0 ? size + *i : sint(*i), 1, 1});
      ++dim;
    } else if (const Slice* s = std::get_if<Slice>(&entry.value)) {
      p.dims.push_back(resolve_slice(*s, shape[dim]));
      p.view_shape.push_back(p.dims.back().count);
      ++dim;
    } else {
      const Tensor& t = std::get<Tensor>(entry.value);
      if (!t.defined()) throw Error("index: an index is the empty Tensor() handle");
      if (t.dtype().is_bool())
        throw DTypeError(
            "index: boolean mask indices are not supported (the result's shape would depend on the "
            "data)");
      if (!t.dtype().is_int())
        throw DTypeError(cat("index: tensor indices must be integers, not ", t.dtype().name()));
      check_index_values(t, shape[dim].as_int(), true, "index", dim);
      p.tensors.emplace_back(p.view_shape.size(), t);
      keep_all();
    }
  }
  while (dim < shape.size()) keep_all();  // fewer indices than dims: the rest is `:`
  return p;
}

/// Whether some dim steps by more than one element.
inline bool any_stride(const ParsedIndex& p) {
  return std::any_of(p.dims.begin(), p.dims.end(),
                     [](const DimSelect& d) { return d.step != 1 && d.step != -1; });
}
inline uint64_t abs_step(const DimSelect& d) {
  return d.step > 0 ? static_cast<uint64_t>(d.step) : uint64_t{0} - static_cast<uint64_t>(d.step);
}
// The base range [lo, hi) a dim reads (flipped when the step is negative), extended to a whole
// number of steps when the base is long enough, which spares the pad of the strided view.
inline std::pair<sint, sint> dim_range(const DimSelect& d, const sint& symbolic_size) {
  if (d.count == 0) return {0, 0};
  if (d.step == 1) return {d.start, d.start + d.count};
  if (d.step == -1) return {d.start + 1 - d.count, d.start + 1};
  const int64_t size = symbolic_size.as_int(), start = d.start.as_int(), count = d.count.as_int();
  const auto k = static_cast<int64_t>(abs_step(d));
  const int64_t span = (count - 1) * k + 1;  // within size: the last element is in range
  if (d.step > 0) return {start, start + (start + count * k <= size ? count * k : span)};
  return {start + 1 - (start + 1 - count * k >= 0 ? count * k : span), start + 1};
}

/// The basic part of an index applied to t: a view of shape p.view_shape.
inline Tensor basic_view(const Tensor& t, const ParsedIndex& p) {
  const Shape s = t.shape();
  std::vector<std::pair<sint, sint>> bounds;
  std::vector<int> flips;
  for (size_t i = 0; i < s.size(); ++i) {
    auto [lo, hi] = dim_range(p.dims[i], s[i]);
    bounds.emplace_back(lo, hi);
    if (p.dims[i].step < 0) flips.push_back(static_cast<int>(i));
  }
  Tensor x = t.shrink(bounds).flip(flips);
  if (any_stride(p)) {
    // a step k: pad to count * k, view as (count, k), keep column 0
    std::vector<std::pair<sint, sint>> pad, keep;
    std::vector<int64_t> split, counts;
    const auto xs = dims_of(x);
    for (size_t i = 0; i < s.size(); ++i) {
      const auto k = static_cast<int64_t>(abs_step(p.dims[i])), n = p.dims[i].count.as_int();
      pad.emplace_back(0, n * k - xs[i]);
      split.insert(split.end(), {n, k});
      keep.emplace_back(0, n), keep.emplace_back(0, 1);
      counts.push_back(n);
    }
    x = x.pad(pad).reshape(Shape(split)).shrink(keep).reshape(Shape(counts));
  }
  return x.reshape(Shape(p.view_shape));
}

/// The inverse of basic_view: v (of the view's shape) placed where the view reads the base,
/// zero (false) everywhere else.
inline Tensor basic_unview(const Tensor& v, const ParsedIndex& p, const Shape& base) {
  std::vector<sint> counts;
  for (const DimSelect& d : p.dims) counts.push_back(d.count);
  Tensor x = v.reshape(Shape(counts));
  std::vector<std::pair<sint, sint>> outer;
  std::vector<int> flips;
  std::vector<sint> lengths;
  for (size_t i = 0; i < base.size(); ++i) {
    auto [lo, hi] = dim_range(p.dims[i], base[i]);
    outer.emplace_back(lo, base[i] - hi);
    lengths.push_back(hi - lo);
    if (p.dims[i].step < 0) flips.push_back(static_cast<int>(i));
  }
  if (any_stride(p)) {
    // each element becomes a row (value, 0, ..., 0) of k, flattened and cut to the range length
    std::vector<int64_t> col, flat;
    std::vector<std::pair<sint, sint>> widen, cut;
    for (size_t i = 0; i < base.size(); ++i) {
      const auto k = static_cast<int64_t>(abs_step(p.dims[i])), n = p.dims[i].count.as_int();
      col.insert(col.end(), {n, 1});
      widen.emplace_back(0, 0), widen.emplace_back(0, k - 1);
      flat.push_back(n * k);
      cut.emplace_back(0, lengths[i].as_int());
    }
    x = x.reshape(Shape(col)).pad(widen).reshape(Shape(flat)).shrink(cut);
  }
  return x.flip(flips).pad(outer);
}

/// The tensor-index part of an index, applied to x (the basic view): the broadcast shape of the
/// index tensors, and the mask of which x element each index position selects.
struct TensorSelect {
  std::vector<int64_t> bshape;  // the index tensors broadcast together
  std::vector<size_t> dims;     // x dims indexed by tensors, ascending
  Tensor mask;                  // bshape + x.shape[dims[0]:] (1 on the dims not indexed)
  bool to_front = false;        // the index dims are not adjacent: the result has bshape first
};

/// `idx == arange(n)` along a new last axis, with idx a tensor of integers; negative values
/// count from the end when `wrap` is set. Values out of range match nothing.
inline Tensor one_hot_mask(Tensor idx, int64_t n, bool wrap) {
  idx = idx.cast(index_compare_dtype(idx.dtype()));
  const DType dt = idx.dtype();
  const std::string dev = idx.device();
  if (wrap && !dt.is_unsigned())
    idx =
        idx.add(idx.lt(scalar_of(dt, 0, dev)).where(scalar_of(dt, n, dev), scalar_of(dt, 0, dev)));
  Tensor positions = positions_on(n, dt, dev);
  return idx.unsqueeze(-1).eq(positions);
}

inline TensorSelect tensor_select(const Tensor& x, const ParsedIndex& p) {
  TensorSelect sel;
  const auto xs = dims_of(x);
  std::vector<int64_t> b;
  for (const auto& [d, t] : p.tensors) {
    sel.dims.push_back(d);
    try {
      b = Tensor::broadcast_shape(b, dims_of(t), "index");
    } catch (const ShapeError&) {
      std::vector<Tensor> ts;
      for (const auto& e : p.tensors) ts.push_back(e.second);
      throw ShapeError(
          cat("index: the index tensors of shapes ", shapes_str(ts), " do not broadcast together"));
    }
  }
  sel.bshape = b;
  const size_t first = sel.dims.front(), tail = xs.size() - first;
  for (size_t i = 1; i < sel.dims.size(); ++i) sel.to_front |= sel.dims[i] != sel.dims[i - 1] + 1;
  sel.to_front &= first != 0;
  for (const auto& [d, t] : p.tensors) {
    // the one-hot of the index (over bshape) along x's dim d
    Tensor hit = one_hot_mask(broadcast_to(t.to(x.device()), b), xs[d], true);
    std::vector<int64_t> placed = b;
    placed.insert(placed.end(), d - first, 1);
    placed.push_back(xs[d]);
    placed.insert(placed.end(), tail - (d - first) - 1, 1);
    hit = hit.reshape(Shape(placed));
    sel.mask = sel.mask.defined() ? sel.mask.logical_and(hit) : hit;
  }
  return sel;
}

// x with bshape's dims (as 1s) inserted before dim `first`: it lines up with the mask.
inline Tensor align_to_mask(const Tensor& x, const TensorSelect& sel) {
  auto s = dims_of(x);
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(sel.dims.front()), sel.bshape.size(), 1);
  return x.reshape(Shape(s));
}
inline std::vector<int> reduce_axes(const TensorSelect& sel) {
  std::vector<int> axes;
  for (size_t d : sel.dims) axes.push_back(static_cast<int>(d + sel.bshape.size()));
  return axes;
}
// The permutation that moves bshape's dims (at `first`) to the front, or back when `inverse`.
inline std::vector<int> front_order(size_t first, size_t nb, size_t ndim, bool inverse) {
  std::vector<int> order;
  for (size_t i = 0; i < ndim; ++i) {
    const size_t j = inverse ? (i < first        ? i + nb
                                : i < first + nb ? i - first
                                                 : i)
                             : (i < nb           ? first + i
                                : i < first + nb ? i - nb
                                                 : i);
    order.push_back(static_cast<int>(j));
  }
  return order;
}

/// Selects x's elements at the index tensors (PyTorch's advanced indexing).
inline Tensor tensor_get(const Tensor& x, const TensorSelect& sel) {
  Tensor picked = sel.mask.where(align_to_mask(x, sel), scalar_of(x.dtype(), 0, x.device()));
  Tensor r = selected_sum(picked, reduce_axes(sel));
  if (!sel.to_front) return r;
  return r.permute(front_order(sel.dims.front(), sel.bshape.size(), r.ndim(), false));
}

/// x with `value` (broadcast to the shape tensor_get gives) written at the index tensors. Where
/// an index repeats, the last occurrence wins.
inline Tensor tensor_set(const Tensor& x, const Tensor& value, const TensorSelect& sel) {
  const size_t first = sel.dims.front(), nb = sel.bshape.size();
  int64_t bn = 1;
  for (int64_t d : sel.bshape) bn *= d;
  if (bn == 0 || x.numel() == 0) return x;
  Tensor v = value;
  if (sel.to_front) v = v.permute(front_order(first, nb, v.ndim(), true));
  for (int a : reduce_axes(sel)) v = v.unsqueeze(a);
  // each x element takes the value of the last index position (in row-major order) that hits it
  std::vector<int64_t> pos_shape = sel.bshape;
  pos_shape.insert(pos_shape.end(), x.ndim() - first, 1);
  Tensor pos = Tensor::arange(bn).reshape(Shape(pos_shape)).to(x.device());
  std::vector<int> b_axes;
  for (size_t i = 0; i < nb; ++i) b_axes.push_back(static_cast<int>(i));
  Tensor last = sel.mask.where(pos, scalar_of(dtypes::int32, -1, x.device())).max(b_axes, true);
  Tensor take = pos.eq(last);
  std::vector<int> v_axes;
  for (size_t i = 0; i < nb; ++i) v_axes.push_back(static_cast<int>(first + i));
  Tensor written = take.where(v, scalar_of(x.dtype(), 0, x.device())).sum(v_axes).cast(x.dtype());
  std::vector<int64_t> hit_shape = dims_of(last);
  hit_shape.erase(hit_shape.begin(), hit_shape.begin() + static_cast<std::ptrdiff_t>(nb));
  return last.reshape(Shape(hit_shape))
      .ge(scalar_of(dtypes::int32, 0, x.device()))
      .where(written, x);
}

/// value (cast to dt) broadcast to `shape`; leading 1s beyond the shape's rank are dropped, as
/// NumPy does for assignment.
inline Tensor value_for(const Tensor& value, const Shape& shape, DType dt) {
  if (!value.defined()) throw Error("index assignment: the value is the empty Tensor() handle");
  std::vector<sint> vs = value.shape().dims();
  while (vs.size() > shape.size() && vs.front() == 1) vs.erase(vs.begin());
  bool fits = vs.size() <= shape.size();
  for (size_t i = 0; fits && i < vs.size(); ++i)
    fits = vs[i] == 1 || vs[i] == shape[shape.size() - vs.size() + i];
  if (!fits)
    throw ShapeError(cat("index assignment: a value of shape ", value.shape(),
                         " cannot be broadcast to the indexed shape ", shape));
  return broadcast_to(value.cast(dt).reshape(Shape(vs)), shape);
}

}  // namespace detail

TINYT_INLINE TensorRef Tensor::operator[](std::vector<Index> index) const {
  const detail::ParsedIndex p = detail::parse_index(shape(), index);
  Tensor x = detail::basic_view(*this, p);
  if (!p.tensors.empty()) x = detail::tensor_get(x, detail::tensor_select(x, p));
  return TensorRef(x, *this, std::move(index));
}
TINYT_INLINE TensorRef Tensor::operator[](std::initializer_list<Index> index) const {
  return (*this)[std::vector<Index>(index)];
}

/// Writes the value into the base: the new base is a select between the value, mapped back
/// through the index, and the old base; then it is assigned to the base's memory.
TINYT_INLINE TensorRef& TensorRef::operator=(const Tensor& value) {
  const Shape base = base_.shape();
  const detail::ParsedIndex p = detail::parse_index(base, index_);
  Tensor x = detail::basic_view(base_, p);
  Tensor updated;
  if (p.tensors.empty()) {
    updated = detail::value_for(value, x.shape(), base_.dtype());
  } else {
    const detail::TensorSelect sel = detail::tensor_select(x, p);
    Tensor v = detail::value_for(value, detail::tensor_get(x, sel).shape(), base_.dtype());
    updated = detail::tensor_set(x, v, sel);
  }
  Tensor region = detail::basic_unview(
      Tensor::full(x.shape(), true, dtypes::bool_, base_.device()), p, base);
  base_.assign(region.where(detail::basic_unview(updated, p, base), base_));
  if (parent_) *parent_ = base_;  // t[a][b] = v: the new t[a] is written into t as well
  Tensor::operator=(static_cast<const Tensor&>(base_[index_]));
  return *this;
}

/// out[i][j] = self[index[i][j]][j] for dim 0, and so on (PyTorch's gather). Index values out of
/// range, negative ones included, are masked: they read 0; with CHECK_OOB=1 they are an IndexError.
TINYT_INLINE Tensor Tensor::gather(int dim, const Tensor& index) const {
  if (!index.defined()) throw Error("gather: the index is the empty Tensor() handle");
  if (!index.dtype().is_int())
    throw DTypeError(
        detail::cat("gather: the index must be an integer tensor, not ", index.dtype().name()));
  const auto s = cshape(), is = detail::dims_of(index);
  if (s.size() != is.size())
    throw ShapeError(detail::cat("gather: the index has shape ", index.shape(),
                                 " but the tensor has shape ", shape(),
                                 "; they need the same number of dims"));
  if (s.empty()) return reshape({1}).gather(0, index.reshape({1})).reshape({});
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), "gather"));
  std::vector<std::pair<sint, sint>> keep;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i != d && is[i] > s[i])
      throw ShapeError(detail::cat("gather: index shape ", index.shape(), " exceeds tensor shape ",
                                   shape(), " in dim ", i));
    keep.emplace_back(0, i == d ? s[i] : is[i]);
  }
  // x[..., 1 (dim d), ..., n]: the candidates of every output element along the last axis
  Tensor x = shrink(keep).unsqueeze(-1).transpose(-1, static_cast<int>(d));
  detail::check_index_values(index, s[d], false, "gather", d);
  Tensor hit = detail::one_hot_mask(index.to(device()), s[d], false);
  return detail::selected_sum(hit.where(x, detail::scalar_of(dtype(), 0, device())), {-1});
}

namespace detail {
// scatter's work: `src` (cut to the index's shape) reduced into `self` at `index` along `dim`.
// With dim moved last, mask[..., j, k] says update k lands on position j; each position folds
// the updates that land there (`fold` over the last axis, `identity` where none does), and
// `combine(self, folded, hit)` gives the result there
inline Tensor scatter_along(const Tensor& self, int dim, const Tensor& index, const Tensor& src, const char* op, const Tensor& identity,
                            const std::function<Tensor(const Tensor&)>& fold,
                            const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&)>& combine) {
  if (!index.defined() || !src.defined()) throw Error(cat(op, ": the index or the source is the empty Tensor() handle"));
  if (!index.dtype().is_int()) throw DTypeError(cat(op, ": the index must be an integer tensor, not ", index.dtype().name()));
  const auto s = dims_of(self), is = dims_of(index), ss = dims_of(src);
  if (s.size() != is.size() || ss.size() != is.size())
    throw ShapeError(cat(op, ": tensor ", self.shape(), ", index ", index.shape(), " and source ", src.shape(), " need the same number of dims"));
  if (s.empty()) return scatter_along(self.reshape({1}), 0, index.reshape({1}), src.reshape({1}), op, identity, fold, combine).reshape({});
  const auto d = static_cast<size_t>(normalize_axis(dim, s.size(), op));
  std::vector<std::pair<sint, sint>> cut, grow;
  for (size_t i = 0; i < s.size(); ++i) {
    if (is[i] > ss[i] || (i != d && is[i] > s[i]))
      throw ShapeError(cat(op, ": index shape ", index.shape(), " exceeds the source's ", src.shape(), " or the tensor's ", self.shape(), " in dim ", i));
    cut.emplace_back(0, is[i]);
    grow.emplace_back(0, i == d ? 0 : s[i] - is[i]);
  }
  check_index_values(index, s[d], false, op, d);
  const int last = static_cast<int>(s.size()) - 1;
  const Tensor idx = index.to(self.device()).transpose(static_cast<int>(d), last);               // (..., k)
  const Tensor upd = src.shrink(cut).cast(self.dtype()).transpose(static_cast<int>(d), last);  // (..., k)
  const Tensor mask = one_hot_mask(idx, s[d], false).transpose(-1, -2);                       // (..., j, k)
  const Tensor folded = fold(mask.where(upd.unsqueeze(-2), identity));
  const Tensor hit = mask.any(-1);
  // positions the index does not reach in the other dims: nothing lands there (not hit: what the
  // padding holds is never used)
  std::vector<std::pair<sint, sint>> grow_last = grow;
  std::swap(grow_last[d], grow_last[static_cast<size_t>(last)]);
  const Tensor x = self.transpose(static_cast<int>(d), last);
  return combine(x, folded.pad(grow_last), hit.pad(grow_last), mask).transpose(static_cast<int>(d), last);
}
}  // namespace detail

/// PyTorch's scatter: a copy of this tensor with src[i][j][k] written at index[i][j][k] along
/// `dim` (for dim 1: out[i][index[i][j][k]][k] = src[i][j][k]); a position the index names twice
/// gets the sum of what lands there (PyTorch leaves it undefined). An index out of range writes
/// nothing, or is an IndexError with CHECK_OOB=1.
TINYT_INLINE Tensor Tensor::scatter(int dim, const Tensor& index, const Tensor& src) const {
  return detail::scatter_along(
      *this, dim, index, src, "scatter", detail::scalar_of(dtype(), 0, device()), [](const Tensor& t) { return t.sum(-1); },
      [](const Tensor& x, const Tensor& folded, const Tensor& hit, const Tensor&) { return hit.where(folded.cast(x.dtype()), x); });
}

/// PyTorch's scatter_reduce: what lands on each position combined with "sum", "prod", "mean",
/// "amax" or "amin", and with this tensor's value there where include_self.
TINYT_INLINE Tensor Tensor::scatter_reduce(int dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                                           bool include_self) const {
  using F = std::function<Tensor(const Tensor&)>;
  const DType dt = dtype();
  const std::string dev = device();
  // the identities of max and min: exact for every integer type (a double cannot hold int64's largest)
  const Tensor lowest = dt.is_float() ? detail::scalar_of(dt, -INFINITY, dev) : detail::scalar_of(dt, dt.is_bool() ? i128{0} : dtypes::min_int(dt), dev);
  const Tensor highest = dt.is_float() ? detail::scalar_of(dt, INFINITY, dev) : detail::scalar_of(dt, dt.is_bool() ? i128{1} : dtypes::max_int(dt), dev);
  Tensor identity = detail::scalar_of(dt, 0, dev);
  F fold;
  std::function<Tensor(const Tensor&, const Tensor&)> merge;  // this tensor's value with the folded one
  if (reduce == "sum" || reduce == "mean") {
    fold = [](const Tensor& t) { return t.sum(-1); };
    merge = [](const Tensor& a, const Tensor& b) { return a + b; };
  } else if (reduce == "prod") {
    identity = detail::scalar_of(dt, 1, dev), fold = [](const Tensor& t) { return t.prod(-1); };
    merge = [](const Tensor& a, const Tensor& b) { return a * b; };
  } else if (reduce == "amax") {
    identity = lowest, fold = [](const Tensor& t) { return t.max(-1); };
    merge = [](const Tensor& a, const Tensor& b) { return a.maximum(b); };
  } else if (reduce == "amin") {
    identity = highest, fold = [](const Tensor& t) { return t.min(-1); };
    merge = [](const Tensor& a, const Tensor& b) { return a.minimum(b); };
  } else {
    throw Error(detail::cat("scatter_reduce: reduce '", reduce, "': it is sum, prod, mean, amax or amin"));
  }
  const bool mean = reduce == "mean";
  return detail::scatter_along(*this, dim, index, src, "scatter_reduce", identity, fold,
                               [&](const Tensor& x, const Tensor& folded, const Tensor& hit, const Tensor& mask) {
                                 Tensor r = include_self ? merge(x, folded.cast(x.dtype())) : folded.cast(x.dtype());
                                 if (mean) {  // divided by how many values were folded (rounded down for integers, as PyTorch)
                                   std::vector<std::pair<sint, sint>> none;
                                   Tensor count = mask.sum(-1).cast(x.dtype());
                                   const std::vector<int64_t> cs = count.shape().to_vector(), xs = x.shape().to_vector();
                                   for (size_t i = 0; i < cs.size(); ++i) none.emplace_back(0, xs[i] - cs[i]);
                                   count = count.pad(none);
                                   if (include_self) count = count + 1;
                                   const Tensor safe = count.maximum(Tensor::ones_like(count));
                                   r = x.dtype().is_float() ? Tensor(r / safe) : r.floordiv(safe);
                                 }
                                 return hit.where(r, x);
                               });
}

namespace detail {
// The order of the elements along the last axis: rank[i] is how many come before element i
// (larger ones first where descending; NaN as the largest; equal ones in index order, so the
// order is stable). Every pair is compared: O(n²) work per row, in one kernel.
inline Tensor ranks(const Tensor& x, bool descending) {
  const Tensor a = x.unsqueeze(-1), b = x.unsqueeze(-2);  // (..., i, 1), (..., 1, j)
  auto above = [&](const Tensor& p, const Tensor& q) {     // p after q in ascending order
    const Tensor gt = p.gt(q);
    return x.dtype().is_float() ? gt.logical_or(p.isnan().logical_and(q.isnan().logical_not())) : gt;
  };
  const int64_t n = x.shape().to_vector().back();
  const Tensor i = Tensor::arange(n).reshape({n, 1}).to(x.device()), j = Tensor::arange(n).reshape({1, n}).to(x.device());
  const Tensor earlier = (descending ? above(b, a) : above(a, b)).logical_or(a.eq(b).logical_or(a.isnan().logical_and(b.isnan())).logical_and(j.lt(i)));
  return earlier.cast(dtypes::int32).sum(-1);  // (..., i)
}
}  // namespace detail

/// The values along `dim` in order (descending: largest first), and the int64 index each came
/// from; stable (equal values keep their order), NaN sorted as the largest, as PyTorch. Every
/// pair of a row is compared (O(n²) per row).
TINYT_INLINE std::pair<Tensor, Tensor> Tensor::sort(int dim, bool descending) const {
  const DType index = Device::widest_int(device());  // (int64, as PyTorch's; int32 on WEBGPU)
  if (ndim() == 0) return {*this, Tensor::zeros({}, index, device())};
  const int d = normalize_axis(dim, ndim(), "sort"), last = static_cast<int>(ndim()) - 1;
  const Tensor x = transpose(d, last);
  const int64_t n = x.shape().to_vector().back();
  // element i goes to position rank[i]: a one-hot (..., i, position) picks values and indices
  const Tensor placed = detail::ranks(x, descending).unsqueeze(-1).eq(detail::positions_on(n, dtypes::int32, device()));
  const Tensor values = placed.where(x.unsqueeze(-1), detail::scalar_of(dtype(), 0, device())).sum(-2).cast(dtype());
  const Tensor from = detail::positions_on(n, index, device()).reshape({n, 1});
  const Tensor indices = placed.where(from, Tensor::zeros({}, index, device())).sum(-2);
  return {values.transpose(d, last), indices.transpose(d, last)};
}

/// The k largest (or smallest) values along `dim` and their int64 indices, in order (sort's).
TINYT_INLINE std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int dim, bool largest) const {
  const int d = normalize_axis(dim, std::max<size_t>(ndim(), 1), "topk");
  const int64_t n = ndim() ? shape()[static_cast<size_t>(d)].as_int() : 1;
  if (k < 0 || k > n) throw ShapeError(detail::cat("topk: k ", k, " for ", n, " elements along dim ", d, " of ", shape()));
  auto [values, indices] = sort(dim, largest);
  if (ndim() == 0) return {values, indices};
  std::vector<std::pair<sint, sint>> first;
  for (const sint& s : shape()) first.emplace_back(0, s);
  first[static_cast<size_t>(d)] = {0, k};
  return {values.shrink(first), indices.shrink(first)};
}

/// int32 one-hot vectors along a new last axis; num_classes -1 takes the maximum value + 1
/// (which reads the tensor). Values out of range give a row of zeros, or an IndexError with
/// CHECK_OOB=1.
TINYT_INLINE Tensor Tensor::one_hot(int64_t num_classes) const {
  if (!dtype().is_int())
    throw DTypeError(detail::cat("one_hot: needs an integer tensor, not ", dtype().name()));
  if (num_classes == -1)
    num_classes = numel() ? (Device::holds_wide_types(device()) ? max().cast(dtypes::int64).item<int64_t>() : max().cast(dtypes::int32).item<int32_t>()) + 1 : 0;
  if (num_classes < 0)
    throw ShapeError(detail::cat("one_hot: num_classes must be -1 or non-negative, got ", num_classes));
  // the classes are the new last axis
  detail::check_index_values(*this, num_classes, false, "one_hot", ndim());
  return detail::one_hot_mask(*this, num_classes, false).cast(dtypes::int32);
}

}  // namespace tinyt::inline v0
