// A small, strict JSON reader and the string quoting a writer needs: enough for file headers
// (safetensors) that may come from anyone, and the quoting of the profiler's trace and VIZ's
// page. One facility below every stage that uses it (nn/, viz/, the profiler), so none reaches
// into another's folder for it. Strict because a header that two readers parse differently is
// how polyglot and smuggling attacks start: RFC 8259 grammar only, valid UTF-8 only, no duplicate
// keys, nothing but whitespace after the value, and a depth limit so a header of nested brackets
// cannot overflow the stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "error.hpp"

namespace tinyt::inline v0 {
namespace json {

struct Member;

/// One parsed JSON value. Objects keep their members in the order of the text.
struct Value {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;          // string: the decoded UTF-8; number: the literal as written
  std::vector<Value> items;  // array
  // object. A struct of its own, not std::pair<std::string, Value>: a pair of the incomplete
  // Value is instantiated while Value is being defined, and libstdc++'s pair then asks whether
  // Value is default-constructible, which needs the pair complete (clang rejects the cycle).
  std::vector<Member> members;
  size_t offset = 0;  // byte offset of the value in the parsed text, for error messages

  /// The member named `key` of an object, or nullptr.
  const Value* find(std::string_view key) const;
  /// The value of a number written as a non-negative integer that fits uint64_t (no sign,
  /// fraction or exponent), else nothing: sizes and offsets must not round through a double.
  std::optional<uint64_t> as_uint() const {
    if (kind != Kind::number || text.empty() || text[0] == '-') return std::nullopt;
    uint64_t v = 0;
    for (char c : text) {
      if (c < '0' || c > '9') return std::nullopt;
      const auto digit = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - digit) / 10) return std::nullopt;
      v = v * 10 + digit;
    }
    return v;
  }
};

/// One `"key": value` of an object.
struct Member {
  std::string key;
  Value value;
};

inline const Value* Value::find(std::string_view key) const {
  for (const Member& m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

/// The name of a kind, for messages ("expected an object, found an array").
inline const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::null:
      return "null";
    case Value::Kind::boolean:
      return "a boolean";
    case Value::Kind::number:
      return "a number";
    case Value::Kind::string:
      return "a string";
    case Value::Kind::array:
      return "an array";
    case Value::Kind::object:
      return "an object";
  }
  return "?";
}

/// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when it is not one:
/// overlong forms, surrogates and code points past U+10FFFF are invalid, as RFC 3629 says.
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0)
    n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/// Whether `s` is valid UTF-8 (what a JSON text must be).
inline bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// `s` as a JSON string literal, escaped as serde_json (the reference safetensors writer) does,
/// so that a header we write is byte-identical to theirs: `"` `\` and control characters only.
inline std::string quote(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

namespace detail {
using ::tinyt::detail::cat;

class Parser {
 public:
  Parser(std::string_view text, std::string context, size_t max_depth)
      : s_(text), context_(std::move(context)), max_depth_(max_depth) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (i_ != s_.size()) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(cat(context_, ": invalid JSON at byte ", i_, ": ", what));
  }
  bool at_end() const { return i_ >= s_.size(); }
  // '\0' at the end: never one of the characters the grammar looks for, so no test below needs
  // to check for the end as well (a NUL byte in the text is rejected the same way)
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  void skip_space() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(cat("expected '", c, "'", found()));
    ++i_;
  }
  std::string found() const {
    if (at_end()) return ", found the end of the text";
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7F) return cat(", found '", s_[i_], "'");
    return cat(", found byte 0x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
  }

  Value value(size_t depth) {
    if (depth >= max_depth_) fail(cat("nested deeper than ", max_depth_, " levels"));
    Value v;
    v.offset = i_;
    switch (peek()) {
      case '{':
        object(v, depth);
        break;
      case '[':
        array(v, depth);
        break;
      case '"':
        v.kind = Value::Kind::string, v.text = string();
        break;
      case 't':
        literal("true"), v.kind = Value::Kind::boolean, v.boolean = true;
        break;
      case 'f':
        literal("false"), v.kind = Value::Kind::boolean;
        break;
      case 'n':
        literal("null");
        break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = Value::Kind::number, v.text = number();
          break;
        }
        fail(cat("expected a value", found()));
    }
    return v;
  }

  void object(Value& v, size_t depth) {
    v.kind = Value::Kind::object;
    ++i_;
    skip_space();
    if (peek() == '}') return void(++i_);
    std::unordered_set<std::string> keys;
    for (;;) {
      skip_space();
      if (peek() != '"') fail(cat("expected a string key", found()));
      const size_t key_at = i_;
      std::string key = string();
      if (!keys.insert(key).second) {
        i_ = key_at;
        fail(cat("duplicate key ", quote(key)));
      }
      skip_space();
      expect(':');
      skip_space();
      Value member = value(depth + 1);
      v.members.push_back({std::move(key), std::move(member)});
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void array(Value& v, size_t depth) {
    v.kind = Value::Kind::array;
    ++i_;
    skip_space();
    if (peek() == ']') return void(++i_);
    for (;;) {
      skip_space();
      v.items.push_back(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }

  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail(cat("expected a value", found()));
    i_ += word.size();
  }

  std::string number() {
    const size_t start = i_;
    const auto digits = [&] {
      const size_t from = i_;
      while (peek() >= '0' && peek() <= '9') ++i_;
      if (i_ == from) fail(cat("expected a digit", found()));
    };
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
      if (peek() >= '0' && peek() <= '9') fail("a number may not have leading zeros");
    } else {
      digits();
    }
    if (peek() == '.') ++i_, digits();
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      const char c = peek();
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        fail(cat("expected 4 hex digits after \\u", found()));
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    const auto put = [&](uint32_t b) { out += static_cast<char>(b); };
    if (cp < 0x80) {
      put(cp);
    } else if (cp < 0x800) {
      put(0xC0 | (cp >> 6)), put(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      put(0xE0 | (cp >> 12)), put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
    } else {
      put(0xF0 | (cp >> 18)), put(0x80 | ((cp >> 12) & 0x3F));
      put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail(cat("a raw control character in a string", found()));
      if (c >= 0x80) {
        const size_t n = utf8_sequence_length(s_, i_);
        if (n == 0) fail("invalid UTF-8 in a string");
        out.append(s_.substr(i_, n));
        i_ += n;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++i_;
        continue;
      }
      ++i_;
      switch (peek()) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          ++i_;
          uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a lone low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a pair: \uD83D\uDE00
            if (s_.substr(i_, 2) != "\\u") fail("a high surrogate not followed by a low one");
            i_ += 2;
            const uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          continue;  // hex4 moved past the digits
        }
        default:
          fail(cat("an invalid escape", found()));
      }
      ++i_;
    }
  }

  std::string_view s_;
  std::string context_;
  size_t max_depth_;
  size_t i_ = 0;
};
}  // namespace detail

/// Parses `text` as exactly one JSON value (whitespace around it allowed). Error, starting with
/// `context` and naming the byte offset, for anything RFC 8259 does not allow, invalid UTF-8, a
/// duplicate key in any object, or nesting deeper than `max_depth`.
inline Value parse(std::string_view text, const std::string& context, size_t max_depth = 64) {
  return detail::Parser(text, context, max_depth).document();
}

}  // namespace json

// its name before it moved here out of nn/ (tests and programs may spell it so)
namespace nn {
namespace json = tinyt::json;
}
}  // namespace tinyt::inline v0
