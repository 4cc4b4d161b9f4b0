#include "leader/admin.hpp"

#include <boost/json.hpp>

#include "core/disconnect.hpp"
#include "core/jwt.hpp"
#include "core/layout.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "core/publisher.hpp"
#include "core/queue_api.hpp"
#include "core/queue_pace.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

int exit_for(const failure& f) {
  return f.code == errc::bad_request || f.code == errc::usage ? 2 : 1;
}

int report_failure(admin_context& ctx, const failure& f) {
  return ctx.out.fail(f, exit_for(f));
}

bool want_args(admin_context& ctx, std::size_t n, const char* usage, int& code) {
  if (ctx.args.size() == n) return true;
  code = ctx.out.usage(std::string("usage: pushonce-leader ") + usage);
  return false;
}

asio::awaitable<int> join(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "join USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.join(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  auto absent = co_await q.joined_without_session(user);
  if (!absent) log::warn("join: {} is not counted absent: {}", user, absent.error().message);
  if (r.value().opens_at) {
    json::object pre{{"user", user},
                     {"queue", ctx.queue},
                     {"position", nullptr},
                     {"ticket", nullptr},
                     {"opens_at", *r.value().opens_at}};
    co_return ctx.out.ok(pre, user + " is in the pre-queue of " + ctx.queue +
                                  " until it opens at " + std::to_string(*r.value().opens_at) +
                                  " (ms since the epoch)");
  }
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"position", r.value().position},
                 {"ticket", r.value().ticket}};
  co_return ctx.out.ok(o, user + " joined queue " + ctx.queue + " at position " +
                              std::to_string(r.value().position) + " (ticket " +
                              std::to_string(r.value().ticket) + ")");
}

asio::awaitable<int> leave(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "leave USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.leave(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"user", user}, {"queue", ctx.queue}, {"removed", true}};
  co_return ctx.out.ok(o, user + " left queue " + ctx.queue);
}

asio::awaitable<int> position(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "position USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.standing(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  const auto& st = r.value();
  if (st.position <= 0 && !st.prequeued)
    co_return report_failure(ctx, {errc::not_queued, user + " is not in queue " + ctx.queue});
  if (st.position <= 0) {
    json::object pre{{"user", user},
                     {"queue", ctx.queue},
                     {"position", nullptr},
                     {"eta_s", nullptr},
                     {"opens_at", st.opens_at ? json::value(*st.opens_at) : json::value(nullptr)}};
    co_return ctx.out.ok(pre, user + " is in the pre-queue of " + ctx.queue);
  }
  // The estimated wait: null when the queue's pace cannot be read either.
  std::optional<long long> eta;
  auto read = read_queue_pace(ctx.conn, ctx.k, ctx.queue);  // named: GCC 12 and co_await
  auto pace = co_await std::move(read);
  if (pace) eta = pace.value().eta_s(st.position, pace_now_ms());
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"position", st.position},
                 {"eta_s", eta ? json::value(*eta) : json::value(nullptr)}};
  std::string text =
      user + " is at position " + std::to_string(st.position) + " in queue " + ctx.queue;
  if (eta) text += " (about " + std::to_string(*eta) + " s to wait)";
  co_return ctx.out.ok(o, text);
}

asio::awaitable<int> accept(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "accept USER [--queue Q] [--id ASSIGNMENT]", code)) co_return code;
  auto user = ctx.args[0];
  std::string id = ctx.vm.count("id") ? ctx.vm["id"].as<std::string>() : "";
  auto r = co_await q.accept(ctx.queue, user, id);
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"id", r.value().first},
                 {"resource", r.value().second},
                 {"accepted", true}};
  co_return ctx.out.ok(
      o, user + " accepted " + r.value().second + " (assignment " + r.value().first + ")");
}

asio::awaitable<int> token(admin_context& ctx) {
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

asio::awaitable<int> list_queue(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 0, "queue [--queue Q] [--limit N] [--offset N]", code)) co_return code;
  long long limit = ctx.vm.count("limit") ? ctx.vm["limit"].as<long long>() : 100;
  long long offset = ctx.vm.count("offset") ? ctx.vm["offset"].as<long long>() : 0;
  if (limit <= 0) co_return ctx.out.usage("--limit must be a positive number");
  if (offset < 0) co_return ctx.out.usage("--offset must not be negative");
  auto r = co_await q.list(ctx.queue, limit, offset);
  if (!r) co_return report_failure(ctx, r.error());
  json::array users;
  std::string text = "queue " + ctx.queue + ": " + std::to_string(r.value().length) + " waiting";
  long long i = offset;
  for (auto& u : r.value().users) {
    users.emplace_back(u);
    text += "\n" + std::to_string(++i) + ". " + u;
  }
  json::object o{{"queue", ctx.queue},
                 {"length", r.value().length},
                 {"offset", offset},
                 {"users", std::move(users)}};
  co_return ctx.out.ok(o, text);
}

