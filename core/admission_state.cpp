#include "core/admission_state.hpp"

#include <boost/json.hpp>

namespace pushonce::admission {

boost::json::object state_object(std::string_view id, std::string_view queue, const record& r) {
  boost::json::object o{
      {"id", id}, {"user", r.user}, {"queue", queue}, {"resource", r.resource}, {"state", r.state}};
  o["expires_at"] = r.expires_at ? boost::json::value(*r.expires_at) : boost::json::value(nullptr);
  return o;
}

}  // namespace pushonce::admission
