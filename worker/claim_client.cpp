#include "worker/claim_client.hpp"

#include <algorithm>

#include "core/dead_letter_entry.hpp"
#include "core/errc_format.hpp"
#include "core/log.hpp"
#include "core/lua/claim_record.hpp"
#include "core/random_hex.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/failure_of.hpp"
#include "core/redis/hash_slot.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

claim_client::claim_client(std::shared_ptr<redis::connection> conn, keys k, claim_options opts)
    : conn_(std::move(conn)), keys_(std::move(k)), opts_(opts) {}

asio::awaitable<outcome<bool>> claim_client::claim_batch(const std::string& first_id,
                                                         const std::string& owner) {
  auto in = lua::claim_batch_for(keys_, first_id, owner, opts_.lease);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  auto won = lua::parse_claim_batch_reply(r.value);
  if (!won) co_return failure{errc::internal, "unexpected reply from claim_batch.lua"};
  co_return *won;
}

asio::awaitable<outcome<std::vector<lua::claim_outcome>>> claim_client::claim(
    std::span<const bus_message> batch, std::string owner) {
  lua::claim_settings s{std::move(owner),   opts_.lease,        opts_.dedup_window,
                        opts_.max_attempts, opts_.inbox_maxlen, opts_.inbox_idle,
                        random_hex(16)};
  // Redis Cluster: SPUBLISH, so a frame goes only to the master of the user's slot (where
  // the gateways SSUBSCRIBE), not over the cluster bus to every node.
  s.publish = conn_->is_cluster() ? lua::publish_mode::sharded : lua::publish_mode::classic;
  if (opts_.wait_replicas > 0) s.publish = lua::publish_mode::none;
  outcome<std::vector<lua::claim_outcome>> r = failure{errc::internal, "no claim"};
  if (conn_->is_cluster()) {
    auto op = claim_per_slot(batch, s);
    r = co_await std::move(op);
  } else {
    auto in = lua::claim_for(keys_, s, batch);
    auto one = co_await lua::run_script(*conn_, std::move(in));
    if (!one.ok()) {
      r = failure_of(one);
    } else if (auto parsed = lua::parse_claim_reply(one.value, batch.size())) {
      r = std::move(*parsed);
    } else {
      r = failure{errc::internal, "unexpected reply from claim.lua"};
    }
  }
  if (opts_.wait_replicas == 0) co_return r;
  if (r) {
    co_await confirm_and_publish(batch, r.value());
  } else if (conn_->is_cluster() || r.error().code != errc::redis_unavailable) {
    // A call that failed part-way (a corrupted key of one user; on a cluster, another slot's
    // call) may have delivered the messages before: their records say so, publish them.
    // (A single Redis that refused or did not answer: nothing was written before a refusal,
    // and a call that ran but whose reply was lost is the sweeper's, as after a crash.)
    co_await publish_recorded(batch);
  }
  co_return r;
}

// The deliveries are in the inbox (a session that resumes reads them at once); here they
// become durable on N replicas before the live stream shows them. One WAIT per slot that
// took a delivery (on the connection that carried the claim: WAIT covers every write sent
// on it before), pipelined, so a node's second WAIT returns at once. A WAIT short of N
// replicas still publishes: the message is delivered (the inbox has it) and withholding
// the frame would only delay it until the next catch-up; it is counted instead.
asio::awaitable<void> claim_client::confirm_and_publish(std::span<const bus_message> batch,
                                                        std::vector<lua::claim_outcome>& out) {
  std::vector<std::size_t> delivered;
  std::vector<long long> offsets;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].state != lua::claim_state::delivered && !out[i].frame_pending) continue;
    out[i].frame_pending = true;  // until published.lua took it
    delivered.push_back(i);
    offsets.push_back(out[i].number);
  }
  if (delivered.empty()) co_return;
  std::vector<std::string> route_keys;
  std::vector<redis::command> waits;
  std::vector<unsigned> slots;
  for (auto i : delivered) {
    auto key = keys_.claim(batch[i].user, batch[i].id);
    unsigned slot = conn_->is_cluster() ? redis::hash_slot(key) : 0;
    if (std::find(slots.begin(), slots.end(), slot) != slots.end()) continue;
    slots.push_back(slot);
    route_keys.push_back(std::move(key));
    waits.push_back(
        {"WAIT", std::to_string(opts_.wait_replicas), std::to_string(opts_.wait_timeout.count())});
  }
  auto acks = co_await conn_->exec_all_at(std::move(route_keys), std::move(waits));
  for (auto& a : acks)
    if (!a.ok() || a.value.as_int().value_or(0) < opts_.wait_replicas) ++wait_timeouts_;
  auto sent = co_await publish_frames(batch, delivered, offsets);
  for (std::size_t j = 0; j < delivered.size(); ++j)
    if (sent[j]) out[delivered[j]].frame_pending = false;
}

