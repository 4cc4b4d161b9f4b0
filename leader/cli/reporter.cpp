#include "leader/cli/reporter.hpp"

#include <boost/json/serialize.hpp>
#include <cstdio>

#include "core/json_text.hpp"

namespace pushonce::leader {

int reporter::ok(const boost::json::object& result, const std::string& text) const {
  if (json_) {
    std::printf("%s\n", json_text(result).c_str());
  } else if (!text.empty()) {
    std::printf("%s%s", text.c_str(), text.back() == '\n' ? "" : "\n");
  }
  std::fflush(stdout);
  return 0;
}

// The CLI edge of the error model: the code's contract word, on stderr and in --json.
int reporter::fail(const failure& f, int exit_code) const {
  std::string code(code_text(f.code));
  std::fprintf(stderr, "error: %s: %s\n", code.c_str(), f.message.c_str());
  if (json_) {
    boost::json::object o{{"error", code}, {"message", f.message}};
    std::printf("%s\n", boost::json::serialize(o).c_str());
  }
  std::fflush(stdout);
  return exit_code;
}

}  // namespace pushonce::leader