asio::awaitable<int> resource(admin_context& ctx, queue_api& q) {
  if (ctx.args.empty())
    co_return ctx.out.usage("usage: pushonce-leader resource add|release|remove|list ...");
  auto sub = ctx.args[0];
  std::vector<std::string> ids(ctx.args.begin() + 1, ctx.args.end());
  if (sub == "add") {
    if (ids.empty())
      co_return ctx.out.usage("usage: pushonce-leader resource add ID... [--meta JSON]");
    std::string meta;
    if (ctx.vm.count("meta")) {
      boost::system::error_code ec;
      auto v = json::parse(ctx.vm["meta"].as<std::string>(), ec);
      if (ec) co_return ctx.out.usage("--meta is not valid JSON: " + ec.message());
      meta = json::serialize(v);
    }
    auto r = co_await q.add_resources(ctx.queue, ids, meta);
    if (!r) co_return report_failure(ctx, r.error());
    json::array added(r.value().begin(), r.value().end());
    std::string text = "added";
    for (auto& id : r.value()) text += " " + id;
    co_return ctx.out.ok(json::object{{"added", std::move(added)}}, text);
  }
  if (sub == "release" || sub == "remove") {
    if (ids.size() != 1) co_return ctx.out.usage("usage: pushonce-leader resource " + sub + " ID");
    outcome<none> r = failure{};
    if (sub == "release")
      r = co_await q.release_resource(ctx.queue, ids[0]);
    else
      r = co_await q.remove_resource(ctx.queue, ids[0]);
    if (!r) co_return report_failure(ctx, r.error());
    auto word = sub == "release" ? "released" : "removed";
    co_return ctx.out.ok(json::object{{"resource", ids[0]}, {word, true}},
                         std::string(word) + " " + ids[0]);
  }
  if (sub == "list") {
    if (!ids.empty()) co_return ctx.out.usage("usage: pushonce-leader resource list");
    auto r = co_await q.list_resources(ctx.queue);
    if (!r) co_return report_failure(ctx, r.error());
    json::array arr;
    std::string text;
    for (auto& res : r.value()) {
      json::object o{{"id", res.id}, {"state", res.assigned ? "assigned" : "free"}};
      if (res.assigned) o["user"] = res.user;
      if (res.meta_json != "null") o["meta"] = json::parse(res.meta_json);
      text += res.id + "  " + (res.assigned ? "assigned to " + res.user : "free") +
              (res.meta_json != "null" ? "  " + res.meta_json : "") + "\n";
      arr.push_back(std::move(o));
    }
    if (text.empty()) text = "no resources in queue " + ctx.queue;
    co_return ctx.out.ok(json::object{{"resources", std::move(arr)}}, text);
  }
  co_return ctx.out.usage("unknown resource command '" + sub + "' (add, release, remove, list)");
}

asio::awaitable<int> publish(admin_context& ctx) {
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
  co_return ctx.out.ok(
      o, (r.value().duplicate ? "duplicate of message " : "published message ") + r.value().id);
}

// Every gateway closes the user's sessions (1008 "disconnected"); --revoke: the user's
// tokens issued until now are refused for --for seconds (default 24 h), as
// POST /api/disconnect does (core/disconnect).
asio::awaitable<int> disconnect(admin_context& ctx) {
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
  auto r = co_await disconnect_user(ctx.conn, ctx.k, std::move(user), revoke, lifetime);
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

}  // namespace

asio::awaitable<int> run_admin(admin_context& ctx, std::string command) {
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  if (command == "join") co_return co_await join(ctx, q);
  if (command == "leave") co_return co_await leave(ctx, q);
  if (command == "position") co_return co_await position(ctx, q);
  if (command == "accept") co_return co_await accept(ctx, q);
  if (command == "queue") co_return co_await list_queue(ctx, q);
  if (command == "resource") co_return co_await resource(ctx, q);
  if (command == "publish") co_return co_await publish(ctx);
  if (command == "status") co_return co_await run_status(ctx);
  if (command == "dead-letters") co_return co_await run_dead_letters(ctx);
  if (command == "trace") co_return co_await run_trace(ctx);
  if (command == "token") co_return co_await token(ctx);
  if (command == "settings" || command == "pause" || command == "resume" || command == "close" ||
      command == "open")
    co_return co_await run_queue_controls(ctx, command);
  if (command == "admission") co_return co_await run_admission(ctx);
  if (command == "disconnect") co_return co_await disconnect(ctx);
  co_return ctx.out.usage("unknown command '" + command + "' (see pushonce-leader --help)");
}

}  // namespace pushonce::leader
