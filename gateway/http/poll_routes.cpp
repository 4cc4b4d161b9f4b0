#include "gateway/http/poll_routes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <chrono>
#include <memory>
#include <mutex>

#include "core/log.hpp"
#include "core/names.hpp"
#include "core/queue_api.hpp"
#include "core/use_tuple.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/auth/revocations.hpp"
#include "gateway/http/poll.hpp"
#include "gateway/protocol/protocol.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/queue/wait_estimates.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_presence.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

using pollers = poll_state;

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

http_response frame_answer(const std::string& frame, unsigned version) {
  // An error frame's code decides the status (the HTTP side of the same refusal), and the
  // body is the frame with the HTTP answers' "error" beside its "code".
  auto v = json::parse(frame);
  auto& o = v.as_object();
  if (o.at("type").as_string() != "error") return json_response(200, frame, version);
  const std::string code(o.at("code").as_string());
  o["error"] = code;
  unsigned status = code == "not_found"                    ? 404
                    : code == "conflict"                   ? 409
                    : code == "internal"                   ? 500
                    : code == "rate_limited"               ? 429
                    : (code == "closed" || code == "full") ? 403
                                                           : 400;
  return json_response(status, json::serialize(o), version);
}

void presence_open(gateway_state& st, pollers& p, const std::string& user, const std::string& queue,
                   const asio::any_io_executor& ex) {
  if (st.presence_instance.empty()) return;
  auto s = std::make_unique<session_presence>();
  s->open(asio::make_strand(ex),
          session_presence::calls{st.conn, st.presence, st.keys, st.presence_instance}, user);
  std::lock_guard lock(p.mutex);
  p.presence[{user, queue}] = std::move(s);
}

void presence_close(pollers& p, const std::string& user, const std::string& queue,
                    const asio::any_io_executor& ex) {
  std::unique_ptr<session_presence> s;
  {
    std::lock_guard lock(p.mutex);
    auto it = p.presence.find({user, queue});
    if (it == p.presence.end()) return;
    s = std::move(it->second);
    p.presence.erase(it);
  }
  s->close(asio::make_strand(ex));
}

// Closes the presence of pollers silent for 3 x their Retry-After, once a second.
asio::awaitable<void> sweep(gateway_state& st, pollers& p) {
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer timer(ex);
  while (!st.stopping) {
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(use_tuple);
    for (auto& [user, queue] : p.table.silent(poll_table::clock::now()))
      presence_close(p, user, queue, ex);
  }
}

// A live admission's answer: its id, token, resource and deadlines, from the user's inbox
// (the assignment frame carries the token) and the admission list.
asio::awaitable<std::optional<poll_answer>> admitted_answer(gateway_state& st,
                                                            const std::string& user,
                                                            const std::string& queue) {
  std::string q = queue, u = user;
  auto live = co_await st.queues->live_admissions(std::move(q), std::move(u));
  if (!live || live.value().empty()) co_return std::nullopt;
  const auto& a = live.value().front();
  json::object o{{"id", a.id}, {"queue", queue}, {"resource", a.resource}, {"state", a.state}};
  o["admission"] = nullptr;
  o["accept_by"] = a.accept_by ? json::value(*a.accept_by) : json::value(nullptr);
  o["expires_at"] = a.expires_at ? json::value(*a.expires_at) : json::value(nullptr);
  redis::command read{"XREVRANGE", st.keys.user(user, "inbox"), "+", "-", "COUNT", "200"};
  auto r = co_await st.conn->exec(std::move(read));
  if (r.ok()) {
    const std::string needle = "\"id\":\"" + a.id + "\"";
    for (const auto& e : r.value.elements) {
      if (e.elements.size() < 2) continue;
      const auto& f = e.elements[1];
      for (std::size_t i = 0; i + 1 < f.elements.size(); i += 2) {
        if (f.elements[i].str != "f" || f.elements[i + 1].str.find(needle) == std::string::npos)
          continue;
        boost::system::error_code ec;
        auto frame = json::parse(f.elements[i + 1].str, ec);
        if (ec || !frame.is_object()) continue;
        if (auto* d = frame.as_object().if_contains("data"); d && d->is_object())
          if (auto* t = d->as_object().if_contains("admission")) o["admission"] = *t;
      }
    }
  }
  co_return poll_answer{200, json::serialize(o), 0};
}

