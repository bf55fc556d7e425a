// Reflection over models (tinygrad's nn.state): which tensors an object holds and under which
// dotted names. C++ cannot list a struct's members, so a struct names them once, with
// TINYT_PARAMETERS or as a Boost.Hana Struct; Tensor members, std::vector, std::array,
// std::map<std::string, T> and std::optional nest to any depth.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/core/tag_of.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/tuple.hpp>

#include "../tensor.hpp"

// -- TINYT_PARAMETERS --------------------------------------------------------------------------
// A preprocessor loop (C++20 __VA_OPT__): each step of the loop takes one rescan, and the
// nested TINYT_PP_EXPAND levels give over 340 of them (so many members).
#define TINYT_PP_PARENS ()
#define TINYT_PP_EXPAND(...) \
  TINYT_PP_EXPAND4(TINYT_PP_EXPAND4(TINYT_PP_EXPAND4(TINYT_PP_EXPAND4(__VA_ARGS__))))
#define TINYT_PP_EXPAND4(...) \
  TINYT_PP_EXPAND3(TINYT_PP_EXPAND3(TINYT_PP_EXPAND3(TINYT_PP_EXPAND3(__VA_ARGS__))))
#define TINYT_PP_EXPAND3(...) \
  TINYT_PP_EXPAND2(TINYT_PP_EXPAND2(TINYT_PP_EXPAND2(TINYT_PP_EXPAND2(__VA_ARGS__))))
#define TINYT_PP_EXPAND2(...) \
  TINYT_PP_EXPAND1(TINYT_PP_EXPAND1(TINYT_PP_EXPAND1(TINYT_PP_EXPAND1(__VA_ARGS__))))
#define TINYT_PP_EXPAND1(...) __VA_ARGS__
/// m(data, x) for each x, separated by commas.
#define TINYT_PP_FOR_EACH(m, data, ...) \
  __VA_OPT__(TINYT_PP_EXPAND(TINYT_PP_FOR_EACH_STEP(m, data, __VA_ARGS__)))
#define TINYT_PP_FOR_EACH_STEP(m, data, x, ...) \
  m(data, x) __VA_OPT__(, TINYT_PP_FOR_EACH_AGAIN TINYT_PP_PARENS(m, data, __VA_ARGS__))
