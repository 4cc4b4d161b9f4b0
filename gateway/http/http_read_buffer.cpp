#include "gateway/http/http_read_buffer.hpp"

#include <algorithm>

namespace pushonce::gateway {

std::size_t body_read_capacity(std::size_t buffered, std::optional<std::uint64_t> content_length,
                               std::size_t limit) {
  std::uint64_t body = content_length ? *content_length : kept_capacity;
  return buffered + static_cast<std::size_t>(std::min<std::uint64_t>(body, limit));
}

}  // namespace pushonce::gateway
