// The subset of OCM's search language the simulator understands:
//   expr  := term ( "and" term )*
//   term  := path op value | path "in" "(" value ("," value)* ")"
//   op    := "=" | "!=" | "<>" | "like" | "ilike" | "not like"
//   path  := name ("." name)*          e.g. azure.subscription_id, status.state
//   value := 'text' ('' escapes a quote) | number | true | false
// Comparisons ignore ASCII case (Azure names are case-insensitive); "like" uses % and _ wildcards.
// Private to the simulator.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::simulator {

struct SearchTerm {
  std::vector<std::string> path;
  enum class Op { kEq, kNe, kLike, kNotLike, kIn } op = Op::kEq;
  std::vector<std::string> values;
};

struct SearchExpr {
  std::vector<SearchTerm> terms;  // all must hold; empty matches everything
};

Result<SearchExpr> ParseSearch(std::string_view text);
bool Matches(const SearchExpr& expr, const json::object& object);

}  // namespace hcprp::simulator
