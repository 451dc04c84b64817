#include "store/document_logic.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <thread>

namespace hcprp::store::internal {

Result<std::vector<std::string>> ParseJsonPointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return Error::InvalidArgument("JSON pointer \"" + std::string(pointer) + "\" does not start with '/'");
  }
  std::string cur;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    char c = pointer[i];
    if (c == '~') {
      if (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')) {
        return Error::InvalidArgument("JSON pointer \"" + std::string(pointer) + "\" has a bad '~' escape");
      }
      cur += pointer[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      cur += c;
    }
  }
  return tokens;
}

namespace {

// An array index token: digits without a leading zero. nullopt otherwise.
std::optional<size_t> ParseIndex(std::string_view tok) {
  if (tok.empty() || (tok.size() > 1 && tok[0] == '0')) return std::nullopt;
  size_t idx = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), idx);
  if (ec != std::errc() || p != tok.data() + tok.size()) return std::nullopt;
  return idx;
}

// Follows `tokens[0, n)` from `root` without creating anything; nullptr when absent.
const json::value* Navigate(const json::value& root, const std::vector<std::string>& tokens, size_t n) {
  const json::value* cur = &root;
  for (size_t i = 0; i < n; ++i) {
    if (const auto* o = cur->if_object()) {
      auto it = o->find(tokens[i]);
      if (it == o->end()) return nullptr;
      cur = &it->value();
    } else if (const auto* a = cur->if_array()) {
      auto idx = ParseIndex(tokens[i]);
      if (!idx || *idx >= a->size()) return nullptr;
      cur = &(*a)[*idx];
    } else {
      return nullptr;
    }
  }
  return cur;
}

const char* KindName(PatchOp::Kind k) {
  switch (k) {
    case PatchOp::Kind::kSet:
      return "set";
    case PatchOp::Kind::kAdd:
      return "add";
    case PatchOp::Kind::kRemove:
      return "remove";
    case PatchOp::Kind::kReplace:
      return "replace";
    case PatchOp::Kind::kIncrement:
      return "increment";
  }
  return "?";
}

std::optional<int64_t> AsInt64(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(v.get_uint64());
  }
  return std::nullopt;
}

double AsDouble(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

Status Increment(json::value& target, const json::value& delta, const std::string& where) {
  if (!target.is_number())
    return Error::InvalidArgument(where + ": increment of a value that is not a number");
  if (!delta.is_number())
    return Error::InvalidArgument(where + ": increment by a value that is not a number");
  auto a = AsInt64(target), b = AsInt64(delta);
  if (a && b && !target.is_double() && !delta.is_double()) {
    int64_t sum = 0;
    if (__builtin_add_overflow(*a, *b, &sum)) return Error::InvalidArgument(where + ": increment overflows");
    target = sum;
    return Status::Ok();
  }
  target = AsDouble(target) + AsDouble(delta);
  return Status::Ok();
}

Status ApplyOne(json::value& body, const PatchOp& op) {
  std::string where = std::string("patch ") + KindName(op.kind) + " " + op.path;
  auto tokens = ParseJsonPointer(op.path);
  if (!tokens.ok()) return Error::InvalidArgument(where + ": " + tokens.error().message());
  if (tokens->empty()) return Error::InvalidArgument(where + ": the document root cannot be patched");
  // const_cast: Navigate is read-only; we own `body` and modify through the result.
  auto* parent = const_cast<json::value*>(Navigate(body, *tokens, tokens->size() - 1));  // NOLINT
  if (parent == nullptr) return Error::InvalidArgument(where + ": the parent does not exist");
  const std::string& last = tokens->back();
  if (auto* o = parent->if_object()) {
    auto it = o->find(last);
    switch (op.kind) {
      case PatchOp::Kind::kSet:
      case PatchOp::Kind::kAdd:
        (*o)[last] = op.value;
        return Status::Ok();
      case PatchOp::Kind::kRemove:
        if (it == o->end()) return Error::InvalidArgument(where + ": the member does not exist");
        o->erase(it);
        return Status::Ok();
      case PatchOp::Kind::kReplace:
        if (it == o->end()) return Error::InvalidArgument(where + ": the member does not exist");
        it->value() = op.value;
        return Status::Ok();
      case PatchOp::Kind::kIncrement:
        if (it == o->end()) return Error::InvalidArgument(where + ": the member does not exist");
        return Increment(it->value(), op.value, where);
    }
  } else if (auto* a = parent->if_array()) {
    std::optional<size_t> idx = last == "-" ? std::optional<size_t>(a->size()) : ParseIndex(last);
    if (!idx) return Error::InvalidArgument(where + ": \"" + last + "\" is not an array index");
    bool inside = *idx < a->size();
    switch (op.kind) {
      case PatchOp::Kind::kSet:
        if (inside) {
          (*a)[*idx] = op.value;
        } else if (*idx == a->size()) {
          a->push_back(op.value);
        } else {
          return Error::InvalidArgument(where + ": index out of range");
        }
        return Status::Ok();
      case PatchOp::Kind::kAdd:
        if (*idx > a->size()) return Error::InvalidArgument(where + ": index out of range");
        a->insert(a->begin() + static_cast<std::ptrdiff_t>(*idx), op.value);
        return Status::Ok();
      case PatchOp::Kind::kRemove:
        if (!inside) return Error::InvalidArgument(where + ": index out of range");
        a->erase(a->begin() + static_cast<std::ptrdiff_t>(*idx));
        return Status::Ok();
      case PatchOp::Kind::kReplace:
        if (!inside) return Error::InvalidArgument(where + ": index out of range");
        (*a)[*idx] = op.value;
        return Status::Ok();
      case PatchOp::Kind::kIncrement:
        if (!inside) return Error::InvalidArgument(where + ": index out of range");
        return Increment((*a)[*idx], op.value, where);
    }
  }
  return Error::InvalidArgument(where + ": the parent is neither an object nor an array");
}

}  // namespace

