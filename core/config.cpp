#include "core/config.hpp"

#include <fmt/format.h>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace pushonce {
namespace po = boost::program_options;
namespace {

constexpr const char* positional_name = "args";

po::options_description common_description() {
  po::options_description d("Common options");
  // clang-format off
  d.add_options()
      ("redis", po::value<std::string>()->value_name("URL"),
       "redis://[[user]:password@]host:port[/db], or rediss://... for TLS (env PUSHONCE_REDIS, "
       "or the file named by PUSHONCE_REDIS_FILE; default redis://127.0.0.1:6379)")
      ("redis-tls-ca", po::value<std::string>()->value_name("FILE"),
       "PEM CA certificates that verify a rediss:// server; default: the system CA store "
       "(env PUSHONCE_REDIS_TLS_CA)")
      ("redis-tls-cert", po::value<std::string>()->value_name("FILE"),
       "PEM client certificate for rediss:// (with --redis-tls-key; env "
       "PUSHONCE_REDIS_TLS_CERT)")
      ("redis-tls-key", po::value<std::string>()->value_name("FILE"),
       "PEM private key of --redis-tls-cert (env PUSHONCE_REDIS_TLS_KEY)")
      ("redis-cluster", po::value<std::string>()->value_name("URL"),
       "redis://[[user]:password@]host:port[,host:port]...: seed nodes of a Redis Cluster "
       "(rediss://... for TLS to every node); when given, --redis is not used (env "
       "PUSHONCE_REDIS_CLUSTER)")
      ("redis-sentinel", po::value<std::string>()->value_name("URL"),
       "redis+sentinel://[[user]:password@]host:port[,host:port]...[/MASTER]: the sentinels of "
       "a master (default name mymaster; rediss+sentinel://... for TLS); the programs follow "
       "the current master; when given, --redis is not used (env PUSHONCE_REDIS_SENTINEL)")
      ("namespace", po::value<std::string>()->value_name("NS"),
       "prefix of every key and channel (env PUSHONCE_NAMESPACE, default pushonce)")
      ("log-level", po::value<std::string>()->value_name("L"),
       "debug, info, warn or error (env PUSHONCE_LOG_LEVEL, default info)")
      ("log-format", po::value<std::string>()->value_name("F"),
       "text or json: one JSON object per line (env PUSHONCE_LOG_FORMAT, default text)")
      ("dedup-window-ms", po::value<std::string>()->value_name("MS"),
       "how long delivered ids and idempotency keys are remembered (env "
       "PUSHONCE_DEDUP_WINDOW_MS, default 120000)")
      ("outbox-retention-ms", po::value<std::string>()->value_name("MS"),
       "how long published messages stay in the outboxes for recovery, at most the dedup "
       "window (env PUSHONCE_OUTBOX_RETENTION_MS, default 60000)")
      ("max-data-bytes", po::value<std::string>()->value_name("N"),
       "largest serialised data of one published message, 16 to 1048576 (env "
       "PUSHONCE_MAX_DATA_BYTES, default 65536)")
      ("bus-shards", po::value<std::string>()->value_name("N"),
       "bus shards custom publishes spread over, 1 to 16; the same in every process (env "
       "PUSHONCE_BUS_SHARDS, default 1, or 16 with --redis-cluster)")
      ("admission-key", po::value<std::string>()->value_name("FILE"),
       "PEM P-256 private key that signs admission tokens (ES256); the leader signs, a "
       "gateway publishes its public half (env PUSHONCE_ADMISSION_KEY; without it, "
       "PUSHONCE_ADMISSION_SECRET signs HS256; with neither, tokens are null)")
      ("admission-verify-keys", po::value<std::vector<std::string>>()->multitoken()->value_name("FILE..."),
       "PEM public keys also published in the JWKS and accepted by `admission verify`, e.g. "
       "the previous key during a rotation (env PUSHONCE_ADMISSION_VERIFY_KEYS, "
       "space-separated)")
      ("admission-issuer", po::value<std::string>()->value_name("ISS"),
       "iss claim of admission tokens (env PUSHONCE_ADMISSION_ISSUER, default pushonce)")
      ("admission-ttl", po::value<std::string>()->value_name("SECONDS"),
       "lifetime of admission tokens, 1 to 604800 (env PUSHONCE_ADMISSION_TTL, default 600)")
      ("help,h", po::bool_switch(), "print this help and exit")
      ("version", po::bool_switch(), "print the version and exit");
  // clang-format on
  return d;
}

// The command-line value when given, else the environment variable when set and non-empty.
// `source` names where the value came from, for error messages.
std::optional<std::string> lookup(const po::variables_map& vm, const char* option, const char* env,
                                  std::string& source) {
  if (vm.count(option) != 0) {
    source = fmt::format("--{}", option);
    return vm[option].as<std::string>();
  }
  const char* value = std::getenv(env);
  if (value != nullptr && *value != '\0') {
    source = env;
    return std::string(value);
  }
  return std::nullopt;
}

void check_namespace(const std::string& ns, const std::string& source) {
  if (ns.empty()) throw usage_error(fmt::format("{}: the namespace must not be empty", source));
  for (char c : ns) {
    if (c == '{' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
        static_cast<unsigned char>(c) < 0x20)
      throw usage_error(fmt::format(
          "{}: bad namespace '{}' (no spaces, control characters, '{{' or '}}')", source, ns));
  }
}

// A TLS file option: it must name a readable file.
std::string tls_file(const po::variables_map& vm, const char* option, const char* env) {
  std::string source;
  auto path = lookup(vm, option, env, source);
  if (!path) return {};
  std::ifstream in(*path, std::ios::binary);
  std::error_code ec;
  if (!in || !std::filesystem::is_regular_file(*path, ec))
    throw usage_error(fmt::format("{}: cannot read {}", source, *path));
  return *path;
}

void fill_tls(const po::variables_map& vm, common_options& common) {
  redis::tls_files f;
  f.ca = tls_file(vm, "redis-tls-ca", "PUSHONCE_REDIS_TLS_CA");
  f.cert = tls_file(vm, "redis-tls-cert", "PUSHONCE_REDIS_TLS_CERT");
  f.key = tls_file(vm, "redis-tls-key", "PUSHONCE_REDIS_TLS_KEY");
  if (f.cert.empty() != f.key.empty())
    throw usage_error("--redis-tls-cert and --redis-tls-key go together: give both or neither");
  bool any = !f.ca.empty() || !f.cert.empty();
  if (any && !common.redis.tls)
    throw usage_error(
        "--redis-tls-ca, --redis-tls-cert and --redis-tls-key need a rediss:// URL in --redis "
        "or --redis-cluster, or a rediss+sentinel:// URL in --redis-sentinel");
  // Every cluster node (seeds, and the masters the slot map names) uses the same files, and
  // so do the sentinels and the masters they name.
  for (auto& seed : common.redis_cluster) seed.certs = f;
  for (auto& s : common.redis_sentinel.sentinels) s.certs = f;
  common.redis.certs = std::move(f);
}

void fill_admission(const po::variables_map& vm, admission::options& out) {
  std::string source;
  if (auto f = lookup(vm, "admission-key", "PUSHONCE_ADMISSION_KEY", source)) {
    std::ifstream in(*f, std::ios::binary);
    if (!in) throw usage_error(fmt::format("{}: cannot read {}", source, *f));
    out.key_file = *f;
  }
  out.secret = secret_from_env("PUSHONCE_ADMISSION_SECRET");
  if (out.key_file.empty() && out.secret && out.secret->size() < 32)
    throw usage_error("PUSHONCE_ADMISSION_SECRET needs at least 32 bytes");
  if (auto iss = lookup(vm, "admission-issuer", "PUSHONCE_ADMISSION_ISSUER", source)) {
    if (iss->empty() || iss->size() > 200)
      throw usage_error(fmt::format("{}: 1 to 200 characters", source));
    out.issuer = *iss;
  }
  if (auto v = lookup(vm, "admission-ttl", "PUSHONCE_ADMISSION_TTL", source)) {
    long long n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 1 || n > 604800)
      throw usage_error(fmt::format("{}: expected seconds, 1 to 604800", source));
    out.ttl = std::chrono::seconds(n);
  }
  if (vm.count("admission-verify-keys") != 0) {
    out.verify_key_files = vm["admission-verify-keys"].as<std::vector<std::string>>();
  } else if (const char* env = std::getenv("PUSHONCE_ADMISSION_VERIFY_KEYS"); env && *env) {
    std::istringstream words(env);
    for (std::string w; words >> w;) out.verify_key_files.push_back(w);
  }
  for (const auto& f : out.verify_key_files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw usage_error(fmt::format("--admission-verify-keys: cannot read {}", f));
  }
}

