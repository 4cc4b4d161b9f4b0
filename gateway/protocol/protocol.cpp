#include "gateway/protocol/protocol.hpp"

#include <boost/json.hpp>
#include <iterator>

#include "core/errc.hpp"
#include "core/lua/script_limits.hpp"
#include "core/names.hpp"
#include "core/queue_refusals.hpp"

namespace pushonce::gateway {

namespace json = boost::json;

namespace {

protocol_error bad(std::string message, std::string_view op) {
  return {errc::bad_request, std::move(message), std::string(op)};
}

// A non-negative integer the scripts accept as one (prelude.lua uint(): 15 digits at most,
// exact doubles in Lua), so an offset that passes here is never refused by session.lua.
std::optional<long long> non_negative(const json::value& v) {
  constexpr long long max = lua::max_script_uint;
  if (v.is_int64()) {
    auto n = v.get_int64();
    if (n >= 0 && n <= max) return n;
  } else if (v.is_uint64()) {
    auto n = v.get_uint64();
    if (n <= static_cast<unsigned long long>(max)) return static_cast<long long>(n);
  } else if (v.is_double()) {
    double d = v.get_double();
    if (d >= 0 && d <= static_cast<double>(max) &&
        static_cast<double>(static_cast<long long>(d)) == d)
      return static_cast<long long>(d);
  }
  return std::nullopt;
}

// An optional string member: nullopt when absent (or null), error text when not a string.
std::optional<std::string> optional_string(const json::object& o, std::string_view key,
                                           std::string& error) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    error = std::string(key) + " must be a string";
    return std::nullopt;
  }
  return std::string(v->get_string());
}

// A queue name goes into Redis keys: one that no queue can have is refused here, before any
// lookup, cache or script sees it (core/names.hpp).
constexpr std::string_view bad_queue_name =
    "\"queue\" must be 1-128 characters of A-Z a-z 0-9 . _ @ -";

parse_result parse_queue(const json::object& o, std::string_view op, auto make) {
  std::string error;
  auto q = optional_string(o, "queue", error);
  if (!error.empty()) return bad(error, op);
  if (q && !valid_name(*q)) return bad(std::string(bad_queue_name), op);
  return client_op{make(q ? std::move(*q) : std::string(default_queue))};
}

std::optional<pow_solution> parse_pow(const json::object& o) {
  auto* v = o.if_contains("pow");
  if (!v || v->is_null()) return std::nullopt;
  pow_solution s;
  if (auto* p = v->if_object()) {
    auto* id = p->if_contains("id");
    auto* nonce = p->if_contains("nonce");
    if (id && id->is_string() && nonce && nonce->is_string()) {
      s.id = std::string(id->get_string());
      s.nonce = std::string(nonce->get_string());
    }
  }
  return s;
}

json::object challenge_object(const pow_challenge& c) {
  return json::object{
      {"id", c.id}, {"prefix", c.prefix}, {"bits", c.bits}, {"expires_at", c.expires_at}};
}

parse_result parse_hello(const json::object& o) {
  hello_op h;
  std::string error;
  h.token = optional_string(o, "token", error);
  if (!error.empty()) return bad(error, "hello");
  h.user = optional_string(o, "user", error);
  if (!error.empty()) return bad(error, "hello");
  if (auto* s = o.if_contains("since"); s && !s->is_null()) {
    if (!s->is_object()) return bad("since must be an object {\"epoch\",\"offset\"}", "hello");
    const auto& so = s->get_object();
    auto* e = so.if_contains("epoch");
    auto* off = so.if_contains("offset");
    if (!e || !e->is_string()) return bad("since.epoch must be a string", "hello");
    std::optional<long long> n = off ? non_negative(*off) : std::nullopt;
    if (!n) return bad("since.offset must be a non-negative integer", "hello");
    h.since = since_position{std::string(e->get_string()), *n};
  }
  return client_op{std::move(h)};
}

}  // namespace

parse_result parse_client_frame(std::string_view text) {
  boost::system::error_code ec;
  json::parse_options popts;
  popts.max_depth = 32;
  auto v = json::parse(text, ec, {}, popts);
  if (ec) return bad("frame is not valid JSON: " + ec.message(), "");
  if (!v.is_object()) return bad("frame must be a JSON object", "");
  const auto& o = v.get_object();
  auto* opv = o.if_contains("op");
  if (!opv || !opv->is_string()) return bad("frame has no \"op\" string", "");
  std::string_view op = opv->get_string();

  if (op == "hello") return parse_hello(o);
  if (op == "join")
    return parse_queue(o, op, [&o](std::string q) { return join_op{std::move(q), parse_pow(o)}; });
  if (op == "leave")
    return parse_queue(o, op, [](std::string q) { return leave_op{std::move(q)}; });
  if (op == "position")
    return parse_queue(o, op, [](std::string q) { return position_op{std::move(q)}; });
  if (op == "ping") return client_op{ping_op{}};
  if (op == "refresh") {
    auto* t = o.if_contains("token");
    if (!t || !t->is_string() || t->get_string().empty())
      return bad("refresh needs \"token\": a JWT", op);
    return client_op{refresh_op{std::string(t->get_string())}};
  }
  if (op == "ack") {
    auto* off = o.if_contains("offset");
    auto n = off ? non_negative(*off) : std::nullopt;
    if (!n) return bad("ack needs \"offset\": a non-negative integer", op);
    return client_op{ack_op{*n}};
  }
  if (op == "accept") {
    auto* id = o.if_contains("id");
    if (!id || !id->is_string() || id->get_string().empty())
      return bad("accept needs \"id\": the assignment's message id", op);
    std::string queue(default_queue);
    if (auto* q = o.if_contains("queue")) {
      if (!q->is_string() || q->get_string().empty())
        return bad("accept: \"queue\" must be a non-empty string", op);
      if (!valid_name(q->get_string())) return bad(std::string(bad_queue_name), op);
      queue = std::string(q->get_string());
    }
    return client_op{accept_op{std::string(id->get_string()), std::move(queue)}};
  }
  std::string shown(op.substr(0, 64));
  return protocol_error{errc::unknown_op, "unknown op '" + shown + "'", shown};
}

