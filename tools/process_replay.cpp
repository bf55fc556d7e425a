// Replays the kernels a run recorded with PROCESS_REPLAY=<dir> (include/tinyt/engine/replay.hpp):
// lowers and renders each recorded AST again, with its recorded opts and device, by the code of
// this build, and prints the kernels whose source is not the recorded one, with a diff.
//
//   process_replay DIR [--diffs N]     (N: the diffs printed at most; 10 by default)
//
// Exits 0 when every record replayed (changed or not), 2 when one could not be read or lowered,
// 1 on bad arguments. tools/process_replay.py records a run and replays it against another commit.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

/// A unified diff of two texts by their longest common subsequence of lines, 2 lines of context.
void print_diff(const std::string& before, const std::string& after) {
  const std::vector<std::string> a = lines_of(before), b = lines_of(after);
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<uint32_t>> common(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;) common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
  std::vector<std::pair<char, std::string>> script;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) script.emplace_back(' ', a[i++]), ++j;
    else if (j == m || (i < n && common[i + 1][j] >= common[i][j + 1])) script.emplace_back('-', a[i++]);
    else script.emplace_back('+', b[j++]);
  }
  constexpr size_t context = 2;
  std::vector<bool> shown(script.size(), false);
  for (size_t k = 0; k < script.size(); ++k)
    if (script[k].first != ' ')
      for (size_t x = k >= context ? k - context : 0; x <= k + context && x < script.size(); ++x) shown[x] = true;
  bool skipped = false;
  for (size_t k = 0; k < script.size(); ++k) {
    if (!shown[k]) {
      skipped = true;
      continue;
    }
    if (skipped) std::printf("  ...\n");
    skipped = false;
    std::printf("%c %s\n", script[k].first, script[k].second.c_str());
  }
}
}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace tinyt;
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: %s DIR [--diffs N]\n", argv[0]);
    return 1;
  }
  const fs::path dir = argv[1];
  size_t max_diffs = argc > 3 && std::string(argv[2]) == "--diffs" ? std::stoul(argv[3]) : 10;
  std::vector<fs::path> records;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (entry.path().extension() == ".kernel") records.push_back(entry.path());
  if (error) {
    std::fprintf(stderr, "process_replay: cannot read %s: %s\n", dir.c_str(), error.message().c_str());
    return 1;
  }
  std::sort(records.begin(), records.end());
  size_t changed = 0, failed = 0;
  for (const fs::path& file : records) {
    try {
      const std::optional<std::string> text = tinyt::detail::read_file(file);
      if (!text) throw Error("cannot read the file");
      const engine::replay::Record record = engine::replay::parse_record(*text);
      const std::string now = engine::rerender(record);
      if (now == record.source) continue;
      if (changed++ < max_diffs) {
        std::printf("=== %s (%s): the recorded source, then this build's\n", record.name.c_str(), file.filename().c_str());
        print_diff(record.source, now);
      }
    } catch (const std::exception& e) {
      ++failed;
      std::printf("=== %s: cannot replay: %s\n", file.filename().c_str(), e.what());
    }
  }
  std::printf("process replay: %zu kernels, %zu changed, %zu unchanged, %zu could not be replayed\n", records.size(), changed,
              records.size() - changed - failed, failed);
  return failed ? 2 : 0;
}
