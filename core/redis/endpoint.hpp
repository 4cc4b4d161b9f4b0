#pragma once
// Where a Redis server is and how to log in: parsed from redis://[[user]:password@]host:port[/db]
// or rediss://... (TLS, with the certificate files the common options give), and where the
// Sentinels of a monitored master are: redis+sentinel://[[user]:password@]host:port[,...][/MASTER].

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::redis {

/// TLS settings of a rediss:// endpoint (--redis-tls-ca, --redis-tls-cert, --redis-tls-key).
struct tls_files {
  std::string ca;    // PEM CA bundle that verifies the server; empty: the system CA store
  std::string cert;  // PEM client certificate (chain), empty: none
  std::string key;   // PEM private key of `cert`
};

struct endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string user;      // empty: AUTH with password only
  std::string password;  // empty: no AUTH
  int db = 0;
  bool tls = false;  // rediss://: TLS with server certificate and host name verification
  tls_files certs;   // used when tls

  /// Parses a redis:// or rediss:// URL; throws std::invalid_argument with a readable message.
  static endpoint parse(std::string_view url);
  /// Parses a cluster seed list, redis[s]://[[user]:password@]host:port[,host:port]... (every
  /// seed gets the credentials, and TLS with rediss://); throws std::invalid_argument.
  static std::vector<endpoint> parse_list(std::string_view url);
  /// host:port (no credentials), for log lines.
  std::string display() const;
};

/// Redis Sentinel: the sentinels to ask, and the name of the master they monitor. Every
/// sentinel carries the URL's credentials and TLS; the master found gets them too.
struct sentinel_config {
  std::vector<endpoint> sentinels;  // empty: no Sentinel
  std::string master_name = "mymaster";

  /// Parses redis+sentinel://[[user]:password@]host:port[,host:port]...[/MASTER] or
  /// rediss+sentinel://... (TLS to the sentinels and the master); throws std::invalid_argument.
  static sentinel_config parse(std::string_view url);
  bool enabled() const { return !sentinels.empty(); }
};

struct connection_options {
  endpoint where;
  std::string client_name;  // CLIENT SETNAME, empty: none
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds backoff_initial{50};
  std::chrono::milliseconds backoff_max{2000};
  std::size_t max_queued = 200000;
  // Redis Cluster seed nodes; when not empty the connection is a cluster client (one
  // connection per master, commands routed by key) and a subscriber moves to the next seed
  // when one cannot be reached. `where` is the first seed.
  std::vector<endpoint> cluster;  // commands waiting or in flight; beyond: error::queue_full
  // Redis Sentinel; when enabled, every (re)connect asks the sentinels where the master is
  // (`where` is then the master last found) and checks that it answers ROLE as master.
  sentinel_config sentinel;
  // A refused login (error::login_refused: a wrong password or database) fails every
  // command at once and for good, instead of retrying until the command timeout: for a CLI
  // call, which has nobody to wait for an operator to fix Redis.
  bool fail_on_login_refusal = false;
};

}  // namespace pushonce::redis
