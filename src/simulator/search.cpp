#include "simulator/search.h"

#include <cctype>
#include <optional>

namespace hcprp::simulator {
namespace {

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= s_.size();
  }
  // A bare word: letters, digits, '_', '.', '-'.
  std::string Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                s_[pos_] == '.' || s_[pos_] == '-')) {
      ++pos_;
    }
    return std::string(s_.substr(start, pos_ - start));
  }
  bool Consume(std::string_view tok) {
    SkipSpace();
    if (s_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  // Case-insensitive keyword followed by a non-word character.
  bool Keyword(std::string_view kw) {
    SkipSpace();
    if (pos_ + kw.size() > s_.size() || !EqualsIgnoreCase(s_.substr(pos_, kw.size()), kw)) return false;
    if (pos_ + kw.size() < s_.size()) {
      char c = s_[pos_ + kw.size()];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') return false;
    }
    pos_ += kw.size();
    return true;
  }
  Result<std::string> Value() {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '\'') {
      ++pos_;
      std::string out;
      while (pos_ < s_.size()) {
        char c = s_[pos_++];
        if (c == '\'') {
          if (pos_ < s_.size() && s_[pos_] == '\'') {
            out += '\'';
            ++pos_;
            continue;
          }
          return out;
        }
        out += c;
      }
      return Error::InvalidArgument("unterminated string in search expression");
    }
    std::string w = Word();
    if (w.empty()) return Error::InvalidArgument("expected a value at offset " + std::to_string(pos_));
    return w;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

std::vector<std::string> SplitPath(const std::string& p) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = p.find('.', start);
    out.push_back(p.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

bool LikeMatch(std::string_view text, std::string_view pattern) {
  // Iterative wildcard matching with backtracking on the last '%'.
  size_t t = 0, p = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '_' || std::tolower(static_cast<unsigned char>(pattern[p])) ==
                                                        std::tolower(static_cast<unsigned char>(text[t])))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '%') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '%') ++p;
  return p == pattern.size();
}

// The value at `path` as text, or nullopt when absent or not a scalar.
std::optional<std::string> Lookup(const json::object& o, const std::vector<std::string>& path) {
  const json::value* cur = nullptr;
  const json::object* obj = &o;
  for (size_t i = 0; i < path.size(); ++i) {
    auto it = obj->find(path[i]);
    if (it == obj->end()) return std::nullopt;
    cur = &it->value();
    if (i + 1 < path.size()) {
      if (!cur->is_object()) return std::nullopt;
      obj = &cur->as_object();
    }
  }
  if (!cur) return std::nullopt;
  if (cur->is_string()) return std::string(cur->as_string());
  if (cur->is_bool()) return cur->as_bool() ? "true" : "false";
  if (cur->is_int64() || cur->is_uint64() || cur->is_double()) return json::serialize(*cur);
  return std::nullopt;
}

}  // namespace

Result<SearchExpr> ParseSearch(std::string_view text) {
  SearchExpr expr;
  Lexer lx(text);
  if (lx.AtEnd()) return expr;
  for (;;) {
    SearchTerm term;
    std::string path = lx.Word();
    if (path.empty())
      return Error::InvalidArgument("expected a field name at offset " + std::to_string(lx.pos()));
    term.path = SplitPath(path);
    if (lx.Consume("!=") || lx.Consume("<>")) {
      term.op = SearchTerm::Op::kNe;
    } else if (lx.Consume("=")) {
      term.op = SearchTerm::Op::kEq;
    } else if (lx.Keyword("like") || lx.Keyword("ilike")) {
      term.op = SearchTerm::Op::kLike;
    } else if (lx.Keyword("not")) {
      if (!lx.Keyword("like") && !lx.Keyword("ilike"))
        return Error::InvalidArgument("expected 'like' after 'not'");
      term.op = SearchTerm::Op::kNotLike;
    } else if (lx.Keyword("in")) {
      term.op = SearchTerm::Op::kIn;
      if (!lx.Consume("(")) return Error::InvalidArgument("expected '(' after 'in'");
      do {
        HCPRP_ASSIGN_OR_RETURN(auto v, lx.Value());
        term.values.push_back(std::move(v));
      } while (lx.Consume(","));
      if (!lx.Consume(")")) return Error::InvalidArgument("expected ')' closing 'in'");
    } else {
      return Error::InvalidArgument("expected an operator after '" + path + "'");
    }
    if (term.op != SearchTerm::Op::kIn) {
      HCPRP_ASSIGN_OR_RETURN(auto v, lx.Value());
      term.values.push_back(std::move(v));
    }
    expr.terms.push_back(std::move(term));
    if (lx.AtEnd()) break;
    if (!lx.Keyword("and")) {
      return Error::InvalidArgument("expected 'and' at offset " + std::to_string(lx.pos()) +
                                    " (only conjunctions are supported)");
    }
  }
  return expr;
}

bool Matches(const SearchExpr& expr, const json::object& object) {
  for (const auto& t : expr.terms) {
    auto v = Lookup(object, t.path);
    switch (t.op) {
      case SearchTerm::Op::kEq:
        if (!v || !EqualsIgnoreCase(*v, t.values[0])) return false;
        break;
      case SearchTerm::Op::kNe:
        if (v && EqualsIgnoreCase(*v, t.values[0])) return false;
        break;
      case SearchTerm::Op::kLike:
        if (!v || !LikeMatch(*v, t.values[0])) return false;
        break;
      case SearchTerm::Op::kNotLike:
        if (v && LikeMatch(*v, t.values[0])) return false;
        break;
      case SearchTerm::Op::kIn: {
        bool any = false;
        for (const auto& x : t.values) any = any || (v && EqualsIgnoreCase(*v, x));
        if (!any) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace hcprp::simulator
