#include "core/config.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/program_options/value_semantic.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_config_unit {

namespace po = boost::program_options;
using pushonce::command_line;
using pushonce::parse_command_line;
using pushonce::usage_error;
using pushonce::redis::endpoint;

namespace {

// Clears PUSHONCE_REDIS / _NAMESPACE / _LOG_LEVEL for one test and restores them after.
class clean_env {
 public:
  clean_env() {
    for (const char* name : names_) {
      const char* v = std::getenv(name);
      saved_.emplace_back(v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(name);
    }
  }
  ~clean_env() {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (saved_[i])
        ::setenv(names_[i], saved_[i]->c_str(), 1);
      else
        ::unsetenv(names_[i]);
    }
  }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  std::vector<const char*> names_ = {
      "PUSHONCE_REDIS",           "PUSHONCE_NAMESPACE",           "PUSHONCE_LOG_LEVEL",
      "PUSHONCE_DEDUP_WINDOW_MS", "PUSHONCE_OUTBOX_RETENTION_MS", "PUSHONCE_MAX_DATA_BYTES",
      "PUSHONCE_LOG_FORMAT",      "PUSHONCE_TEST_SECRET",         "PUSHONCE_TEST_SECRET_FILE",
      "PUSHONCE_REDIS_CLUSTER",   "PUSHONCE_REDIS_TLS_CA",        "PUSHONCE_REDIS_TLS_CERT",
      "PUSHONCE_REDIS_TLS_KEY",   "PUSHONCE_BUS_SHARDS",          "PUSHONCE_REDIS_SENTINEL",
      "PUSHONCE_REDIS_FILE"};
  std::vector<std::optional<std::string>> saved_;
};

po::options_description own_options() {
  po::options_description d("Leader options");
  // clang-format off
  d.add_options()
      ("queue", po::value<std::vector<std::string>>(), "queue name")
      ("json", po::bool_switch(), "JSON output")
      ("limit", po::value<int>()->default_value(100), "at most N");
  // clang-format on
  return d;
}

command_line parse(std::initializer_list<const char*> words) {
  std::vector<const char*> argv = {"pushonce-test"};
  argv.insert(argv.end(), words.begin(), words.end());
  return parse_command_line(static_cast<int>(argv.size()), argv.data(), own_options());
}

}  // namespace

TEST_CASE("defaults") {
  clean_env env;
  auto cl = parse({});
  CHECK(cl.common.redis_url == "redis://127.0.0.1:6379");
  CHECK(cl.common.redis.host == "127.0.0.1");
  CHECK(cl.common.redis.port == 6379);
  CHECK(cl.common.ns == "pushonce");
  CHECK(cl.common.log_level == pushonce::log::level::info);
  CHECK(cl.positional.empty());
  CHECK_FALSE(cl.help);
  CHECK_FALSE(cl.version);
  CHECK(cl.vm["limit"].as<int>() == 100);
  CHECK_FALSE(cl.vm["json"].as<bool>());
}

TEST_CASE("common options before, between and after positional words") {
  clean_env env;
  auto before = parse({"--redis", "redis://h1:7000", "--namespace", "ns1", "join", "alice"});
  CHECK(before.positional == std::vector<std::string>{"join", "alice"});
  CHECK(before.common.redis.host == "h1");
  CHECK(before.common.redis.port == 7000);
  CHECK(before.common.ns == "ns1");

  auto after = parse({"join", "alice", "--log-level", "debug", "--redis=redis://h2:7001"});
  CHECK(after.positional == std::vector<std::string>{"join", "alice"});
  CHECK(after.common.log_level == pushonce::log::level::debug);
  CHECK(after.common.redis.host == "h2");
  CHECK(after.common.redis.port == 7001);

  auto mixed = parse({"resource", "--namespace=x", "add", "--queue", "q1", "r1", "--json", "r2",
                      "--queue=q2", "--limit", "5"});
  CHECK(mixed.positional == std::vector<std::string>{"resource", "add", "r1", "r2"});
  CHECK(mixed.common.ns == "x");
  CHECK(mixed.vm["queue"].as<std::vector<std::string>>() == std::vector<std::string>{"q1", "q2"});
  CHECK(mixed.vm["json"].as<bool>());
  CHECK(mixed.vm["limit"].as<int>() == 5);
}