void fill_common(const po::variables_map& vm, common_options& common) {
  std::string source;
  if (auto url = lookup(vm, "redis", "PUSHONCE_REDIS", source)) {
    common.redis_url = *url;
  } else if (const char* file = std::getenv("PUSHONCE_REDIS_FILE"); file && *file) {
    // The URL with its password kept out of the environment (a systemd credential, a file
    // readable by the service user only): below --redis and PUSHONCE_REDIS.
    common.redis_url = *secret_from_env("PUSHONCE_REDIS");
    source = "PUSHONCE_REDIS_FILE";
  }
  try {
    common.redis = redis::endpoint::parse(common.redis_url);
  } catch (const std::invalid_argument& e) {
    throw usage_error(source.empty() ? std::string(e.what())
                                     : fmt::format("{}: {}", source, e.what()));
  }

  source.clear();
  if (auto url = lookup(vm, "redis-cluster", "PUSHONCE_REDIS_CLUSTER", source)) {
    try {
      common.redis_cluster = redis::endpoint::parse_list(*url);
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("{}: {}", source, e.what()));
    }
    common.redis = common.redis_cluster.front();
  }
  std::string cluster_source = source;
  source.clear();
  if (auto url = lookup(vm, "redis-sentinel", "PUSHONCE_REDIS_SENTINEL", source)) {
    if (!common.redis_cluster.empty())
      throw usage_error(fmt::format("{} and {}: give a Redis Cluster or a Sentinel, not both",
                                    cluster_source, source));
    try {
      common.redis_sentinel = redis::sentinel_config::parse(*url);
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("{}: {}", source, e.what()));
    }
    common.redis = common.redis_sentinel.sentinels.front();
  }
  fill_tls(vm, common);

  source = "namespace";
  if (auto ns = lookup(vm, "namespace", "PUSHONCE_NAMESPACE", source)) common.ns = *ns;
  check_namespace(common.ns, source);

  auto millis = [&](const char* option, const char* env, std::chrono::milliseconds& out) {
    auto v = lookup(vm, option, env, source);
    if (!v) return;
    long long ms = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), ms);
    if (ec != std::errc() || end != v->data() + v->size() || ms < 1000 || ms > 604800000)
      throw usage_error(fmt::format("{}: expected milliseconds, 1000 to 604800000", source));
    out = std::chrono::milliseconds(ms);
  };
  millis("dedup-window-ms", "PUSHONCE_DEDUP_WINDOW_MS", common.retention.dedup_window);
  millis("outbox-retention-ms", "PUSHONCE_OUTBOX_RETENTION_MS", common.retention.outbox);
  if (common.retention.outbox > common.retention.dedup_window)
    throw usage_error(
        "--outbox-retention-ms must not exceed --dedup-window-ms (a message re-driven after "
        "its claim record expired could be delivered twice)");

  if (auto v = lookup(vm, "max-data-bytes", "PUSHONCE_MAX_DATA_BYTES", source)) {
    long long n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 16 || n > (1 << 20))
      throw usage_error(fmt::format("{}: expected a number of bytes, 16 to 1048576", source));
    common.max_data_bytes = static_cast<std::size_t>(n);
  }

  common.bus_shards = default_bus_shards(!common.redis_cluster.empty());
  if (auto v = lookup(vm, "bus-shards", "PUSHONCE_BUS_SHARDS", source)) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 1 || n > 16)
      throw usage_error(fmt::format("{}: expected a number of bus shards, 1 to 16", source));
    common.bus_shards = n;
  }

  fill_admission(vm, common.admission);

  if (auto level = lookup(vm, "log-level", "PUSHONCE_LOG_LEVEL", source)) {
    try {
      common.log_level = log::parse_level(*level);
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("{}: {}", source, e.what()));
    }
  }
  if (auto f = lookup(vm, "log-format", "PUSHONCE_LOG_FORMAT", source)) {
    try {
      common.log_format = log::parse_format(*f);
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("{}: {}", source, e.what()));
    }
  }
}

}  // namespace

