#include "core/lua/rate_limit.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

std::string rate_limit_key(const keys& k, std::string_view what, std::string_view secret) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : secret) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return k.plain(fmt::format("ratelimit:{}:{:016x}", what, h));
}

boost::asio::awaitable<outcome<rate_decision>> take_tokens(redis::connection& conn, std::string key,
                                                           long long rate, long long burst,
                                                           long long cost) {
  rate_limit_inputs in{.bucket = std::move(key),
                       .rate_arg = std::to_string(rate),
                       .burst_arg = std::to_string(burst),
                       .cost_arg = std::to_string(cost)};
  auto r = co_await run_script(conn, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 2) co_return failure{errc::internal, "rate_limit.lua: unexpected reply"};
  rate_decision d;
  d.allowed = e[0].integer == 1;
  d.retry_after = std::chrono::milliseconds(e[1].integer);
  co_return d;
}

}  // namespace pushonce::lua