std::string_view op_name(const client_op& op) {
  static constexpr std::string_view names[] = {"hello",  "join", "leave", "position",
                                               "accept", "ack",  "ping",  "refresh"};
  static_assert(std::size(names) == std::variant_size_v<client_op>);
  return names[op.index()];
}

std::string render_welcome(std::string_view user, std::string_view session, std::string_view epoch,
                           long long offset, bool recovered, const pow_challenge* challenge) {
  json::object o;
  o["type"] = "welcome";
  o["user"] = user;
  o["session"] = session;
  o["epoch"] = epoch;
  o["offset"] = offset;
  o["recovered"] = recovered;
  if (challenge) o["challenge"] = challenge_object(*challenge);
  return json::serialize(o);
}

std::string render_pow_refusal(std::string_view message, const pow_challenge& challenge) {
  json::object o;
  o["type"] = "error";
  o["code"] = client_error_code(errc::bad_request);
  o["message"] = message;
  o["op"] = "join";
  o["challenge"] = challenge_object(challenge);
  return json::serialize(o);
}

std::string render_error(errc code, std::string_view message, std::string_view op) {
  json::object o;
  o["type"] = "error";
  o["code"] = client_error_code(code);
  o["message"] = message;
  o["op"] = op;
  return json::serialize(o);
}

namespace {
json::value eta_value(std::optional<long long> eta_s) {
  return eta_s ? json::value(*eta_s) : json::value(nullptr);
}
}  // namespace

std::string render_joined(std::string_view queue, long long position, long long ticket,
                          std::optional<long long> eta_s) {
  json::object o;
  o["type"] = "joined";
  o["queue"] = queue;
  o["position"] = position;
  o["ticket"] = ticket;
  o["eta_s"] = eta_value(eta_s);
  return json::serialize(o);
}

std::string render_left(std::string_view queue) {
  json::object o;
  o["type"] = "left";
  o["queue"] = queue;
  return json::serialize(o);
}

std::string render_position(std::string_view queue, long long position,
                            std::optional<long long> eta_s, bool approx) {
  json::object o;
  o["type"] = "position";
  o["queue"] = queue;
  o["position"] = position;
  o["eta_s"] = eta_value(eta_s);
  if (approx) o["approx"] = true;
  return json::serialize(o);
}

namespace {
// joined and position of a prequeued user: no place yet (position, ticket and eta_s null),
// and when the queue opens.
std::string render_prequeue_place(std::string_view type, std::string_view queue, bool with_ticket,
                                  std::optional<long long> opens_at) {
  json::object o;
  o["type"] = type;
  o["queue"] = queue;
  o["position"] = nullptr;
  if (with_ticket) o["ticket"] = nullptr;
  o["eta_s"] = nullptr;
  o["opens_at"] = opens_at ? json::value(*opens_at) : json::value(nullptr);
  return json::serialize(o);
}
}  // namespace

std::string render_joined_prequeue(std::string_view queue, std::optional<long long> opens_at) {
  return render_prequeue_place("joined", queue, true, opens_at);
}

std::string render_position_prequeue(std::string_view queue, std::optional<long long> opens_at) {
  return render_prequeue_place("position", queue, false, opens_at);
}

std::string render_accepted(std::string_view id, std::optional<long long> expires_at) {
  json::object o;
  o["type"] = "accepted";
  o["id"] = id;
  if (expires_at) o["expires_at"] = *expires_at;
  return json::serialize(o);
}

std::string render_pong() {
  return R"({"type":"pong"})";
}

std::string render_refreshed(long long exp_ms) {
  json::object o;
  o["type"] = "refreshed";
  o["exp"] = exp_ms;
  return json::serialize(o);
}

std::string_view client_error_code(errc e) {
  if (e == errc_closed) return "closed";
  if (e == errc_full) return "full";
  switch (e) {
    case errc::already_queued:
    case errc::already_assigned:
      return "conflict";
    case errc::not_queued:
    case errc::not_found:
      return "not_found";
    case errc::bad_request:
      return "bad_request";
    case errc::unknown_op:
      return "unknown_op";
    case errc::rate_limited:
      return "rate_limited";
    default:
      return "internal";
  }
}

}  // namespace pushonce::gateway
