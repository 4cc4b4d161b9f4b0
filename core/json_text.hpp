#pragma once
// JSON and numbers as people write them. boost::json::serialize writes every double in
// exponent form (60.0 as 6E1, 0.5 as 5E-1); every output of the programs (CLI text and
// --json, HTTP answers, /metrics, pushonce-bench's report) goes through these instead:
// the shortest decimal that reads back as the same double (60, 0.5, 1e+21).

#include <boost/json/value.hpp>
#include <string>

namespace pushonce {

/// A double as people write it: 60, 0.5, 0.1, 1e+21; NaN and infinities as null.
std::string number_text(double d);

/// `v` as JSON text, its doubles written by number_text; the rest as boost::json writes it.
std::string json_text(const boost::json::value& v);

}  // namespace pushonce