#define TINYT_PP_FOR_EACH_AGAIN() TINYT_PP_FOR_EACH_STEP
// (name, accessor) as Boost.Hana's accessors give them; the accessor takes `const Type&`, so a
// misspelt member fails here and not at the first get_state_dict.
#define TINYT_PP_MEMBER(Type, m) \
  ::boost::hana::make_pair(      \
      #m, [](const Type& tinyt_obj) -> const auto& { return tinyt_obj.m; })

/// Registers the members of `Type` that hold tensors (Tensor, layers, containers of them), in
/// order, for nn::state. Write it after the struct, at namespace scope in the struct's namespace.
#define TINYT_PARAMETERS(Type, ...)                                                          \
  [[maybe_unused]] inline auto tinyt_parameters_of(const Type*) {                            \
    return ::boost::hana::make_tuple(TINYT_PP_FOR_EACH(TINYT_PP_MEMBER, Type, __VA_ARGS__)); \
  }                                                                                          \
  static_assert(true, "TINYT_PARAMETERS needs a ';' after it")

namespace tinyt::inline v0::nn::state {

namespace detail {
namespace hana = boost::hana;

template <class T> inline constexpr bool dependent_false = false;
template <class T> struct is_sequence : std::false_type {};
template <class T, class A> struct is_sequence<std::vector<T, A>> : std::true_type {};
template <class T, size_t N> struct is_sequence<std::array<T, N>> : std::true_type {};
template <class T> struct is_string_map : std::false_type {};
template <class T, class C, class A>
struct is_string_map<std::map<std::string, T, C, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

/// A struct registered with TINYT_PARAMETERS: the hook is found by argument-dependent lookup.
template <class T>
concept has_hook = requires(const T* p) {
  tinyt_parameters_of(p);
};
template <class T>
concept reflected = has_hook<T> || hana::Struct<T>::value;
/// Configuration members of a Hana struct (sizes, flags, names) hold no tensors; they are skipped.
template <class T>
concept plain_data = std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>;

/// The (name, accessor) pairs of a reflected struct.
template <class T> auto members() {
  if constexpr (has_hook<T>)
    return tinyt_parameters_of(static_cast<const T*>(nullptr));
  else
    return hana::accessors<T>();
}
inline std::string name_of(const char* name) { return name; }
template <class S>
requires std::is_same_v<hana::tag_of_t<S>, hana::string_tag> std::string name_of(const S& name) {
  return hana::to<const char*>(name);
}
inline std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

/// Calls emit(key, tensor) for every defined tensor under `value`, keys prefixed by `key`.
template <class T, class Emit> void walk(const T& value, const std::string& key, Emit& emit) {
  if constexpr (std::is_base_of_v<Tensor, T>) {
    if (value.defined()) emit(key, static_cast<const Tensor&>(value));
  } else if constexpr (is_sequence<T>::value) {
    size_t i = 0;
    for (const auto& item : value) walk(item, join(key, std::to_string(i++)), emit);
  } else if constexpr (is_string_map<T>::value) {
    for (const auto& [name, item] : value) walk(item, join(key, name), emit);
  } else if constexpr (is_optional<T>::value) {
    if (value) walk(*value, key, emit);
  } else if constexpr (reflected<T>) {
    hana::for_each(members<T>(), [&](const auto& member) {
      walk(hana::second(member)(value), join(key, name_of(hana::first(member))), emit);
    });
  } else if constexpr (!plain_data<T>) {
    static_assert(dependent_false<T>,
                  "tinyt::nn::state: this member type holds no tensors tinyt can find: register "
                  "the struct with TINYT_PARAMETERS(Type, members...) or make it a Boost.Hana "
                  "Struct, or leave the member out of TINYT_PARAMETERS");
  }
}
}  // namespace detail

/// Every tensor in `obj` by dotted name ("l1.weight", "layers.0.bias"); empty handles are skipped.
template <class T> std::map<std::string, Tensor> get_state_dict(const T& obj) {
  std::map<std::string, Tensor> out;
  auto emit = [&](const std::string& key, const Tensor& t) { out.emplace(key, t); };
  detail::walk(obj, "", emit);
  return out;
}

/// The tensors of get_state_dict in its order, each once (a tensor tied to two names is one).
template <class T> std::vector<Tensor> get_parameters(const T& obj) {
  std::vector<Tensor> out;
  std::set<const void*> seen;
  for (const auto& [key, t] : get_state_dict(obj))
    if (seen.insert(t.id()).second) out.push_back(t);
  return out;
}

/// Copies the values of `state_dict` (as they are at the call) into the tensors of `obj`, by name,
/// and realizes them. Every name is checked before anything is written: a shape or dtype that
/// differs (ShapeError, DTypeError), and when `strict`, a name missing from either side (Error),
/// leave obj unchanged.
template <class T>
void load_state_dict(T& obj, const std::map<std::string, Tensor>& state_dict, bool strict = true) {
  using tinyt::detail::cat;
  const auto model = get_state_dict(obj);
  auto list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "'" : ", '") + k + "'";
    return s;
  };
  std::vector<std::string> missing, unexpected;
  for (const auto& [key, t] : model)
    if (!state_dict.count(key)) missing.push_back(key);
  for (const auto& [key, t] : state_dict)
    if (!model.count(key)) unexpected.push_back(key);
  if (strict && !missing.empty())
    throw Error(cat("load_state_dict: the state dict has no tensor for ", list(missing)));
  if (strict && !unexpected.empty())
    throw Error(cat("load_state_dict: the model has no tensor named ", list(unexpected)));
  std::vector<std::pair<Tensor, Tensor>> copies;  // (the model's tensor, its new value)
  for (const auto& [key, dst] : model) {
    auto it = state_dict.find(key);
    if (it == state_dict.end()) continue;
    const Tensor& src = it->second;
    if (!src.defined())
      throw Error(cat("load_state_dict: '", key, "' is the empty Tensor() in the state dict"));
    if (src.shape() != dst.shape())
      throw ShapeError(cat("load_state_dict: '", key, "' has shape ", dst.shape(),
                           " in the model but ", src.shape(), " in the state dict"));
    if (src.dtype() != dst.dtype())
      throw DTypeError(cat("load_state_dict: '", key, "' is ", dst.dtype().name(),
                           " in the model but ", src.dtype().name(), " in the state dict"));
    // a new handle on the value as it is now: a state dict taken from this very model keeps its
    // values while the model's tensors are overwritten
    copies.emplace_back(dst, Tensor(src.uop()));
  }
  std::set<const void*> seen;
  for (auto& [dst, value] : copies) {
    if (!seen.insert(dst.id()).second) continue;  // a tied tensor takes its first name's value
    Tensor handle = dst;  // a copy of the handle: the object's member sees the assign
    // one realize per tensor: with values that read other targets' memory (a swap), assigns
    // realized together make a cycle the engine does not break (it copies out what a pending
    // value needs only before one realize)
    handle.assign(value.to(dst.device())).realize();
  }
}

}  // namespace tinyt::inline v0::nn::state
