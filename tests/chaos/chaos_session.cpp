#include "tests/chaos/chaos_session.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <exception>

#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

namespace pushonce::test::chaos {

void run_session(session_state& s, const std::vector<std::uint16_t>& ports,
                 const std::atomic<bool>& stop) {
  auto backoff = 50ms;
  while (!stop) {
    ws_client ws;
    bool connected = false;
    // Its own gateway first; when that one is down, the other.
    for (int k = 0; k < gateway_count && !connected; ++k) {
      int g = (s.gateway + k) % gateway_count;
      try {
        ws.connect("127.0.0.1", ports[static_cast<std::size_t>(g)], "/ws", {}, 2s);
        s.gateway = g;
        connected = true;
      } catch (const std::exception&) {
      }
    }
    auto retry_later = [&] {
      pace(backoff, "a reconnect's backoff");
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, 500ms);
    };
    if (!connected) {
      retry_later();
      continue;
    }
    std::string hello =
        s.epoch.empty() ? hello_frame(s.user) : hello_frame(s.user, s.epoch, s.last_offset.load());
    if (!ws.send(hello, 2s)) {
      retry_later();
      continue;
    }
    auto w = ws.receive(8s);
    if (!w) {
      // Closed (e.g. 1013 while Redis is away) or no answer: try again.
      if (!ws.closed()) {
        ++s.welcome_failures;
        s.note("no welcome within 8 s");
      }
      retry_later();
      continue;
    }
    auto v = parse_or_null(*w);
    if (!v.is_object() || str_field(v.as_object(), "type") != "welcome") {
      ++s.protocol_errors;
      s.note("first frame is not a welcome: " + *w);
      retry_later();
      continue;
    }
    const auto& wo = v.as_object();
    auto rec = wo.find("recovered");
    bool recovered = rec != wo.end() && rec->value().is_bool() && rec->value().as_bool();
    if (s.epoch.empty()) {
      s.epoch = str_field(wo, "epoch");
    } else if (!recovered || str_field(wo, "epoch") != s.epoch) {
      ++s.not_recovered;
      s.note(fmt::format("resume at offset {} not honoured: {}", s.last_offset.load(), *w));
    }
    ++s.connects;
    s.welcomed = true;
    backoff = 50ms;
    while (!stop) {
      auto f = ws.receive(200ms);
      if (!f) {
        if (ws.closed()) break;
        continue;
      }
      long long received = now_ms();
      auto fv = parse_or_null(*f);
      if (!fv.is_object()) {
        ++s.protocol_errors;
        s.note("not JSON: " + *f);
        continue;
      }
      const auto& fo = fv.as_object();
      auto type = str_field(fo, "type");
      if (type != "message") {
        if (type == "error") {
          ++s.protocol_errors;
          s.note("error frame: " + *f);
        }
        continue;  // state frames (position) carry no offset
      }
      auto id = str_field(fo, "id");
      long long off = int_field(fo, "offset");
      long long last = s.last_offset.load();
      if (off <= last) {
        ++s.offset_dups;
        s.note(fmt::format("offset {} after {} (id {})", off, last, id));
      } else if (off != last + 1) {
        ++s.offset_gaps;
        s.note(fmt::format("offset {} after {} (id {})", off, last, id));
      }
      s.frames.emplace_back(id, off);
      if (long long ts = int_field(fo, "ts"); ts > 0) s.latency_ms.push_back(received - ts);
      if (off > last) s.last_offset = off;
    }
    if (stop) ws.close();
  }
}

}  // namespace pushonce::test::chaos
