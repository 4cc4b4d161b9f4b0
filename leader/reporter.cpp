#include "leader/reporter.hpp"

#include <boost/json/serialize.hpp>
#include <cstdio>

namespace pushonce::leader {

int reporter::ok(const boost::json::object& result, const std::string& text) const {
  if (json_) {
    std::printf("%s\n", boost::json::serialize(result).c_str());
  } else if (!text.empty()) {
    std::printf("%s%s", text.c_str(), text.back() == '\n' ? "" : "\n");
  }
  std::fflush(stdout);
  return 0;
}

int reporter::fail(const failure& f, int exit_code) const {
  std::fprintf(stderr, "error: %s: %s\n", f.code.c_str(), f.message.c_str());
  if (json_) {
    boost::json::object o{{"error", f.code}, {"message", f.message}};
    std::printf("%s\n", boost::json::serialize(o).c_str());
  }
  std::fflush(stdout);
  return exit_code;
}

}  // namespace pushonce::leader
