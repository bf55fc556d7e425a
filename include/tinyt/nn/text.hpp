// Text to token ids: the WordPiece tokenizer of BERT (Hugging Face's BertTokenizer, uncased),
// from a model's vocab.txt, and GPT-2's byte-level BPE, from a GGUF's tokens and merges. Not
// part of tinyt.hpp: include <tinyt/nn/text.hpp> where it is used (its Unicode tables are large).
//
// As BertTokenizer: the text is cleaned (NUL, U+FFFD and control characters dropped, whitespace
// made a space), CJK ideographs become words of their own, words are lower-cased with their
// accents stripped (lower(), NFD, combining marks dropped) and split at punctuation, and each
// word becomes the longest vocabulary pieces from its start ("##" marking a piece inside a word),
// or [UNK] when it cannot be covered or is longer than 100 characters. One difference: a final
// capital sigma lower-cases to σ, where Python's lower() gives ς.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "gguf.hpp"
#include "unicode_classes.hpp"
#include "unicode_folds.hpp"

namespace tinyt::inline v0::nn::text {

namespace detail {
using ::tinyt::detail::cat;

template <size_t N> bool in(const unicode::CodeRange (&ranges)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                                    [](char32_t x, const unicode::CodeRange& r) { return x < r.first; });
  return it != std::begin(ranges) && c <= (it - 1)->last;
}
inline bool is_control(char32_t c) { return in(unicode::control, c); }
inline bool is_whitespace(char32_t c) { return in(unicode::whitespace, c); }
inline bool is_punctuation(char32_t c) { return in(unicode::punctuation, c); }
inline bool is_letter(char32_t c) { return in(unicode::letter, c); }
inline bool is_number(char32_t c) { return in(unicode::number, c); }
inline bool is_space(char32_t c) { return in(unicode::space, c); }
/// What Python's str.split() also splits at, once the text is cleaned: line and paragraph separators.
inline bool splits_words(char32_t c) { return c == U' ' || c == 0x2028 || c == 0x2029; }
/// The CJK ideograph blocks BERT gives a word each (as its _is_chinese_char).
inline bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
/// Appends c lower-cased with its accents stripped.
inline void append_folded(std::u32string& out, char32_t c) {
  if (c >= 0xAC00 && c <= 0xD7A3) {  // a Hangul syllable: NFD is its jamo, computed
    const char32_t s = c - 0xAC00;
    out += static_cast<char32_t>(0x1100 + s / 588);
    out += static_cast<char32_t>(0x1161 + s % 588 / 28);
    if (s % 28) out += static_cast<char32_t>(0x11A7 + s % 28);
    return;
  }
  if (in(unicode::dropped, c)) return;
  const auto* one = std::lower_bound(std::begin(unicode::folds), std::end(unicode::folds), c,
                                     [](const unicode::Fold& f, char32_t x) { return f.from < x; });
  if (one != std::end(unicode::folds) && one->from == c) {
    out += one->to;
    return;
  }
  const auto* many = std::lower_bound(std::begin(unicode::folds_many), std::end(unicode::folds_many), c,
                                      [](const unicode::FoldMany& f, char32_t x) { return f.from < x; });
  if (many == std::end(unicode::folds_many) || many->from != c) {
    out += c;
    return;
  }
  for (char32_t t : many->to)
    if (t) out += t;
}

/// The code points of UTF-8 text; a malformed byte is U+FFFD (which cleaning drops, as Python's
/// errors="replace" then BERT's cleaning would). `starts`, when given, gets the byte offset of
/// each code point and then the text's size, so a caller can cut the original bytes.
inline std::u32string decode_utf8(std::string_view s, std::vector<size_t>* starts = nullptr) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    if (starts) starts->push_back(i);
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    bool ok = n > 0 && i + static_cast<size_t>(n) <= s.size();
    for (int k = 1; ok && k < n; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (cont >> 6) == 2;
      c = (c << 6) | (cont & 0x3F);
    }
    // overlong forms, surrogates and values past U+10FFFF are malformed too
    static constexpr char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && c >= smallest[n] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    out += ok ? c : char32_t{0xFFFD};
    i += ok ? static_cast<size_t>(n) : 1;
  }
  if (starts) starts->push_back(s.size());
  return out;
}
inline std::string encode_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}
}  // namespace detail

