#include "cli/table.h"

#include <algorithm>

namespace hcprp::cli {

void Table::AddResource(const json::object& r) {
  std::string type(GetString(r, "type").value_or(""));
  if (auto slash = type.rfind('/'); slash != std::string::npos) type = type.substr(slash + 1);
  std::string state, detail;
  if (const auto* p = GetObject(r, "properties")) {
    state = GetString(*p, "provisioningState").value_or("");
    if (const auto* v = GetObject(*p, "version"))
      detail = "version " + std::string(GetString(*v, "id").value_or(""));
    if (auto n = GetInt(*p, "replicas"))
      detail += (detail.empty() ? "" : ", ") + std::to_string(*n) + " replicas";
    if (const auto* issuer = GetObject(*p, "issuer"))
      detail = std::string(GetString(*issuer, "url").value_or(""));
  }
  AddRow({std::string(GetString(r, "name").value_or("")), type,
          std::string(GetString(r, "location").value_or("")), state, detail});
}

Table Table::Conditions(const json::object& r) {
  Table t({"CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"});
  const json::object* p = GetObject(r, "properties");
  const json::object* status = p ? GetObject(*p, "status") : nullptr;
  const json::array* conditions = status ? GetArray(*status, "conditions") : nullptr;
  if (conditions == nullptr) return t;
  for (const auto& v : *conditions) {
    const json::object* c = v.if_object();
    if (c == nullptr) continue;
    auto field = [&](std::string_view name) { return std::string(GetString(*c, name).value_or("")); };
    t.AddRow(
        {field("type"), field("status"), field("reason"), field("lastTransitionTime"), field("message")});
  }
  return t;
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) width[i] = headers_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < width.size(); ++i) {
      std::string c = i < cells.size() ? cells[i] : "";
      out << c;
      if (i + 1 < width.size()) out << std::string(width[i] - c.size() + 2, ' ');
    }
    out << "\n";
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

}  // namespace hcprp::cli
