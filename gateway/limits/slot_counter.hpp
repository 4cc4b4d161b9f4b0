#pragma once
// Counted slots with a total cap and a cap per key (a client address, a user): the
// gateway's connection and session limits (docs/security.md). A slot is held by an RAII
// handle for the life of the connection or session and given back when it is destroyed.
// Thread-safe (one mutex; a handful of instructions under it). A cap of 0 means no limit.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace pushonce::gateway {

class slot_counter : public std::enable_shared_from_this<slot_counter> {
 public:
  enum class refusal : std::uint8_t { none, total, per_key };

  /// A held slot; empty when default-constructed or moved from.
  class slot {
   public:
    slot() = default;
    slot(slot&&) noexcept = default;
    slot& operator=(slot&& o) noexcept;
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot();
    explicit operator bool() const { return owner_ != nullptr; }
    const std::string& key() const { return key_; }

   private:
    friend class slot_counter;
    slot(std::shared_ptr<slot_counter> owner, std::string key)
        : owner_(std::move(owner)), key_(std::move(key)) {}
    void release();
    std::shared_ptr<slot_counter> owner_;
    std::string key_;
  };

  struct result {
    slot held;  // empty when refused
    refusal why = refusal::none;
  };

  static std::shared_ptr<slot_counter> create(std::size_t max_total, std::size_t max_per_key);

  /// A slot for `key`, or the cap that refuses it. With `per_key_cap` false only the
  /// total cap applies (the slot is still counted under `key`).
  result acquire(const std::string& key, bool per_key_cap = true);
  std::size_t total() const;
  std::size_t count(const std::string& key) const;
  std::size_t max_total() const { return max_total_; }
  std::size_t max_per_key() const { return max_per_key_; }

 private:
  slot_counter(std::size_t max_total, std::size_t max_per_key)
      : max_total_(max_total), max_per_key_(max_per_key) {}
  void give_back(const std::string& key);

  const std::size_t max_total_;
  const std::size_t max_per_key_;
  mutable std::mutex mutex_;
  std::size_t total_ = 0;
  std::unordered_map<std::string, std::size_t> per_key_;
};

}  // namespace pushonce::gateway
