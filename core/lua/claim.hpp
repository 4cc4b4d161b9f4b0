#pragma once
// The call of lua/claim.lua (KEYS and ARGV order written once, here) and its reply: for a
// batch of messages, the one check-and-set that delivers each message at most once.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim_record.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/message.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/claim.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct claim_inputs {
  static constexpr std::string_view script = "claim";
  std::vector<std::string> more_keys{};  // KEYS after the named ones
  std::string owner{}, lease_arg{}, window_s{}, max_attempts_arg{}, maxlen_s{}, idle_s{}, epoch{},
      oldest_arg{}, mode{};              // ARGV
  std::vector<std::string> more_args{};  // ARGV after the named ones
  static constexpr auto key_fields() { return std::array<script_input<claim_inputs>, 0>{{}}; }
  static constexpr auto arg_fields() {
    return std::array<script_input<claim_inputs>, 9>{
        {{"owner", &claim_inputs::owner},
         {"lease_arg", &claim_inputs::lease_arg},
         {"window_s", &claim_inputs::window_s},
         {"max_attempts_arg", &claim_inputs::max_attempts_arg},
         {"maxlen_s", &claim_inputs::maxlen_s},
         {"idle_s", &claim_inputs::idle_s},
         {"epoch", &claim_inputs::epoch},
         {"oldest_arg", &claim_inputs::oldest_arg},
         {"mode", &claim_inputs::mode}}};
  }
};

/// lua/claim_batch.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct claim_batch_inputs {
  static constexpr std::string_view script = "claim_batch";
  std::string batch{};               // KEYS
  std::string owner{}, lease_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<claim_batch_inputs>, 1>{{{"batch", &claim_batch_inputs::batch}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<claim_batch_inputs>, 2>{
        {{"owner", &claim_batch_inputs::owner}, {"lease_arg", &claim_batch_inputs::lease_arg}}};
  }
};

/// lua/published.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct published_inputs {
  static constexpr std::string_view script = "published";
  std::vector<std::string> more_keys{};  // KEYS after the named ones
  std::string mode{};                    // ARGV
  std::vector<std::string> more_args{};  // ARGV after the named ones
  static constexpr auto key_fields() { return std::array<script_input<published_inputs>, 0>{{}}; }
  static constexpr auto arg_fields() {
    return std::array<script_input<published_inputs>, 1>{{{"mode", &published_inputs::mode}}};
  }
};

/// lua/release.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct release_inputs {
  static constexpr std::string_view script = "release";
  static constexpr std::size_t required_args = 1;  // no field: a string key
  std::string bucket{};                            // KEYS
  std::string caller{}, field_arg{};               // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<release_inputs>, 1>{{{"bucket", &release_inputs::bucket}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<release_inputs>, 2>{
        {{"caller", &release_inputs::caller}, {"field_arg", &release_inputs::field_arg}}};
  }
};

