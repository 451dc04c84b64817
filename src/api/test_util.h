// Helpers shared by the api tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api::testing {

inline json::value LoadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseJson(ss.str());
  EXPECT_TRUE(parsed.ok()) << path;
  return parsed.ok() ? parsed.value() : json::value();
}

inline json::value Parse(std::string_view text) {
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? parsed.value() : json::value();
}

// Sets the value at an RFC 6901 pointer, creating intermediate objects.
inline void Set(json::value& root, std::string_view pointer, json::value v) {
  json::value* cur = &root;
  size_t pos = 1;
  while (pos <= pointer.size()) {
    size_t end = pointer.find('/', pos);
    std::string key(pointer.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (json::array* a = cur->if_array()) {
      cur = &(*a)[std::stoul(key)];
    } else {
      if (!cur->is_object()) *cur = json::object();
      cur = &cur->get_object()[key];
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  *cur = std::move(v);
}

inline void Erase(json::value& root, std::string_view pointer) {
  size_t slash = pointer.rfind('/');
  json::value* parent = FindPointer(root, pointer.substr(0, slash));
  ASSERT_NE(parent, nullptr) << pointer;
  ASSERT_TRUE(parent->is_object()) << pointer;
  parent->get_object().erase(pointer.substr(slash + 1));
}

inline std::string Dump(const ValidationErrors& e) {
  std::string s;
  for (const auto& f : e.errors) s += "  [" + f.code + "] " + f.target + ": " + f.message + "\n";
  return s;
}

inline std::string Dump(const Validated<Resource>& v) {
  if (const auto* e = std::get_if<ValidationErrors>(&v)) return Dump(*e);
  return "  (no errors)\n";
}

}  // namespace hcprp::api::testing
