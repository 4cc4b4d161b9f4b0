// JWT parsing and verification (core/jwt over libjwt): any token is refused or gives a
// valid user name, never a crash; a token signed with another secret is never accepted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/jwt.hpp"
#include "core/names.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string token(reinterpret_cast<const char*>(data), size);
  auto r = pushonce::jwt::verify(token, "fuzz-secret-0123456789-0123456789");
  if (r && !pushonce::valid_name(r.value().user)) __builtin_trap();
  return 0;
}
