#include "gateway/http/admission_api.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "core/admission_state.hpp"

namespace pushonce::gateway {

std::optional<std::string> admission_sources::queue_of(long long source) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(source);
  if (it == queues_.end()) return std::nullopt;
  return it->second;
}

void admission_sources::set(std::map<long long, std::string> m) {
  std::lock_guard lock(mutex_);
  queues_ = std::move(m);
}

std::optional<std::string> admission_id_of_path(std::string_view path) {
  constexpr std::string_view prefix = "/api/admission/";
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  auto id = path.substr(prefix.size());
  if (id.empty() || id.size() > 19) return std::nullopt;
  for (char c : id)
    if (c < '0' || c > '9') return std::nullopt;
  return std::string(id);
}

std::optional<admission_action> admission_action_of_path(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto verb = path.substr(slash + 1);
  if (verb != "renew" && verb != "release") return std::nullopt;
  auto id = admission_id_of_path(path.substr(0, slash));
  if (!id) return std::nullopt;
  return admission_action{std::move(*id), verb == "renew"};
}

std::string admission_state_json(std::string_view id, std::string_view queue,
                                 const ::pushonce::admission::record& r) {
  return boost::json::serialize(::pushonce::admission::state_object(id, queue, r));
}

}  // namespace pushonce::gateway