Status ApplyPatch(json::value& body, const std::vector<PatchOp>& ops) {
  if (!body.is_object()) return Error::InvalidArgument("a document body must be a JSON object");
  for (const auto& op : ops) HCPRP_RETURN_IF_ERROR(ApplyOne(body, op));
  return ValidateBody(body);
}

Status CheckConditions(const json::value* body, const std::vector<Condition>& conditions) {
  for (const auto& c : conditions) {
    auto tokens = ParseJsonPointer(c.path);
    if (!tokens.ok())
      return Error::InvalidArgument("condition on " + c.path + ": " + tokens.error().message());
    const json::value* v = body == nullptr ? nullptr : Navigate(*body, *tokens, tokens->size());
    if (!c.equals) {
      if (v != nullptr) return Error::PreconditionFailed("condition failed: " + c.path + " is present");
    } else if (v == nullptr) {
      return Error::PreconditionFailed("condition failed: " + c.path + " is absent");
    } else if (*v != *c.equals) {
      return Error::PreconditionFailed("condition failed: " + c.path + " is " + json::serialize(*v) +
                                       ", expected " + json::serialize(*c.equals));
    }
  }
  return Status::Ok();
}

Status CheckIfMatch(const std::optional<std::string>& if_match, const std::string* etag) {
  if (!if_match) return Status::Ok();
  if (etag == nullptr)
    return Error::PreconditionFailed("if-match " + *if_match + ": the document does not exist");
  if (*if_match == "*" || *if_match == *etag) return Status::Ok();
  return Error::PreconditionFailed("if-match " + *if_match + " does not match the current etag");
}

Status ValidateBody(const json::value& body) {
  if (!body.is_object()) return Error::InvalidArgument("a document body must be a JSON object");
  std::vector<std::pair<const json::value*, size_t>> stack = {{&body, 1}};
  while (!stack.empty()) {
    auto [v, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxBodyDepth) {
      return Error::InvalidArgument("a document body is nested deeper than " + std::to_string(kMaxBodyDepth));
    }
    if (const auto* o = v->if_object()) {
      for (const auto& kv : *o) stack.emplace_back(&kv.value(), depth + 1);
    } else if (const auto* a = v->if_array()) {
      for (const auto& e : *a) stack.emplace_back(&e, depth + 1);
    } else if (v->is_double() && !std::isfinite(v->get_double())) {
      return Error::InvalidArgument("a document body holds a number that is not finite (NaN or infinity)");
    }
  }
  return Status::Ok();
}

Status ValidateTtl(const std::optional<int64_t>& ttl_seconds) {
  if (ttl_seconds && (*ttl_seconds <= 0 || *ttl_seconds > kMaxTtlSeconds)) {
    return Error::InvalidArgument("ttl_seconds must be in (0, " + std::to_string(kMaxTtlSeconds) + "], got " +
                                  std::to_string(*ttl_seconds));
  }
  return Status::Ok();
}