/// lua/dead_letter.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct dead_letter_inputs {
  static constexpr std::string_view script = "dead_letter";
  std::string bucket{}, stream{};  // KEYS
  std::string caller{}, reason{}, dedup_window{}, field_arg{}, maxlen{}, id{}, user{}, src{},
      record_attempts{}, line{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<dead_letter_inputs>, 2>{
        {{"bucket", &dead_letter_inputs::bucket}, {"stream", &dead_letter_inputs::stream}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<dead_letter_inputs>, 10>{
        {{"caller", &dead_letter_inputs::caller},
         {"reason", &dead_letter_inputs::reason},
         {"dedup_window", &dead_letter_inputs::dedup_window},
         {"field_arg", &dead_letter_inputs::field_arg},
         {"maxlen", &dead_letter_inputs::maxlen},
         {"id", &dead_letter_inputs::id},
         {"user", &dead_letter_inputs::user},
         {"src", &dead_letter_inputs::src},
         {"record_attempts", &dead_letter_inputs::record_attempts},
         {"line", &dead_letter_inputs::line}}};
  }
};

/// How claim.lua hands a delivered frame to the gateways (its ARGV[9]).
enum class publish_mode {
  classic,  // "p": PUBLISH on the user's channel (a single Redis)
  sharded,  // "s": SPUBLISH (Redis Cluster: sharded Pub/Sub, the channel is in the user's slot)
  none,     // "n": not published (the caller publishes later)
};

/// The argument claim.lua reads for `m`: "p", "s" or "n".
const char* publish_mode_arg(publish_mode m);

/// The field of message `id`'s claim record in its bucket: "<id>.<digest>", the digest the
/// first 12 hex digits of SHA-256 over the user, a newline and the frame tail without its
/// publish time (a tail ending in ,"ts":<ms>} is cut before it: a replay, published again
/// with a new time, names the same record). A record binds its id to one user and one
/// frame: a message that reuses an id (the queue slot's sequence rolled back by a failover)
/// finds no record of another message under it.
std::string record_field(std::string_view user, std::string_view id, std::string_view tail);

/// Where the claim record of message `m` is: the field `field` (record_field) of the hash
/// `key` (keys::claim_bucket, in the user's shard). A record_ref with an empty field names a
/// string key (the sweeper reads its batch marks, NS:b:<id>, with the same reads).
struct record_ref {
  std::string key;
  std::string field;  // empty: `key` is a string
  bool operator==(const record_ref&) const = default;
};
record_ref claim_record_ref(const keys& k, const bus_message& m);
/// GET or HGET of the record.
redis::command record_read(const record_ref& r);

struct claim_settings {
  std::string owner;  // this call's lease token (worker id + sequence)
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
  long long max_attempts = 5;
  long long inbox_maxlen = 1000;
  std::chrono::milliseconds inbox_idle{std::chrono::hours(24 * 7)};
  std::string epoch;  // used for a user who has none (a new inbox)
  publish_mode publish = publish_mode::classic;
};

enum class claim_state {
  delivered,  // this call delivered it: `number` is the offset
  done,       // delivered before: `number` is the offset
  taken,      // another caller holds a live lease
  dead,       // dead-lettered
  won,        // lease taken, nothing delivered (lease only, or over max attempts):
              // `number` is the attempts count including this one
  failed,     // the inbox write failed (`error`); the lease is kept for a retry
  expired,    // no claim record and published longer ago than the dedup window minus a
              // lease: an earlier delivery's record may have expired, so not delivered
};

struct claim_outcome {
  claim_state state = claim_state::taken;
  long long number = 0;
  std::string error;
  /// delivered or done, but its frame may not be on the user's channel yet: claim.lua in
  /// mode 'n' (its "unpublished" answer for a delivery that a failed or dead caller did not
  /// publish is `done` with this set). The caller publishes it (published_for); until
  /// then the message is not finished (its record says so to the sweeper).
  bool frame_pending = false;
};

/// The smallest batch the workers race for (claim_batch.lua) before claim.lua. A one-message
/// payload (an assignment, a single publish) goes to claim.lua from every worker: a loser's
/// claim of one message costs about what a race does, and the race adds a round trip.
inline constexpr std::size_t race_min_messages = 2;
/// The smallest batch its winner marks finished for the sweeper (batch_done_command): the
/// mark is a key for the dedup window, so it must stand for enough messages to be worth
/// its memory (here at most ~7 bytes per message) against the record reads it saves.
inline constexpr std::size_t mark_min_messages = 16;

/// A heard bus payload that one claim.lua call takes whole (race_min_messages to
/// `max_batch` lines) races before its lines are parsed, so that a worker that loses only
/// counts them: the message on its first line names the race (claim_batch_for).
/// std::nullopt otherwise (one line, more than max_batch, a first line that is not a bus
/// message): the worker parses every line and races per max-batch part, if at all.
std::optional<bus_message> race_before_parse(std::span<const std::string_view> lines,
                                             std::size_t max_batch);

/// claim_batch.lua: `owner` races for a batch (a bus payload, or one max-batch part of it)
/// named by the id of its first message; the key lives `lease`.
claim_batch_inputs claim_batch_for(const keys& k, const std::string& first_id,
                                   const std::string& owner, std::chrono::milliseconds lease);
/// true: the caller won the batch (it goes on to claim.lua); false: another worker did;
/// std::nullopt when the reply is not claim_batch.lua's.
std::optional<bool> parse_claim_batch_reply(const redis::reply& r);

/// `lease_only[i]` (optional) takes the lease on message i without delivering it.
claim_inputs claim_for(const keys& k, const claim_settings& s, std::span<const bus_message> batch,
                       const std::vector<bool>& lease_only = {});

/// A batch split for Redis Cluster, where one claim.lua call may only touch one slot: the
/// indices of `batch` grouped by the slot of their claim key (one group per slot, in the
/// order each slot first appears; indices in batch order inside a group). The users of a
/// custom publish share a bus shard, so its batch is one group; a queue's batch has a group
/// per shard its users hash to. On a single Redis the whole batch stays one call: the
/// caller only splits in cluster mode.
std::vector<std::vector<std::size_t>> claim_groups(const keys& k,
                                                   std::span<const bus_message> batch);

/// published.lua: the frames of `batch[i]` for i in `which` (each with the offset
/// `offsets[j]`) go out on their users' channels, and their claim records, written by
/// claim.lua in mode 'n', become delivered. One call's messages must share a slot (on a
/// cluster: one call per claim_groups group); `cluster` picks SPUBLISH.
published_inputs published_for(const keys& k, bool cluster, std::span<const bus_message> batch,
                               std::span<const std::size_t> which,
                               std::span<const long long> offsets);

/// release.lua: `owner` hands back its lease on message `m` (reply 1 when it held it).
release_inputs release_for(const keys& k, const bus_message& m, const std::string& owner);
/// dead_letter.lua: `owner`, holding the lease on `m`, marks it dead. On a single Redis the
/// same call adds its dead-letter entry (`attempts` is the entry's field); on a cluster,
/// where the stream is in another slot, the caller adds the entry (dead_letter_entry) only
/// once this call marked the message.
dead_letter_inputs dead_letter_for(const keys& k, bool cluster, const bus_message& m,
                                   const std::string& owner, const std::string& reason,
                                   std::chrono::milliseconds window, long long attempts = 0);
struct dead_letter_result {
  bool marked = false;    // false: the caller held no live lease; nothing written
  long long trimmed = 0;  // dead-letter entries the stream's trim dropped (a single Redis)
};
/// dead_letter.lua's {marked, trimmed}; std::nullopt when the reply is not its.
std::optional<dead_letter_result> parse_dead_letter_reply(const redis::reply& r);

/// One outcome per message, in order; std::nullopt when the reply is not claim.lua's.
std::optional<std::vector<claim_outcome>> parse_claim_reply(const redis::reply& r,
                                                            std::size_t messages);

const char* to_string(claim_state s);

}  // namespace pushonce::lua