/// BERT's WordPiece tokenizer over a vocabulary file.
class WordPieceTokenizer {
 public:
  /// The vocabulary of `vocab_path`: one token per line, its id the line's number from 0. It must
  /// hold [CLS], [SEP], [PAD] and [UNK]. Error naming the file when it cannot be read.
  explicit WordPieceTokenizer(const std::string& vocab_path, bool lower_case = true) : lower_case_(lower_case) {
    std::ifstream in(vocab_path, std::ios::binary);
    if (!in) throw Error(detail::cat("WordPieceTokenizer: cannot read the vocabulary '", vocab_path, "'"));
    std::string line;
    for (int64_t id = 0; std::getline(in, line); ++id) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ids_.emplace(line, id);  // a repeated token keeps its first id
    }
    for (const char* special : {"[CLS]", "[SEP]", "[PAD]", "[UNK]"})
      if (!ids_.count(special)) throw Error(detail::cat("WordPieceTokenizer: '", vocab_path, "' has no ", special, " token"));
  }

  /// The number of distinct tokens.
  size_t size() const { return ids_.size(); }
  /// The id of `token`; Error when the vocabulary lacks it.
  int64_t id(const std::string& token) const {
    const auto it = ids_.find(token);
    if (it == ids_.end()) throw Error(detail::cat("WordPieceTokenizer: no token '", token, "'"));
    return it->second;
  }

  /// The words and punctuation marks of `text` (UTF-8), cleaned and folded, before WordPiece.
  std::vector<std::string> basic_tokens(std::string_view text) const {
    std::vector<std::string> words;
    std::u32string word;
    auto end_word = [&] {
      if (!word.empty()) words.push_back(detail::encode_utf8(word));
      word.clear();
    };
    for (char32_t c : detail::decode_utf8(text)) {
      if (c == 0 || c == 0xFFFD || detail::is_control(c)) continue;
      if (detail::is_whitespace(c) || detail::splits_words(c)) {
        end_word();
        continue;
      }
      std::u32string folded;
      if (lower_case_) detail::append_folded(folded, c);
      else folded = c;
      for (char32_t f : folded) {
        if (detail::is_cjk(f) || detail::is_punctuation(f)) {
          end_word();
          word = f;
          end_word();
        } else {
          word += f;
        }
      }
    }
    end_word();
    return words;
  }

  /// The vocabulary pieces of one word, longest first from its start; {"[UNK]"} when no
  /// sequence of pieces covers it or it is longer than 100 characters.
  std::vector<std::string> wordpieces(const std::string& word) const {
    const std::u32string chars = detail::decode_utf8(word);
    if (chars.size() > 100) return {"[UNK]"};
    std::vector<std::string> pieces;
    for (size_t start = 0; start < chars.size();) {
      size_t end = chars.size();
      for (; end > start; --end) {
        const std::string piece = (start ? "##" : "") + detail::encode_utf8(chars.substr(start, end - start));
        if (ids_.count(piece)) {
          pieces.push_back(piece);
          break;
        }
      }
      if (end == start) return {"[UNK]"};
      start = end;
    }
    return pieces;
  }

  /// [CLS], the ids of `text`'s pieces, [SEP]: at most `max_length` ids (the pieces cut short).
  std::vector<int64_t> encode(std::string_view text, size_t max_length = 512) const {
    if (max_length < 2) throw Error(detail::cat("WordPieceTokenizer::encode: max_length ", max_length, " leaves no room for [CLS] and [SEP]"));
    std::vector<int64_t> out{id("[CLS]")};
    for (const std::string& w : basic_tokens(text))
      for (const std::string& p : wordpieces(w))
        if (out.size() + 1 < max_length) out.push_back(ids_.at(p));
    out.push_back(id("[SEP]"));
    return out;
  }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  bool lower_case_;
};