TEST_CASE("positional words that look like JSON stay words") {
  clean_env env;
  auto cl = parse({"publish", "alice", R"({"text":"hi there"})", "--json"});
  CHECK(cl.positional == std::vector<std::string>{"publish", "alice", R"({"text":"hi there"})"});
}

TEST_CASE("-- ends the options") {
  clean_env env;
  auto cl = parse({"publish", "--", "--not-an-option"});
  CHECK(cl.positional == std::vector<std::string>{"publish", "--not-an-option"});
}

TEST_CASE("--help, -h and --version") {
  clean_env env;
  CHECK(parse({"--help"}).help);
  CHECK(parse({"join", "-h"}).help);
  CHECK(parse({"--version"}).version);
  // --help wins over an otherwise bad command line value
  CHECK(parse({"--help", "--log-level", "loud"}).help);
}

TEST_CASE("environment fills what the command line does not give") {
  clean_env env;
  env.set("PUSHONCE_REDIS", "redis://envhost:6390/2");
  env.set("PUSHONCE_NAMESPACE", "envns");
  env.set("PUSHONCE_LOG_LEVEL", "warn");
  auto cl = parse({"status"});
  CHECK(cl.common.redis_url == "redis://envhost:6390/2");
  CHECK(cl.common.redis.host == "envhost");
  CHECK(cl.common.redis.port == 6390);
  CHECK(cl.common.redis.db == 2);
  CHECK(cl.common.ns == "envns");
  CHECK(cl.common.log_level == pushonce::log::level::warn);
}

TEST_CASE("the command line wins over the environment") {
  clean_env env;
  env.set("PUSHONCE_REDIS", "redis://envhost:6390");
  env.set("PUSHONCE_NAMESPACE", "envns");
  env.set("PUSHONCE_LOG_LEVEL", "warn");
  auto cl = parse(
      {"status", "--redis", "redis://cli:1234", "--namespace", "clins", "--log-level", "error"});
  CHECK(cl.common.redis.host == "cli");
  CHECK(cl.common.redis.port == 1234);
  CHECK(cl.common.ns == "clins");
  CHECK(cl.common.log_level == pushonce::log::level::error);

  auto partial = parse({"--namespace", "clins"});
  CHECK(partial.common.redis.host == "envhost");
  CHECK(partial.common.ns == "clins");
  CHECK(partial.common.log_level == pushonce::log::level::warn);
}

