#pragma once
// The checks at the end of the chaos run, once quiet: every outbox entry is in its user's
// inbox exactly once, every custom publish's id too, inbox offsets are 1..N, and every
// session received exactly its user's inbox, in order.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "tests/chaos/chaos_load.hpp"
#include "tests/chaos/chaos_probe.hpp"
#include "tests/chaos/chaos_session.hpp"

namespace pushonce::test::chaos {

struct delivery_report {
  long long duplicates = 0;  // an id twice in an inbox, or twice in a session
  long long losses = 0;      // an outboxed or accepted message not in its inbox, or an inbox
                             // entry its session never got
  long long gaps = 0;        // a session's offset that skipped one
  long long phantoms = 0;    // an inbox id that is in no outbox
  long long mismatches = 0;  // a session's frame at offset N is not the inbox's entry N
  long long inbox_malformed = 0, inbox_offset_errors = 0;
  long long assignments = 0;  // assignment frames in the inboxes
  long long frames = 0, not_recovered = 0, welcome_failures = 0, protocol_errors = 0,
            reconnects = 0;
  std::size_t custom_ids = 0;        // distinct ids the custom publishes were given
  long long bus_messages = 0;        // messages in the bus outbox (a batch is one entry)
  std::vector<long long> latencies;  // receive time - ts, every frame of every session
  std::vector<std::string> details;  // the first 20 problems, for the failure message
};

delivery_report check_delivery(probe& db, const pushonce::keys& k,
                               const std::vector<std::unique_ptr<session_state>>& sessions,
                               const load_result& load);

}  // namespace pushonce::test::chaos
