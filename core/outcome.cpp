#include "core/outcome.hpp"

#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>
#include <ostream>

namespace pushonce {

std::ostream& operator<<(std::ostream& os, const failure& f) {
  return os << code_text(f.code) << ": " << f.message;
}

std::ostream& operator<<(std::ostream& os, errc e) {
  return os << code_text(e);
}

void throw_exception_from_error(const failure& f, const boost::source_location& loc) {
  boost::throw_with_location(boost::system::system_error(make_error_code(f.code), f.message), loc);
}

}  // namespace pushonce