Result<DocumentIndexer> DocumentIndexer::Make(const IndexSpec& spec) {
  DocumentIndexer ix;
  auto parse = [](std::string_view member, const std::string& pointer,
                  std::optional<std::vector<std::string>>& tokens) -> Status {
    if (pointer.empty()) return Status::Ok();
    auto parsed = ParseJsonPointer(pointer);
    if (!parsed.ok())
      return Error::InvalidArgument("IndexSpec::" + std::string(member) + ": " + parsed.error().message());
    tokens = std::move(*parsed);
    return Status::Ok();
  };
  HCPRP_RETURN_IF_ERROR(parse("resource_type", spec.resource_type, ix.resource_type_));
  HCPRP_RETURN_IF_ERROR(parse("resource_id", spec.resource_id, ix.resource_id_));
  HCPRP_RETURN_IF_ERROR(parse("status", spec.status, ix.status_));
  ix.terminal_statuses_ = spec.terminal_statuses;
  return ix;
}

namespace {

// The string at `tokens` in `body`; nullopt when absent or not a string.
std::optional<std::string_view> IndexedString(const json::value& body,
                                              const std::optional<std::vector<std::string>>& tokens) {
  if (!tokens) return std::nullopt;
  const json::value* v = Navigate(body, *tokens, tokens->size());
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string_view(v->get_string());
}

}  // namespace

IndexedFields DocumentIndexer::Extract(const json::value& body) const {
  IndexedFields f;
  if (auto t = IndexedString(body, resource_type_)) f.resource_type = ToLower(*t);
  if (auto rid = IndexedString(body, resource_id_)) f.resource_id = ToLower(*rid);
  if (auto st = IndexedString(body, status_)) {
    f.status = std::string(*st);
    f.non_terminal = std::none_of(terminal_statuses_.begin(), terminal_statuses_.end(),
                                  [&](const std::string& t) { return EqualsIgnoreCase(*st, t); });
  }
  return f;
}

Status DocumentIndexer::CheckQuery(const QueryOptions& o) const {
  if (o.resource_type && !resource_type_) return Error::InvalidArgument("the store indexes no resource type");
  if ((o.resource_id || o.resource_id_prefix) && !resource_id_) {
    return Error::InvalidArgument("the store indexes no resource id");
  }
  if (o.non_terminal_only && !status_) return Error::InvalidArgument("the store indexes no status");
  return Status::Ok();
}

Status CheckContainer(std::string_view container) {
  if (container.empty()) return Error::InvalidArgument("the container name is empty");
  return Status::Ok();
}

Status ValidateOp(const WriteOp& op) {
  switch (op.kind) {
    case WriteOp::Kind::kCreate:
      if (!op.conditions.empty()) return Error::InvalidArgument("a create cannot have conditions");
      if (op.if_match) return Error::InvalidArgument("a create cannot have if-match");
      [[fallthrough]];
    case WriteOp::Kind::kReplace:
    case WriteOp::Kind::kUpsert:
      HCPRP_RETURN_IF_ERROR(ValidateBody(op.body));
      return ValidateTtl(op.ttl_seconds);
    case WriteOp::Kind::kDelete:
    case WriteOp::Kind::kPatch:
    case WriteOp::Kind::kRead:
      return Status::Ok();
  }
  return Error::InvalidArgument("unknown write operation kind");
}

Status ValidateBatch(std::string_view container, const std::vector<WriteOp>& ops) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  for (size_t i = 0; i < ops.size(); ++i) {
    Status st = ValidateOp(ops[i]);
    if (!st.ok()) return BatchOperationError(i, st.error());
  }
  return Status::Ok();
}

Status ValidateQuery(const QueryOptions& o) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(o.container));
  if (!o.partition_key && !o.resource_type) {
    return Error::InvalidArgument("a query across partitions needs a resource type");
  }
  if (o.max_items == 0) return Error::InvalidArgument("max_items must be > 0");
  return Status::Ok();
}

Version MakeVersion(const json::value& body, std::optional<int64_t> ttl, int64_t now,
                    const DocumentIndexer& indexer) {
  Version v;
  v.body = json::serialize(body);
  v.etag = NewEtag();
  v.ts = now;
  v.ttl = ttl;
  v.fields = indexer.Extract(body);
  return v;
}

Document MakeDocument(std::string_view pk, std::string_view id, json::value body, const Version& v) {
  Document d;
  d.id = std::string(id);
  d.partition_key = std::string(pk);
  d.body = std::move(body);
  d.etag = v.etag;
  d.timestamp_ms = v.ts;
  d.ttl_seconds = v.ttl;
  return d;
}

