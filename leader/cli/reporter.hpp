#pragma once
// How an admin command answers (docs/protocol.md "Programs and common options"): text on
// stdout, or with --json exactly one JSON object on stdout; errors as one "error: ..." line
// on stderr (and, with --json, {"error","message"} on stdout) with exit code 1 or 2.

#include <boost/json/object.hpp>
#include <string>

#include "core/outcome.hpp"

namespace pushonce::leader {

class reporter {
 public:
  explicit reporter(bool json) : json_(json) {}
  bool json() const { return json_; }

  /// Prints the result: the object with --json, else the text. Returns exit 0.
  int ok(const boost::json::object& result, const std::string& text) const;
  /// Prints a failure; exit 2 for "usage"/"bad_request"-by-usage, else 1.
  int fail(const failure& f, int exit_code = 1) const;
  int usage(const std::string& message) const { return fail({errc::usage, message}, 2); }

 private:
  bool json_;
};

}  // namespace pushonce::leader
