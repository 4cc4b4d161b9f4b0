#pragma once
// The gateway's HTTP answers as Beast messages: the request and response types every route
// and the SSE transport use, and the responses built once (the Server and Cache-Control
// headers, a refusal's status and JSON body from http_error). No sockets.

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>
#include <string_view>

#include "core/errc.hpp"

namespace pushonce::gateway {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

http_response json_response(unsigned status, std::string body, unsigned version = 11);
http_response text_response(unsigned status, std::string body, std::string_view content_type,
                            unsigned version = 11);
/// The status and JSON body of a refusal (gateway/protocol/http_error).
http_response error_response(errc e, std::string_view message, unsigned version = 11);
/// 404 {"error":"not_found",...}
http_response not_found_response(const http_request& req);

/// The path of a request target without its query string.
std::string_view target_path(std::string_view target);

}  // namespace pushonce::gateway