std::optional<std::string> PrefixUpperBound(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    auto c = static_cast<unsigned char>(s.back());
    if (c != 0xFF) {
      s.back() = static_cast<char>(c + 1);
      return s;
    }
    s.pop_back();
  }
  return std::nullopt;
}

namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendHex(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
}

std::optional<std::string> FromHex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nib(hex[i]), lo = nib(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

}  // namespace

std::string EncodeQueryContinuation(std::string_view pk, std::string_view id) {
  std::string s = "q1.";
  AppendHex(s, pk);
  s += '.';
  AppendHex(s, id);
  return s;
}

Result<std::pair<std::string, std::string>> DecodeQueryContinuation(std::string_view token) {
  auto bad = [&] { return Error::InvalidArgument("invalid query continuation token"); };
  if (token.substr(0, 3) != "q1.") return bad();
  token.remove_prefix(3);
  size_t dot = token.find('.');
  if (dot == std::string_view::npos) return bad();
  auto pk = FromHex(token.substr(0, dot));
  auto id = FromHex(token.substr(dot + 1));
  if (!pk || !id) return bad();
  return std::make_pair(std::move(*pk), std::move(*id));
}

std::string EncodePartitionContinuation(std::string_view pk) {
  std::string s = "p1.";
  AppendHex(s, pk);
  return s;
}

Result<std::string> DecodePartitionContinuation(std::string_view token) {
  if (token.substr(0, 3) != "p1.") return Error::InvalidArgument("invalid partition continuation token");
  auto pk = FromHex(token.substr(3));
  if (!pk) return Error::InvalidArgument("invalid partition continuation token");
  return std::move(*pk);
}

Result<std::optional<uint64_t>> DecodeChangeContinuation(std::string_view token) {
  if (token.empty()) return std::optional<uint64_t>(0);
  if (token == kChangeFeedNow) return std::optional<uint64_t>();
  uint64_t seq = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), seq);
  if (ec != std::errc() || p != token.data() + token.size() || seq > static_cast<uint64_t>(INT64_MAX)) {
    return Error::InvalidArgument("invalid change feed continuation \"" + std::string(token) + "\"");
  }
  return std::optional<uint64_t>(seq);
}

std::string EncodeChangeContinuation(uint64_t sequence) { return std::to_string(sequence); }

Error FeedPositionExpired(std::string_view container) {
  return Error::OutOfRange("the change feed of " + std::string(container) +
                           " no longer holds the changes after this position (removed by retention); "
                           "start again from \"now\" after a full resynchronisation");
}

std::string NewEtag() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    uint64_t seed = (uint64_t{rd()} << 32) ^ rd();
    seed ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    seed ^= std::hash<std::thread::id>()(std::this_thread::get_id());
    return seed;
  }());
  uint64_t a = rng(), b = rng();
  char out[36];
  int pos = 0;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) out[pos++] = '-';
    uint64_t word = i < 16 ? a : b;
    out[pos++] = kHex[(word >> (4 * (15 - (i % 16)))) & 15];
  }
  return std::string(out, 36);
}

std::string Printable(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

std::string DocName(std::string_view container, std::string_view pk, std::string_view id) {
  return "document \"" + Printable(id) + "\" in " + Printable(container) + "/\"" + Printable(pk) + "\"";
}

std::string LeaseName(std::string_view container, std::string_view pk, std::string_view name) {
  return "lease \"" + Printable(name) + "\" in " + Printable(container) + "/\"" + Printable(pk) + "\"";
}

Result<json::value> ParseStoredBody(std::string_view text) {
  thread_local json::parser parser(json::storage_ptr(), [] {
    json::parse_options o;
    // Boost counts nested objects and arrays; ValidateBody counts every value, so a body it accepts
    // has at most kMaxBodyDepth of them.
    o.max_depth = kMaxBodyDepth;
    o.allow_invalid_utf8 = true;
    return o;
  }());
  parser.reset();
  boost::system::error_code ec;
  parser.write(text.data(), text.size(), ec);
  if (ec) return Error::Corruption("stored document body is not JSON: " + ec.message());
  return parser.release();
}

Change::Kind ChangeKindFromInt(int64_t k) {
  switch (k) {
    case kKindCreate:
      return Change::Kind::kCreate;
    case kKindReplace:
      return Change::Kind::kReplace;
    case kKindDelete:
      return Change::Kind::kDelete;
    default:
      return Change::Kind::kExpire;
  }
}

}  // namespace hcprp::store::internal
