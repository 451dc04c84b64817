#include "core/json.h"

#include <charconv>

namespace hcprp {

Result<json::value> ParseJson(std::string_view text, size_t max_depth) {
  json::parse_options opts;
  opts.max_depth = max_depth;
  json::stream_parser p({}, opts);
  boost::system::error_code ec;
  size_t n = p.write(text.data(), text.size(), ec);
  if (!ec) p.finish(ec);
  if (ec) {
    return Error::InvalidArgument("invalid JSON at offset " + std::to_string(ec ? n : text.size()) + ": " +
                                  ec.message());
  }
  return p.release();
}

namespace {

// Decodes one reference token of a JSON pointer (~1 -> /, ~0 -> ~).
std::string DecodeToken(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '~' && i + 1 < t.size() && (t[i + 1] == '0' || t[i + 1] == '1')) {
      out += t[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

}  // namespace

json::value* FindPointer(json::value& root, std::string_view pointer) {
  json::value* cur = &root;
  if (pointer.empty()) return cur;
  if (pointer[0] != '/') return nullptr;
  size_t pos = 1;
  while (true) {
    size_t end = pointer.find('/', pos);
    std::string tok = DecodeToken(pointer.substr(pos, end == std::string_view::npos ? end : end - pos));
    if (auto* o = cur->if_object()) {
      auto it = o->find(tok);
      if (it == o->end()) return nullptr;
      cur = &it->value();
    } else if (auto* a = cur->if_array()) {
      size_t idx = 0;
      auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), idx);
      if (ec != std::errc() || p != tok.data() + tok.size() || idx >= a->size()) return nullptr;
      cur = &(*a)[idx];
    } else {
      return nullptr;
    }
    if (end == std::string_view::npos) return cur;
    pos = end + 1;
  }
}

const json::value* FindPointer(const json::value& root, std::string_view pointer) {
  return FindPointer(const_cast<json::value&>(root), pointer);  // NOLINT: read-only use
}

std::optional<std::string_view> GetString(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  const auto& s = it->value().get_string();
  return std::string_view(s.data(), s.size());
}

std::optional<int64_t> GetInt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  if (it->value().is_int64()) return it->value().get_int64();
  if (it->value().is_uint64() && it->value().get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(it->value().get_uint64());
  }
  return std::nullopt;
}

std::optional<bool> GetBool(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_bool()) return std::nullopt;
  return it->value().get_bool();
}

const json::object* GetObject(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : it->value().if_object();
}

const json::array* GetArray(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : it->value().if_array();
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a == b) return true;  // the usual case (IDs compared with themselves), and memcmp is fast
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

}  // namespace hcprp
