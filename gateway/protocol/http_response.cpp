#include "gateway/protocol/http_response.hpp"

#include "gateway/protocol/http_error.hpp"

namespace pushonce::gateway {

namespace http = boost::beast::http;

http_response error_response(errc e, std::string_view message, unsigned version) {
  auto a = error_answer(e, message);
  return json_response(a.status, std::move(a.body), version);
}

http_response json_response(unsigned status, std::string body, unsigned version) {
  return text_response(status, std::move(body), "application/json", version);
}

http_response text_response(unsigned status, std::string body, std::string_view content_type,
                            unsigned version) {
  http_response res{static_cast<http::status>(status), version};
  res.set(http::field::server, "pushonce-gateway");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

http_response not_found_response(const http_request& req) {
  std::string what = std::string(req.method_string()) + " " +
                     std::string(target_path(req.target()).substr(0, 200));
  return error_response(errc::not_found, "no route for " + what, req.version());
}

std::string_view target_path(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace pushonce::gateway