TEST_CASE("bad values are usage errors") {
  clean_env env;
  CHECK_THROWS_AS(parse({"--log-level", "loud"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis", "http://localhost:6379"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis", "redis://localhost:99999"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis", "not a url"}), usage_error);
  CHECK_THROWS_AS(parse({"--namespace", ""}), usage_error);
  CHECK_THROWS_AS(parse({"--namespace", "a b"}), usage_error);
  CHECK_THROWS_AS(parse({"--namespace", "a{b"}), usage_error);
  CHECK_THROWS_AS(parse({"--namespace", "a}b"}), usage_error);
  CHECK_THROWS_AS(parse({"--no-such-option"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis"}), usage_error);          // missing value
  CHECK_THROWS_AS(parse({"--limit", "many"}), usage_error);  // own option, bad value
  CHECK_THROWS_AS(parse({"--name", "x"}), usage_error);      // no guessing of prefixes

  env.set("PUSHONCE_LOG_LEVEL", "chatty");
  CHECK_THROWS_AS(parse({}), usage_error);
  CHECK_NOTHROW(parse({"--log-level", "info"}));  // the command line wins
}

TEST_CASE("usage error messages are readable") {
  clean_env env;
  try {
    parse({"--redis", "http://h:1"});
    FAIL("no exception");
  } catch (const usage_error& e) {
    std::string what = e.what();
    CHECK(what.find("http://h:1") != std::string::npos);
    CHECK(what.find("redis") != std::string::npos);
  }
  try {
    parse({"--log-level", "loud"});
    FAIL("no exception");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()).find("loud") != std::string::npos);
  }
}

TEST_CASE("help_text lists the program's and the common options") {
  std::string text = pushonce::help_text("usage: pushonce-leader COMMAND", own_options());
  CHECK(text.rfind("usage: pushonce-leader COMMAND\n", 0) == 0);
  for (const char* word : {"--queue", "--json", "--limit", "--redis", "--namespace", "--log-level",
                           "--help", "--version"})
    CHECK_MESSAGE(text.find(word) != std::string::npos, word);
  CHECK(text.find("args") == std::string::npos);
}

TEST_CASE("redis URL forms") {
  auto plain = endpoint::parse("redis://example.com");
  CHECK(plain.host == "example.com");
  CHECK(plain.port == 6379);
  CHECK(plain.db == 0);
  CHECK(plain.user.empty());
  CHECK(plain.password.empty());
  CHECK(plain.display() == "example.com:6379");

  auto full = endpoint::parse("redis://bob:s3cret@10.0.0.5:6380/3");
  CHECK(full.host == "10.0.0.5");
  CHECK(full.port == 6380);
  CHECK(full.user == "bob");
  CHECK(full.password == "s3cret");
  CHECK(full.db == 3);
  CHECK(full.display() == "10.0.0.5:6380");

  auto password_only = endpoint::parse("redis://:pw@localhost:6379");
  CHECK(password_only.user.empty());
  CHECK(password_only.password == "pw");

  auto encoded = endpoint::parse("redis://us%40er:p%3Aw%2Fd%40@h:1/0");
  CHECK(encoded.user == "us@er");
  CHECK(encoded.password == "p:w/d@");

  CHECK(endpoint::parse("redis://h:1/").db == 0);
  CHECK(endpoint::parse("REDIS://h:1").port == 1);
  CHECK(endpoint::parse("redis://h:65535").port == 65535);

  auto v6 = endpoint::parse("redis://[::1]:7000");
  CHECK(v6.host == "::1");
  CHECK(v6.display() == "[::1]:7000");
}

TEST_CASE("a bad redis URL names the part that is wrong") {
  auto reason = [](const char* url) {
    try {
      endpoint::parse(url);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  CHECK(reason("redis://h:notaport").find("port 'notaport' is not a number") != std::string::npos);
  CHECK(reason("redis://:pw@h:12ab").find("port '12ab' is not a number") != std::string::npos);
  CHECK(reason("redis://[::1]:x1").find("port 'x1' is not a number") != std::string::npos);
  CHECK(reason("redis://h:/3").find("empty port") != std::string::npos);
  CHECK(reason("redis://h:99999").find("port '99999' is not a number") != std::string::npos);
  CHECK(reason("redis://h:1/x").find("database 'x'") != std::string::npos);
}

TEST_CASE("bad redis URLs") {
  for (const char* bad :
       {"", "localhost:6379", "http://h:6379", "rediss://", "redis://", "redis://h:0",
        "redis://h:65536", "redis://h:abc", "redis://h:", "redis://h:6379/x", "redis://h:6379/-1",
        "redis://h:6379/1/2", "redis://h:6379/99999999999", "redis://h:6379?db=1",
        "redis://h:6379#x", "redis://user@h:6379"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(endpoint::parse(bad), std::invalid_argument);
  }
  try {
    endpoint::parse("http://h:1");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).rfind("bad redis URL 'http://h:1': ", 0) == 0);
  }
}

TEST_CASE("a refused redis URL never shows its password") {
  for (const char* bad : {"redis://bob:hunter2@h:abc", "redis://:hunter2@h:6379/x",
                          "redis://bob:hunter2@h:6379?db=1", "http://bob:hunter2@h:1",
                          "redis://bob:hunter2@", "redis://b@b:hunter2@h:0", "bob:hunter2@h"}) {
    CAPTURE(bad);
    try {
      endpoint::parse(bad);
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      CHECK(what.find("hunter2") == std::string::npos);
      CHECK(what.find("***@") != std::string::npos);
    }
  }
}

TEST_CASE("retention: defaults, options, environment, bounds") {
  using namespace std::chrono_literals;
  clean_env env;
  auto cl = parse({});
  CHECK(cl.common.retention.dedup_window == 120s);
  CHECK(cl.common.retention.outbox == 60s);
  cl = parse({"--dedup-window-ms", "300000", "--outbox-retention-ms", "300000"});
  CHECK(cl.common.retention.dedup_window == 300s);
  CHECK(cl.common.retention.outbox == 300s);
  env.set("PUSHONCE_DEDUP_WINDOW_MS", "90000");
  env.set("PUSHONCE_OUTBOX_RETENTION_MS", "30000");
  cl = parse({});
  CHECK(cl.common.retention.dedup_window == 90s);
  CHECK(cl.common.retention.outbox == 30s);
  CHECK(parse({"--outbox-retention-ms", "45000"}).common.retention.outbox == 45s);  // CLI wins
  CHECK_THROWS_AS(parse({"--dedup-window-ms", "12abc"}), usage_error);
  CHECK_THROWS_AS(parse({"--dedup-window-ms", "999"}), usage_error);
  CHECK_THROWS_AS(parse({"--outbox-retention-ms", "-5"}), usage_error);
  // An outbox kept longer than the claims would let a late re-drive deliver twice.
  CHECK_THROWS_AS(parse({"--outbox-retention-ms", "100000"}), usage_error);
}

TEST_CASE("--redis-cluster: a seed list with shared credentials; the environment; errors") {
  clean_env env;
  auto none = parse({});
  CHECK(none.common.redis_cluster.empty());

  auto cl = parse({"--redis-cluster", "redis://u:pw@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002"});
  REQUIRE(cl.common.redis_cluster.size() == 3);
  CHECK(cl.common.redis_cluster[0].host == "10.0.0.1");
  CHECK(cl.common.redis_cluster[0].port == 7000);
  CHECK(cl.common.redis_cluster[1].host == "10.0.0.2");
  CHECK(cl.common.redis_cluster[1].user == "u");
  CHECK(cl.common.redis_cluster[1].password == "pw");
  CHECK(cl.common.redis_cluster[2].host == "::1");
  CHECK(cl.common.redis_cluster[2].password == "pw");
  CHECK(cl.common.redis.host == "10.0.0.1");  // the first seed

  ::setenv("PUSHONCE_REDIS_CLUSTER", "redis://127.0.0.1:7000", 1);
  auto from_env = parse({});
  REQUIRE(from_env.common.redis_cluster.size() == 1);
  CHECK(from_env.common.redis_cluster[0].port == 7000);

  CHECK_THROWS_AS(parse({"--redis-cluster", "redis://h:1,,h:2"}), usage_error);
  auto tls = parse({"--redis-cluster", "rediss://:pw@h1:7000,h2:7001"});
  REQUIRE(tls.common.redis_cluster.size() == 2);
  CHECK(tls.common.redis_cluster[0].tls);
  CHECK(tls.common.redis_cluster[1].tls);
  CHECK(tls.common.redis_cluster[1].password == "pw");
  CHECK(tls.common.redis.tls);
  CHECK_THROWS_AS(parse({"--redis-cluster", "rediss://h:1,h:99999"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-cluster", "redis://h:1,h:99999"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-cluster", "redis://h:1/2"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-cluster", "h:1"}), usage_error);
}

TEST_CASE("--redis-sentinel: sentinels, master name, credentials, TLS; the environment; errors") {
  clean_env env;
  CHECK_FALSE(parse({}).common.redis_sentinel.enabled());

  auto one = parse({"--redis-sentinel", "redis+sentinel://10.0.0.1:26379"});
  REQUIRE(one.common.redis_sentinel.sentinels.size() == 1);
  CHECK(one.common.redis_sentinel.master_name == "mymaster");
  CHECK(one.common.redis_sentinel.sentinels[0].host == "10.0.0.1");
  CHECK(one.common.redis_sentinel.sentinels[0].port == 26379);
  CHECK(one.common.redis_sentinel.sentinels[0].password.empty());
  CHECK_FALSE(one.common.redis_sentinel.sentinels[0].tls);
  CHECK(one.common.redis.host == "10.0.0.1");  // the first sentinel, for log lines

  auto many =
      parse({"--redis-sentinel", "redis+sentinel://u:pw@h1:26379,h2:26380,[::1]:26381/main"});
  auto& s = many.common.redis_sentinel;
  REQUIRE(s.sentinels.size() == 3);
  CHECK(s.master_name == "main");
  CHECK(s.sentinels[1].host == "h2");
  CHECK(s.sentinels[1].port == 26380);
  CHECK(s.sentinels[2].host == "::1");
  for (const auto& e : s.sentinels) {
    CHECK(e.user == "u");
    CHECK(e.password == "pw");
  }
  auto pw_only = parse({"--redis-sentinel", "redis+sentinel://:pw@h1:1/"});
  CHECK(pw_only.common.redis_sentinel.master_name == "mymaster");
  CHECK(pw_only.common.redis_sentinel.sentinels[0].user.empty());
  CHECK(pw_only.common.redis_sentinel.sentinels[0].password == "pw");

  auto tls = parse({"--redis-sentinel", "rediss+sentinel://:pw@h1:1,h2:2/m1"});
  REQUIRE(tls.common.redis_sentinel.sentinels.size() == 2);
  CHECK(tls.common.redis_sentinel.sentinels[0].tls);
  CHECK(tls.common.redis_sentinel.sentinels[1].tls);
  CHECK(tls.common.redis_sentinel.master_name == "m1");

  ::setenv("PUSHONCE_REDIS_SENTINEL", "REDIS+SENTINEL://127.0.0.1:26379/x", 1);
  auto from_env = parse({});
  REQUIRE(from_env.common.redis_sentinel.sentinels.size() == 1);
  CHECK(from_env.common.redis_sentinel.master_name == "x");
  ::unsetenv("PUSHONCE_REDIS_SENTINEL");

  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis://h:26379"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://h:1,,h:2"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://h:99999"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://h:1/a/b"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://h:1/a b"}), usage_error);
  CHECK_THROWS_AS(parse({"--redis-sentinel", "redis+sentinel://user@h:1"}), usage_error);
  CHECK_THROWS_AS(
      parse({"--redis-sentinel", "redis+sentinel://h:1", "--redis-cluster", "redis://h:7000"}),
      usage_error);
  try {
    parse({"--redis-sentinel", "redis+sentinel://u:secret@h:99999"});
    FAIL("expected a usage error");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()).find("secret") == std::string::npos);
  }
}

TEST_CASE("--bus-shards: 1 on a single Redis, 16 on a cluster; option, environment, bounds") {
  clean_env env;
  CHECK(parse({}).common.bus_shards == 1);
  CHECK(parse({"--redis-cluster", "redis://h1:7000,h2:7001"}).common.bus_shards == 16);
  CHECK(parse({"--bus-shards", "4"}).common.bus_shards == 4);
  CHECK(parse({"--redis-cluster", "redis://h1:7000", "--bus-shards=1"}).common.bus_shards == 1);
  env.set("PUSHONCE_BUS_SHARDS", "8");
  CHECK(parse({}).common.bus_shards == 8);
  CHECK(parse({"--bus-shards", "2"}).common.bus_shards == 2);
  for (const char* bad : {"0", "17", "-1", "4x", ""})
    CHECK_THROWS_AS(parse({"--bus-shards", bad}), usage_error);
  try {
    parse({"--bus-shards", "99"});
    FAIL("no usage error");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()) == "--bus-shards: expected a number of bus shards, 1 to 16");
  }
}

TEST_CASE("rediss:// and the TLS file options") {
  clean_env env;
  auto plain = parse({});
  CHECK_FALSE(plain.common.redis.tls);

  auto tls = parse({"--redis", "rediss://:pw@cache.example:6380/1"});
  CHECK(tls.common.redis.tls);
  CHECK(tls.common.redis.host == "cache.example");
  CHECK(tls.common.redis.port == 6380);
  CHECK(tls.common.redis.db == 1);
  CHECK(tls.common.redis.certs.ca.empty());  // the system CA store

  char dir_template[] = "/tmp/pushonce-tls-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string ca = dir + "/ca.pem", cert = dir + "/c.pem", key = dir + "/k.pem";
  for (const auto& f : {ca, cert, key}) {
    FILE* out = std::fopen(f.c_str(), "w");
    REQUIRE(out != nullptr);
    std::fputs("x\n", out);
    std::fclose(out);
  }
  auto files = parse({"--redis", "rediss://h:1", "--redis-tls-ca", ca.c_str(), "--redis-tls-cert",
                      cert.c_str(), "--redis-tls-key", key.c_str()});
  CHECK(files.common.redis.certs.ca == ca);
  CHECK(files.common.redis.certs.cert == cert);
  CHECK(files.common.redis.certs.key == key);

  env.set("PUSHONCE_REDIS", "rediss://h:1");
  env.set("PUSHONCE_REDIS_TLS_CA", ca.c_str());
  CHECK(parse({}).common.redis.certs.ca == ca);
  env.set("PUSHONCE_REDIS_TLS_CA", (dir + "/missing.pem").c_str());
  CHECK_THROWS_WITH_AS(parse({}), doctest::Contains("PUSHONCE_REDIS_TLS_CA: cannot read"),
                       usage_error);
  ::unsetenv("PUSHONCE_REDIS_TLS_CA");

  // a missing file, a directory, a certificate without its key, files without rediss://
  CHECK_THROWS_WITH_AS(parse({"--redis-tls-ca", (dir + "/missing.pem").c_str()}),
                       doctest::Contains("--redis-tls-ca: cannot read"), usage_error);
  CHECK_THROWS_AS(parse({"--redis-tls-ca", dir.c_str()}), usage_error);
  CHECK_THROWS_WITH_AS(parse({"--redis-tls-cert", cert.c_str()}), doctest::Contains("go together"),
                       usage_error);
  CHECK_THROWS_WITH_AS(parse({"--redis", "redis://h:1", "--redis-tls-ca", ca.c_str()}),
                       doctest::Contains("need a rediss:// URL"), usage_error);
  CHECK_THROWS_AS(parse({"--redis-cluster", "redis://h:1", "--redis-tls-ca", ca.c_str()}),
                  usage_error);
  // rediss:// seeds: every seed gets the files (a node found in the slot map copies them).
  auto cluster = parse({"--redis-cluster", "rediss://h1:1,h2:2", "--redis-tls-ca", ca.c_str(),
                        "--redis-tls-cert", cert.c_str(), "--redis-tls-key", key.c_str()});
  REQUIRE(cluster.common.redis_cluster.size() == 2);
  for (const auto& seed : cluster.common.redis_cluster) {
    CHECK(seed.tls);
    CHECK(seed.certs.ca == ca);
    CHECK(seed.certs.cert == cert);
    CHECK(seed.certs.key == key);
  }
  CHECK(cluster.common.redis.certs.ca == ca);
  for (const auto& f : {ca, cert, key}) std::remove(f.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("redis_display: one Redis, a cluster, a Sentinel") {
  clean_env env;
  CHECK(pushonce::redis_display(parse({"--redis", "redis://u:pw@h:1"}).common) == "h:1");
  CHECK(pushonce::redis_display(parse({"--redis-cluster", "redis://:pw@a:1,b:2"}).common) ==
        "cluster via a:1,b:2");
  CHECK(
      pushonce::redis_display(parse({"--redis-sentinel", "redis+sentinel://:pw@a:1,b:2"}).common) ==
      "master 'mymaster' of the sentinels a:1,b:2");
}

TEST_CASE("PUSHONCE_REDIS_FILE: the Redis URL from a file, below --redis and PUSHONCE_REDIS") {
  clean_env env;
  auto path =
      std::filesystem::temp_directory_path() / ("pushonce-redis-url-" + std::to_string(::getpid()));
  {
    std::ofstream f(path);
    f << "redis://:s3cret@filehost:6391/3\n";
  }
  env.set("PUSHONCE_REDIS_FILE", path.c_str());
  auto cl = parse({"status"});
  CHECK(cl.common.redis.host == "filehost");
  CHECK(cl.common.redis.port == 6391);
  CHECK(cl.common.redis.password == "s3cret");
  env.set("PUSHONCE_REDIS", "redis://envhost:6390");
  CHECK(parse({"status"}).common.redis.host == "envhost");
  CHECK(parse({"--redis", "redis://cli:6392", "status"}).common.redis.host == "cli");
  ::unsetenv("PUSHONCE_REDIS");
  env.set("PUSHONCE_REDIS_FILE", "/nonexistent/redis_url");
  CHECK_THROWS_AS(parse({"status"}), usage_error);
  std::filesystem::remove(path);
}

}  // namespace test_config_unit
