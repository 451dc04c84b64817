#include "api/schema.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>

#include "api/embedded_specs.h"
#include "api/rules_common.h"
#include "core/azure_resource_id.h"
#include "core/time.h"

namespace hcprp::api {

// One parsed document of the set.
struct SchemaSet::Doc {
  std::string name;
  json::value root;
};

// A schema with $ref and allOf resolved. Children are kept as (document, schema object) pairs and
// resolved on use, so recursive schemas (ErrorDetail.details) cost nothing up front.
// A schema a node refers to (a property, map value or array item), and the node once resolved: a
// validation visits thousands of them per request, and the node table's lock and lookup cost more
// than the rest of the visit. Nodes live as long as their set.
struct SchemaSet::NodeRef {
  size_t doc = 0;
  const json::object* schema = nullptr;
  mutable std::atomic<const Node*> node{nullptr};

  NodeRef(size_t d, const json::object* s) : doc(d), schema(s) {}
  NodeRef(const NodeRef& o) : doc(o.doc), schema(o.schema), node(o.node.load(std::memory_order_acquire)) {}
  NodeRef& operator=(const NodeRef& o) {
    if (this == &o) return *this;
    doc = o.doc;
    schema = o.schema;
    node.store(o.node.load(std::memory_order_acquire), std::memory_order_release);
    return *this;
  }
  ~NodeRef() = default;
};

struct SchemaSet::Node {
  using Child = NodeRef;
  std::string type;
  std::string format;
  std::vector<std::pair<std::string, Child>> properties;
  std::vector<std::string> required;
  std::optional<Child> additional;  // additionalProperties: {schema}
  bool additional_any = false;      // additionalProperties: true
  std::optional<Child> items;
  const json::array* enum_values = nullptr;
  std::optional<std::string> pattern;
  std::optional<double> minimum, maximum;
  std::optional<int64_t> min_length, max_length, min_items, max_items;
  bool read_only = false;
  bool nullable = false;
  std::optional<std::vector<std::string>> mutability;
  const json::value* default_value = nullptr;
  std::vector<std::string> allowed_resource_types;

  const Child* Property(std::string_view name) const {
    for (const auto& [n, c] : properties) {
      if (n == name) return &c;
    }
    return nullptr;
  }
  bool IsObject() const { return type == "object" || (type.empty() && !properties.empty()); }
  bool Updatable() const {
    return !mutability || std::find(mutability->begin(), mutability->end(), "update") != mutability->end();
  }
};

// Where a validation is in the body, spelled out (JoinPath, IndexPath) only when a problem names it.
struct SchemaSet::PathRef {
  enum class Step { kRoot, kMember, kEntry, kIndex };
  const PathRef* parent = nullptr;
  Step step = Step::kRoot;
  const std::string* root = nullptr;  // kRoot
  std::string_view key;               // kMember, kEntry
  size_t index = 0;                   // kIndex

  static PathRef Root(const std::string& path) { return PathRef{nullptr, Step::kRoot, &path, {}, 0}; }
  static PathRef Member(const PathRef& parent, std::string_view key) {
    return PathRef{&parent, Step::kMember, nullptr, key, 0};
  }
  // A map entry, named as the real service names it: path[key].
  static PathRef Entry(const PathRef& parent, std::string_view key) {
    return PathRef{&parent, Step::kEntry, nullptr, key, 0};
  }
  static PathRef Index(const PathRef& parent, size_t index) {
    return PathRef{&parent, Step::kIndex, nullptr, {}, index};
  }
  std::string Str() const;
};

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxPatternInput = 4096;  // longer strings never reach std::regex (it recurses per char)

FieldError Problem(std::string_view code, std::string message, std::string target) {
  return FieldError{std::string(code), std::move(message), std::move(target)};
}

std::string_view TypeName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "integer";
    case json::kind::double_:
      return "number";
    case json::kind::string:
      return "string";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
  }
  return "value";
}

std::string Quote(std::string_view s) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  out.append(s.substr(0, kShown));
  if (s.size() > kShown) out += "...";
  out += "'";
  return out;
}

std::string Describe(const std::string& path) { return path.empty() ? "the body" : "'" + path + "'"; }

