// bench_pow_verify: the gateway's CPU per proof-of-work check (core/pow_challenge): one
// verification of a valid solution (an HMAC-SHA256 and a SHA-256), of a forged one (the
// HMAC only), and the issue of a challenge (an HMAC and RAND_bytes), single-threaded.
// Prints one JSON line.
//
//   bench_pow_verify [--iterations N]   (default 200000)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/pow_challenge.hpp"

int main(int argc, char** argv) {
  long long n = 200000;
  if (argc == 3 && std::string(argv[1]) == "--iterations") n = std::atoll(argv[2]);
  using clock = std::chrono::steady_clock;
  const long long now = 1'700'000'000'000;
  pushonce::pow_gate gate("bench-secret-0123456789abcdef0123456789");
  auto c = gate.issue("user-0001", "default", 12, now, pushonce::random_hex_secure(12));
  std::string nonce;
  for (long long i = 0; nonce.empty(); ++i)
    if (pushonce::pow_solves(c.prefix, std::to_string(i), 12)) nonce = std::to_string(i);
  pushonce::pow_solution good{c.id, nonce};
  auto forged_id = c.id;
  forged_id.back() = forged_id.back() == '0' ? '1' : '0';
  pushonce::pow_solution forged{forged_id, nonce};

  auto time_per = [&](auto&& f) {
    auto t = clock::now();
    long long ok = 0;
    for (long long i = 0; i < n; ++i) ok += f();
    auto us = std::chrono::duration<double, std::micro>(clock::now() - t).count();
    return std::pair{us / static_cast<double>(n), ok};
  };
  auto [valid_us, valid_ok] =
      time_per([&] { return gate.verify("user-0001", "default", 12, good, now + 1).ok(); });
  auto [forged_us, forged_ok] =
      time_per([&] { return gate.verify("user-0001", "default", 12, forged, now + 1).ok(); });
  std::vector<std::string> randoms;
  for (int i = 0; i < 1000; ++i) randoms.push_back(pushonce::random_hex_secure(12));
  auto [issue_us, issued] = time_per([&, i = 0]() mutable {
    return gate.issue("user-0001", "default", 20, now, randoms[i++ % 1000]).bits == 20;
  });
  auto [rand_us, rands] = time_per([] { return !pushonce::random_hex_secure(12).empty(); });
  std::printf(
      "{\"iterations\":%lld,\"verify_valid_us\":%.3f,\"verify_forged_us\":%.3f,"
      "\"issue_us\":%.3f,\"random_us\":%.3f,\"valid_accepted\":%lld,\"forged_accepted\":%lld,"
      "\"verifications_per_core_s\":%.0f}\n",
      n, valid_us, forged_us, issue_us, rand_us, valid_ok, forged_ok, 1e6 / valid_us);
  (void)issued;
  (void)rands;
  return valid_ok == n && forged_ok == 0 ? 0 : 1;
}
