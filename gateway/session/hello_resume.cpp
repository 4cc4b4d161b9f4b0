#include "gateway/session/hello_resume.hpp"

namespace pushonce::gateway {

std::optional<lua::session_since> hello_resume::session_args() const {
  if (!since_) return std::nullopt;
  return lua::session_since{since_->epoch, since_->offset};
}

const resume_plan& hello_resume::on_opened(std::string_view epoch, long long latest,
                                           long long acked, bool rotated) {
  latest_ = latest;
  rotated_ = rotated;
  std::optional<std::pair<std::string, long long>> since;
  if (since_) since.emplace(since_->epoch, since_->offset);
  plan_ = plan_resume(since, epoch, latest, acked);
  return plan_;
}

welcome_plan hello_resume::on_first_page(std::optional<long long> first) const {
  return plan_welcome(plan_, latest_, first);
}

}  // namespace pushonce::gateway
