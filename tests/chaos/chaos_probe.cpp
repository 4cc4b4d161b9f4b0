#include "tests/chaos/chaos_probe.hpp"

#include <stdexcept>

namespace pushonce::test::chaos {

std::vector<reply_ptr> probe::try_pipeline(const std::vector<words>& cmds) {
  if (!ctx_) {
    timeval tv{5, 0};
    ctx_ = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (ctx_ == nullptr || ctx_->err) throw redis_unreachable("redis: cannot connect");
    redisSetTimeout(ctx_, tv);
  }
  for (const auto& w : cmds) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : w) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
  }
  std::vector<reply_ptr> out;
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr)
      throw redis_unreachable("redis: no reply");
    out.emplace_back(static_cast<redisReply*>(r));
  }
  return out;
}

namespace {

std::vector<stream_entry> entries_of(const redisReply* r) {
  std::vector<stream_entry> out;
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return out;
  out.reserve(r->elements);
  for (size_t i = 0; i < r->elements; ++i) {
    const auto* e = r->element[i];
    stream_entry se;
    se.entry_id.assign(e->element[0]->str, e->element[0]->len);
    const auto* f = e->element[1];
    for (size_t j = 0; j + 1 < f->elements; j += 2)
      se.fields.emplace(std::string(f->element[j]->str, f->element[j]->len),
                        std::string(f->element[j + 1]->str, f->element[j + 1]->len));
    out.push_back(std::move(se));
  }
  return out;
}

}  // namespace

std::vector<stream_entry> read_stream(probe& p, const std::string& key) {
  std::vector<stream_entry> all;
  std::string from = "-";
  for (;;) {
    auto r = p.cmd({"XRANGE", key, from, "+", "COUNT", "5000"});
    auto page = entries_of(r.get());
    if (page.empty()) break;
    from = "(" + page.back().entry_id;
    bool last = page.size() < 5000;
    for (auto& e : page) all.push_back(std::move(e));
    if (last) break;
  }
  return all;
}

}  // namespace pushonce::test::chaos
