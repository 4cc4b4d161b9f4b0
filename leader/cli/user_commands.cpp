// `token`, `publish` and `disconnect`: the admin commands addressed to one user (a token
// for a user, a message to a user, closing a user's sessions).
#include <boost/json.hpp>
#include <chrono>

#include "core/disconnect.hpp"
#include "core/jwt.hpp"
#include "core/layout.hpp"
#include "core/names.hpp"
#include "core/publisher.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

asio::awaitable<int> run_token(admin_context& ctx) {
  int code = 0;
  if (!want_args(ctx, 1, "token USER [--ttl SECONDS]", code)) co_return code;
  auto user = ctx.args[0];
  if (!valid_name(user)) co_return ctx.out.usage("invalid user '" + user + "'");
  long long ttl = ctx.vm.count("ttl") ? ctx.vm["ttl"].as<long long>() : 3600;
  if (ttl <= 0 || ttl > jwt::max_ttl.count())
    co_return ctx.out.usage("--ttl must be 1 to " + std::to_string(jwt::max_ttl.count()) +
                            " seconds (ten years)");
  auto secret = jwt::secret_from_env();
  if (secret.empty())
    co_return ctx.out.fail(
        {errc::no_secret, "set PUSHONCE_JWT_SECRET (or PUSHONCE_JWT_SECRET_FILE)"});
  if (auto why = jwt::secret_problem(secret); !why.empty()) co_return ctx.out.usage(why);
  auto t = jwt::mint(user, std::chrono::seconds(ttl), secret);
  auto exp = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count() +
             ttl;
  co_return ctx.out.ok(json::object{{"user", user}, {"token", t}, {"exp", exp}}, t);
}

asio::awaitable<int> run_publish(admin_context& ctx) {
  int code = 0;
  if (!want_args(ctx, 2, "publish USER JSON [--id KEY]", code)) co_return code;
  boost::system::error_code ec;
  auto data = json::parse(ctx.args[1], ec);
  if (ec) co_return ctx.out.usage("the message is not valid JSON: " + ec.message());
  publish_request req{ctx.args[0], json::serialize(data), std::nullopt};
  if (ctx.vm.count("id")) req.idempotency_key = ctx.vm["id"].as<std::string>();
  if (auto f = validate_publish(req)) co_return report_failure(ctx, *f);
  // Refused before Redis, as the publish API refuses it (413): exit 2, error too_large.
  if (auto f = check_publish_size(req, ctx.max_data_bytes)) co_return ctx.out.fail(*f, 2);
  auto layout = co_await ctx.conn->exec(layout_command(ctx.k));
  if (layout.ok() && layout.value.kind == redis::reply::type::string)
    if (auto conflict = layout_conflict(ctx.k, layout.value.str))
      co_return ctx.out.fail({errc::bad_request, *conflict}, 2);
  publisher pub(ctx.conn, ctx.k, publisher_options{ctx.retention});
  auto r = co_await pub.publish(std::move(req));
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"id", r.value().id}, {"duplicate", r.value().duplicate}};
  // With --id the key is named too: `trace KEY --user USER` finds the message by it.
  std::string key = ctx.vm.count("id") ? " (idempotency key " + ctx.vm["id"].as<std::string>() +
                                             " of " + ctx.args[0] + ")"
                                       : std::string();
  co_return ctx.out.ok(o, (r.value().duplicate ? "duplicate of message " : "published message ") +
                              r.value().id + key);
}

// Every gateway closes the user's sessions (1008 "disconnected"); --revoke: the user's
// tokens issued until now are refused for --for seconds (default 24 h), as
// POST /api/disconnect does (core/disconnect).
asio::awaitable<int> run_disconnect(admin_context& ctx) {
  int code = 0;
  if (!want_args(ctx, 1, "disconnect USER [--revoke [--for SECONDS]]", code)) co_return code;
  const bool revoke = ctx.vm.count("revoke") && ctx.vm["revoke"].as<bool>();
  std::chrono::seconds lifetime = default_revocation_lifetime;
  if (ctx.vm.count("for")) {
    if (!revoke) co_return ctx.out.usage("--for goes with --revoke");
    auto secs = ctx.vm["for"].as<long long>();
    if (secs < 1 || std::chrono::seconds(secs) > max_revocation_lifetime)
      co_return ctx.out.usage("--for must be 1..31536000 seconds");
    lifetime = std::chrono::seconds(secs);
  }
  std::string user = ctx.args[0];
  auto r =
      co_await disconnect_user(ctx.conn, ctx.k, std::move(user), revoke, lifetime, ctx.retention);
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"user", ctx.args[0]}, {"disconnected", true}};
  std::string text = "disconnected " + ctx.args[0] + " (" + std::to_string(r.value().receivers) +
                     " gateways heard it)";
  if (revoke) {
    o["revoked_until"] = r.value().until_ms;
    text += "; tokens issued until now refused for " + std::to_string(lifetime.count()) + " s";
  }
  co_return ctx.out.ok(o, text);
}

}  // namespace pushonce::leader
