#include "gateway/server/revocation_sync.hpp"

#include <chrono>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "core/lua/revoke.hpp"
#include "gateway/auth/revocations.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace {
long long revocation_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void on_control_message(gateway_state& st, const std::string& payload) {
  auto m = parse_control_message(payload);
  if (!m) {
    log::warn("control channel: ignored a malformed message ({} bytes)", payload.size());
    return;
  }
  // The revocation first: a hello after the close below must already be refused.
  if (m->revoked) st.revoked_users->apply(m->user, *m->revoked);
  auto n = st.registry.close_user(m->user, 1008, "disconnected");
  log::info("disconnect {}{}: {} sessions closed here", m->user, m->revoked ? " (revoked)" : "", n);
}

boost::asio::awaitable<void> load_revocations(gateway_state& st) {
  auto cmd = lua::revocations_snapshot_command(st.keys);
  auto r = co_await st.conn->exec(std::move(cmd));
  if (!r.ok() || !r.value.is_array() || r.value.elements.size() % 2 != 0) {
    log::warn("revocations: could not read {}: kept what is held ({})", lua::revoked_key(st.keys),
              r.ec ? r.ec.message() : r.value.str);
    co_return;
  }
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(r.value.elements.size() / 2);
  for (std::size_t i = 0; i + 1 < r.value.elements.size(); i += 2)
    fields.emplace_back(r.value.elements[i].str, r.value.elements[i + 1].str);
  // A revocation the snapshot teaches was not heard as a broadcast (the sessions were opened
  // before the first snapshot, or the subscriber was away): close the user's sessions here,
  // as the broadcast would have. A session with a token issued since reconnects and passes.
  for (const auto& user :
       st.revoked_users->load(parse_revocation_fields(fields), revocation_clock_ms())) {
    auto n = st.registry.close_user(user, 1008, "disconnected");
    if (n > 0) log::info("revocations: {} revoked while unheard: {} sessions closed here", user, n);
  }
}

}  // namespace pushonce::gateway
