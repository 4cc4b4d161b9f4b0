#pragma once
// An errc in a log line (fmt) reads as its contract word (code_text).

#include <fmt/format.h>

#include <string_view>

#include "core/errc.hpp"

template <>
struct fmt::formatter<pushonce::errc> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(pushonce::errc e, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(pushonce::code_text(e), ctx);
  }
};
