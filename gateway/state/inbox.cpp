#include "gateway/state/inbox.hpp"

#include <charconv>

#include "core/log.hpp"
#include "core/lua/session.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {
constexpr std::size_t refresh_batch = 256;  // users per pipeline
}

inbox::inbox(std::shared_ptr<redis::connection> conn, keys k, std::chrono::milliseconds idle_ttl,
             std::size_t page_size)
    : conn_(std::move(conn)), keys_(std::move(k)), idle_ttl_(idle_ttl), page_size_(page_size) {}

asio::awaitable<outcome<inbox_position>> inbox::open(std::string user, std::string new_epoch,
                                                     std::optional<lua::session_since> since) {
  auto in = lua::session_for(keys_, user, new_epoch, idle_ttl_, since);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  auto pos = parse_position(r.value);
  if (!pos) co_return failure{errc::internal, "session.lua: unexpected reply"};
  co_return std::move(*pos);
}

asio::awaitable<outcome<none>> inbox::ack(std::string user, std::string epoch, long long offset) {
  auto in = lua::ack_for(keys_, user, offset, epoch);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  co_return none{};
}

asio::awaitable<outcome<inbox_position>> inbox::position(std::string user) {
  redis::command cmd{"HMGET", keys_.user(user, "meta"), "epoch", "offset"};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  if (!r.value.is_array() || r.value.elements.size() != 2)
    co_return failure{errc::internal, "HMGET of the user's meta: unexpected reply"};
  const auto& e = r.value.elements[0];
  co_return inbox_position{e.is_string() ? e.str : std::string{},
                           r.value.elements[1].as_int().value_or(0)};
}

asio::awaitable<outcome<inbox_page>> inbox::read_page(std::string user, long long after) {
  redis::command cmd{"XRANGE", keys_.user(user, "inbox"), std::to_string(after + 1) + "-0", "+",
                     "COUNT",  std::to_string(page_size_)};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  auto page = parse_page(r.value);
  if (!page) co_return failure{errc::internal, "XRANGE of the inbox: unexpected reply"};
  co_return std::move(*page);
}

asio::awaitable<void> inbox::refresh(std::vector<std::string> users) {
  const auto ttl = std::to_string(idle_ttl_.count());
  for (std::size_t i = 0; i < users.size(); i += refresh_batch) {
    std::vector<redis::command> cmds;
    for (std::size_t j = i; j < users.size() && j < i + refresh_batch; ++j) {
      cmds.push_back({"PEXPIRE", keys_.user(users[j], "meta"), ttl});
      cmds.push_back({"PEXPIRE", keys_.user(users[j], "inbox"), ttl});
    }
    auto rs = co_await conn_->exec_all(std::move(cmds));
    if (!rs.empty() && rs.front().ec) log::debug("inbox refresh: {}", rs.front().ec.message());
  }
}

std::optional<inbox_page> inbox::parse_page(const redis::reply& r) {
  if (!r.is_array()) return std::nullopt;
  inbox_page page;
  page.reserve(r.elements.size());
  for (const auto& e : r.elements) {
    if (e.elements.size() < 2) continue;
    const auto& id = e.elements[0].str;
    long long off = 0;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), off);
    if (ec != std::errc{}) continue;
    const auto& fields = e.elements[1];
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      if (fields.elements[i].str == "f") {
        page.push_back({off, fields.elements[i + 1].str});
        break;
      }
    }
  }
  return page;
}

std::optional<inbox_position> inbox::parse_position(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() < 3 || !r.elements[0].is_string()) return std::nullopt;
  return inbox_position{r.elements[0].str, r.elements[1].as_int().value_or(0),
                        r.elements[2].as_int().value_or(0),
                        r.elements.size() > 3 && r.elements[3].as_int().value_or(0) == 1};
}

}  // namespace pushonce::gateway
