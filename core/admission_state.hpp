#pragma once
// The admission state object of the state API, `admission renew|release` and `admission
// verify` (docs/protocol.md "Admission tokens", docs/capacity.md):
// {"id","user","queue","resource","state","expires_at"}; expires_at is the lease's end (ms)
// while the admission is live and has one, else null.

#include <boost/json/object.hpp>
#include <string_view>

#include "core/admission_plan.hpp"

namespace pushonce::admission {

boost::json::object state_object(std::string_view id, std::string_view queue, const record& r);

}  // namespace pushonce::admission
