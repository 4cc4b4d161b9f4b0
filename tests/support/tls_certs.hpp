#pragma once
// Throwaway TLS material for tests of rediss://, made with the openssl command line in a
// fresh temporary directory: a CA, a server certificate it signed (names localhost and
// 127.0.0.1), one for another name (other.example), a client certificate it signed, and a
// second CA that signed nothing here.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pushonce::test {

class temp_dir;

class tls_certs {
 public:
  /// Runs openssl; throws std::runtime_error when a step fails.
  tls_certs();
  ~tls_certs();
  tls_certs(const tls_certs&) = delete;
  tls_certs& operator=(const tls_certs&) = delete;

  std::string ca, server_cert, server_key, client_cert, client_key, other_ca;
  std::string other_name_cert, other_name_key;  // signed by `ca`, for other.example only

  /// redis-server arguments for a TLS port with these files (plain --port stays for the
  /// fixture's readiness check); `auth_clients`: --tls-auth-clients yes or no.
  std::vector<std::string> redis_args(std::uint16_t tls_port, bool auth_clients) const;

 private:
  std::unique_ptr<temp_dir> dir_;
};

}  // namespace pushonce::test
