#include "gateway/session/session_services.hpp"

#include "gateway/auth/revocations.hpp"
#include "gateway/limits/slot_counter.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"

namespace pushonce::gateway {

bool session_services::revoked(const identity& who) const {
  return revoked_users.revoked(who);
}

session_services session_services_of(gateway_state& st) {
  return session_services{st.settings,     st.metrics,
                          st.keys,         st.presence_instance,
                          st.conn,         st.presence,
                          st.auth.get(),   *st.revoked_users,
                          st.registry,     st.inboxes.get(),
                          st.queues.get(), st.positions.get(),
                          st.pow.get(),    st.sessions_per_user.get()};
}

}  // namespace pushonce::gateway
