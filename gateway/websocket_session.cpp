#include "gateway/websocket_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <deque>
#include <random>

#include "core/log.hpp"
#include "core/redis/scripts.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/protocol.hpp"
#include "gateway/resume_state.hpp"
#include "gateway/session.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using frame_ptr = std::shared_ptr<const std::string>;

std::string random_hex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = hex[rng() % 16];
  return s;
}

// One page of the inbox: entries "<offset>-0" → field f.
struct inbox_entry {
  long long offset = 0;
  std::string frame;
};
using inbox_page = std::vector<inbox_entry>;

std::optional<inbox_page> parse_page(const redis::reply& r) {
  if (!r.is_array()) return std::nullopt;
  inbox_page page;
  page.reserve(r.elements.size());
  for (const auto& e : r.elements) {
    const auto& id = e.at(0).str;
    long long off = 0;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), off);
    if (ec != std::errc{}) continue;
    const auto& fields = e.at(1);
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      if (fields.elements[i].str == "f") {
        page.push_back({off, fields.elements[i + 1].str});
        break;
      }
    }
  }
  return page;
}

class websocket_session final : public session,
                                public std::enable_shared_from_this<websocket_session> {
 public:
  websocket_session(tcp::socket&& socket, std::shared_ptr<gateway_state> state)
      : ws_(std::move(socket)),
        state_(std::move(state)),
        hello_timer_(ws_.get_executor()),
        room_timer_(ws_.get_executor()),
        keep_timer_(ws_.get_executor()) {}

  ~websocket_session() override { state_->registry.detach(this); }

  void start(http::request<http::string_body> req) {
    state_->registry.attach(shared_from_this());
    asio::co_spawn(
        ws_.get_executor(),
        [self = shared_from_this(), req = std::move(req)]() mutable {
          return self->run(std::move(req));
        },
        asio::detached);
  }

  // session: thread-safe entry points.
  void deliver(frame_ptr frame) override {
    asio::post(ws_.get_executor(),
               [self = shared_from_this(), f = std::move(frame)] { self->on_live(f); });
  }
  void request_catch_up() override {
    asio::post(ws_.get_executor(), [self = shared_from_this()] { self->start_catch_up(); });
  }
  void shutdown(std::uint16_t code, std::string reason) override {
    asio::post(ws_.get_executor(),
               [self = shared_from_this(), code, r = std::move(reason)] { self->close(code, r); });
  }

 private:
  // ---- the read loop ---------------------------------------------------------------------
  asio::awaitable<void> run(http::request<http::string_body> req) {
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
    timeouts.handshake_timeout = std::chrono::seconds(10);
    timeouts.idle_timeout = std::chrono::seconds(60);  // a ping after 30 s of silence
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "pushonce-gateway"); }));
    ws_.read_message_max(state_->settings.max_frame);
    auto [aec] = co_await ws_.async_accept(req, use_tuple);
    if (aec) {
      log::debug("ws: handshake failed: {}", aec.message());
      co_return;
    }
    arm_hello_timer();

    beast::flat_buffer buf;
    for (;;) {
      auto [ec, n] = co_await ws_.async_read(buf, use_tuple);
      if (ec) {
        if (ec == websocket::error::message_too_big)
          log::debug("ws: {}: frame over {} bytes: closed 1009", user_, state_->settings.max_frame);
        else if (ec != websocket::error::closed && ec != asio::error::operation_aborted)
          log::debug("ws: {}: read: {}", user_, ec.message());
        break;
      }
      bool text = ws_.got_text();
      std::string frame = beast::buffers_to_string(buf.data());
      buf.consume(buf.size());
      if (closing_) continue;
      co_await on_frame(std::move(frame), text);
    }
    end();
  }

  void arm_hello_timer() {
    hello_timer_.expires_after(state_->settings.hello_timeout);
    hello_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (ec || self->hello_received_) return;
      self->close(websocket::close_code::policy_error, "hello expected within 10 s");
    });
  }

  void end() {
    closing_ = true;
    keep_timer_.cancel();
    state_->positions->unwatch_all(this);
    hello_timer_.cancel();
    room_timer_.cancel();
    drop_queued();
    if (routed_) {
      routed_ = false;
      state_->registry.remove_route(this, user_);
    }
  }

  asio::awaitable<void> on_frame(std::string text, bool is_text) {
    if (!hello_received_) {
      if (!is_text) {
        close(websocket::close_code::policy_error, "the first frame must be hello");
        co_return;
      }
      auto parsed = parse_client_frame(text);
      auto* op = std::get_if<client_op>(&parsed);
      auto* hello = op ? std::get_if<hello_op>(op) : nullptr;
      if (!hello) {
        close(websocket::close_code::policy_error, "the first frame must be hello");
        co_return;
      }
      hello_received_ = true;
      hello_timer_.cancel();
      hello_op h = std::move(*hello);
      co_await on_hello(std::move(h));
      co_return;
    }
    if (!is_text) {
      send(render_error("bad_request", "binary frames are not supported", ""));
      co_return;
    }
    auto parsed = parse_client_frame(text);
    if (auto* err = std::get_if<protocol_error>(&parsed)) {
      send(render_error(err->code, err->message, err->op));
      co_return;
    }
    auto& op = std::get<client_op>(parsed);
    if (std::holds_alternative<hello_op>(op)) {
      send(render_error("bad_request", "hello was already received", "hello"));
    } else if (auto* j = std::get_if<join_op>(&op)) {
      std::string queue = std::move(j->queue), q = queue, user = user_;
      auto r = co_await state_->queues->join(std::move(q), std::move(user));
      if (r) {
        send(render_joined(queue, r.value().position, r.value().ticket));
        state_->positions->watch(shared_from_this(), queue, user_, r.value().position);
      } else {
        send_failure(r.error(), "join");
      }
    } else if (auto* l = std::get_if<leave_op>(&op)) {
      std::string queue = std::move(l->queue), q = queue, user = user_;
      auto r = co_await state_->queues->leave(std::move(q), std::move(user));
      state_->positions->unwatch(this, queue);
      if (r)
        send(render_left(queue));
      else
        send_failure(r.error(), "leave");
    } else if (auto* p = std::get_if<position_op>(&op)) {
      std::string queue = std::move(p->queue), q = queue, user = user_;
      auto r = co_await state_->queues->position(std::move(q), std::move(user));
      if (r) {
        send(render_position(queue, r.value()));
        state_->positions->watch(shared_from_this(), queue, user_, r.value());
      } else {
        send_failure(r.error(), "position");
      }
    } else if (auto* a = std::get_if<ack_op>(&op)) {
      std::vector<std::string> keys{meta_key_};
      std::vector<std::string> args{std::to_string(a->offset), epoch_};
      const auto& script = redis::get_script("ack");
      auto r = co_await redis::eval(*state_->conn, script, std::move(keys), std::move(args));
      if (!r.ok()) send_failure(failure_of(r), "ack");
    } else if (auto* a = std::get_if<accept_op>(&op)) {
      std::string id = std::move(a->id), queue = std::move(a->queue), user = user_;
      auto r = co_await state_->queues->accept(std::move(queue), std::move(user), id);
      if (r)
        send(render_accepted(r.value().first));
      else
        send_failure(r.error(), "accept");
    } else if (std::holds_alternative<ping_op>(op)) {
      send(render_pong());
    }
  }

  void send_failure(const failure& f, std::string_view op) {
    auto code = client_error_code(f.code);
    if (code == "internal") log::warn("ws: {}: {} failed: {} {}", user_, op, f.code, f.message);
    send(render_error(code, f.message, op));
  }

  // ---- hello and resume ------------------------------------------------------------------
  asio::awaitable<void> on_hello(hello_op h) {
    auto who = state_->auth->authenticate(h);
    if (!who) {
      ++state_->metrics.auth_failures;
      close(websocket::close_code::policy_error, who.error().message);
      co_return;
    }
    user_ = who.value();
    session_id_ = random_hex(16);
    meta_key_ = state_->keys.user(user_, "meta");
    inbox_key_ = state_->keys.user(user_, "inbox");

    std::vector<std::string> keys{meta_key_};
    std::vector<std::string> args{random_hex(16),
                                  std::to_string(state_->settings.idle_ttl.count())};
    const auto& script = redis::get_script("session");
    auto r = co_await redis::eval(*state_->conn, script, std::move(keys), std::move(args));
    if (closing_) co_return;
    if (!r.ok()) {
      log::warn("ws: {}: session.lua failed: {}", user_, failure_of(r).message);
      close(websocket::close_code::try_again_later, "redis unavailable");
      co_return;
    }
    epoch_ = r.value.at(0).str;
    long long latest = r.value.at(1).as_int().value_or(0);
    long long acked = r.value.at(2).as_int().value_or(0);
    std::optional<std::pair<std::string, long long>> since;
    if (h.since) since.emplace(h.since->epoch, h.since->offset);
    auto plan = plan_resume(since, epoch_, latest, acked);

    // (1) Route the channel first: from here on live frames are buffered.
    resume_.begin(plan.start);
    catching_up_ = true;
    routed_ = true;
    std::string user = user_;
    std::shared_ptr<session> self = shared_from_this();
    auto ec = co_await state_->registry.add_route(std::move(self), std::move(user));
    if (closing_) co_return;
    if (ec) {
      log::warn("ws: {}: subscribe failed: {}", user_, ec.message());
      close(websocket::close_code::try_again_later, "redis unavailable");
      co_return;
    }
    // (2) Read what the inbox holds after the start.
    auto page = co_await read_page(plan.start);
    if (closing_) co_return;
    if (!page) {
      close(websocket::close_code::try_again_later, "redis unavailable");
      co_return;
    }
    bool trimmed = page->empty() ? latest > plan.start : page->front().offset > plan.start + 1;
    bool recovered = plan.recovered && !trimmed;
    send(render_welcome(user_, session_id_, epoch_, latest, recovered));
    hello_done_ = true;
    ++state_->metrics.sessions_opened;
    asio::co_spawn(
        ws_.get_executor(), [self = shared_from_this()] { return self->keep_inbox_alive(); },
        asio::detached);
    log::debug("ws: {} session {} epoch {} start {} recovered {}", user_, session_id_, epoch_,
               plan.start, recovered);
    // (3) Replay, then the buffered live frames.
    co_await replay(plan.start, std::move(*page));
    if (closing_) co_return;
    for (auto& f : resume_.finish_catch_up()) enqueue(f);
    co_await catch_up_loop();
  }

  asio::awaitable<std::optional<inbox_page>> read_page(long long after) {
    redis::command cmd{"XRANGE", inbox_key_, std::to_string(after + 1) + "-0",
                       "+",      "COUNT",    std::to_string(state_->settings.inbox_page)};
    auto r = co_await state_->conn->exec(std::move(cmd));
    if (!r.ok()) {
      log::warn("ws: {}: inbox read failed: {}", user_, failure_of(r).message);
      co_return std::nullopt;
    }
    co_return parse_page(r.value);
  }

  // Sends `page` and the pages after it, pacing on the send queue. False on a failure.
  asio::awaitable<bool> replay(long long after, inbox_page page) {
    for (;;) {
      for (auto& e : page) {
        co_await wait_room();
        if (closing_) co_return false;
        if (resume_.on_replay(e.offset))
          enqueue(std::make_shared<const std::string>(std::move(e.frame)));
      }
      if (page.size() < state_->settings.inbox_page) co_return true;
      after = page.back().offset;
      auto next = co_await read_page(after);
      if (!next) co_return false;
      page = std::move(*next);
    }
  }

  // Runs catch-ups while one is requested (subscriber reconnect, offset gap).
  asio::awaitable<void> catch_up_loop() {
    catching_up_ = true;
    while (again_ && !closing_) {
      again_ = false;
      resume_.begin_catch_up();
      auto after = resume_.last_sent();
      auto page = co_await read_page(after);
      if (closing_) break;
      if (page) co_await replay(after, std::move(*page));
      if (closing_) break;
      for (auto& f : resume_.finish_catch_up()) enqueue(f);
    }
    catching_up_ = false;
  }

  void start_catch_up() {
    again_ = true;
    if (catching_up_ || !hello_done_ || closing_) return;
    catching_up_ = true;
    asio::co_spawn(
        ws_.get_executor(), [self = shared_from_this()] { return self->catch_up_loop(); },
        asio::detached);
  }

  void on_live(const frame_ptr& f) {
    if (closing_ || !routed_) return;
    switch (resume_.on_live(f)) {
      case resume_state::live_result::send:
        enqueue(f);
        break;
      case resume_state::live_result::drop:
      case resume_state::live_result::buffered:
        break;
      case resume_state::live_result::gap:
        log::debug("ws: {}: offset gap before {}; catching up", user_, *frame_offset(*f));
        start_catch_up();
        break;
      case resume_state::live_result::overflow:
        close(websocket::close_code::try_again_later, "too far behind");
        break;
    }
  }

  // A user with an open session is not idle: its meta (epoch, offset) and inbox must not
  // expire under the session, or the next delivery would restart offsets at 1 in a new
  // epoch, below what this session has already sent. Refreshed every third of the TTL.
  asio::awaitable<void> keep_inbox_alive() {
    const auto ttl = state_->settings.idle_ttl;
    while (!closing_) {
      keep_timer_.expires_after(ttl / 3);
      auto [ec] = co_await keep_timer_.async_wait(use_tuple);
      if (ec || closing_) co_return;
      std::vector<redis::command> cmds{{"PEXPIRE", meta_key_, std::to_string(ttl.count())},
                                       {"PEXPIRE", inbox_key_, std::to_string(ttl.count())}};
      co_await state_->conn->exec_all(std::move(cmds));
    }
  }

  // ---- the send queue --------------------------------------------------------------------
  void send(std::string text) { enqueue(std::make_shared<const std::string>(std::move(text))); }

  void enqueue(const frame_ptr& f) {
    if (closing_) return;
    const auto& s = state_->settings;
    if (queue_.size() >= s.max_queue_frames || queued_bytes_ + f->size() > s.max_queue_bytes) {
      log::warn("ws: {}: send queue full ({} frames, {} bytes): closing 1013", user_, queue_.size(),
                queued_bytes_);
      ++state_->metrics.slow_consumer_closes;
      close(websocket::close_code::try_again_later, "slow consumer");
      return;
    }
    queue_.push_back(f);
    queued_bytes_ += f->size();
    if (!writing_) do_write();
  }

  void do_write() {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(
        asio::buffer(*queue_.front()),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    if (!queue_.empty()) {
      queued_bytes_ -= queue_.front()->size();
      queue_.pop_front();
    }
    if (ec) {
      if (ec != asio::error::operation_aborted && ec != websocket::error::closed)
        log::debug("ws: {}: write: {}", user_, ec.message());
      closing_ = true;
      queue_.clear();
      queued_bytes_ = 0;
      room_timer_.cancel();
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().close(ignored);
      return;
    }
    ++state_->metrics.frames_sent;
    if (close_pending_) {
      close_pending_ = false;
      do_close();
      return;
    }
    if (queue_.size() < room_frames() && queued_bytes_ < room_bytes()) room_timer_.cancel();
    if (!queue_.empty() && !closing_) do_write();
  }

  std::size_t room_frames() const { return state_->settings.max_queue_frames / 4; }
  std::size_t room_bytes() const { return state_->settings.max_queue_bytes / 4; }

  // Waits until the send queue has room for a replayed frame.
  asio::awaitable<void> wait_room() {
    while (!closing_ && (queue_.size() >= room_frames() || queued_bytes_ >= room_bytes())) {
      room_timer_.expires_at(asio::steady_timer::time_point::max());
      co_await room_timer_.async_wait(use_tuple);
    }
  }

  // ---- closing ---------------------------------------------------------------------------
  void close(std::uint16_t code, std::string_view reason) {
    if (closing_) return;
    closing_ = true;
    keep_timer_.cancel();
    hello_timer_.cancel();
    room_timer_.cancel();
    close_reason_ =
        websocket::close_reason(static_cast<websocket::close_code>(code), reason.substr(0, 120));
    drop_queued();
    if (writing_)
      close_pending_ = true;
    else
      do_close();
  }

  // Drops the queued frames but the one being written (its buffer is in use).
  void drop_queued() {
    while (queue_.size() > (writing_ ? 1u : 0u)) {
      queued_bytes_ -= queue_.back()->size();
      queue_.pop_back();
    }
  }

  void do_close() {
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code ec) {
      if (ec && ec != asio::error::operation_aborted)
        log::debug("ws: {}: close: {}", self->user_, ec.message());
    });
  }

  websocket::stream<beast::tcp_stream> ws_;
  std::shared_ptr<gateway_state> state_;
  asio::steady_timer hello_timer_;
  asio::steady_timer room_timer_;
  asio::steady_timer keep_timer_;

  std::string user_, session_id_, epoch_, meta_key_, inbox_key_;
  bool hello_received_ = false;
  bool hello_done_ = false;
  bool routed_ = false;
  bool catching_up_ = false;
  bool again_ = false;
  resume_state resume_;

  std::deque<frame_ptr> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool closing_ = false;
  bool close_pending_ = false;
  websocket::close_reason close_reason_;
};

}  // namespace

void start_websocket_session(tcp::socket socket, http::request<http::string_body> upgrade,
                             std::shared_ptr<gateway_state> state) {
  auto s = std::make_shared<websocket_session>(std::move(socket), std::move(state));
  s->start(std::move(upgrade));
}

}  // namespace pushonce::gateway
