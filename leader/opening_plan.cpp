#include "leader/opening_plan.hpp"

#include <algorithm>

namespace pushonce::leader {

opening_plan::opening_plan(long long batch) : batch_(std::clamp(batch, 1LL, 1000LL)) {}

bool opening_plan::due(const queue_settings& s, long long now_ms) {
  return s.state == queue_settings::state_kind::prequeue && s.opens_at && now_ms >= *s.opens_at;
}

void opening_plan::begin(bool shuffle) {
  phase_ = shuffle ? phase::draw : phase::move;
  after_ = 0;
  moved_ = drawn_ = 0;
}

opening_plan::step opening_plan::next() const {
  switch (phase_) {
    case phase::draw:
      return {step::kind::draw, after_, batch_};
    case phase::move:
      return {step::kind::move, 0, batch_};
    case phase::idle:
    case phase::finished:
      break;
  }
  return {};
}

void opening_plan::on_draw(const lua::opening_draw_reply& r) {
  if (phase_ != phase::draw) return;
  if (!r.due) {  // opened, closed or rescheduled meanwhile: nothing to do now
    phase_ = phase::finished;
    return;
  }
  drawn_ += r.drawn;
  after_ = r.after;
  if (r.done) phase_ = phase::move;
}

void opening_plan::on_move(const lua::opening_move_reply& r) {
  if (phase_ != phase::move) return;
  if (!r.due) {
    phase_ = phase::finished;
    return;
  }
  if (r.undrawn) {  // users without a draw key (should not happen): draw them first
    phase_ = phase::draw;
    after_ = 0;
    return;
  }
  moved_ += r.moved;
  if (r.left == 0) phase_ = phase::finished;
}

long long draw_key_of(std::span<const unsigned char, 7> b) {
  unsigned long long v = 0;
  for (auto c : b) v = (v << 8) | c;
  return static_cast<long long>(v & ((1ULL << 49) - 1));
}

}  // namespace pushonce::leader
