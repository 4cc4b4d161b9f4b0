#include "tests/support/tls_certs.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "tests/support/temp_dir.hpp"

namespace pushonce::test {
namespace {

void run(const std::string& command) {
  std::string quiet = command + " >/dev/null 2>&1";
  if (std::system(quiet.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

// A P-256 key and a certificate for `subject` signed by ca/ca_key, with `names` as its
// subjectAltName ("" for none).
void signed_cert(const temp_dir& d, const std::string& name, const std::string& subject,
                 const std::string& names, const std::string& ca, const std::string& ca_key) {
  auto key = d.file(name + ".key"), csr = d.file(name + ".csr"), pem = d.file(name + ".pem");
  run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout '" + key +
      "' -out '" + csr + "' -subj '" + subject + "'");
  std::string ext = d.file(name + ".ext");
  std::ofstream(ext) << (names.empty() ? "" : "subjectAltName=" + names + "\n");
  run("openssl x509 -req -in '" + csr + "' -CA '" + ca + "' -CAkey '" + ca_key +
      "' -CAcreateserial -days 2 -extfile '" + ext + "' -out '" + pem + "'");
}

void self_signed_ca(const temp_dir& d, const std::string& name) {
  run("openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-keyout '" +
      d.file(name + ".key") + "' -out '" + d.file(name + ".pem") + "' -subj '/CN=" + name + "'");
}

}  // namespace

tls_certs::tls_certs() : dir_(std::make_unique<temp_dir>("pushonce-tls")) {
  const auto& d = *dir_;
  self_signed_ca(d, "ca");
  self_signed_ca(d, "other-ca");
  ca = d.file("ca.pem");
  other_ca = d.file("other-ca.pem");
  signed_cert(d, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", ca, d.file("ca.key"));
  signed_cert(d, "other-name", "/CN=other.example", "DNS:other.example", ca, d.file("ca.key"));
  other_name_cert = d.file("other-name.pem");
  other_name_key = d.file("other-name.key");
  signed_cert(d, "client", "/CN=pushonce-client", "", ca, d.file("ca.key"));
  server_cert = d.file("server.pem");
  server_key = d.file("server.key");
  client_cert = d.file("client.pem");
  client_key = d.file("client.key");
}

tls_certs::~tls_certs() = default;

std::vector<std::string> tls_certs::redis_args(std::uint16_t tls_port, bool auth_clients) const {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    server_cert,
          "--tls-key-file",     server_key,
          "--tls-ca-cert-file", ca,
          "--tls-auth-clients", auth_clients ? "yes" : "no"};
}

}  // namespace pushonce::test