asio::awaitable<poll_answer> ticket_answer(gateway_state& st, const std::string& user,
                                           const std::string& queue) {
  std::string q = queue, u = user;
  auto standing = co_await st.queues->standing(std::move(q), std::move(u));
  if (!standing) co_return poll_answer{500, reply_failure(standing.error(), "ticket"), 0};
  const auto& s = standing.value();
  if (s.position > 0 || s.prequeued) {
    std::optional<long long> eta;
    if (s.position > 0) {
      auto estimates = st.positions->estimates();
      std::string eq = queue;
      auto call = estimates->refresh(std::move(eq));  // named: GCC 12 and co_await
      co_await std::move(call);
      eta = estimates->eta_s(queue, s.position);
    }
    json::object o{{"queue", queue}, {"position", s.position}};
    o["eta_s"] = eta ? json::value(*eta) : json::value(nullptr);
    if (s.opens_at) o["opens_at"] = *s.opens_at;
    pushonce::lua::settings_call get;
    get.queue = queue;
    auto settings = co_await st.queues->settings(std::move(get));
    long long accept_s = 0;
    if (settings) {
      const auto& v = settings.value();
      accept_s = v.settings.accept_timeout_s.value_or(v.default_accept_timeout_ms / 1000);
    }
    co_return poll_answer{202, json::serialize(o), poll_retry_after(s.position, eta, accept_s)};
  }
  auto admitted = co_await admitted_answer(st, user, queue);
  if (admitted) co_return *admitted;
  // The HTTP answers' {"error","message"} with the WebSocket error's fields beside them.
  json::object o{{"type", "error"},
                 {"code", "not_queued"},
                 {"error", "not_queued"},
                 {"message", user + " is not in queue " + queue},
                 {"op", "ticket"}};
  co_return poll_answer{404, json::serialize(o), 0};
}

http_response answer_of(const poll_answer& a, unsigned version) {
  auto res = json_response(a.status, a.body, version);
  if (a.retry_after_s > 0) res.set(http::field::retry_after, std::to_string(a.retry_after_s));
  return res;
}

}  // namespace