/// GPT-2's byte-level BPE (llama.cpp's "gpt2" tokenizer model): the text is cut into pieces by
/// GPT-2's pattern ('s 't 're 've 'm 'll 'd, an optional space and letters, numbers, or other
/// symbols, runs of whitespace), each piece's bytes spelled as GPT-2's byte characters, and
/// adjacent symbols merged by the merges' order until none applies. Any bytes encode, malformed
/// UTF-8 included, and decode back to themselves.
class BPETokenizer {
 public:
  /// The vocabulary `tokens` (a token's id is its index; byte characters spell the bytes) and
  /// `merges` ("a b": a and b become ab), the earlier first.
  BPETokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges) : tokens_(std::move(tokens)) {
    for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int64_t>(i));
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t space = merges[r].find(' ');
      if (space == std::string::npos || merges[r].find(' ', space + 1) != std::string::npos)
        throw Error(detail::cat("BPETokenizer: merge ", r, " ('", merges[r], "') is not two symbols"));
      ranks_.emplace(merges[r], static_cast<int64_t>(r));
    }
    // GPT-2's spelling of bytes: the printable ones as themselves, the rest from U+0100 on
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const auto c = static_cast<char32_t>(printable ? b : 256 + next++);
      byte_chars_[b] = detail::encode_utf8(std::u32string(1, c));
      bytes_.emplace(c, static_cast<char>(b));
    }
  }
  /// The tokenizer of a GGUF's metadata (tokenizer.ggml.model "gpt2": tokens and merges).
  static BPETokenizer from_gguf(const std::map<std::string, state::GGUFValue>& metadata) {
    auto strings = [&](const char* key) {
      std::vector<std::string> out;
      const auto it = metadata.find(key);
      if (it == metadata.end()) throw Error(detail::cat("BPETokenizer: the GGUF has no ", key));
      for (const state::GGUFValue& v : it->second.as_array()) out.push_back(v.as_string());
      return out;
    };
    const auto model = metadata.find("tokenizer.ggml.model");
    if (model == metadata.end() || model->second.as_string() != "gpt2")
      throw Error("BPETokenizer: the GGUF's tokenizer.ggml.model is not \"gpt2\"");
    return BPETokenizer(strings("tokenizer.ggml.tokens"), metadata.count("tokenizer.ggml.merges") ? strings("tokenizer.ggml.merges") : std::vector<std::string>{});
  }

  size_t size() const { return tokens_.size(); }
  /// The token ids of `text` (UTF-8); Error when a byte's character is not a token.
  std::vector<int64_t> encode(std::string_view text) const {
    std::vector<int64_t> out;
    for (const std::string& piece : pieces(text)) {
      std::vector<std::string> symbols;
      for (unsigned char b : piece) symbols.push_back(byte_chars_[b]);
      merge(symbols);
      for (const std::string& s : symbols) {
        const auto it = ids_.find(s);
        if (it == ids_.end()) throw Error(detail::cat("BPETokenizer::encode: no token for '", s, "' (of the piece '", piece, "')"));
        out.push_back(it->second);
      }
    }
    return out;
  }
  /// The text of `ids` (their byte characters read back as bytes); Error for an id out of range.
  std::string decode(const std::vector<int64_t>& ids) const {
    std::string out;
    for (int64_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) throw IndexError(detail::cat("BPETokenizer::decode: id ", id, " is out of range [0, ", tokens_.size(), ")"));
      for (char32_t c : detail::decode_utf8(tokens_[static_cast<size_t>(id)])) {
        const auto b = bytes_.find(c);
        out += b != bytes_.end() ? std::string(1, b->second) : detail::encode_utf8(std::u32string(1, c));
      }
    }
    return out;
  }

  /// GPT-2's pieces of `text`, each its bytes of `text`: a malformed UTF-8 byte is cut as U+FFFD
  /// would be but kept as itself, so that decode(encode(text)) == text for any bytes (byte-level
  /// BPE spells every byte).
  static std::vector<std::string> pieces(std::string_view text) {
    std::vector<size_t> starts;
    const std::u32string c = detail::decode_utf8(text, &starts);
    const size_t n = c.size();
    std::vector<std::string> out;
    auto run = [&](size_t j, auto pred) {
      while (j < n && pred(c[j])) ++j;
      return j;
    };
    auto other = [](char32_t x) { return !detail::is_space(x) && !detail::is_letter(x) && !detail::is_number(x); };
    for (size_t i = 0; i < n;) {
      size_t end = i;
      if (c[i] == U'\'') {  // contractions, as GPT-2 spells them (lower case)
        for (std::u32string_view suffix : {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"})
          if (c.compare(i + 1, suffix.size(), suffix) == 0) {
            end = i + 1 + suffix.size();
            break;
          }
      }
      const size_t after_space = c[i] == U' ' && i + 1 < n ? i + 1 : i;
      for (auto cls : {+[](char32_t x) { return detail::is_letter(x); }, +[](char32_t x) { return detail::is_number(x); }})
        if (end == i && cls(c[after_space])) end = run(after_space, cls);
      if (end == i && other(c[after_space])) end = run(after_space, other);
      if (end == i) {  // whitespace: a run, less its last character when a non-space follows
        const size_t k = run(i, [](char32_t x) { return detail::is_space(x); });
        end = k < n && k - 1 > i ? k - 1 : k;
      }
      out.emplace_back(text.substr(starts[i], starts[end] - starts[i]));
      i = end;
    }
    return out;
  }

 private:
  // Merges the pair of adjacent symbols that comes first in the merges, everywhere it occurs,
  // until no pair has a merge.
  void merge(std::vector<std::string>& symbols) const {
    for (;;) {
      int64_t best = -1;
      std::string pair;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto it = ranks_.find(symbols[i] + " " + symbols[i + 1]);
        if (it != ranks_.end() && (best < 0 || it->second < best)) best = it->second, pair = it->first;
      }
      if (best < 0) return;
      const std::string left = pair.substr(0, pair.find(' ')), right = pair.substr(pair.find(' ') + 1);
      std::vector<std::string> merged;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) merged.push_back(left + right), ++i;
        else merged.push_back(symbols[i]);
      }
      symbols = std::move(merged);
    }
  }

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_, ranks_;
  std::string byte_chars_[256];                 // byte -> its character, UTF-8
  std::unordered_map<char32_t, char> bytes_;    // and back
};

}  // namespace tinyt::inline v0::nn::text
