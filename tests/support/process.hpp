#pragma once
// A child process for integration and e2e tests: fork/exec of a program with arguments and
// extra environment, stdin from /dev/null, stdout and stderr written to files that the test
// can read at any time. The destructor kills (SIGKILL) and reaps a child still running.
// The child also gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG), so a
// crashed test run leaves no servers behind: start processes from the test's main thread.

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pushonce::test {

class temp_dir;

/// Changes to the inherited environment: {name, value} sets, {name, std::nullopt} unsets.
using environment = std::vector<std::pair<std::string, std::optional<std::string>>>;

/// `base` with each of `more`'s variables set (replacing one of the same name) or added.
environment merged(environment base, const environment& more);

class process {
 public:
  /// Starts `program` (a path, or a name looked up in PATH). stdout/stderr go to files in
  /// `output_dir` when given (kept after the process object dies), else in a private
  /// temporary directory. Throws std::runtime_error when the program cannot be executed.
  process(std::string program, std::vector<std::string> args, environment env = {},
          std::string output_dir = {});
  ~process();
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  pid_t pid() const { return pid_; }
  /// True until the child has exited and been reaped.
  bool running();
  /// Sends a signal; a no-op once the child has been reaped.
  void kill(int sig = SIGTERM);
  /// Waits up to `timeout` for the child to exit. The exit status in the shell convention
  /// (the exit code, or 128 + signal number when killed); std::nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  /// SIGTERM, wait up to `grace`, then SIGKILL; returns the exit status.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  /// The exit status once reaped.
  std::optional<int> exit_status() const { return status_; }

  const std::string& stdout_path() const { return stdout_path_; }
  const std::string& stderr_path() const { return stderr_path_; }
  /// Everything written so far.
  std::string stdout_text() const;
  std::string stderr_text() const;

 private:
  bool reap(bool block);

  std::unique_ptr<temp_dir> own_dir_;
  std::string program_;
  std::string stdout_path_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct run_result {
  int exit_code = -1;  // shell convention, as process::wait; -1 on timeout
  std::string out;     // stdout
  std::string err;     // stderr
  bool timed_out = false;
};

/// Runs a program to completion (a CLI call) and returns its exit code and output. On
/// timeout the program is killed and timed_out is set.
run_result run_capture(const std::string& program, const std::vector<std::string>& args,
                       const environment& env = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace pushonce::test
