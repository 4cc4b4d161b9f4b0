#include "gateway/http/admission_api.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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

std::string admission_state_json(std::string_view id, std::string_view queue,
                                 const ::pushonce::admission::record& r) {
  boost::json::object o{
      {"id", id}, {"user", r.user}, {"queue", queue}, {"resource", r.resource}, {"state", r.state}};
  return boost::json::serialize(o);
}

}  // namespace pushonce::gateway
