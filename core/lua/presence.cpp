#include "core/lua/presence.hpp"

namespace pushonce::lua {

std::string presence_key(const keys& k, std::string_view suffix) {
  std::string key = k.ns() + ":{presence}:";
  key += suffix;
  return key;
}

namespace {
std::string gateway_key(const keys& k, const std::string& instance) {
  return presence_key(k, "gw:" + instance);
}
}  // namespace

presence_open_inputs presence_open_for(const keys& k, const std::string& user,
                                       const std::string& instance) {
  return presence_open_inputs{.count = presence_key(k, "count"),
                              .gateway = gateway_key(k, instance),
                              .gateways = presence_key(k, "gws"),
                              .absent = presence_key(k, "absent"),
                              .user = user,
                              .instance = instance};
}

presence_close_inputs presence_close_for(const keys& k, const std::string& user,
                                         const std::string& instance) {
  return presence_close_inputs{.count = presence_key(k, "count"),
                               .gateway = gateway_key(k, instance),
                               .absent = presence_key(k, "absent"),
                               .user = user};
}

presence_joined_inputs presence_joined_for(const keys& k, const std::string& user) {
  return presence_joined_inputs{
      .count = presence_key(k, "count"), .absent = presence_key(k, "absent"), .user = user};
}

presence_fold_inputs presence_fold_for(const keys& k, const std::string& instance,
                                       const std::string& cursor, long long batch) {
  return presence_fold_inputs{.count = presence_key(k, "count"),
                              .gateway = gateway_key(k, instance),
                              .gateways = presence_key(k, "gws"),
                              .absent = presence_key(k, "absent"),
                              .instance = instance,
                              .cursor = cursor,
                              .batch_arg = std::to_string(batch)};
}

std::optional<fold_reply> parse_fold_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 3 || !r.at(0).is_string()) return std::nullopt;
  auto folded = r.at(1).as_int();
  auto done = r.at(2).as_int();
  if (!folded || !done) return std::nullopt;
  return fold_reply{r.at(0).str, *folded, *done == 1};
}

presence_reclaim_inputs presence_reclaim_for(
    const keys& k, const std::string& instance,
    const std::vector<std::pair<std::string, std::size_t>>& sessions) {
  presence_reclaim_inputs in{.count = presence_key(k, "count"),
                             .gateway = gateway_key(k, instance),
                             .gateways = presence_key(k, "gws"),
                             .absent = presence_key(k, "absent"),
                             .instance = instance,
                             .more_args = {}};
  for (const auto& [user, n] : sessions) {
    in.more_args.push_back(user);
    in.more_args.push_back(std::to_string(n));
  }
  return in;
}

presence_drop_inputs presence_drop_for(const keys& k, long long horizon_ms, long long max) {
  return presence_drop_inputs{.absent = presence_key(k, "absent"),
                              .horizon_arg = std::to_string(horizon_ms),
                              .max_arg = std::to_string(max)};
}

redis::command absent_range_command(const keys& k, const std::string& min, const std::string& max,
                                    long long limit) {
  redis::command c{"ZRANGEBYSCORE", presence_key(k, "absent"), min, max, "WITHSCORES"};
  if (limit > 0) {
    c.push_back("LIMIT");
    c.push_back("0");
    c.push_back(std::to_string(limit));
  }
  return c;
}

std::optional<std::vector<absent_user>> parse_absent_range(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() % 2 != 0) return std::nullopt;
  std::vector<absent_user> out;
  out.reserve(r.elements.size() / 2);
  for (std::size_t i = 0; i < r.elements.size(); i += 2) {
    // Scores are whole ms, written by the scripts from Redis's TIME.
    auto since = r.elements[i + 1].as_int();
    if (!since) return std::nullopt;
    out.push_back({r.elements[i].str, *since});
  }
  return out;
}

abandon_inputs abandon_for(const keys& k, const std::string& queue, long long fencing_token,
                           const std::vector<std::string>& users) {
  return abandon_inputs{.waiting = k.queue(queue, "waiting"),
                        .events = k.queue(queue, "events"),
                        .pending = k.queue(queue, "pending"),
                        .stats = k.queue(queue, "stats"),
                        .fence = k.queue(queue, "fence"),
                        .prequeue = k.queue(queue, "prequeue"),
                        .draw = k.queue(queue, "prequeue:draw"),
                        .queue = queue,
                        .wake = k.wake_channel(),
                        .token_arg = std::to_string(fencing_token),
                        .more_args = users};
}

std::optional<abandon_reply> parse_abandon_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 2) return std::nullopt;
  auto removed = r.at(0).as_int();
  auto ended = r.at(1).as_int();
  if (!removed || !ended) return std::nullopt;
  return abandon_reply{*removed, *ended};
}

std::string presence_instance(std::string_view gateway_id, std::string_view boot) {
  std::string s(gateway_id);
  s += '~';
  s += boot;
  return s;
}

std::string gateway_of_instance(std::string_view instance) {
  auto at = instance.rfind('~');
  if (at == std::string_view::npos || at == 0) return {};
  return std::string(instance.substr(0, at));
}

}  // namespace pushonce::lua
