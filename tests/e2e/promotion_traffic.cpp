#include "tests/e2e/promotion_traffic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

#include "tests/support/deployment.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

namespace pushonce::test::promotion {

using namespace std::chrono_literals;

namespace {
long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void user_session::start(std::uint16_t port) {
  thread_ = std::thread([this, port] { run(port); });
}

void user_session::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

// Resumes with its epoch and last offset on any close; on recovered:false it re-syncs as
// gateway/web/pushonce.js does (the new epoch, offset floor 0).
void user_session::run(std::uint16_t port) {
  std::string epoch;
  long long last = 0;
  while (!stop_) {
    ws_client ws;
    try {
      ws.connect("127.0.0.1", port, "/ws", {}, 2s);
    } catch (const std::exception&) {
      pace(100ms, "a reconnect after a refused connect");
      continue;
    }
    auto hello = epoch.empty() ? hello_frame(user_) : hello_frame(user_, epoch, last);
    std::optional<std::string> w;
    if (ws.send(hello, 2s)) w = ws.receive(8s);
    auto v = w ? parse_or_null(*w) : boost::json::value();
    if (!v.is_object() || str_field(v.as_object(), "type") != "welcome") {
      pace(100ms, "a reconnect after a hello without a welcome");
      continue;
    }
    const auto& wo = v.as_object();
    auto rec = wo.find("recovered");
    bool recovered = rec != wo.end() && rec->value().is_bool() && rec->value().as_bool();
    auto new_epoch = str_field(wo, "epoch");
    if (!recovered || new_epoch != epoch) last = 0;
    epoch = new_epoch;
    {
      std::lock_guard lock(m_);
      welcomes_.push_back({steady::now(), recovered, epoch});
    }
    while (!stop_) {
      auto f = ws.receive(200ms);
      if (!f) {
        if (ws.closed()) break;
        continue;
      }
      auto fv = parse_or_null(*f);
      if (!fv.is_object() || str_field(fv.as_object(), "type") != "message") continue;
      const auto& fo = fv.as_object();
      frame_seen seen{steady::now(),           wall_ms(), int_field(fo, "ts"),
                      int_field(fo, "offset"), epoch,     str_field(fo, "id")};
      std::lock_guard lock(m_);
      if (seen.offset <= last) ++stale_;
      last = std::max(last, seen.offset);
      frames_.push_back(std::move(seen));
    }
  }
}

std::vector<frame_seen> user_session::frames() const {
  std::lock_guard lock(m_);
  return frames_;
}

std::vector<welcome_seen> user_session::welcomes() const {
  std::lock_guard lock(m_);
  return welcomes_;
}

long long user_session::stale_offsets() const {
  std::lock_guard lock(m_);
  return stale_;
}

bool user_session::welcomed() const {
  std::lock_guard lock(m_);
  return !welcomes_.empty();
}

bool user_session::got(const std::string& id) const {
  std::lock_guard lock(m_);
  return std::any_of(frames_.begin(), frames_.end(), [&](const auto& f) { return f.id == id; });
}

bool user_session::told_not_recovered_since(steady::time_point t) const {
  std::lock_guard lock(m_);
  return std::any_of(welcomes_.begin(), welcomes_.end(),
                     [&](const auto& w) { return !w.recovered && w.at >= t; });
}

publish_load::publish_load(std::uint16_t port, std::string api_key, std::vector<std::string> users,
                           long long rate, int threads)
    : port_(port),
      api_key_(std::move(api_key)),
      users_(std::move(users)),
      rate_(rate),
      thread_count_(threads) {}

void publish_load::start() {
  start_ = steady::now();
  for (int t = 0; t < thread_count_; ++t) threads_.emplace_back([this] { run(); });
}

void publish_load::stop() {
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

std::vector<accepted_message> publish_load::accepted() const {
  std::lock_guard lock(m_);
  return accepted_;
}

void publish_load::run() {
  while (!stop_) {
    auto seq = next_++;
    std::this_thread::sleep_until(
        start_ + std::chrono::milliseconds(static_cast<long long>(seq) * 1000 / rate_));
    if (stop_) break;
    const auto& user = users_[seq % users_.size()];
    auto sent = steady::now();
    auto id = publish(seq, user);
    if (!id) {
      ++unaccepted_;
      continue;
    }
    std::lock_guard lock(m_);
    accepted_.push_back({user, *id, sent, steady::now()});
  }
}

// Retried with the same idempotency key until accepted (a 503 while a slot has no master).
std::optional<std::string> publish_load::publish(std::size_t seq, const std::string& user) {
  auto body = fmt::format(R"({{"user":"{}","data":{{"n":{}}},"id":"m{}"}})", user, seq, seq);
  headers auth{{"Authorization", bearer(api_key_)}, {"Content-Type", "application/json"}};
  auto give_up = steady::now() + 60s;
  while (steady::now() < give_up) {
    auto r = http_request("127.0.0.1", port_, "POST", "/api/publish", body, auth, 10s);
    if (r.status == 200) {
      auto v = parse_or_null(r.body);
      if (v.is_object()) return str_field(v.as_object(), "id");
    }
    ++refused_;
    pace(100ms, "a refused publish retried");
  }
  return std::nullopt;
}

int publish_once(std::uint16_t port, const std::string& api_key, const std::string& user) {
  auto body = fmt::format(R"({{"user":"{}","data":{{"probe":true}}}})", user);
  headers auth{{"Authorization", bearer(api_key)}, {"Content-Type", "application/json"}};
  return http_request("127.0.0.1", port, "POST", "/api/publish", body, auth, 10s).status;
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace pushonce::test::promotion
