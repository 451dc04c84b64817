// Plain-text tables for hcpctl's "table" output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"

namespace hcprp::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // A row for an ARM resource: name, short type, location, provisioning state, and a detail column
  // (version, replicas, or the first non-ready condition).
  void AddResource(const json::object& resource);
  void Print(std::ostream& out) const;
  bool empty() const { return rows_.empty(); }

  // The conditions of an ARM resource (properties.status.conditions): type, status, reason, last
  // transition time and message, one row each. Empty when the resource has none.
  static Table Conditions(const json::object& resource);

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace hcprp::cli
