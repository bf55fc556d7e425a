// Shapes: `sint` (a concrete size or a symbolic one over Variables) and `Shape`, a list of them.
#pragma once

#include <numeric>
#include <ostream>
#include <variant>
#include <vector>

#include "uop.hpp"

namespace tinyt::inline v0 {

/// A ranged integer variable, as tinygrad's `Variable("i", 1, 1024)`; `Variable(...).bind(7)`
/// gives it a value. A size built from a bound variable compiles once for every value.
inline UOp Variable(const std::string& name, int64_t min, int64_t max) {
  return UOp::variable(name, min, max);
}

/// A size: an int64_t, or a symbolic index expression over Variables.
class sint {
 public:
  sint() = default;
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  sint(I v) : v_(static_cast<int64_t>(v)) {}  // NOLINT: sizes are written as plain numbers
  /// A symbolic size; folds to a number when the expression is constant.
  sint(const UOp& u);  // NOLINT

  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  /// The concrete value; a symbolic size is an error here.
  int64_t as_int() const {
    if (const int64_t* i = std::get_if<int64_t>(&v_)) return *i;
    throw ShapeError(detail::cat("sint: ", *this, " is symbolic where a concrete size is needed"));
  }
  /// The size as an index UOp.
  UOp as_uop() const {
    return is_int() ? UOp::const_(dtypes::index, std::get<int64_t>(v_)) : std::get<UOp>(v_);
  }

  /// The expression with every bound variable unbound (`i=7` becomes `i`): what kernels take.
  UOp unbound() const;
  /// The value under the variables' bindings; a variable that is not bound is an error.
  int64_t value() const;
  /// The largest and smallest values over the variables' ranges.
  int64_t vmax() const;
  int64_t vmin() const;

  /// Equal as expressions of the variables, whatever they are bound to.
  friend bool operator==(const sint& a, const sint& b) {
    if (a.is_int() || b.is_int()) return a.is_int() && b.is_int() && a.as_int() == b.as_int();
    return a.unbound() == b.unbound();
  }
  friend sint operator+(const sint& a, const sint& b) {
    return a.is_int() && b.is_int() ? sint(a.as_int() + b.as_int()) : sint(a.as_uop() + b.as_uop());
  }
  friend sint operator-(const sint& a, const sint& b) {
    return a.is_int() && b.is_int() ? sint(a.as_int() - b.as_int()) : sint(a.as_uop() - b.as_uop());
  }
  friend sint operator*(const sint& a, const sint& b) {
    return a.is_int() && b.is_int() ? sint(a.as_int() * b.as_int()) : sint(a.as_uop() * b.as_uop());
  }
  /// Floor division (both non-negative: sizes).
  friend sint operator/(const sint& a, const sint& b) {
    return a.is_int() && b.is_int() ? sint(a.as_int() / b.as_int()) : sint(a.as_uop().idiv(b.as_uop()));
  }
  friend std::ostream& operator<<(std::ostream& os, const sint& s) {
    if (s.is_int()) return os << std::get<int64_t>(s.v_);
    return os << std::get<UOp>(s.v_);
  }

 private:
  std::variant<int64_t, UOp> v_ = int64_t{0};
};

/// A size as an arg entry (an int, or the UOp of a symbolic size), and back.
inline Arg to_arg(const sint& s) { return s.is_int() ? Arg(s.as_int()) : Arg(s.as_uop()); }
inline sint arg_sint(const Arg& a) { return a.is_uop() ? sint(a.uop()) : sint(a.as_int()); }

/// A tensor's shape: one sint per dimension.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<sint> dims) : d_(dims) {}
  Shape(std::vector<sint> dims) : d_(std::move(dims)) {}                     // NOLINT
  Shape(const std::vector<int64_t>& dims) : d_(dims.begin(), dims.end()) {}  // NOLINT

  size_t size() const { return d_.size(); }
  bool empty() const { return d_.empty(); }
  const sint& operator[](size_t i) const { return d_.at(i); }
  sint& operator[](size_t i) { return d_.at(i); }
  auto begin() const { return d_.begin(); }
  auto end() const { return d_.end(); }
  void push_back(sint s) { d_.push_back(std::move(s)); }
  const std::vector<sint>& dims() const { return d_; }
  bool is_concrete() const {
    return std::all_of(d_.begin(), d_.end(), [](const sint& s) { return s.is_int(); });
  }
  /// Every dimension as a number (all must be concrete).
  std::vector<int64_t> to_vector() const {
    std::vector<int64_t> out;
    for (const sint& s : d_) out.push_back(s.as_int());
    return out;
  }
  /// Every dimension under the variables' bindings (the shape of the value now).
  std::vector<int64_t> values() const {
    std::vector<int64_t> out;
    for (const sint& s : d_) out.push_back(s.value());
    return out;
  }
  /// The number of elements.
  sint numel() const {
    sint n = 1;
    for (const sint& s : d_) n = n * s;
    return n;
  }
  friend bool operator==(const Shape& a, const Shape& b) { return a.d_ == b.d_; }
  friend std::ostream& operator<<(std::ostream& os, const Shape& s) {
    os << '(';
    for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
    return os << (s.size() == 1 ? ",)" : ")");
  }

 private:
  std::vector<sint> d_;
};

/// Shape as text, "(3, 4)", for error messages.
inline std::string to_string(const Shape& s) { return detail::cat(s); }

/// A negative axis counted from the end, checked against ndim.
inline int normalize_axis(int axis, size_t ndim, const char* op) {
  const int n = static_cast<int>(ndim);
  if (axis < -std::max(n, 1) || axis >= std::max(n, 1))
    throw IndexError(
        detail::cat(op, ": axis ", axis, " is out of range for ", ndim, " dimensions"));
  return axis < 0 ? axis + std::max(n, 1) : axis;
}

}  // namespace tinyt::inline v0
