// Proof-of-work verification (core/pow_challenge): any solution id and nonce get a verdict,
// never a crash; without the secret nothing is accepted, and an accepted solution really
// has the leading zero bits asked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/pow_challenge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // "<id>\n<nonce>": the two strings of a join's "pow".
  auto nl = in.find('\n');
  pushonce::pow_solution s;
  s.id = std::string(in.substr(0, nl));
  if (nl != std::string_view::npos) s.nonce = std::string(in.substr(nl + 1));
  static const pushonce::pow_gate gate("fuzz-secret-0123456789");
  auto check = gate.verify("alice", "default", 1, s, 1'700'000'000'000);
  if (check.ok()) {
    if (!pushonce::pow_solves(s.id + ".", s.nonce, 1)) __builtin_trap();
    // Forging the MAC without the secret is not something a fuzzer does.
    __builtin_trap();
  }
  return 0;
}
