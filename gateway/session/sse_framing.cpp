#include "gateway/session/sse_framing.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <charconv>

#include "gateway/session/resume_state.hpp"

namespace pushonce::gateway {

namespace json = boost::json;

namespace {

void append_sse_data_lines(std::string& out, std::string_view data) {
  for (;;) {
    auto nl = data.find_first_of("\r\n");
    out.append("data: ").append(data.substr(0, nl)).push_back('\n');
    if (nl == std::string_view::npos) break;
    std::size_t skip = (data[nl] == '\r' && nl + 1 < data.size() && data[nl + 1] == '\n') ? 2 : 1;
    data.remove_prefix(nl + skip);
  }
  out.push_back('\n');
}

int sse_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string sse_percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < s.size() && sse_hex_digit(s[i + 1]) >= 0 &&
               sse_hex_digit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(sse_hex_digit(s[i + 1]) * 16 + sse_hex_digit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string_view sse_frame_type(std::string_view frame) {
  constexpr std::string_view head = R"({"type":")";
  if (frame.substr(0, head.size()) != head) return {};
  auto rest = frame.substr(head.size());
  auto end = rest.find('"');
  if (end == std::string_view::npos) return {};
  return rest.substr(0, end);
}

std::string render_sse_event(std::string_view frame, std::string_view epoch) {
  std::string out;
  out.reserve(frame.size() + epoch.size() + 40);
  auto type = sse_frame_type(frame);
  if (type == "message") {
    if (auto off = frame_offset(frame)) {
      out.append("id: ").append(epoch).push_back(':');
      out.append(std::to_string(*off)).push_back('\n');
    }
  } else if (!type.empty()) {
    out.append("event: ").append(type).push_back('\n');
  }
  append_sse_data_lines(out, frame);
  return out;
}

std::string render_sse_close(std::uint16_t code, std::string_view reason) {
  json::object o;
  o["type"] = "error";
  o["code"] = "closed";
  o["close"] = code;
  o["message"] = reason;
  std::string out = "event: error\n";
  append_sse_data_lines(out, json::serialize(o));
  return out;
}

std::optional<since_position> parse_sse_event_id(std::string_view id) {
  auto colon = id.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= id.size()) return std::nullopt;
  auto epoch = id.substr(0, colon);
  if (epoch.find_first_of(": \t\r\n") != std::string_view::npos || epoch.size() > 64)
    return std::nullopt;
  auto digits = id.substr(colon + 1);
  long long n = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || p != digits.data() + digits.size() || n < 0) return std::nullopt;
  return since_position{std::string(epoch), n};
}

std::optional<std::string> sse_query_param(std::string_view target, std::string_view name) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    auto eq = pair.find('=');
    auto key = pair.substr(0, eq);
    if (key == name)
      return eq == std::string_view::npos ? std::string() : sse_percent_decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

sse_query parse_sse_query(std::string_view target, std::string_view last_event_id) {
  sse_query r;
  r.hello.token = sse_query_param(target, "token");
  r.hello.user = sse_query_param(target, "user");
  std::optional<std::string> since;
  if (!last_event_id.empty())
    since = std::string(last_event_id);
  else
    since = sse_query_param(target, "since");
  if (since && !since->empty()) {
    auto s = parse_sse_event_id(*since);
    if (!s) {
      r.error = "since (or Last-Event-ID) must be EPOCH:OFFSET, as in the id of a message event";
      return r;
    }
    r.hello.since = std::move(*s);
  }
  return r;
}

std::string sse_hello_frame(const hello_op& h) {
  json::object o;
  o["op"] = "hello";
  if (h.token) o["token"] = *h.token;
  if (h.user) o["user"] = *h.user;
  if (h.since) o["since"] = json::object{{"epoch", h.since->epoch}, {"offset", h.since->offset}};
  return json::serialize(o);
}

sse_op_request parse_sse_op(std::string_view body) {
  sse_op_request r;
  boost::system::error_code ec;
  json::parse_options popts;
  popts.max_depth = 32;
  auto v = json::parse(body, ec, {}, popts);
  if (ec) {
    r.error = "the body is not valid JSON: " + ec.message();
    return r;
  }
  const auto* o = v.if_object();
  if (!o) {
    r.error = "the body must be a JSON object";
    return r;
  }
  const auto* s = o->if_contains("session");
  if (!s || !s->is_string() || s->get_string().empty()) {
    r.error = "the body needs \"session\": the session of the welcome event";
    return r;
  }
  r.session = std::string(s->get_string());
  if (const auto* u = o->if_contains("user")) {
    if (!u->is_string()) {
      r.error = "\"user\" must be a string";
      return r;
    }
    r.user = std::string(u->get_string());
  }
  const auto* op = o->if_contains("op");
  if (!op || !op->is_string()) {
    r.error = "the body has no \"op\" string";
    return r;
  }
  return r;
}

std::optional<std::string> sse_bearer_token(std::string_view authorization) {
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.size() <= bearer.size()) return std::nullopt;
  auto head = authorization.substr(0, bearer.size());
  for (std::size_t i = 0; i < bearer.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(head[i])) !=
        std::tolower(static_cast<unsigned char>(bearer[i])))
      return std::nullopt;
  auto token = authorization.substr(bearer.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

}  // namespace pushonce::gateway
