// `resource add|release|remove|list`: a queue's resources.
#include <boost/json.hpp>

#include "core/queue_api.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

asio::awaitable<int> run_resource(admin_context& ctx, queue_api& q) {
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

}  // namespace pushonce::leader
