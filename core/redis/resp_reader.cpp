#include "core/redis/resp_reader.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <memory>
#include <new>

#include "core/redis/error.hpp"

namespace pushonce::redis {

namespace {

// The reader builds redis::reply trees directly (no redisReply, no copy): a root is
// allocated, a child is appended to its parent's `elements`. hiredis frees only roots
// (freeObject), which own every child. Returning nullptr makes hiredis stop with an error.
//
// Pointers to children stay valid while hiredis holds them: a child still being filled is
// always the last element of its parent, and the parent grows only after it is complete.
// hiredis reports a refusal as "Out of memory"; the reason is kept for error_text().
std::nullptr_t refuse(const redisReadTask* task, const char* why) {
  if (auto* reason = static_cast<const char**>(task->privdata)) *reason = why;
  return nullptr;
}

reply* node(const redisReadTask* task) {
  if (!task->parent) return new (std::nothrow) reply;
  auto* parent = static_cast<reply*>(task->parent->obj);
  auto& elements = parent->elements;
  // hiredis announces children in order, 0, 1, 2 ..., each within the parent's count.
  if (task->idx >= task->parent->elements) return refuse(task, "array element beyond its count");
  if (task->idx < 0 || static_cast<std::size_t>(task->idx) != elements.size())
    return refuse(task, "array element out of order");
  return &elements.emplace_back();
}

void* create_string(const redisReadTask* task, char* s, std::size_t len) {
  auto* r = node(task);
  if (!r) return nullptr;
  r->kind = task->type == REDIS_REPLY_ERROR    ? reply::type::error
            : task->type == REDIS_REPLY_STATUS ? reply::type::status
                                               : reply::type::string;
  r->str.assign(s, len);
  return r;
}

void* create_array(const redisReadTask* task, int n) {
  // hiredis 0.14 passes the announced count truncated to an int: a negative one here is a
  // count it cannot hold (`*2147483648`); refused before hiredis trips its own assert.
  if (n < 0) return refuse(task, "array count out of range");
  auto* r = node(task);
  if (!r) return nullptr;
  r->kind = reply::type::array;
  r->elements.reserve(std::min(static_cast<std::size_t>(n), resp_reader::max_reserve));
  return r;
}

void* create_integer(const redisReadTask* task, long long v) {
  auto* r = node(task);
  if (!r) return nullptr;
  r->kind = reply::type::integer;
  r->integer = v;
  return r;
}

void* create_nil(const redisReadTask* task) {
  auto* r = node(task);
  if (!r) return nullptr;
  r->kind = reply::type::nil;
  return r;
}

void free_object(void* r) {
  delete static_cast<reply*>(r);
}

redisReplyObjectFunctions reply_functions = {create_string, create_array, create_integer,
                                             create_nil, free_object};

}  // namespace

resp_reader::resp_reader() {
  reset();
}

resp_reader::~resp_reader() {
  if (reader_) redisReaderFree(reader_);
}

void resp_reader::reset() {
  if (reader_) redisReaderFree(reader_);
  reader_ = redisReaderCreateWithFunctions(&reply_functions);
  if (!reader_) throw std::bad_alloc();
  refusal_ = nullptr;
  reader_->privdata = &refusal_;
}

bool resp_reader::failed() const {
  return reader_->err != 0;
}

std::string resp_reader::error_text() const {
  if (!failed()) return {};
  return refusal_ ? std::string(refusal_) : std::string(reader_->errstr);
}

bool resp_reader::feed(const char* data, std::size_t size) {
  if (size == 0) return !failed();
  return redisReaderFeed(reader_, data, size) == REDIS_OK;
}

bool resp_reader::take(reply& out, std::error_code& ec) {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
    ec = error::protocol;
    return true;
  }
  if (!raw) return false;
  std::unique_ptr<reply> root(static_cast<reply*>(raw));
  out = std::move(*root);
  return true;
}

}  // namespace pushonce::redis
