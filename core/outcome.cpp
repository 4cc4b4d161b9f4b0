#include "core/outcome.hpp"

namespace pushonce {

failure failure_of(const redis::result& r) {
  if (r.ec) return {"redis_unavailable", "Redis did not answer: " + r.ec.message()};
  if (r.value.is_error()) {
    std::string code(r.value.error_code());
    std::string message(r.value.error_message());
    if (code == "ERR" || code == "NOSCRIPT" || code == "WRONGTYPE") {
      return {"internal", std::string(r.value.str)};
    }
    return {code, message.empty() ? code : message};
  }
  return {"internal", "unexpected reply from Redis"};
}

}  // namespace pushonce
