#pragma once
// The result of an operation that can be refused: a value, or a failure (an errc and a
// message for people). A boost::system::result, so `if (!r)`, `r.value()` and `r.error()`
// read as in Boost; the message travels with the code because the contract shows it
// (the HTTP body's "message", the error frame's, the CLI line's).

#include <boost/system/result.hpp>
#include <ostream>
#include <string>
#include <utility>

#include "core/errc.hpp"

namespace pushonce {

struct failure {
  errc code = errc::internal;
  std::string message;

  failure() = default;
  failure(errc c, std::string m) : code(c), message(std::move(m)) {}
};

/// A value with no content, for an outcome that only succeeds or fails.
struct none {};

template <typename T>
using outcome = boost::system::result<T, failure>;

/// "code_text: message" (what a failed check of an outcome prints in a test).
std::ostream& operator<<(std::ostream& os, const failure& f);
std::ostream& operator<<(std::ostream& os, errc e);
/// An outcome printed (a test's failed check): its failure, or that it holds a value. Chosen
/// over Boost's own operator<<, which needs the value type to print too.
template <typename T>
std::ostream& operator<<(std::ostream& os, const boost::system::result<T, failure>& r) {
  if (r.has_value()) return os << "a value";
  return os << r.error();
}

/// What result::value() throws on a failure (a programming error: callers check first).
[[noreturn]] void throw_exception_from_error(const failure& f, const boost::source_location& loc);

}  // namespace pushonce
