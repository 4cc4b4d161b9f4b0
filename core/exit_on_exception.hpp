#pragma once
// The completion handler of every detached coroutine (instead of asio::detached, which drops
// an escaped exception in silence: a reconnect loop or a sweeper would stop for good while
// the process looks alive). An exception that reaches it is logged with the coroutine's
// name, and the process ends at once with exit code 70 (EX_SOFTWARE), so its supervisor
// (systemd, the container runtime) restarts it. No cleanup runs: the state is not trusted.
//
//   asio::co_spawn(ex, sweeper.run(), exit_on_exception("sweeper"));

#include <exception>
#include <string_view>

namespace pushonce {

/// The exit code of a process ended by exit_on_exception.
inline constexpr int exit_code_on_exception = 70;

/// Logs "<where>: unexpected exception: <what>" at error level and ends the process.
[[noreturn]] void exit_after_exception(std::string_view where, std::exception_ptr e) noexcept;

class exit_on_exception {
 public:
  explicit exit_on_exception(std::string_view where) : where_(where) {}

  void operator()(std::exception_ptr e) const {
    if (e) exit_after_exception(where_, e);
  }
  template <typename T>
  void operator()(std::exception_ptr e, T&&) const {
    if (e) exit_after_exception(where_, e);
  }

 private:
  std::string_view where_;  // a string literal
};

}  // namespace pushonce
