// JSON helpers over boost::json, the one JSON library of hcprp.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp {

namespace json = boost::json;

// Parses text as one JSON value with a nesting limit; malformed input is InvalidArgument with the
// byte offset in the message, never an exception.
Result<json::value> ParseJson(std::string_view text, size_t max_depth = 64);

// Compact serialisation.
inline std::string ToJson(const json::value& v) { return json::serialize(v); }

// The value at an RFC 6901 JSON pointer ("/properties/status"), or nullptr when absent.
const json::value* FindPointer(const json::value& root, std::string_view pointer);
json::value* FindPointer(json::value& root, std::string_view pointer);

// Convenience accessors for object members; nullopt when absent or of another type.
std::optional<std::string_view> GetString(const json::object& o, std::string_view key);
std::optional<int64_t> GetInt(const json::object& o, std::string_view key);
std::optional<bool> GetBool(const json::object& o, std::string_view key);
const json::object* GetObject(const json::object& o, std::string_view key);
const json::array* GetArray(const json::object& o, std::string_view key);

// ASCII lower-casing, for the case-insensitive identifiers ARM uses.
std::string ToLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);

}  // namespace hcprp