std::string redis_display(const common_options& c) {
  auto list = [](const std::vector<redis::endpoint>& nodes) {
    std::string out;
    for (const auto& n : nodes) out += (out.empty() ? "" : ",") + n.display();
    return out;
  };
  if (c.redis_sentinel.enabled())
    return fmt::format("master '{}' of the sentinels {}", c.redis_sentinel.master_name,
                       list(c.redis_sentinel.sentinels));
  if (!c.redis_cluster.empty()) return "cluster via " + list(c.redis_cluster);
  return c.redis.display();
}

unsigned default_bus_shards(bool cluster) {
  return cluster ? 16 : 1;
}

command_line parse_command_line(int argc, const char* const* argv,
                                const po::options_description& own) {
  po::options_description all;
  all.add(common_description()).add(own);
  all.add_options()(positional_name, po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add(positional_name, -1);

  command_line result;
  try {
    auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(
        po::command_line_parser(argc, argv).options(all).positional(positional).style(style).run(),
        result.vm);
    result.help = result.vm["help"].as<bool>();
    result.version = result.vm["version"].as<bool>();
    if (result.vm.count(positional_name) != 0)
      result.positional = result.vm[positional_name].as<std::vector<std::string>>();
    if (result.help || result.version) return result;
    po::notify(result.vm);
  } catch (const po::error& e) {
    throw usage_error(e.what());
  }
  fill_common(result.vm, result.common);
  return result;
}

std::optional<std::string> secret_from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  auto file_var = name + "_FILE";
  const char* file = std::getenv(file_var.c_str());
  bool has_value = value != nullptr && *value != '\0';
  bool has_file = file != nullptr && *file != '\0';
  if (has_value && has_file)
    throw usage_error(fmt::format("set {} or {}, not both", name, file_var));
  if (has_value) return std::string(value);
  if (!has_file) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw usage_error(fmt::format("{}: cannot read {}", file_var, file));
  std::ostringstream text;
  text << in.rdbuf();
  auto secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) throw usage_error(fmt::format("{}: {} is empty", file_var, file));
  return secret;
}

std::string help_text(std::string_view usage, const po::options_description& own) {
  std::ostringstream out;
  out << usage;
  if (!usage.empty() && usage.back() != '\n') out << '\n';
  if (!own.options().empty()) out << '\n' << own;
  out << '\n' << common_description();
  return out.str();
}

}  // namespace pushonce
