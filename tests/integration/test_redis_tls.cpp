// rediss:// against a real redis-server with a TLS port: certificates made by the openssl
// command line; the server is verified (CA file, host name), a client certificate is sent
// when the server asks for one, and a wrong CA or a missing client certificate is refused.
#include <doctest/doctest.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "core/redis/connection.hpp"
#include "core/redis/resp_stream.hpp"
#include "core/redis/subscriber.hpp"
#include "tests/integration/redis_fixture.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/tls_certs.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_redis_tls_integration {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pushonce::redis::connection_options;
using pushonce::redis::reply;
using pushonce::redis::resp_stream;
using pushonce::test::cmd;
using pushonce::test::co_wait_until;
using pushonce::test::received;
using pushonce::test::redis_fixture;
using pushonce::test::redis_server_options;
using pushonce::test::tls_certs;

namespace {

struct tls_setup {
  explicit tls_setup(bool auth_clients)
      : tls_port(pushonce::test::free_port()),
        fx(redis_server_options{.extra_args = certs.redis_args(tls_port, auth_clients)}) {}

  /// rediss://host:tls_port with the CA, short timeouts.
  connection_options options(const std::string& host = "127.0.0.1") const {
    auto o = fx.options();
    o.where = pushonce::redis::endpoint::parse("rediss://" + host + ":" + std::to_string(tls_port));
    o.where.certs.ca = certs.ca;
    o.client_name = "tls-test";
    o.connect_timeout = 3000ms;
    return o;
  }

  tls_certs certs;
  std::uint16_t tls_port;
  redis_fixture fx;
};

// One connect attempt of the client's stream: the error it ends with ({} when it is up).
std::error_code try_connect(redis_fixture& fx, const connection_options& o) {
  return fx.run([&]() -> asio::awaitable<std::error_code> {
    resp_stream s(fx.io.get_executor());
    auto ec = co_await s.connect(o);
    s.close();
    co_return ec;
  });
}

}  // namespace

TEST_CASE("redis tls: commands and a subscription over rediss:// verified with the CA file") {
  tls_setup t(false);
  CHECK_FALSE(try_connect(t.fx, t.options()));
  auto conn = t.fx.connect(t.options());
  received rec;
  auto sub = t.fx.subscriber(rec, t.options("localhost"));  // a DNS name: SNI and its check
  t.fx.run([&]() -> asio::awaitable<void> {
    std::vector<pushonce::redis::command> incrs;
    for (int i = 0; i < 5000; ++i) incrs.push_back(cmd({"INCR", "tls:n"}));
    CO_LET(auto rs, conn->exec_all(std::move(incrs)));
    REQUIRE(rs.size() == 5000);
    CHECK(rs.back().ok());
    CHECK(rs.back().value.integer == 5000);
    std::string big(200000, 'x');  // more than one TLS record each way
    auto set = cmd({"SET", "tls:big", big});
    CO_LET(auto s, conn->exec(std::move(set)));
    CHECK(s.ok());
    auto get = cmd({"GET", "tls:big"});
    CO_LET(auto g, conn->exec(std::move(get)));
    CHECK(g.value.str == big);
    // The connection is really on the TLS port: the server lists it with its name.
    auto list = cmd({"CLIENT", "LIST"});
    CO_LET(auto l, conn->exec(std::move(list)));
    CHECK(l.value.str.find("name=tls-test") != std::string::npos);

    CO_LET(auto sec, sub->subscribe("tls:chan"));
    CHECK_FALSE(sec);
    auto pub = cmd({"PUBLISH", "tls:chan", "over tls"});
    CO_LET(auto p, conn->exec(std::move(pub)));
    CHECK(p.value.integer == 1);
    CO_LET(bool got, co_wait_until([&] { return rec.count("tls:chan") == 1; }, 3s));
    CHECK(got);
  });
  CHECK(rec.payloads("tls:chan") == std::vector<std::string>{"over tls"});
}

TEST_CASE("redis tls: a server the CA did not sign, or for another name, is refused") {
  tls_setup t(false);
  auto wrong = t.options();
  wrong.where.certs.ca = t.certs.other_ca;
  auto ec = try_connect(t.fx, wrong);
  REQUIRE(ec);
  CHECK(ec.message().find("certificate verify failed") != std::string::npos);

  auto system_store = t.options();  // the system CA store does not know the test CA
  system_store.where.certs.ca.clear();
  auto sec = try_connect(t.fx, system_store);
  REQUIRE(sec);
  CHECK(sec.message().find("certificate verify failed") != std::string::npos);

  auto plain = t.options();  // redis:// to the TLS port: no reply the client understands
  plain.where.tls = false;
  plain.connect_timeout = 500ms;
  CHECK(try_connect(t.fx, plain));

  // The right CA but a certificate for another name: the host name check refuses it.
  {
    pushonce::test::sync_redis admin(t.fx.server.port());
    admin.cmd({"CONFIG", "SET", "tls-cert-file", t.certs.other_name_cert, "tls-key-file",
               t.certs.other_name_key});
    auto mismatch = try_connect(t.fx, t.options());
    REQUIRE(mismatch);
    CHECK(mismatch.message().find("certificate verify failed") != std::string::npos);
    admin.cmd({"CONFIG", "SET", "tls-cert-file", t.certs.server_cert, "tls-key-file",
               t.certs.server_key});
    CHECK_FALSE(try_connect(t.fx, t.options()));
  }

  // A connection with the wrong CA never comes up: its commands fail, they are not sent.
  auto conn = t.fx.connect(wrong);
  t.fx.run([&]() -> asio::awaitable<void> {
    CO_LET(bool up, co_wait_until([&] { return conn->connected(); }, 1s));
    CHECK_FALSE(up);
  });
}

TEST_CASE("redis tls: --tls-auth-clients yes wants the client certificate") {
  tls_setup t(true);
  auto anonymous = t.options();
  CHECK(try_connect(t.fx, anonymous));

  auto with_cert = t.options();
  with_cert.where.certs.cert = t.certs.client_cert;
  with_cert.where.certs.key = t.certs.client_key;
  CHECK_FALSE(try_connect(t.fx, with_cert));
  auto conn = t.fx.connect(with_cert);
  t.fx.run([&]() -> asio::awaitable<void> {
    auto ping = cmd({"PING"});
    CO_LET(auto r, conn->exec(std::move(ping)));
    CHECK(r.ok());
    CHECK(r.value.str == "PONG");
  });
}

}  // namespace test_redis_tls_integration
