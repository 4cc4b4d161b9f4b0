#include "worker/claim_client.hpp"

#include <random>

#include "core/redis/scripts.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

namespace {
std::string random_epoch() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  auto v = rng();
  for (auto& c : out) {
    c = hex[v & 15];
    v >>= 4;
  }
  return out;
}
}  // namespace

claim_client::claim_client(std::shared_ptr<redis::connection> conn, keys k, claim_options opts)
    : conn_(std::move(conn)), keys_(std::move(k)), opts_(opts) {}

asio::awaitable<outcome<claim_result>> claim_client::claim(const bus_message& m,
                                                           std::string owner) {
  std::vector<std::string> k{keys_.claim(m.user, m.id)};
  std::vector<std::string> a{std::move(owner), std::to_string(opts_.lease.count()),
                             std::to_string(opts_.dedup_window.count())};
  const auto& script = redis::get_script("claim");
  auto r = co_await redis::eval(*conn_, script, std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  const auto& word = r.value.at(0).str;
  claim_result out;
  if (word == "won") {
    out.state = claim_state::won;
    out.attempts = r.value.at(1).as_int().value_or(1);
  } else if (word == "dead") {
    out.state = claim_state::dead;
  } else if (word == "done") {
    out.state = claim_state::done;
    out.offset = r.value.at(1).as_int().value_or(0);
  } else {
    out.state = claim_state::taken;
  }
  co_return out;
}

asio::awaitable<outcome<long long>> claim_client::deliver(const bus_message& m, std::string owner) {
  auto frame = render_frame(m);
  std::vector<std::string> k{keys_.claim(m.user, m.id), keys_.user(m.user, "meta"),
                             keys_.user(m.user, "inbox"), keys_.user_channel(m.user)};
  std::vector<std::string> a{std::move(owner),
                             std::move(frame.head),
                             std::move(frame.tail),
                             std::to_string(opts_.dedup_window.count()),
                             std::to_string(opts_.inbox_maxlen),
                             std::to_string(opts_.inbox_idle.count()),
                             random_epoch()};
  const auto& script = redis::get_script("deliver");
  auto r = co_await redis::eval(*conn_, script, std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return r.value.as_int().value_or(0);
}

asio::awaitable<bool> claim_client::release(const bus_message& m, std::string owner) {
  std::vector<std::string> k{keys_.claim(m.user, m.id)};
  std::vector<std::string> a{std::move(owner)};
  const auto& script = redis::get_script("release");
  auto r = co_await redis::eval(*conn_, script, std::move(k), std::move(a));
  co_return r.ok() && r.value.integer == 1;
}

asio::awaitable<outcome<bool>> claim_client::dead_letter(const bus_message& m, std::string owner,
                                                         std::string reason, long long attempts) {
  redis::command add{"XADD",     keys_.plain("dead-letters"),
                     "MAXLEN",   "~",
                     "10000",    "*",
                     "id",       m.id,
                     "user",     m.user,
                     "src",      m.src,
                     "reason",   reason,
                     "attempts", std::to_string(attempts),
                     "m",        m.raw};
  auto added = co_await conn_->exec(std::move(add));
  if (!added.ok()) co_return failure_of(added);
  std::vector<std::string> k{keys_.claim(m.user, m.id)};
  std::vector<std::string> a{std::move(owner), std::move(reason),
                             std::to_string(opts_.dedup_window.count())};
  const auto& script = redis::get_script("dead_letter");
  auto r = co_await redis::eval(*conn_, script, std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return r.value.integer == 1;
}

}  // namespace pushonce::worker
