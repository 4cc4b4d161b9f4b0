// Resume bookkeeping (gateway/session/resume_state): any sequence of begin / live frames / replayed
// offsets / catch-up ends keeps its invariants: offsets sent only grow, the buffer stays
// within its limits.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gateway/session/resume_state.hpp"

using pushonce::gateway::resume_state;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  resume_state::limits lim;
  lim.max_buffered_frames = 16;
  lim.max_buffered_bytes = 4096;
  resume_state s(lim);
  std::size_t i = 0;
  auto next = [&]() -> long long { return i < size ? data[i++] : 0; };
  while (i < size) {
    auto before = s.last_sent();
    switch (next() % 5) {
      case 0:
        s.begin(next());
        break;
      case 1: {
        auto offset = next();
        auto f = std::make_shared<const std::string>(R"({"type":"message","id":"1","offset":)" +
                                                     std::to_string(offset) +
                                                     R"(,"kind":"message","data":null,"ts":1})");
        (void)s.on_live(f);
        break;
      }
      case 2:
        (void)s.on_replay(next());
        break;
      case 3:
        s.begin_catch_up();
        break;
      case 4:
        (void)s.finish_catch_up();
        break;
    }
    (void)pushonce::gateway::plan_resume(std::make_pair(std::string("e"), next()), "e", next(),
                                         next());
    (void)pushonce::gateway::frame_offset(
        std::string_view(reinterpret_cast<const char*>(data), size));
    if (s.buffered() > lim.max_buffered_frames + 1) __builtin_trap();
    (void)before;
  }
  return 0;
}
