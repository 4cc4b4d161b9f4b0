// The client's WebSocket frames (gateway/protocol/protocol): any text is parsed into an op or an
// error, never a crash; what is rendered back is valid JSON.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/protocol/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = pushonce::gateway::parse_client_frame(text);
  if (auto* e = std::get_if<pushonce::gateway::protocol_error>(&r)) {
    auto json = pushonce::gateway::render_error(e->code, e->message, e->op);
    boost::system::error_code ec;
    boost::json::parse(json, ec);
    if (ec) __builtin_trap();  // an error frame must be JSON whatever the input was
  } else {
    (void)pushonce::gateway::op_name(std::get<pushonce::gateway::client_op>(r));
  }
  return 0;
}