asio::awaitable<http_response> poll_route(http_request& req, gateway_state& st) {
  const auto version = req.version();
  auto target = poll_path(target_path(req.target()));
  if (!target) co_return not_found_response(req);
  const bool post = req.method() == http::verb::post;
  const bool wants_post = target->action == poll_action::join ||
                          target->action == poll_action::accept ||
                          target->action == poll_action::leave;
  if (post != wants_post) co_return error_response(errc::not_found, "no such route", version);
  const std::string queue = target->queue;
  if (!valid_name(queue))
    co_return error_response(errc::bad_request, "invalid queue name", version);
  // The user: the token of an Authorization header, or ?user= with --dev-auth.
  hello_op who_op;
  std::string_view auth = req[http::field::authorization];
  if (auth.substr(0, 7) == "Bearer ") who_op.token = std::string(auth.substr(7));
  if (auto url = boost::urls::parse_origin_form(req.target()); url) {
    auto params = url->params();
    if (auto it = params.find("user"); it != params.end() && (*it).has_value)
      who_op.user = std::string((*it).value);
  }
  auto who = st.auth->authenticate(who_op);
  if (!who || st.revoked_users->revoked(who.value())) {
    ++st.metrics.auth_failures;
    co_return error_response(errc::unauthorized, who ? "revoked" : who.error().message, version);
  }
  const std::string user = who.value().user;
  auto& p = *st.polls;
  auto ex = co_await asio::this_coro::executor;
  bool over_rate = false;
  {
    std::lock_guard lock(p.mutex);
    if (!p.sweeping) {
      p.sweeping = true;
      asio::co_spawn(ex, sweep(st, p), asio::detached);
    }
    // A ticket sooner than its Retry-After costs no Redis call; the other actions do.
    if (target->action != poll_action::ticket) {
      const auto& l = st.settings.frame_rates;
      if (p.op_buckets.size() >= poll_state::max_op_users && !p.op_buckets.contains(user))
        p.op_buckets.clear();
      auto now = token_bucket::clock::now();
      auto it = p.op_buckets.try_emplace(user, l.queue_ops_per_s, l.queue_op_burst, now).first;
      over_rate = !it->second.take(now);
    }
  }
  if (over_rate) {
    json::object o{{"type", "error"},
                   {"code", "rate_limited"},
                   {"error", "rate_limited"},
                   {"message", "too many queue operations"},
                   {"op", poll_action_name(target->action)}};
    auto res = json_response(429, json::serialize(o), version);
    res.set(http::field::retry_after, "1");
    co_return res;
  }

  switch (target->action) {
    case poll_action::challenge: {
      int bits = 0;
      if (st.pow) {
        std::string q = queue;
        bits = co_await st.pow->bits(std::move(q));
      }
      if (bits == 0) co_return json_response(200, R"({"type":"challenge","bits":0})", version);
      auto gate = co_await st.pow->gate();
      if (!gate) co_return error_response(errc::internal, "proof of work unavailable", version);
      // The refusal frame of a join without a solution carries the challenge.
      co_return json_response(200,
                              render_pow_refusal("solve this challenge, then join with it",
                                                 join_pow::issue(*gate, user, queue, bits)),
                              version);
    }
    case poll_action::join: {
      // The body: {} or {"pow":{"id","nonce"}}, read as the WebSocket join frame.
      json::object frame{{"op", "join"}, {"queue", queue}};
      if (!req.body().empty()) {
        boost::system::error_code ec;
        auto b = json::parse(req.body(), ec);
        if (ec || !b.is_object())
          co_return error_response(errc::bad_request, "the body must be a JSON object", version);
        if (auto* pw = b.as_object().if_contains("pow")) frame["pow"] = *pw;
      }
      auto parsed = parse_client_frame(json::serialize(frame));
      auto* op = std::get_if<client_op>(&parsed);
      auto* join = op ? std::get_if<join_op>(op) : nullptr;
      if (!join) co_return error_response(errc::bad_request, "bad join", version);
      std::optional<pow_use> use;
      std::shared_ptr<const pow_gate> gate;
      int bits = 0;
      if (st.pow) {
        std::string q = queue;
        bits = co_await st.pow->bits(std::move(q));
      }
      if (bits > 0) {
        gate = co_await st.pow->gate();
        if (!gate) co_return error_response(errc::internal, "proof of work unavailable", version);
        auto check = gate->verify(user, queue, bits, join->pow, wall_ms());
        if (!check.ok()) {
          st.pow->count_refusal(queue);
          co_return json_response(403,
                                  render_pow_refusal(pow_reason(check.verdict),
                                                     join_pow::issue(*gate, user, queue, bits)),
                                  version);
        }
        use = pow_use{std::move(check.token), check.ttl_ms};
      }
      std::string q = queue, u = user;
      auto r = co_await st.queues->join(std::move(q), std::move(u), std::move(use));
      bool first = false;
      p.table.poll(user, queue, poll_table::clock::now(), first);
      if (r && first) presence_open(st, p, user, queue, ex);
      co_return frame_answer(reply_join(queue, r), version);
    }
    case poll_action::ticket: {
      bool first = false;
      const auto now = poll_table::clock::now();
      if (auto cached = p.table.poll(user, queue, now, first))
        co_return answer_of(*cached, version);
      if (first) presence_open(st, p, user, queue, ex);
      auto a = co_await ticket_answer(st, user, queue);
      if (a.status == 404) {
        p.table.forget(user, queue);
        presence_close(p, user, queue, ex);
      } else {
        p.table.answered(user, queue, a, now);
      }
      co_return answer_of(a, version);
    }
    case poll_action::accept: {
      std::string id;
      if (!req.body().empty()) {
        boost::system::error_code ec;
        auto b = json::parse(req.body(), ec);
        if (!ec && b.is_object())
          if (auto* i = b.as_object().if_contains("id"); i && i->is_string())
            id = std::string(i->as_string());
      }
      std::string q = queue, u = user;
      auto r = co_await st.queues->accept(std::move(q), std::move(u), std::move(id));
      p.table.answered(user, queue, poll_answer{}, poll_table::clock::time_point{});  // stale
      co_return frame_answer(reply_accept(r), version);
    }
    case poll_action::leave: {
      std::string q = queue, u = user;
      auto r = co_await st.queues->leave(std::move(q), std::move(u));
      if (p.table.forget(user, queue)) presence_close(p, user, queue, ex);
      co_return frame_answer(reply_leave(queue, r), version);
    }
  }
  co_return not_found_response(req);
}

}  // namespace pushonce::gateway
