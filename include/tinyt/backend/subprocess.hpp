// Running a program without a shell: PATH lookup as execvp does it, and posix_spawn with its
// stdout and stderr captured. The backends use it to run compilers and ask their versions.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"

extern char** environ;  // the environment a child inherits (POSIX; not declared by every header)

namespace tinyt::inline v0 {
namespace backend {
namespace detail {
using ::tinyt::detail::cat;

/// A command line split on white space (no shell quoting), as CC="ccache gcc" is meant.
inline std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

/// argv as one line, for messages.
inline std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

inline bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// `name` resolved like execvp does (PATH search unless it has a '/'); "" when not found.
inline std::string find_program(const std::string& name) {
  auto runnable = [](const std::string& path) {
    return is_file(path) && access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return runnable(name) ? name : "";
  const char* env = std::getenv("PATH");
  std::string_view dirs = env ? env : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir(dirs.substr(start, end - start));
    std::string path = (dir.empty() ? "." : dir) + "/" + name;
    if (runnable(path)) return path;
    start = end + 1;
  }
  return "";
}

/// How a child ended: spawn_error is an errno when it could not start; else status is waitpid's.
struct ProcessResult {
  int spawn_error = 0, status = 0;
  std::string output;  // stdout and stderr, interleaved as written
  bool ok() const { return spawn_error == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string describe() const {
    if (WIFSIGNALED(status)) return cat("killed by signal ", WTERMSIG(status));
    return cat("exit status ", WEXITSTATUS(status));
  }
};

/// Runs argv (argv[0] a path, no shell) with stdin from /dev/null, capturing stdout and stderr.
inline ProcessResult run_process(const std::vector<std::string>& argv) {
  int pipe_fds[2];  // close-on-exec, so children spawned by other threads do not hold it open
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw DeviceError(cat("tinyt: cannot create a pipe: ", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  ProcessResult result;
  pid_t pid = 0;
  result.spawn_error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  char buffer[4096];
  for (ssize_t n; result.spawn_error == 0 && (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;)
    if (n > 0)
      result.output.append(buffer, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  ::close(pipe_fds[0]);
  while (result.spawn_error == 0 && waitpid(pid, &result.status, 0) < 0)
    if (errno != EINTR) throw DeviceError(cat("tinyt: waitpid failed: ", std::strerror(errno)));
  return result;
}

}  // namespace detail
}  // namespace backend
}  // namespace tinyt::inline v0
