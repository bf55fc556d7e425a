// What the web demos (web_fashion_mnist.cpp, web_minilm.cpp) share: the page scripts of
// examples/web/, JSON for the page's data and the CPU's reference, and the native check that the
// step replayed on WEBGPU gives the CPU's values before it is exported.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tinyt.hpp>

namespace web_demo {

/// The text of examples/web/<name> (the page scripts), found through TINYT_WEB_PAGES.
inline std::string page_script(const std::string& name) {
#ifdef TINYT_WEB_PAGES
  const std::string path = std::string(TINYT_WEB_PAGES) + "/" + name;
#else
  const std::string path = "examples/web/" + name;
#endif
  std::ifstream in(path, std::ios::binary);
  if (!in) throw tinyt::Error("web demo: cannot read the page script " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A JSON array of numbers; floats with 9 significant digits, which give the float32 back.
template <class T> std::string json_array(const std::vector<T>& v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));
    else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v[i]));
    s += (i ? "," : "") + std::string(buf);
  }
  return s + "]";
}

/// A JSON string (quotes, backslashes and control characters escaped).
inline std::string json_string(const std::string& text) {
  std::string s = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') s += '\\', s += static_cast<char>(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      s += buf;
    } else s += static_cast<char>(c);
  }
  return s + "\"";
}

/// Writes `text` to `path`; Error when it cannot.
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!(out << text) || !out.flush()) throw tinyt::Error("web demo: cannot write " + path);
}

/// The largest |a - b| / (atol + rtol |b|) over the elements: at most 1 means within tolerance.
inline double worst(const std::vector<float>& a, const std::vector<float>& b, double rtol, double atol) {
  if (a.size() != b.size()) return INFINITY;
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::abs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::abs(static_cast<double>(b[i]))));
  return w;
}

}  // namespace web_demo
