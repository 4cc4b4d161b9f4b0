// The body of POST /api/publish (gateway/http/publish_api): any bytes give requests or a
// bad_request failure, never a crash; an accepted body's answer is valid JSON.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/http/publish_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = pushonce::gateway::parse_publish_body(text);
  if (!r) {
    if (r.error().code != pushonce::errc::bad_request) __builtin_trap();
    return 0;
  }
  if (r.value().requests.empty() ||
      r.value().requests.size() > pushonce::gateway::max_publish_batch)
    __builtin_trap();
  std::vector<pushonce::outcome<pushonce::published>> results;
  for (std::size_t i = 0; i < r.value().requests.size(); ++i)
    results.emplace_back(pushonce::published{std::to_string(i), i % 2 == 0});
  auto answer = pushonce::gateway::render_publish_results(r.value(), results);
  boost::system::error_code ec;
  boost::json::parse(answer.body, ec);
  if (ec) __builtin_trap();
  return 0;
}
