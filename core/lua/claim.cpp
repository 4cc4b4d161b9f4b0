#include "core/lua/claim.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/dead_letter_entry.hpp"
#include "core/redis/hash_slot.hpp"

namespace pushonce::lua {

const char* publish_mode_arg(publish_mode m) {
  switch (m) {
    case publish_mode::sharded:
      return "s";
    case publish_mode::none:
      return "n";
    case publish_mode::classic:
      break;
  }
  return "p";
}

std::string record_field(std::string_view user, std::string_view id, std::string_view tail) {
  if (tail.ends_with('}')) {
    auto ts = tail.rfind(",\"ts\":");
    if (ts != std::string_view::npos &&
        tail.find_first_not_of("0123456789", ts + 6) == tail.size() - 1)
      tail = tail.substr(0, ts);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, user.data(), user.size());
  EVP_DigestUpdate(ctx, "\n", 1);
  EVP_DigestUpdate(ctx, tail.data(), tail.size());
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static constexpr char hex[] = "0123456789abcdef";
  std::string field(id);
  field += '.';
  for (int i = 0; i < 6; ++i) {
    field += hex[md[i] >> 4];
    field += hex[md[i] & 15];
  }
  return field;
}

record_ref claim_record_ref(const keys& k, const bus_message& m) {
  return {k.claim_bucket(m.user, m.id), record_field(m.user, m.id, m.tail)};
}

redis::command record_read(const record_ref& r) {
  if (r.field.empty()) return {"GET", r.key};
  return {"HGET", r.key, r.field};
}

claim_inputs claim_for(const keys& k, const claim_settings& s, std::span<const bus_message> batch,
                       const std::vector<bool>& lease_only) {
  long long oldest = 0;
  for (const auto& m : batch)
    if (m.ts > 0 && (oldest == 0 || m.ts < oldest)) oldest = m.ts;
  claim_inputs in{.more_keys = {},
                  .owner = s.owner,
                  .lease_arg = std::to_string(s.lease.count()),
                  .window_s = std::to_string(s.dedup_window.count()),
                  .max_attempts_arg = std::to_string(s.max_attempts),
                  .maxlen_s = std::to_string(s.inbox_maxlen),
                  .idle_s = std::to_string(s.inbox_idle.count()),
                  .epoch = s.epoch,
                  .oldest_arg = std::to_string(oldest),
                  .mode = publish_mode_arg(s.publish),
                  .more_args = {}};
  in.more_keys.reserve(batch.size());
  in.more_args.reserve(2 * batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    in.more_keys.push_back(k.claim(batch[i].user, batch[i].id));
    in.more_args.push_back(record_field(batch[i].user, batch[i].id, batch[i].tail));
    in.more_args.push_back(i < lease_only.size() && lease_only[i] ? std::string() : batch[i].tail);
  }
  return in;
}

claim_batch_inputs claim_batch_for(const keys& k, const std::string& first_id,
                                   const std::string& owner, std::chrono::milliseconds lease) {
  return claim_batch_inputs{
      .batch = k.batch(first_id), .owner = owner, .lease_arg = std::to_string(lease.count())};
}

std::optional<bus_message> race_before_parse(std::span<const std::string_view> lines,
                                             std::size_t max_batch) {
  if (lines.size() < race_min_messages || lines.size() > max_batch) return std::nullopt;
  return parse_bus_message(lines.front());
}

std::optional<bool> parse_claim_batch_reply(const redis::reply& r) {
  if (r.kind != redis::reply::type::integer || (r.integer != 0 && r.integer != 1))
    return std::nullopt;
  return r.integer == 1;
}

std::vector<std::vector<std::size_t>> claim_groups(const keys& k,
                                                   std::span<const bus_message> batch) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<unsigned> slots;  // slots[g]: the slot of group g (batches are small)
  for (std::size_t i = 0; i < batch.size(); ++i) {
    unsigned slot = redis::hash_slot(k.claim(batch[i].user, batch[i].id));
    std::size_t g = 0;
    while (g < slots.size() && slots[g] != slot) ++g;
    if (g == slots.size()) {
      slots.push_back(slot);
      groups.emplace_back();
    }
    groups[g].push_back(i);
  }
  return groups;
}

published_inputs published_for(const keys& k, bool cluster, std::span<const bus_message> batch,
                               std::span<const std::size_t> which,
                               std::span<const long long> offsets) {
  published_inputs in{.more_keys = {}, .mode = cluster ? "s" : "p", .more_args = {}};
  in.more_keys.reserve(which.size());
  in.more_args.reserve(2 * which.size());
  for (std::size_t j = 0; j < which.size(); ++j) {
    const auto& m = batch[which[j]];
    in.more_keys.push_back(k.claim(m.user, m.id));
    in.more_args.push_back(record_field(m.user, m.id, m.tail));
    in.more_args.push_back(render_frame(m, offsets[j]));
  }
  return in;
}

release_inputs release_for(const keys& k, const bus_message& m, const std::string& owner) {
  auto ref = claim_record_ref(k, m);
  return release_inputs{
      .bucket = std::move(ref.key), .caller = owner, .field_arg = std::move(ref.field)};
}

dead_letter_inputs dead_letter_for(const keys& k, bool cluster, const bus_message& m,
                                   const std::string& owner, const std::string& reason,
                                   std::chrono::milliseconds window, long long attempts) {
  auto ref = claim_record_ref(k, m);
  dead_letter_inputs in{.bucket = std::move(ref.key),
                        .stream = {},
                        .caller = owner,
                        .reason = reason,
                        .dedup_window = std::to_string(window.count()),
                        .field_arg = std::move(ref.field)};
  // On a Redis Cluster the stream is another slot: neither it nor its entry's fields are given.
  if (!cluster) {
    in.stream = k.plain("dead-letters");
    in.maxlen = std::to_string(dead_letters_maxlen);
    in.id = m.id;
    in.user = m.user;
    in.src = m.src;
    in.record_attempts = std::to_string(attempts);
    in.line = m.raw;
  }
  return in;
}

