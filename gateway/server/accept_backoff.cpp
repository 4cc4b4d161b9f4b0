#include "gateway/server/accept_backoff.hpp"

#include <cerrno>

namespace pushonce::gateway {

bool accept_backoff::exhausted(const std::error_code& ec) {
  if (ec.category() != std::system_category() && ec.category() != std::generic_category())
    return false;
  switch (ec.value()) {
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      return true;
    default:
      return false;
  }
}

accept_backoff::decision accept_backoff::on_error(const std::error_code& ec,
                                                  clock::time_point now) {
  decision d;
  if (!exhausted(ec)) {
    d.warn = true;  // a one-off error: logged, and the listener goes on
    return d;
  }
  d.delay = delay_;
  if (!in_episode_) {
    in_episode_ = true;
    retries_ = 0;
    warned_ = false;
    if (last_warn_ == clock::time_point{} || now - last_warn_ >= warn_interval_) {
      d.warn = true;
      warned_ = true;
      last_warn_ = now;
    }
  }
  ++retries_;
  return d;
}

bool accept_backoff::on_accepted() {
  if (!in_episode_) return false;
  in_episode_ = false;
  return warned_;
}

}  // namespace pushonce::gateway
