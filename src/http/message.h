// HTTP message types shared by hcprp's server and client: Beast requests and responses with string
// bodies, and a few helpers to build them.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>
#include <string_view>

namespace hcprp::http {

namespace beast_http = boost::beast::http;

using Request = beast_http::request<beast_http::string_body>;
using Response = beast_http::response<beast_http::string_body>;
using StatusCode = beast_http::status;
using Verb = beast_http::verb;
using Field = beast_http::field;

// A response with `body` and Content-Type (omitted when empty), Content-Length set.
Response MakeResponse(StatusCode status, std::string body = "", std::string_view content_type = "");
// A JSON response ("application/json").
Response JsonResponse(StatusCode status, std::string json_body);
// A request with version HTTP/1.1, target and (when non-empty) a JSON body and its Content-Type.
Request MakeRequest(Verb method, std::string_view target, std::string body = "",
                    std::string_view content_type = "application/json");

// GET, HEAD, PUT, DELETE, OPTIONS, TRACE: methods that RFC 9110 calls idempotent.
bool IsIdempotent(Verb method);

}  // namespace hcprp::http