namespace pushonce::lua {

/// The reads of the values at `refs`, in order. Records in buckets: one `HMGET` per run of
/// refs to the same hash (at most `chunk` fields). String keys: on a single Redis one `MGET`
/// per `chunk` keys, one command instead of one per key (the sweeper reads a record per
/// message it checks); on a cluster one `GET` per key, because the keys belong to different
/// users' slots. (The sweeper reads its batch marks, string keys, the same way.)
std::vector<redis::command> claim_record_reads(std::span<const record_ref> refs, bool cluster,
                                               std::size_t chunk = 500);

/// The value each key of `reads` holds, in key order, from each read's reply (`GET`: one
/// value; `MGET`/`HMGET`: an array with one value per key). A failed read, or a reply of the
/// wrong shape, gives std::nullopt for each of its keys (parse_claim_record reads a value).
std::vector<std::optional<redis::reply>> read_values(
    const std::vector<redis::command>& reads, std::span<const std::optional<redis::reply>> replies);

/// The mark a worker leaves on a batch (a whole bus payload) that it won the race for and
/// claimed with every message finished (lua::batch_finished), on a single Redis: its race
/// key NS:b:<first id> becomes "d:<n>:<digest>" (n messages, batch_digest) for the dedup
/// window. The sweeper then passes the payload's outbox entry, when the entry holds exactly
/// those lines, without reading n claim records.
redis::command batch_done_command(const keys& k, std::span<const bus_message> batch,
                                  std::chrono::milliseconds window);
/// 16 hex digits of FNV-1a 64 over the messages' text joined by '\n' (the payload as
/// published): binds a mark to one payload, so an outbox entry that merely starts with the
/// same id (a dead letter's replay) is not taken for it.
std::string batch_digest(std::span<const bus_message> batch);
std::string batch_digest(std::span<const std::string_view> lines);
/// Every outcome final: delivered, done or dead, its frame published (nothing for the
/// sweeper to re-drive).
bool batch_finished(std::span<const claim_outcome> outcomes);
struct batch_mark {
  std::size_t messages = 0;
  std::string digest;
};
/// A "d:<n>:<digest>" mark (n > 0); std::nullopt for anything else (nil, a race's owner).
std::optional<batch_mark> parse_batch_done(const redis::reply& r);

}  // namespace pushonce::lua
