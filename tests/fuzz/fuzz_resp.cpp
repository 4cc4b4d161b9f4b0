// The RESP reader (core/redis/resp_reader): any bytes from a Redis server, fed at once or a
// byte at a time, give the same replies and the same protocol error, without a crash, a leak
// or an allocation the input did not pay for (libFuzzer's -malloc_limit_mb catches one: an
// array header once reserved 2.4 GB).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/redis/resp_reader.hpp"

using pushonce::redis::reply;
using pushonce::redis::resp_reader;

namespace {

void show(const reply& r, std::string& out) {
  out += static_cast<char>('0' + static_cast<int>(r.kind));
  out += std::to_string(r.integer) + ':' + std::to_string(r.str.size()) + ':' + r.str;
  out += '[';
  for (const auto& e : r.elements) show(e, out);
  out += ']';
}

struct decoded {
  std::vector<std::string> replies;
  bool failed = false;
};

decoded decode(const std::uint8_t* data, std::size_t size, std::size_t step) {
  resp_reader reader;
  decoded d;
  const char* bytes = reinterpret_cast<const char*>(data);
  for (std::size_t at = 0; at < size && !d.failed; at += step) {
    std::size_t n = size - at < step ? size - at : step;
    if (!reader.feed(bytes + at, n)) {
      d.failed = true;
      break;
    }
    for (;;) {
      reply r;
      std::error_code ec;
      if (!reader.take(r, ec)) break;
      if (ec) {
        d.failed = true;
        break;
      }
      std::string text;
      show(r, text);
      d.replies.push_back(std::move(text));
    }
  }
  if (d.failed && reader.error_text().empty()) std::abort();  // an error says why
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto whole = decode(data, size, size);
  if (size > 4096) return 0;  // byte-at-a-time only for small inputs (time)
  auto bytewise = decode(data, size, 1);
  if (whole.failed != bytewise.failed || whole.replies != bytewise.replies) std::abort();
  return 0;
}
