#include "bench/ws_session.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/websocket.hpp>
#include <memory>
#include <random>

#include "bench/wire.hpp"
#include "bench/ws_frames.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

// A session that never got its first welcome gives up after this many attempts.
constexpr int first_attempts = 10;

// What one session's text frames do, outside the read loop.
struct frame_context {
  ws_session& s;
  run_state& run;
  bool resume;
  std::int64_t t0;  // when this connection began (ns)
  bool welcomed;
};

void on_frame(frame_context& c, std::string_view text) {
  auto& s = c.s;
  auto& run = c.run;
  auto f = parse_frame(text);
  switch (f.type) {
    case server_frame::kind::message: {
      if (f.run != run.run_id || f.seq < 0) {
        s.verifier.on_foreign();
        break;
      }
      auto v = s.verifier.on_message(static_cast<std::uint64_t>(f.seq), f.offset);
      if (v == session_verifier::verdict::fresh) {
        const auto now = run.now();
        {
          std::lock_guard lock(s.slot->mutex);
          s.slot->latency.record(
              static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - f.due)) / 1000);
          if (f.ts > 0) {
            const auto wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
            s.slot->accepted.record(
                static_cast<std::uint64_t>(std::max<std::int64_t>(0, wall_us - f.ts * 1000)));
          }
        }
        run.received.fetch_add(1, std::memory_order_relaxed);
        run.last_frame.store(now, std::memory_order_relaxed);
      } else if (v == session_verifier::verdict::duplicate) {
        ++run.duplicates;
      }
      break;
    }
    case server_frame::kind::welcome: {
      const auto now = run.now();
      s.verifier.on_welcome(c.resume, f.recovered, f.epoch, f.offset, now);
      if (!c.welcomed && !c.resume) {
        std::lock_guard lock(s.slot->mutex);
        s.slot->connect.record(static_cast<std::uint64_t>((now - c.t0) / 1000));
      }
      c.welcomed = true;
      break;
    }
    case server_frame::kind::error:
      ++run.error_frames;
      break;
    case server_frame::kind::bad:
      ++run.bad_frames;
      break;
    case server_frame::kind::other:
      break;
  }
}

}  // namespace