std::optional<dead_letter_result> parse_dead_letter_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() != 2) return std::nullopt;
  auto marked = r.elements[0].as_int(), trimmed = r.elements[1].as_int();
  if (!marked || !trimmed || (*marked != 0 && *marked != 1)) return std::nullopt;
  return dead_letter_result{*marked == 1, *trimmed};
}

std::optional<std::vector<claim_outcome>> parse_claim_reply(const redis::reply& r,
                                                            std::size_t messages) {
  if (!r.is_array() || r.elements.size() != 2 * messages) return std::nullopt;
  std::vector<claim_outcome> out(messages);
  for (std::size_t i = 0; i < messages; ++i) {
    const auto& word = r.elements[2 * i].str;
    const auto& value = r.elements[2 * i + 1];
    auto& o = out[i];
    if (word == "delivered")
      o.state = claim_state::delivered;
    else if (word == "done")
      o.state = claim_state::done;
    else if (word == "unpublished") {
      o.state = claim_state::done;
      o.frame_pending = true;
    } else if (word == "taken")
      o.state = claim_state::taken;
    else if (word == "dead")
      o.state = claim_state::dead;
    else if (word == "won")
      o.state = claim_state::won;
    else if (word == "failed")
      o.state = claim_state::failed;
    else if (word == "expired")
      o.state = claim_state::expired;
    else
      return std::nullopt;
    if (o.state == claim_state::failed)
      o.error = value.str;
    else
      o.number = value.as_int().value_or(0);
  }
  return out;
}

const char* to_string(claim_state s) {
  static constexpr const char* names[] = {"delivered", "done",   "taken",  "dead",
                                          "won",       "failed", "expired"};
  return names[static_cast<int>(s)];
}

std::vector<redis::command> claim_record_reads(std::span<const record_ref> refs, bool cluster,
                                               std::size_t chunk) {
  if (chunk == 0) chunk = 1;
  std::vector<redis::command> reads;
  std::size_t fields = 0;  // values the last command reads
  for (const auto& r : refs) {
    if (r.field.empty() && cluster) {
      reads.push_back({"GET", r.key});
      continue;
    }
    auto& last = reads.empty() ? reads.emplace_back() : reads.back();
    const bool hash = !r.field.empty();
    const bool joins = !last.empty() && fields < chunk &&
                       (hash ? last[0] == "HMGET" && last[1] == r.key : last[0] == "MGET");
    if (!joins) {
      if (!last.empty()) reads.emplace_back();
      if (hash)
        reads.back() = {"HMGET", r.key};
      else
        reads.back() = {"MGET"};
      fields = 0;
    }
    reads.back().push_back(hash ? r.field : r.key);
    ++fields;
  }
  return reads;
}

std::vector<std::optional<redis::reply>> read_values(
    const std::vector<redis::command>& reads,
    std::span<const std::optional<redis::reply>> replies) {
  std::vector<std::optional<redis::reply>> out;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const auto& cmd = reads[i];
    const bool hmget = !cmd.empty() && cmd[0] == "HMGET";
    const bool multi = hmget || (!cmd.empty() && cmd[0] == "MGET");
    // Values read: MGET's keys, HMGET's fields, GET's and HGET's one.
    const std::size_t n = cmd.empty() ? 0 : !multi ? 1 : cmd.size() - (hmget ? 2 : 1);
    const redis::reply* r = i < replies.size() && replies[i] ? &*replies[i] : nullptr;
    if (r && !multi) {
      out.emplace_back(*r);
    } else if (r && r->is_array() && r->elements.size() == n) {
      for (const auto& e : r->elements) out.emplace_back(e);
    } else {
      out.insert(out.end(), n, std::nullopt);
    }
  }
  return out;
}

std::string batch_digest(std::span<const std::string_view> lines) {
  // FNV-1a, 64 bits, over the lines joined by '\n': the payload as published.
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) mix('\n');
    for (unsigned char c : lines[i]) mix(c);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (std::size_t i = 16; i-- > 0; h >>= 4) out[i] = hex[h & 15];
  return out;
}

std::string batch_digest(std::span<const bus_message> batch) {
  std::vector<std::string_view> lines;
  lines.reserve(batch.size());
  for (const auto& m : batch) lines.emplace_back(m.raw);
  return batch_digest(lines);
}

redis::command batch_done_command(const keys& k, std::span<const bus_message> batch,
                                  std::chrono::milliseconds window) {
  return {"SET", k.batch(batch.front().id),
          "d:" + std::to_string(batch.size()) + ":" + batch_digest(batch), "PX",
          std::to_string(window.count())};
}

bool batch_finished(std::span<const claim_outcome> outcomes) {
  return std::all_of(outcomes.begin(), outcomes.end(), [](const claim_outcome& o) {
    if (o.frame_pending) return false;
    return o.state == claim_state::delivered || o.state == claim_state::done ||
           o.state == claim_state::dead;
  });
}

std::optional<batch_mark> parse_batch_done(const redis::reply& r) {
  if (!r.is_string() || !r.str.starts_with("d:")) return std::nullopt;
  std::string_view v = std::string_view(r.str).substr(2);
  auto colon = v.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto n = record_number(v.substr(0, colon));
  auto digest = v.substr(colon + 1);
  if (!n || *n == 0 || digest.size() != 16) return std::nullopt;
  return batch_mark{static_cast<std::size_t>(*n), std::string(digest)};
}

}  // namespace pushonce::lua
