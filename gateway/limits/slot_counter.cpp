#include "gateway/limits/slot_counter.hpp"

namespace pushonce::gateway {

slot_counter::slot& slot_counter::slot::operator=(slot&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::move(o.owner_);
    key_ = std::move(o.key_);
  }
  return *this;
}

slot_counter::slot::~slot() {
  release();
}

void slot_counter::slot::release() {
  if (owner_) owner_->give_back(key_);
  owner_.reset();
}

std::shared_ptr<slot_counter> slot_counter::create(std::size_t max_total, std::size_t max_per_key) {
  return std::shared_ptr<slot_counter>(new slot_counter(max_total, max_per_key));
}

slot_counter::result slot_counter::acquire(const std::string& key, bool per_key_cap) {
  {
    std::lock_guard lock(mutex_);
    if (max_total_ != 0 && total_ >= max_total_) return {slot{}, refusal::total};
    auto& n = per_key_[key];
    if (per_key_cap && max_per_key_ != 0 && n >= max_per_key_) return {slot{}, refusal::per_key};
    ++n;
    ++total_;
  }
  return {slot(shared_from_this(), key), refusal::none};
}

void slot_counter::give_back(const std::string& key) {
  std::lock_guard lock(mutex_);
  --total_;
  auto it = per_key_.find(key);
  if (it != per_key_.end() && --it->second == 0) per_key_.erase(it);
}

std::size_t slot_counter::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::size_t slot_counter::count(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = per_key_.find(key);
  return it == per_key_.end() ? 0 : it->second;
}

}  // namespace pushonce::gateway