asio::awaitable<void> run_session(ws_session& s, run_state& run, std::function<void()> opened) {
  auto ex = co_await asio::this_coro::executor;
  std::minstd_rand rng(static_cast<unsigned>(s.index * 7919 + 1));
  asio::steady_timer pause(ex);
  int failures = 0;
  bool told = false;
  auto tell = [&] {
    if (!told) {
      told = true;
      opened();
    }
  };
  boost::system::error_code ec;
  tcp::resolver resolver(ex);
  auto [rec, results] =
      co_await resolver.async_resolve(s.gateway.host, std::to_string(s.gateway.port), use_tuple);
  if (rec || results.empty()) {
    s.gave_up = true;
    ++run.given_up;
    tell();
    co_return;
  }
  const tcp::endpoint target = *results.begin();
  while (!run.stopping) {
    if (failures > 0) {
      // Reconnect after 50-500 ms (full jitter), as a browser client would.
      pause.expires_after(std::chrono::milliseconds(50 + rng() % 450));
      co_await pause.async_wait(use_tuple);
      if (run.stopping) break;
    }
    // A plain socket under the WebSocket layer: beast::tcp_stream would add its timeout
    // bookkeeping to every read, and reads are this program's hot path. The connect and
    // the handshake get a timer of their own instead.
    websocket::stream<tcp::socket> ws(ex);
    auto& sock = ws.next_layer();
    sock.open(target.protocol(), ec);
    if (!s.source.empty()) {
      // Each (source, gateway) pair has its own ephemeral ports; the port is chosen at
      // connect (IP_BIND_ADDRESS_NO_PORT), not searched for at bind.
      int one = 1;
      ::setsockopt(sock.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sock.bind({asio::ip::make_address(s.source, ec), 0}, ec);
    }
    s.close = [&sock] {
      boost::system::error_code ignored;
      sock.close(ignored);
    };
    const auto t0 = run.now();
    asio::steady_timer deadline(ex, std::chrono::seconds(10));
    auto armed = std::make_shared<bool>(true);  // the handler may run after the socket is gone
    deadline.async_wait([&sock, armed](boost::system::error_code e) {
      if (!e && *armed) sock.close(e);
    });
    auto [cec] = co_await sock.async_connect(target, use_tuple);
    bool ok = !cec;
    if (ok) sock.set_option(tcp::no_delay(true), ec);
    if (ok && !s.sse) {
      auto [hec] = co_await ws.async_handshake(s.gateway.host, "/ws", use_tuple);
      ok = !hec;
    }
    *armed = false;
    deadline.cancel();
    if (ok && s.sse) {
      // GET /sse, then the events: each event's data is the frame a WebSocket would carry.
      const bool resume = s.verifier.welcomed();
      std::string req = "GET /sse?" + (s.token.empty() ? "user=" + s.name : "token=" + s.token);
      if (resume)
        req += "&since=" + s.verifier.epoch() + ":" + std::to_string(s.verifier.resume_offset());
      req += " HTTP/1.1\r\nHost: " + s.gateway.host + "\r\nAccept: text/event-stream\r\n\r\n";
      auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(req), use_tuple);
      ok = !wec;
      sock.non_blocking(true, ec);
      frame_context fc{s, run, resume, t0, false};
      std::string pending;
      bool head_done = false;
      while (ok && !run.stopping) {
        auto [rec2] = co_await sock.async_wait(tcp::socket::wait_read, use_tuple);
        if (rec2) break;
        thread_local std::array<char, 65536> sbuf;
        boost::system::error_code rec3;
        const auto n = sock.read_some(asio::buffer(sbuf), rec3);
        if (rec3 == asio::error::would_block) continue;
        if (rec3) break;
        pending.append(sbuf.data(), n);
        if (!head_done) {
          auto end = pending.find("\r\n\r\n");
          if (end == std::string::npos) continue;
          if (pending.compare(0, 12, "HTTP/1.1 200") != 0) break;
          pending.erase(0, end + 4);
          head_done = true;
        }
        std::size_t pos = 0, end;
        while ((end = pending.find("\n\n", pos)) != std::string::npos) {
          std::string_view block(pending.data() + pos, end - pos);
          pos = end + 2;
          // The frame is the one data line of the event (the gateway's frames are one line).
          auto d = block.find("data: ");
          if (d == std::string_view::npos || (d != 0 && block[d - 1] != '\n')) continue;
          auto line = block.substr(d + 6);
          line = line.substr(0, line.find('\n'));
          on_frame(fc, line);
          if (fc.welcomed && failures > 0) failures = 0;
          if (fc.welcomed) tell();
        }
        pending.erase(0, pos);
      }
      if (fc.welcomed && !run.stopping) ++run.disconnects;
    } else if (ok) {
      const bool resume = s.verifier.welcomed();
      auto hello =
          encode_client_frame(ws_frame_decoder::opcode::text,
                              hello_frame(s.name, s.token, resume ? &s.verifier.epoch() : nullptr,
                                          s.verifier.resume_offset()),
                              static_cast<std::uint32_t>(rng()));
      auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(hello), use_tuple);
      ok = !wec;
      sock.non_blocking(true, ec);
      // After the handshake the session reads the socket itself: wait until it is
      // readable, take whatever it holds into this thread's buffer (no buffer per session,
      // so 100,000 idle sessions cost little), and handle every complete frame in it.
      ws_frame_decoder decoder;
      frame_context fc{s, run, resume, t0, false};
      while (ok && !run.stopping) {
        auto [rec2] = co_await sock.async_wait(tcp::socket::wait_read, use_tuple);
        if (rec2) break;
        thread_local std::array<char, 65536> rbuf;
        boost::system::error_code rec3;
        const auto n = sock.read_some(asio::buffer(rbuf), rec3);
        if (rec3 == asio::error::would_block) continue;
        if (rec3) break;
        decoder.append(rbuf.data(), n);
        ws_frame_decoder::frame f{};
        ws_frame_decoder::status st;
        std::string reply;  // a pong or the close answer
        bool closing = false;
        while ((st = decoder.next(f)) == ws_frame_decoder::status::frame) {
          if (f.op == ws_frame_decoder::opcode::text) {
            on_frame(fc, f.payload);
            if (fc.welcomed && failures > 0) failures = 0;
            if (fc.welcomed) tell();
          } else if (f.op == ws_frame_decoder::opcode::ping) {
            reply += encode_client_frame(ws_frame_decoder::opcode::pong, f.payload,
                                         static_cast<std::uint32_t>(rng()));
          } else if (f.op == ws_frame_decoder::opcode::close) {
            reply += encode_client_frame(ws_frame_decoder::opcode::close, f.payload.substr(0, 2),
                                         static_cast<std::uint32_t>(rng()));
            closing = true;
            break;
          }
        }
        if (!reply.empty()) co_await asio::async_write(sock, asio::buffer(reply), use_tuple);
        if (closing || st == ws_frame_decoder::status::error) break;
      }
      const bool welcomed = fc.welcomed;
      if (welcomed && !run.stopping) ++run.disconnects;
    }
    s.close = nullptr;
    s.verifier.on_disconnect();
    if (run.stopping) break;
    ++failures;
    if (!s.verifier.welcomed() && failures >= first_attempts) {
      s.gave_up = true;
      ++run.given_up;
      tell();
      co_return;
    }
  }
  tell();
}

}  // namespace pushonce::bench
