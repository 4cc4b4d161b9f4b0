#include "tests/support/process.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

extern char** environ;

namespace pushonce::test {
namespace {

std::atomic<unsigned> g_sequence{0};

class fd_guard {
 public:
  explicit fd_guard(int fd) : fd_(fd) {}
  ~fd_guard() { reset(); }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

int open_or_throw(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  return fd;
}

std::vector<std::string> make_environment(const environment& changes) {
  std::vector<std::string> result;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    bool changed = false;
    for (const auto& [key, value] : changes) changed = changed || key == name;
    if (!changed) result.emplace_back(entry);
  }
  for (const auto& [key, value] : changes)
    if (value) result.push_back(key + "=" + *value);
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

std::string base_name(const std::string& program) {
  auto slash = program.rfind('/');
  return slash == std::string::npos ? program : program.substr(slash + 1);
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(pid_t parent, int in, int out, int err, int report,
                             const char* program, char* const* argv, char* const* envp) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
  ::setpgid(0, 0);  // Ctrl-C reaches only the test; PR_SET_PDEATHSIG then ends the child
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 || ::dup2(report, 3) < 0)
    ::_exit(127);
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  ::close_range(4, ~0U, 0);
  ::execvpe(program, argv, envp);
  int e = errno;
  [[maybe_unused]] auto n = ::write(3, &e, sizeof e);
  ::_exit(127);
}

int status_of(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

}  // namespace

process::process(std::string program, std::vector<std::string> args, environment env,
                 std::string output_dir)
    : program_(std::move(program)) {
  if (output_dir.empty()) {
    own_dir_ = std::make_unique<temp_dir>("pushonce-proc");
    output_dir = own_dir_->path();
  }
  std::string stem = output_dir + "/" + base_name(program_) + "." + std::to_string(++g_sequence);
  stdout_path_ = stem + ".out";
  stderr_path_ = stem + ".err";

  std::vector<std::string> argv_strings;
  argv_strings.push_back(program_);
  for (auto& a : args) argv_strings.push_back(std::move(a));
  std::vector<std::string> env_strings = make_environment(env);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  fd_guard in(open_or_throw("/dev/null", O_RDONLY));
  fd_guard out(open_or_throw(stdout_path_, O_WRONLY | O_CREAT | O_TRUNC));
  fd_guard err(open_or_throw(stderr_path_, O_WRONLY | O_CREAT | O_TRUNC));
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  fd_guard report_read(report[0]);
  fd_guard report_write(report[1]);

  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0)
    exec_child(parent, in.get(), out.get(), err.get(), report_write.get(), program_.c_str(),
               argv.data(), envp.data());

  report_write.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report_read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    reap(true);
    throw std::runtime_error("cannot execute " + program_ + ": " + std::strerror(child_errno));
  }
}

process::~process() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    reap(true);
  }
}

bool process::reap(bool block) {
  if (status_) return true;
  int raw = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &raw, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    status_ = status_of(raw);
    return true;
  }
  if (r < 0) status_ = -1;  // not our child any more (reaped elsewhere)
  return r < 0;
}

bool process::running() {
  return !reap(false);
}

void process::kill(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

std::optional<int> process::wait(std::chrono::milliseconds timeout) {
  if (!wait_until([&] { return reap(false); }, timeout)) return std::nullopt;
  return status_;
}

int process::stop(std::chrono::milliseconds grace) {
  kill(SIGTERM);
  if (auto status = wait(grace)) return *status;
  kill(SIGKILL);
  reap(true);
  return *status_;
}

std::string process::stdout_text() const {
  return read_file(stdout_path_);
}
std::string process::stderr_text() const {
  return read_file(stderr_path_);
}

run_result run_capture(const std::string& program, const std::vector<std::string>& args,
                       const environment& env, std::chrono::milliseconds timeout) {
  process p(program, args, env);
  run_result result;
  if (auto status = p.wait(timeout)) {
    result.exit_code = *status;
  } else {
    p.kill(SIGKILL);
    p.wait(std::chrono::seconds(10));
    result.timed_out = true;
  }
  result.out = p.stdout_text();
  result.err = p.stderr_text();
  return result;
}

environment merged(environment base, const environment& more) {
  for (const auto& change : more) {
    std::erase_if(base, [&](const auto& e) { return e.first == change.first; });
    base.push_back(change);
  }
  return base;
}

}  // namespace pushonce::test
