// Small utilities below every stage: a stable hash for cache keys, reading and atomically
// writing a whole file, and numbering the lines of a source for an error message.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace tinyt::inline v0::detail {

/// A deterministic 128-bit hash: FNV-1a-64 and a rotate-multiply lane, each finished with
/// murmur3's fmix64. A cache key, not a cryptographic hash: the cache also compares the source.
class Hash128 {
 public:
  Hash128& update(std::string_view data) {
    for (char ch : data) {
      const uint64_t c = static_cast<unsigned char>(ch);
      a_ = (a_ ^ c) * 0x100000001b3ULL;
      b_ = std::rotl(b_ ^ c, 23) * 0x9e3779b97f4a7c15ULL;
    }
    size_ += data.size();
    return *this;
  }
  /// 32 lowercase hex digits.
  std::string hex() const {
    const uint64_t hi = fmix(a_ ^ size_), lo = fmix(b_ + hi * 0xc2b2ae3d27d4eb4fULL);
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(hi),
                  static_cast<unsigned long long>(lo));
    return out;
  }

 private:
  static uint64_t fmix(uint64_t k) {
    k = (k ^ (k >> 33)) * 0xff51afd7ed558ccdULL;
    k = (k ^ (k >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return k ^ (k >> 33);
  }
  uint64_t a_ = 0xcbf29ce484222325ULL, b_ = 0x6a09e667f3bcc909ULL, size_ = 0;
};

/// The whole file, or nothing when it cannot be read.
inline std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Writes `text` to `path` under a name of this process and thread, then renames it: a reader
/// (another thread or process sharing a cache) sees the old file or the whole new one. False when
/// it could not be written.
inline bool write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  const std::string tmp = path.string() + ".tmp" + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!(out << text) || !out.flush()) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return false;
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) std::filesystem::remove(tmp, error);
  return !error;
}

/// A file a tool writes at exit (VIZ's page, the profiler's trace): `name` in the temporary
/// directory ($TMPDIR, else /tmp), filled with what `make_text` gives; stderr then says "tinyt:
/// <what> written to <path> <hint>", or why it was not. Never throws (it runs at exit).
template <class MakeText>
void write_exit_file(const std::string& name, const char* what, const char* hint, MakeText&& make_text) {
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(error);
  const std::string path = ((error ? std::filesystem::path("/tmp") : dir) / name).string();
  try {
    if (write_file_atomically(path, make_text()))
      std::fprintf(stderr, "tinyt: %s written to %s %s\n", what, path.c_str(), hint);
    else
      std::fprintf(stderr, "tinyt: %s: cannot write %s\n", what, path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tinyt: %s: %s\n", what, e.what());
  }
}

/// The source with line numbers, as quoted in a CompileError.
inline std::string number_lines(std::string_view src) {
  std::string out;
  for (size_t start = 0, line = 1; start < src.size(); ++line) {
    size_t end = std::min(src.find('\n', start), src.size());
    char prefix[24];
    std::snprintf(prefix, sizeof prefix, "%4zu | ", line);
    out.append(prefix).append(src.substr(start, end - start)).append("\n");
    start = end + 1;
  }
  return out;
}

}  // namespace tinyt::inline v0::detail
