#pragma once
// GET /.well-known/jwks.json and GET /api/admission/ID (docs/protocol.md "Admission tokens"),
// decided without sockets: which queue an id belongs to (its low 12 bits are the queue's
// source index; the index -> queue map is read once from NS:sources and kept, since an index
// never changes), and the answer's body. The handlers in http_routes carry them out: the
// state answer costs one HGET of the queue's admission record.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/admission_plan.hpp"

namespace pushonce::gateway {

/// Source index -> queue name, shared by the gateway's threads.
class admission_sources {
 public:
  std::optional<std::string> queue_of(long long source) const;
  void set(std::map<long long, std::string> m);

 private:
  mutable std::mutex mutex_;
  std::map<long long, std::string> queues_;
};

/// The id part of /api/admission/ID: a decimal message id (1-19 digits), else std::nullopt.
std::optional<std::string> admission_id_of_path(std::string_view path);

/// POST /api/admission/ID/renew | /release: the id and the action, else std::nullopt.
struct admission_action {
  std::string id;
  bool renew = false;  // false: release
};
std::optional<admission_action> admission_action_of_path(std::string_view path);

/// {"id","user","queue","resource","state","expires_at"} (core/admission_state)
std::string admission_state_json(std::string_view id, std::string_view queue,
                                 const ::pushonce::admission::record& r);

}  // namespace pushonce::gateway