// Counts code points of UTF-8 text (what maxLength means for a JSON string).
int64_t CodePoints(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::optional<int64_t> AsInt(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    double d = v.get_double();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<double> AsNumber(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return std::nullopt;
}

std::vector<std::string_view> SplitSegments(std::string_view s) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('/', pos);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Checks an Azure resource ID; on success returns its resource type ("Microsoft.Network/
// virtualNetworks/subnets"), or "" when it names no provider resource (a subscription, a group).
bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool IsUri(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = s[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  for (char c : s) {
    if (c == ' ' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return colon + 1 < s.size();
}

// The path of `ref` (relative to the document `from`, both relative to the specification root),
// with "." and ".." segments resolved: ("a/b/c/openapi.json", "../../x/types.json") -> "a/x/types.json".
std::string ResolveRelative(std::string_view from, std::string_view ref) {
  std::vector<std::string_view> parts = SplitSegments(from);
  parts.pop_back();  // the file name of `from`
  for (std::string_view seg : SplitSegments(ref)) {
    if (seg == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!seg.empty() && seg != ".") {
      parts.push_back(seg);
    }
  }
  std::string out;
  for (std::string_view p : parts) {
    if (!out.empty()) out += '/';
    out.append(p);
  }
  return out;
}

bool JsonEqual(const json::value* a, const json::value* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return *a == *b;
}

}  // namespace

std::string JoinPath(const std::string& path, std::string_view key) {
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (plain) return path.empty() ? std::string(key) : path + "." + std::string(key);
  std::string escaped;
  for (char c : key) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return path + "[\"" + escaped + "\"]";
}

std::string IndexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string SchemaSet::PathRef::Str() const {
  switch (step) {
    case Step::kRoot:
      return *root;
    case Step::kMember:
      return JoinPath(parent->Str(), key);
    case Step::kEntry:
      return parent->Str() + "[" + std::string(key) + "]";
    case Step::kIndex:
      return IndexPath(parent->Str(), index);
  }
  return {};
}

SchemaSet::SchemaSet(std::string api_version) : api_version_(std::move(api_version)) {}
SchemaSet::~SchemaSet() = default;

const SchemaSet* SchemaSet::ForVersion(std::string_view api_version) {
  // Built once from the embedded documents; immutable data, so sharing it is not hidden state.
  static const std::vector<std::unique_ptr<SchemaSet>> kSets = [] {
    std::vector<std::unique_ptr<SchemaSet>> sets;
    for (const ApiVersion& version : ApiVersions()) {
      std::unique_ptr<SchemaSet> set(new SchemaSet(std::string(version.name)));
      const std::string main_suffix = "/" + std::string(version.name) + "/openapi.json";
      std::vector<std::unique_ptr<Doc>> others;
      for (const auto& embedded : EmbeddedSpecs()) {
        bool is_main = embedded.file_name.ends_with(main_suffix);
        if (!is_main && embedded.file_name.ends_with("openapi.json")) continue;  // another version
        auto parsed = ParseJson(embedded.Text(), 256);
        assert(parsed.ok());  // the documents are part of the build
        auto doc = std::make_unique<Doc>(Doc{std::string(embedded.file_name), std::move(parsed).value()});
        if (is_main) {
          set->docs_.insert(set->docs_.begin(), std::move(doc));
        } else {
          others.push_back(std::move(doc));
        }
      }
      for (auto& d : others) set->docs_.push_back(std::move(d));
      assert(!set->docs_.empty() && set->docs_[0]->name.ends_with(main_suffix));
      sets.push_back(std::move(set));
    }
    return sets;
  }();
  for (const auto& s : kSets) {
    if (s->api_version_ == api_version) return s.get();
  }
  return nullptr;
}

bool SchemaSet::HasDefinition(std::string_view definition) const { return Resolve(definition) != nullptr; }

const SchemaSet::Node* SchemaSet::Resolve(std::string_view definition) const {
  const json::value* defs = FindPointer(docs_[0]->root, "/definitions");
  if (defs == nullptr || !defs->is_object()) return nullptr;
  auto it = defs->get_object().find(definition);
  if (it == defs->get_object().end() || !it->value().is_object()) return nullptr;
  return NodeFor(0, &it->value().get_object());
}

const SchemaSet::Node* SchemaSet::NodeFor(const NodeRef& ref) const {
  const Node* node = ref.node.load(std::memory_order_acquire);
  if (node == nullptr) {
    node = NodeFor(ref.doc, ref.schema);
    ref.node.store(node, std::memory_order_release);
  }
  return node;
}

const SchemaSet::Node* SchemaSet::NodeFor(size_t doc, const json::object* schema) const {
  {
    ReaderMutexLock lock(mu_);
    auto it = nodes_.find(schema);
    if (it != nodes_.end()) return it->second.get();
  }
  auto node = std::make_unique<Node>();
  Node& n = *node;
  auto merge = [&](const Node& base, bool take_all) {
    if (take_all) {
      n = base;
      return;
    }
    for (const auto& p : base.properties) {
      if (n.Property(p.first) == nullptr) n.properties.push_back(p);
    }
    n.required.insert(n.required.end(), base.required.begin(), base.required.end());
    if (n.type.empty()) n.type = base.type;
  };
  auto lookup = [&](std::string_view ref) -> std::optional<Node::Child> {
    size_t hash = ref.find('#');
    std::string_view file = ref.substr(0, hash);
    std::string_view pointer = hash == std::string_view::npos ? "" : ref.substr(hash + 1);
    size_t target = doc;
    if (!file.empty()) {
      const std::string path = ResolveRelative(docs_[doc]->name, file);
      target = docs_.size();
      for (size_t i = 0; i < docs_.size(); ++i) {
        if (docs_[i]->name == path) target = i;
      }
      if (target == docs_.size()) return std::nullopt;
    }
    const json::value* v = FindPointer(docs_[target]->root, pointer);
    if (v == nullptr || !v->is_object()) return std::nullopt;
    return Node::Child{target, &v->get_object()};
  };
  if (auto ref = GetString(*schema, "$ref")) {
    if (auto target = lookup(*ref)) merge(*NodeFor(*target), true);
  }
  if (const json::array* all = GetArray(*schema, "allOf")) {
    for (const auto& part : *all) {
      if (!part.is_object()) continue;
      merge(*NodeFor(doc, &part.get_object()), false);
    }
  }
  if (auto t = GetString(*schema, "type")) n.type = std::string(*t);
  if (auto f = GetString(*schema, "format")) n.format = std::string(*f);
  if (const json::object* props = GetObject(*schema, "properties")) {
    for (const auto& p : *props) {
      if (!p.value().is_object()) continue;
      Node::Child c{doc, &p.value().get_object()};
      bool replaced = false;
      for (auto& existing : n.properties) {
        if (existing.first == p.key()) {
          existing.second = c;
          replaced = true;
        }
      }
      if (!replaced) n.properties.emplace_back(std::string(p.key()), c);
    }
  }
  if (const json::array* req = GetArray(*schema, "required")) {
    for (const auto& r : *req) {
      if (r.is_string()) n.required.emplace_back(r.get_string());
    }
  }
  if (auto it = schema->find("additionalProperties"); it != schema->end()) {
    if (it->value().is_object()) {
      n.additional = Node::Child{doc, &it->value().get_object()};
    } else if (it->value().is_bool()) {
      n.additional_any = it->value().get_bool();
    }
  }
  if (const json::object* items = GetObject(*schema, "items")) n.items = Node::Child{doc, items};
  if (const json::array* e = GetArray(*schema, "enum")) n.enum_values = e;
  if (auto p = GetString(*schema, "pattern")) n.pattern = std::string(*p);
  auto number = [&](std::string_view key) -> std::optional<double> {
    auto it = schema->find(key);
    if (it == schema->end()) return std::nullopt;
    return AsNumber(it->value());
  };
  if (auto v = number("minimum")) n.minimum = v;
  if (auto v = number("maximum")) n.maximum = v;
  if (auto v = GetInt(*schema, "minLength")) n.min_length = v;
  if (auto v = GetInt(*schema, "maxLength")) n.max_length = v;
  if (auto v = GetInt(*schema, "minItems")) n.min_items = v;
  if (auto v = GetInt(*schema, "maxItems")) n.max_items = v;
  if (auto v = GetBool(*schema, "readOnly")) n.read_only = *v;
  if (auto v = GetBool(*schema, "x-nullable")) n.nullable = *v;
  if (const json::array* m = GetArray(*schema, "x-ms-mutability")) {
    std::vector<std::string> modes;
    for (const auto& x : *m) {
      if (x.is_string()) modes.emplace_back(x.get_string());
    }
    n.mutability = std::move(modes);
  }
  if (auto it = schema->find("default"); it != schema->end()) n.default_value = &it->value();
  if (const json::object* details = GetObject(*schema, "x-ms-arm-id-details")) {
    if (const json::array* allowed = GetArray(*details, "allowedResources")) {
      n.allowed_resource_types.clear();
      for (const auto& a : *allowed) {
        if (!a.is_object()) continue;
        if (auto t = GetString(a.get_object(), "type")) n.allowed_resource_types.emplace_back(*t);
      }
    }
  }

  WriterMutexLock lock(mu_);
  auto [it, inserted] = nodes_.emplace(schema, std::move(node));
  return it->second.get();
}

const std::regex* SchemaSet::Regex(const std::string& pattern) const {
  {
    ReaderMutexLock lock(mu_);
    auto it = regexes_.find(pattern);
    if (it != regexes_.end()) return it->second.get();
  }
  WriterMutexLock lock(mu_);
  if (auto it = regexes_.find(pattern); it != regexes_.end()) return it->second.get();
  std::unique_ptr<std::regex> re;
  try {
    re = std::make_unique<std::regex>(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error&) {
    re = nullptr;  // a pattern we cannot compile is not enforced
  }
  return regexes_.emplace(pattern, std::move(re)).first->second.get();
}

void SchemaSet::Validate(std::string_view definition, const json::value& value, SchemaMode mode,
                         std::vector<FieldError>& out, const std::string& path) const {
  const Node* node = Resolve(definition);
  if (node == nullptr) {
    out.push_back(Problem(std::string(kInternalServerError),
                          "no definition '" + std::string(definition) + "' in api-version " + api_version_,
                          path));
    return;
  }
  ValidateNode(*node, value, mode, PathRef::Root(path), out, 0);
}

namespace {

using Node = SchemaSet::Node;
using PathRef = SchemaSet::PathRef;

void WrongType(const json::value& v, std::string_view expected, const PathRef& at,
               std::vector<FieldError>& out) {
  out.push_back(
      Problem(kInvalidRequestContent,
              Describe(at.Str()) + " must be " + std::string(expected) + ", got " + std::string(TypeName(v)),
              at.Str()));
}

// Fields whose lower bound a rule of the real service judges, stricter than the published document's
// (autoscaling seconds: at least 1, the document says 0; rules_cluster.cpp CheckAutoscaling). Only the
// rule reports them, so a value is refused once, in the rule's words.
bool BoundJudgedByRule(std::string_view target) {
  return target == "properties.autoscaling.maxPodGracePeriodSeconds" ||
         target == "properties.autoscaling.maxNodeProvisionTimeSeconds";
}

void ValidateNumber(const Node& node, const json::value& v, const PathRef& at, std::vector<FieldError>& out) {
  std::optional<double> number = AsNumber(v);
  if (!number) return WrongType(v, node.type == "integer" ? "an integer" : "a number", at, out);
  if (node.type == "integer") {
    std::optional<int64_t> i = AsInt(v);
    if (!i) return WrongType(v, "an integer", at, out);
    if (node.format == "int32" &&
        (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())) {
      out.push_back(Problem(kInvalidRequestContent,
                            Describe(at.Str()) + " is out of the 32-bit integer range", at.Str()));
      return;
    }
  }
  auto fmt = [](double d) {
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
    return std::to_string(d);
  };
  // Bounds in the real service's words (`Invalid value: 63: must be greater than or equal to 64`).
  const std::string target = at.Str();
  if (node.minimum && *number < *node.minimum && !BoundJudgedByRule(target)) {
    out.push_back(
        Problem(kInvalidRequestContent,
                "Invalid value: " + fmt(*number) + ": must be greater than or equal to " + fmt(*node.minimum),
                target));
  }
  if (node.maximum && *number > *node.maximum) {
    out.push_back(Problem(
        kInvalidRequestContent,
        "Invalid value: " + fmt(*number) + ": must be less than or equal to " + fmt(*node.maximum), target));
  }
}

// False (and the problem reported) when `s` is not one of the node's enum values.
bool CheckEnum(const Node& node, std::string_view s, const PathRef& at, std::vector<FieldError>& out) {
  bool found = false;
  for (const auto& e : *node.enum_values) found = found || (e.is_string() && e.get_string() == s);
  if (found) return true;
  // In the real service's words: `Unsupported value: "x": supported values: "a", "b"`, sorted.
  std::vector<std::string> values;
  for (const auto& e : *node.enum_values) {
    if (e.is_string()) values.emplace_back(e.get_string());
  }
  std::ranges::sort(values);
  std::string allowed;
  for (const auto& v : values) {
    if (!allowed.empty()) allowed += ", ";
    allowed += json::serialize(json::value(v));
  }
  out.push_back(Problem(
      kInvalidRequestContent,
      "Unsupported value: " + json::serialize(json::value(s)) + ": supported values: " + allowed, at.Str()));
  return false;
}

// Lengths in the real service's words: an empty value of a property that needs one is "Required
// value", a long one "Too long: may not be more than N bytes".
void CheckLength(const Node& node, int64_t length, const PathRef& at, std::vector<FieldError>& out) {
  if (node.min_length && length < *node.min_length) {
    out.push_back(Problem(kInvalidRequestContent,
                          length == 0
                              ? std::string("Required value")
                              : Describe(at.Str()) + " must be at least " + std::to_string(*node.min_length) +
                                    " characters long, got " + std::to_string(length),
                          at.Str()));
  }
  if (node.max_length && length > *node.max_length) {
    out.push_back(Problem(kInvalidRequestContent,
                          "Too long: may not be more than " + std::to_string(*node.max_length) + " bytes",
                          at.Str()));
  }
}

void CheckArmId(const Node& node, std::string_view s, const PathRef& at, std::vector<FieldError>& out) {
  AzureResourceId id;
  if (!ParseAzureResourceId(s, id, ResourceIdScope::kAny).ok()) {
    out.push_back(
        Problem(kInvalidRequestContent, rules::MalformedIdMessage(s), rules::MalformedIdTarget(at.Str())));
    return;
  }
  if (node.allowed_resource_types.empty()) return;
  const std::string type = ResourceTypeOf(id);
  bool allowed = false;
  for (const auto& t : node.allowed_resource_types) allowed = allowed || EqualsIgnoreCase(t, type);
  if (!allowed) {
    out.push_back(Problem(kInvalidRequestContent,
                          "the value " + Quote(s) + " of " + Describe(at.Str()) + " must be the ID of a " +
                              node.allowed_resource_types.front() + " resource",
                          at.Str()));
  }
}

void CheckFormat(const Node& node, std::string_view s, const PathRef& at, std::vector<FieldError>& out) {
  std::string_view what;
  if (node.format == "arm-id") {
    CheckArmId(node, s, at, out);
    return;
  }
  if (node.format == "uuid" && !IsUuid(s)) {
    what = "a UUID";
  } else if (node.format == "uri" && !IsUri(s)) {
    what = "a URI";
  } else if (node.format == "date-time" && !ParseRfc3339(s).ok()) {
    what = "an RFC 3339 timestamp";
  } else {
    return;
  }
  out.push_back(Problem(
      kInvalidRequestContent,
      "the value " + Quote(s) + " of " + Describe(at.Str()) + " is not " + std::string(what), at.Str()));
}

void ValidateString(const SchemaSet& schemas, const Node& node, const json::value& v, const PathRef& at,
                    std::vector<FieldError>& out) {
  if (!v.is_string()) return WrongType(v, "a string", at, out);
  std::string_view s(v.get_string().data(), v.get_string().size());
  if (node.enum_values != nullptr && !CheckEnum(node, s, at, out)) return;
  int64_t length = CodePoints(s);
  CheckLength(node, length, at, out);
  bool too_long = node.max_length && length > *node.max_length;
  if (node.pattern && !too_long && !schemas.Matches(*node.pattern, s)) {
    out.push_back(Problem(kInvalidRequestContent,
                          "the value " + Quote(s) + " of " + Describe(at.Str()) +
                              " does not match the pattern " + *node.pattern,
                          at.Str()));
  }
  CheckFormat(node, s, at, out);
}

}  // namespace

void SchemaSet::ValidateNode(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                             std::vector<FieldError>& out, int depth) const {
  if (depth > kMaxDepth) {
    out.push_back(Problem(kInvalidRequestContent,
                          "nesting deeper than " + std::to_string(kMaxDepth) + " levels", at.Str()));
    return;
  }
  if (v.is_null()) {
    if (mode == SchemaMode::kPatch || node.nullable) return;
    out.push_back(Problem(kInvalidRequestContent, Describe(at.Str()) + " must not be null", at.Str()));
    return;
  }
  if (node.IsObject() || node.additional || node.additional_any) {
    ValidateObject(node, v, mode, at, out, depth);
  } else if (node.type == "array") {
    ValidateArray(node, v, mode, at, out, depth);
  } else if (node.type == "integer" || node.type == "number") {
    ValidateNumber(node, v, at, out);
  } else if (node.type == "boolean") {
    if (!v.is_bool()) WrongType(v, "a boolean", at, out);
  } else if (node.type == "string" || node.enum_values != nullptr) {
    ValidateString(*this, node, v, at, out);
  }
  // No type: anything goes.
}

namespace {

// The properties the documents mark required that the real service does not require in a request:
// the operator identities, which a cluster may be created without (schema.h, "Decisions").
bool OptionalInRequests(std::string_view path) {
  static constexpr std::string_view kIdentities =
      "properties.platform.operatorsAuthentication.userAssignedIdentities";
  if (path == "properties.platform.operatorsAuthentication" || path == kIdentities) return true;
  if (path.substr(0, kIdentities.size()) != kIdentities || path.size() <= kIdentities.size() ||
      path[kIdentities.size()] != '.') {
    return false;
  }
  std::string_view member = path.substr(kIdentities.size() + 1);
  return member == "controlPlaneOperators" || member == "dataPlaneOperators" ||
         member == "serviceManagedIdentity";
}

// A required property left out or sent as null, in the real service's words: "Required value", and
// "Required value: field cannot be null" for a null and for the properties its conversion checks for
// null (rules::NullChecked: no default fills them, so one left out reads as null there).
std::string RequiredMessage(std::string_view target, bool sent_null) {
  if (sent_null || rules::NullChecked(target)) return "Required value: field cannot be null";
  return "Required value";
}

}  // namespace

void SchemaSet::ValidateObject(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                               std::vector<FieldError>& out, int depth) const {
  if (!v.is_object()) return WrongType(v, "an object", at, out);
  const json::object& o = v.get_object();
  for (const auto& member : o) {
    if (const Node::Child* c = node.Property(member.key())) {
      const Node* child = NodeFor(*c);
      if (child->read_only && mode != SchemaMode::kResponse) continue;
      if (member.value().is_null() && mode == SchemaMode::kRequest && !child->nullable &&
          std::ranges::find(node.required, member.key()) != node.required.end()) {
        std::string target = JoinPath(at.Str(), member.key());
        out.push_back(Problem(kInvalidRequestContent, RequiredMessage(target, true), target));
        continue;
      }
      ValidateNode(*child, member.value(), mode, PathRef::Member(at, member.key()), out, depth + 1);
    } else if (node.additional) {
      // Map entries are named as the real service names them: at.Str()[key].
      ValidateNode(*NodeFor(*node.additional), member.value(), mode, PathRef::Entry(at, member.key()), out,
                   depth + 1);
    } else if (!node.additional_any) {
      out.push_back(Problem(kInvalidRequestContent,
                            "unknown property " + Quote(member.key()) + " in " + Describe(at.Str()),
                            JoinPath(at.Str(), member.key())));
    }
  }
  for (const auto& name : node.required) {
    if (o.contains(name)) continue;
    if (mode != SchemaMode::kResponse) {
      const Node::Child* c = node.Property(name);
      if (c != nullptr && NodeFor(*c)->read_only) continue;
      if (OptionalInRequests(JoinPath(at.Str(), name))) continue;
    }
    std::string target = JoinPath(at.Str(), name);
    const Node::Child* c = node.Property(name);
    if (mode == SchemaMode::kRequest && c != nullptr &&
        ReportRequiredMembers(*NodeFor(*c), target, out, depth))
      continue;
    out.push_back(Problem(kInvalidRequestContent, RequiredMessage(target, false), target));
  }
}

bool SchemaSet::ReportRequiredMembers(const Node& node, const std::string& target,
                                      std::vector<FieldError>& out, int depth) const {
  if (!node.IsObject() || node.required.empty() || depth > kMaxDepth) return false;
  bool reported = false;
  for (const auto& name : node.required) {
    const Node::Child* c = node.Property(name);
    const std::string member = JoinPath(target, name);
    if (c == nullptr || NodeFor(*c)->read_only || OptionalInRequests(member)) continue;
    if (!ReportRequiredMembers(*NodeFor(*c), member, out, depth + 1))
      out.push_back(Problem(kInvalidRequestContent, RequiredMessage(member, false), member));
    reported = true;
  }
  return reported;
}

void SchemaSet::ValidateArray(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                              std::vector<FieldError>& out, int depth) const {
  if (!v.is_array()) return WrongType(v, "an array", at, out);
  const json::array& a = v.get_array();
  if (node.min_items && static_cast<int64_t>(a.size()) < *node.min_items) {
    out.push_back(Problem(kInvalidRequestContent,
                          Describe(at.Str()) + " must have at least " + std::to_string(*node.min_items) +
                              " items, got " + std::to_string(a.size()),
                          at.Str()));
  }
  if (node.max_items && static_cast<int64_t>(a.size()) > *node.max_items) {
    out.push_back(Problem(kInvalidRequestContent,
                          Describe(at.Str()) + " must have at most " + std::to_string(*node.max_items) +
                              " items, got " + std::to_string(a.size()),
                          at.Str()));
  }
  if (!node.items) return;
  const Node* item = NodeFor(*node.items);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_null()) {
      out.push_back(Problem(kInvalidRequestContent, Describe(IndexPath(at.Str(), i)) + " must not be null",
                            IndexPath(at.Str(), i)));
      continue;
    }
    ValidateNode(*item, a[i], mode == SchemaMode::kPatch ? SchemaMode::kRequest : mode, PathRef::Index(at, i),
                 out, depth + 1);
  }
}

void SchemaSet::StripReadOnly(std::string_view definition, json::value& value) const {
  if (const Node* node = Resolve(definition)) StripNode(*node, value, true);
}

void SchemaSet::Prune(std::string_view definition, json::value& value) const {
  if (const Node* node = Resolve(definition)) StripNode(*node, value, false);
}

void SchemaSet::StripNode(const Node& node, json::value& v, bool read_only_only) const {
  if (json::object* o = v.if_object()) {
    std::vector<std::string> drop;
    for (auto& member : *o) {
      if (const Node::Child* c = node.Property(member.key())) {
        const Node* child = NodeFor(*c);
        if (read_only_only && child->read_only) {
          drop.emplace_back(member.key());
        } else {
          StripNode(*child, member.value(), read_only_only);
        }
      } else if (node.additional) {
        StripNode(*NodeFor(*node.additional), member.value(), read_only_only);
      } else if (!read_only_only && !node.additional_any) {
        drop.emplace_back(member.key());
      }
    }
    for (const auto& k : drop) o->erase(k);
  } else if (json::array* a = v.if_array()) {
    if (!node.items) return;
    const Node* item = NodeFor(*node.items);
    for (auto& e : *a) StripNode(*item, e, read_only_only);
  }
}

void SchemaSet::ApplyDefaults(std::string_view definition, json::value& value) const {
  if (const Node* node = Resolve(definition)) DefaultsNode(*node, value);
}

void SchemaSet::DefaultsNode(const Node& node, json::value& v) const {
  if (json::object* o = v.if_object()) {
    for (const auto& [name, c] : node.properties) {
      const Node* child = NodeFor(c);
      if (child->read_only) continue;
      auto it = o->find(name);
      if (it == o->end()) {
        if (child->default_value != nullptr) (*o)[name] = *child->default_value;
        continue;
      }
      DefaultsNode(*child, it->value());
    }
    if (node.additional) {
      const Node* child = NodeFor(*node.additional);
      for (auto& member : *o) {
        if (node.Property(member.key()) == nullptr) DefaultsNode(*child, member.value());
      }
    }
  } else if (json::array* a = v.if_array()) {
    if (!node.items) return;
    const Node* item = NodeFor(*node.items);
    for (auto& e : *a) DefaultsNode(*item, e);
  }
}

json::value SchemaSet::ExtractReadOnly(std::string_view definition, const json::value& value) const {
  const Node* node = Resolve(definition);
  if (node == nullptr) return json::object();
  json::value r = ExtractNode(*node, value);
  return r.is_null() ? json::value(json::object()) : r;
}

json::value SchemaSet::ExtractNode(const Node& node, const json::value& v) const {
  const json::object* o = v.if_object();
  if (o == nullptr) return nullptr;
  json::object out;
  for (const auto& member : *o) {
    const Node* child = nullptr;
    if (const Node::Child* c = node.Property(member.key())) {
      child = NodeFor(*c);
    } else if (node.additional) {
      child = NodeFor(*node.additional);
    }
    if (child == nullptr) continue;
    if (child->read_only) {
      out[member.key()] = member.value();
    } else if (member.value().is_object()) {
      json::value sub = ExtractNode(*child, member.value());
      if (sub.is_object() && !sub.get_object().empty()) out[member.key()] = std::move(sub);
    }
  }
  if (out.empty()) return nullptr;
  return out;
}

void SchemaSet::CheckCreateOnly(std::string_view definition, const json::value& now,
                                const json::value& before, std::vector<FieldError>& out) const {
  if (const Node* node = Resolve(definition)) CreateOnlyNode(*node, now, before, "", false, out);
}

void SchemaSet::CreateOnlyNode(const Node& node, const json::value& now, const json::value& before,
                               const std::string& path, bool frozen, std::vector<FieldError>& out) const {
  const json::object* a = now.if_object();
  const json::object* b = before.if_object();
  if (a == nullptr || b == nullptr) return;
  for (const auto& [name, c] : node.properties) {
    const Node* child = NodeFor(c);
    if (child->read_only) continue;
    const json::value* va = a->if_contains(name);
    const json::value* vb = b->if_contains(name);
    std::string child_path = JoinPath(path, name);
    bool child_frozen = frozen || !child->Updatable();
    if (va != nullptr && vb != nullptr && va->is_object() && vb->is_object() && child->IsObject() &&
        !child->additional) {
      // Report the leaves that changed rather than the whole create-only object.
      CreateOnlyNode(*child, *va, *vb, child_path, child_frozen, out);
      continue;
    }
    if (!child_frozen) continue;
    bool same = JsonEqual(va, vb);
    if (!same && name == "location" && va != nullptr && vb != nullptr && va->is_string() && vb->is_string()) {
      same = EqualsIgnoreCase(va->get_string(), vb->get_string());
    }
    if (!same) {
      // As the real service words a change of an immutable field.
      out.push_back(
          Problem(std::string(kInvalidRequestContent), "Forbidden: field is immutable", child_path));
    }
  }
}

void SchemaSet::FillCreateOnly(std::string_view definition, json::value& now,
                               const json::value& before) const {
  if (const Node* node = Resolve(definition)) FillNode(*node, now, before);
}

void SchemaSet::FillNode(const Node& node, json::value& now, const json::value& before) const {
  json::object* a = now.if_object();
  const json::object* b = before.if_object();
  if (a == nullptr || b == nullptr) return;
  for (const auto& [name, c] : node.properties) {
    const Node* child = NodeFor(c);
    if (child->read_only) continue;
    const json::value* vb = b->if_contains(name);
    if (vb == nullptr) continue;
    json::value* va = a->if_contains(name);
    if (va == nullptr) {
      if (!child->Updatable()) (*a)[name] = *vb;
    } else if (child->Updatable()) {
      FillNode(*child, *va, *vb);
    }
  }
}

bool SchemaSet::Matches(const std::string& pattern, std::string_view text) const {
  if (text.size() > kMaxPatternInput) return false;
  const std::regex* re = Regex(pattern);
  return re == nullptr || std::regex_search(text.begin(), text.end(), *re);
}

std::optional<std::string> SchemaSet::PathParameterPattern(std::string_view name) const {
  const json::value* paths = FindPointer(docs_[0]->root, "/paths");
  if (paths == nullptr || !paths->is_object()) return std::nullopt;
  for (const auto& path : paths->get_object()) {
    if (!path.value().is_object()) continue;
    for (const auto& op : path.value().get_object()) {
      const json::array* params = nullptr;
      if (op.value().is_object()) params = GetArray(op.value().get_object(), "parameters");
      if (op.value().is_array()) params = &op.value().get_array();
      if (params == nullptr) continue;
      for (const auto& p : *params) {
        if (!p.is_object()) continue;
        if (GetString(p.get_object(), "name") != name) continue;
        if (auto pattern = GetString(p.get_object(), "pattern")) return std::string(*pattern);
      }
    }
  }
  return std::nullopt;
}

}  // namespace hcprp::api
