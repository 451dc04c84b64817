#include "arm/system_data.h"

#include <array>

namespace hcprp::arm {
namespace {
constexpr std::array<std::string_view, 3> kCreated = {"createdBy", "createdByType", "createdAt"};
constexpr std::array<std::string_view, 3> kModified = {"lastModifiedBy", "lastModifiedByType",
                                                       "lastModifiedAt"};
}  // namespace

std::optional<json::object> ParseSystemData(std::string_view header) {
  if (header.empty()) return std::nullopt;
  auto parsed = ParseJson(header, 8);
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  const auto& in = parsed->as_object();
  json::object out;
  for (auto keys : {kCreated, kModified}) {
    for (auto k : keys) {
      if (auto v = GetString(in, k)) out[k] = *v;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<json::object> MergeSystemData(const std::optional<json::object>& existing,
                                            const std::optional<json::object>& header, bool is_create) {
  if (is_create || !existing) return header;
  json::object out = *existing;
  if (header) {
    for (auto k : kModified) {
      if (auto v = GetString(*header, k)) out[k] = *v;
    }
  }
  return out;
}

}  // namespace hcprp::arm