// published.lua per slot (one call on a single Redis): the frames go out and the records
// become delivered. A call that fails leaves its records "delivered, not published": the
// sweeper's re-drive publishes them.
asio::awaitable<std::vector<bool>> claim_client::publish_frames(
    std::span<const bus_message> batch, const std::vector<std::size_t>& which,
    const std::vector<long long>& offsets) {
  std::vector<bool> sent(which.size(), false);
  std::vector<std::vector<std::size_t>> groups;  // positions in `which`
  if (conn_->is_cluster()) {
    std::vector<bus_message> picked;
    for (auto i : which) picked.push_back(batch[i]);
    groups = lua::claim_groups(keys_, picked);
  } else {
    groups.emplace_back();
    for (std::size_t j = 0; j < which.size(); ++j) groups.back().push_back(j);
  }
  std::vector<lua::published_inputs> calls;
  calls.reserve(groups.size());
  for (const auto& g : groups) {
    std::vector<std::size_t> idx;
    std::vector<long long> offs;
    for (auto j : g) {
      idx.push_back(which[j]);
      offs.push_back(offsets[j]);
    }
    calls.push_back(lua::published_for(keys_, conn_->is_cluster(), batch, idx, offs));
  }
  auto rs = co_await lua::run_scripts(*conn_, std::move(calls));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!rs[g].ok()) {
      auto f = failure_of(rs[g]);
      log::warn("publishing {} delivered frame(s) failed: {} {}; the sweeper sends them",
                groups[g].size(), f.code, f.message);
      continue;
    }
    for (auto j : groups[g]) sent[j] = true;
  }
  co_return sent;
}

asio::awaitable<void> claim_client::publish_recorded(std::span<const bus_message> batch) {
  std::vector<lua::record_ref> refs;
  refs.reserve(batch.size());
  for (const auto& m : batch) refs.push_back(lua::claim_record_ref(keys_, m));
  auto reads = lua::claim_record_reads(refs, conn_->is_cluster());
  auto rs = co_await conn_->exec_all(reads);
  std::vector<std::optional<redis::reply>> replies;
  replies.reserve(rs.size());
  for (auto& r : rs) replies.push_back(r.ok() ? std::optional(std::move(r.value)) : std::nullopt);
  auto values = lua::read_values(reads, replies);
  std::vector<std::size_t> which;
  std::vector<long long> offsets;
  for (std::size_t i = 0; i < batch.size() && i < values.size(); ++i) {
    if (!values[i]) continue;
    auto rec = lua::parse_claim_record(*values[i]);
    if (!rec || rec->state != lua::claim_record::kind::delivered || !rec->unpublished) continue;
    which.push_back(i);
    offsets.push_back(rec->offset);
  }
  if (which.empty()) co_return;
  auto sent = co_await publish_frames(batch, which, offsets);
  (void)sent;
}

// Redis Cluster: one claim.lua call per slot (users' keys of one call must share a slot),
// pipelined; the outcomes are put back in batch order. A call that fails makes the whole
// batch fail as on a single Redis (the messages of the calls that succeeded were delivered
// and are `done` when the sweeper re-drives them; with --wait-replicas their frames are
// published from their records first, publish_recorded).
asio::awaitable<outcome<std::vector<lua::claim_outcome>>> claim_client::claim_per_slot(
    std::span<const bus_message> batch, const lua::claim_settings& s) {
  auto groups = lua::claim_groups(keys_, batch);
  std::vector<lua::claim_inputs> calls;
  std::vector<std::vector<bus_message>> parts;
  for (const auto& g : groups) {
    std::vector<bus_message> part;
    for (auto i : g) part.push_back(batch[i]);
    calls.push_back(lua::claim_for(keys_, s, part));
    parts.push_back(std::move(part));
  }
  auto rs = co_await lua::run_scripts(*conn_, std::move(calls));
  std::vector<lua::claim_outcome> out(batch.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!rs[g].ok()) co_return failure_of(rs[g]);
    auto parsed = lua::parse_claim_reply(rs[g].value, groups[g].size());
    if (!parsed) co_return failure{errc::internal, "unexpected reply from claim.lua"};
    for (std::size_t j = 0; j < groups[g].size(); ++j) out[groups[g][j]] = std::move((*parsed)[j]);
  }
  co_return out;
}

asio::awaitable<outcome<bool>> claim_client::release(const bus_message& m, std::string owner) {
  auto in = lua::release_for(keys_, m, owner);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  co_return r.value.integer == 1;
}

// A single Redis: one dead_letter.lua call marks the message and adds its entry. A cluster:
// the mark in the record's slot first, then the entry in the stream's slot, added only when
// the mark succeeded (a refused mark, e.g. a lapsed lease, writes no entry: the sweeper
// may dead-letter the message again, and then it is listed once).
asio::awaitable<outcome<lua::dead_letter_result>> claim_client::dead_letter(const bus_message& m,
                                                                            std::string owner,
                                                                            std::string reason,
                                                                            long long attempts) {
  auto mark = lua::dead_letter_for(keys_, conn_->is_cluster(), m, owner, reason, opts_.dedup_window,
                                   attempts);
  auto r = co_await lua::run_script(*conn_, std::move(mark));
  if (!r.ok()) co_return failure_of(r);
  auto marked = lua::parse_dead_letter_reply(r.value);
  if (!marked) co_return failure{errc::internal, "unexpected reply from dead_letter.lua"};
  if (!marked->marked || !conn_->is_cluster()) co_return *marked;
  auto add = dead_letter_entry(keys_, m.id, m.user, m.src, reason, attempts, m.raw);
  auto added = co_await lua::run_script(*conn_, std::move(add));
  if (!added.ok()) co_return failure_of(added);
  marked->trimmed = parse_dead_letter_entry_reply(added.value).value_or(0);
  co_return *marked;
}

}  // namespace pushonce::worker
