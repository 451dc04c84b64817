// Bearer-token credentials (RFC 6750) as the admin and control listeners check them.
#pragma once

#include <string_view>

#include "http/message.h"

namespace hcprp::http {

// The credentials of "Authorization: Bearer <token>", the scheme matched case-insensitively (RFC 9110
// section 11.1); "" when the request carries no bearer credentials.
std::string_view BearerToken(const Request& request);

// Equality in a time that does not depend on where the first difference is.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace hcprp::http
