#include "core/redis/cluster_retry.hpp"

#include <algorithm>
#include <utility>

namespace pushonce::redis {

cluster_retry::step cluster_retry::next(std::error_code ec, const reply& r,
                                        clock_type::time_point now) {
  step s;
  if (ec) {
    s.refresh = true;
    return s;
  }
  if (!r.is_error()) return s;
  auto code = r.error_code();
  const bool was_asked = std::exchange(asked_, false);
  if (code == "MOVED" || code == "ASK") {
    auto to = parse_redirect(r);
    if (!to || left_ <= 0 || now >= deadline_) return s;
    s.refresh = !to->ask;
    if (to->ask && was_asked) return s;  // ASK once only
    --left_;
    asked_ = to->ask;
    s.what = to->ask ? action::follow_ask : action::follow_moved;
    s.to = std::move(to);
    return s;
  }
  if (code == "TRYAGAIN" || code == "CLUSTERDOWN") {
    s.refresh = code == "CLUSTERDOWN";
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now);
    if (left <= backoff_) return s;
    s.what = action::wait_and_resend;
    s.wait = backoff_;
    backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds{500});
    return s;
  }
  return s;
}

}  // namespace pushonce::redis
