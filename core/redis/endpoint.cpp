#include "core/redis/endpoint.hpp"

#include <fmt/format.h>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace pushonce::redis {
namespace {

// The URL as it may be logged: whatever stands between "://" and the last '@' (user and
// password) becomes "***". A URL that is refused is shown this way, never with its password.
std::string redacted(std::string_view url) {
  auto start = url.find("://");
  start = start == std::string_view::npos ? 0 : start + 3;
  auto at = url.rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  return fmt::format("{}***{}", url.substr(0, start), url.substr(at));
}

[[noreturn]] void fail(std::string_view url, std::string_view reason) {
  throw std::invalid_argument(fmt::format("bad redis URL '{}': {}", redacted(url), reason));
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::uint16_t parse_port(std::string_view url, std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!all_digits(text) || ec != std::errc{} || end != text.data() + text.size() || value == 0 ||
      value > 65535)
    fail(url, fmt::format("port '{}' is not a number from 1 to 65535", text));
  return static_cast<std::uint16_t>(value);
}

int parse_db(std::string_view url, std::string_view path) {
  if (path.empty() || path == "/") return 0;
  std::string_view text = path.substr(1);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!all_digits(text) || ec != std::errc{} || end != text.data() + text.size())
    fail(url, fmt::format("database '{}' is not a non-negative integer", text));
  return value;
}

}  // namespace

endpoint endpoint::parse(std::string_view url) {
  auto parsed = boost::urls::parse_uri(boost::urls::string_view(url.data(), url.size()));
  if (!parsed) fail(url, "not a URL of the form redis://[[user]:password@]host:port[/db]");
  boost::urls::url_view u = *parsed;

  bool tls = iequals(u.scheme(), "rediss");
  if (!tls && !iequals(u.scheme(), "redis"))
    fail(url,
         fmt::format("scheme must be 'redis' or 'rediss', not '{}'", std::string_view(u.scheme())));
  if (!u.has_authority()) fail(url, "missing host");
  if (u.has_query()) fail(url, "query parameters are not supported");
  if (u.has_fragment()) fail(url, "a fragment is not supported");

  endpoint e;
  e.tls = tls;
  if (u.has_userinfo()) {
    if (!u.has_password()) fail(url, "credentials need a password: [user]:password@");
    e.user = u.user();
    e.password = u.password();
    if (e.password.empty()) fail(url, "empty password");
  }

  e.host = u.host_address();
  if (e.host.empty()) fail(url, "missing host");

  if (u.has_port()) {
    // The port as written in the URL (the parser's own port() keeps only what it could
    // read as one, so a port like "notaport" would look empty).
    auto authority =
        url.substr(url.find("://") == std::string_view::npos ? 0 : url.find("://") + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    auto at = authority.rfind('@');
    if (at != std::string_view::npos) authority.remove_prefix(at + 1);
    auto colon = authority.rfind(':');
    if (!authority.empty() && authority.front() == '[') {
      auto close = authority.find(']');
      colon = close == std::string_view::npos ? std::string_view::npos : authority.find(':', close);
    }
    std::string_view p = colon == std::string_view::npos
                             ? std::string_view(u.port().data(), u.port().size())
                             : authority.substr(colon + 1);
    if (p.empty()) fail(url, "empty port after the host's ':'");
    e.port = parse_port(url, p);
  }

  std::string path = u.path();
  e.db = parse_db(url, path);
  return e;
}

std::vector<endpoint> endpoint::parse_list(std::string_view url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    fail(url, "not a URL of the form redis://[[user]:password@]host:port[,host:port]...");
  std::string_view scheme = url.substr(0, scheme_end);
  std::string_view rest = url.substr(scheme_end + 3);
  auto at = rest.rfind('@');
  std::string_view userinfo = at == std::string_view::npos ? "" : rest.substr(0, at + 1);
  std::string_view hosts = at == std::string_view::npos ? rest : rest.substr(at + 1);
  if (hosts.find('/') != std::string_view::npos)
    fail(url, "a cluster has no databases: no /db after the hosts");
  std::vector<endpoint> out;
  for (;;) {
    auto comma = hosts.find(',');
    std::string_view one = hosts.substr(0, comma);
    if (one.empty()) fail(url, "empty host in the seed list");
    std::string single = fmt::format("{}://{}{}", scheme, userinfo, one);
    try {
      out.push_back(parse(single));
    } catch (const std::invalid_argument&) {
      fail(url, fmt::format("bad seed '{}'", one));
    }
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  return out;
}

sentinel_config sentinel_config::parse(std::string_view url) {
  auto scheme_end = url.find("://");
  std::string_view scheme = scheme_end == std::string_view::npos ? "" : url.substr(0, scheme_end);
  bool tls = iequals(scheme, "rediss+sentinel");
  if (!tls && !iequals(scheme, "redis+sentinel"))
    fail(
        url,
        "not a URL of the form redis+sentinel://[[user]:password@]host:port[,host:port]...[/MASTER]"
        " (or rediss+sentinel://)");
  std::string_view rest = url.substr(scheme_end + 3);
  sentinel_config out;
  auto at = rest.rfind('@');
  auto slash = rest.find('/', at == std::string_view::npos ? 0 : at);
  if (slash != std::string_view::npos) {
    std::string_view name = rest.substr(slash + 1);
    for (char c : name)
      if (c == '/' || c == '?' || c == '#' || static_cast<unsigned char>(c) <= 0x20)
        fail(url, "the master name must be one word without '/', '?', '#' or spaces");
    if (!name.empty()) out.master_name = std::string(name);  // a bare '/': the default
    rest = rest.substr(0, slash);
  }
  auto list = fmt::format("{}://{}", tls ? "rediss" : "redis", rest);
  try {
    out.sentinels = endpoint::parse_list(list);
  } catch (const std::invalid_argument&) {
    fail(url, "bad sentinel list: expected host:port[,host:port]...");
  }
  return out;
}

std::string endpoint::display() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace pushonce::redis
