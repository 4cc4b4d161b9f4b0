#pragma once
// The result of an operation that can be refused: a value, or a failure with a contract
// error code ("already_queued", "not_found", "redis_unavailable", ...) and a message.

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/redis/connection.hpp"

namespace pushonce {

/// Every error code a program acts on, parsed from its text in one place (code_of).
enum class errc {
  other,        // a code no program branches on
  bad_request,  // bad input (scripts: a bad argument)
  usage,        // a bad command line
  fenced,       // a newer leader has acted on the queue
  already_queued,
  already_assigned,
  not_queued,
  not_found,
  not_assigned,
  exists,
  redis_unavailable,  // Redis did not answer
  internal,
};

/// The errc of an error code text ("fenced", "NOSCRIPT", ...); errc::other when unknown.
errc code_of(std::string_view code);

struct failure {
  std::string code;  // the contract's text ("already_queued", "redis_unavailable", ...)
  std::string message;

  errc kind() const { return code_of(code); }
};

struct none {};

template <typename T>
class outcome {
 public:
  outcome(T value) : v_(std::move(value)) {}
  outcome(failure f) : v_(std::move(f)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  const failure& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, failure> v_;
};

/// The failure a Redis result stands for: a transport error → redis_unavailable; an error
/// reply that says Redis refuses work for now (OOM, BUSY, READONLY, ...: redis/error_reply)
/// → redis_unavailable; ERR, NOSCRIPT, WRONGTYPE → internal; any other error reply → its
/// first word as the code (scripts answer "<code> <message>").
failure failure_of(const redis::result& r);

}  // namespace pushonce
