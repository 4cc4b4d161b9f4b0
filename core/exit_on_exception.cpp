#include "core/exit_on_exception.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/log.hpp"

namespace pushonce {

void exit_after_exception(std::string_view where, std::exception_ptr e) noexcept {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
  }
  try {
    log::error("{}: unexpected exception: {}; exiting (code {}) so that it is restarted", where,
               what, exit_code_on_exception);
  } catch (...) {
  }
  std::fflush(nullptr);
  std::_Exit(exit_code_on_exception);
}

}  // namespace pushonce
