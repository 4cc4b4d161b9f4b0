#include "core/outcome.hpp"

#include "core/redis/error_reply.hpp"

namespace pushonce {

errc code_of(std::string_view code) {
  static constexpr std::pair<std::string_view, errc> names[] = {
      {"bad_request", errc::bad_request},
      {"usage", errc::usage},
      {"fenced", errc::fenced},
      {"already_queued", errc::already_queued},
      {"already_assigned", errc::already_assigned},
      {"not_queued", errc::not_queued},
      {"not_found", errc::not_found},
      {"not_assigned", errc::not_assigned},
      {"exists", errc::exists},
      {"redis_unavailable", errc::redis_unavailable},
      {"internal", errc::internal},
  };
  for (const auto& [name, e] : names)
    if (name == code) return e;
  return errc::other;
}

failure failure_of(const redis::result& r) {
  if (r.ec) return {"redis_unavailable", "Redis did not answer: " + r.ec.message()};
  if (r.value.is_error()) {
    std::string code(r.value.error_code());
    std::string message(r.value.error_message());
    // OOM, BUSY, READONLY, ...: Redis is there but refuses work for now (the connection
    // logs which, and reconnects after a failover).
    if (redis::classify_error_code(code) != redis::error_reply_class::ordinary)
      return {"redis_unavailable", "Redis refused: " + std::string(r.value.str)};
    if (code == "ERR" || code == "NOSCRIPT" || code == "WRONGTYPE") {
      return {"internal", std::string(r.value.str)};
    }
    return {code, message.empty() ? code : message};
  }
  return {"internal", "unexpected reply from Redis"};
}

}  // namespace pushonce
