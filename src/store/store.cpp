#include "store/store.h"

#include <charconv>

#include "store/document_logic.h"
#include "store/postgres/pg_store.h"
#include "store/sqlite/sqlite_store.h"

namespace hcprp::store {

WriteOp WriteOp::Create(std::string id, json::value body, std::optional<int64_t> ttl) {
  WriteOp op{.kind = Kind::kCreate, .id = std::move(id), .body = std::move(body)};
  op.ttl_seconds = ttl;
  return op;
}

WriteOp WriteOp::Replace(std::string id, json::value body, std::optional<std::string> if_match) {
  WriteOp op{.kind = Kind::kReplace, .id = std::move(id), .body = std::move(body)};
  op.if_match = std::move(if_match);
  return op;
}

WriteOp WriteOp::Upsert(std::string id, json::value body, std::optional<std::string> if_match) {
  WriteOp op{.kind = Kind::kUpsert, .id = std::move(id), .body = std::move(body)};
  op.if_match = std::move(if_match);
  return op;
}

WriteOp WriteOp::Delete(std::string id, std::optional<std::string> if_match) {
  WriteOp op{.kind = Kind::kDelete, .id = std::move(id)};
  op.if_match = std::move(if_match);
  return op;
}

WriteOp WriteOp::Patch(std::string id, std::vector<PatchOp> ops, std::vector<Condition> conditions,
                       std::optional<std::string> if_match) {
  WriteOp op{.kind = Kind::kPatch, .id = std::move(id)};
  op.patch = std::move(ops);
  op.conditions = std::move(conditions);
  op.if_match = std::move(if_match);
  return op;
}

WriteOp WriteOp::Read(std::string id, std::optional<std::string> if_match) {
  WriteOp op{.kind = Kind::kRead, .id = std::move(id)};
  op.if_match = std::move(if_match);
  return op;
}

namespace {
constexpr std::string_view kBatchPrefix = "operation ";
}  // namespace

Result<json::value> ParseBodyText(std::string_view text) { return internal::ParseStoredBody(text); }

Status ApplyPatchOps(json::value& body, const std::vector<PatchOp>& ops) {
  return internal::ApplyPatch(body, ops);
}

Status ForEachDocument(Store& store, QueryOptions options, const std::function<void(const Document&)>& fn) {
  while (true) {
    HCPRP_ASSIGN_OR_RETURN(auto page, store.Query(options));
    for (const Document& d : page.documents) fn(d);
    if (page.continuation.empty()) return Status::Ok();
    options.continuation = std::move(page.continuation);
  }
}

Error BatchOperationError(size_t index, const Error& cause) {
  return Error(cause.code(), std::string(kBatchPrefix) + std::to_string(index) + ": " + cause.message());
}

std::optional<size_t> FailedBatchIndex(const Error& e) {
  std::string_view m = e.message();
  if (m.substr(0, kBatchPrefix.size()) != kBatchPrefix) return std::nullopt;
  m.remove_prefix(kBatchPrefix.size());
  size_t index = 0;
  auto [p, ec] = std::from_chars(m.data(), m.data() + m.size(), index);
  if (ec != std::errc() || p == m.data() ||
      std::string_view(p, m.data() + m.size() - p).substr(0, 1) != ":") {
    return std::nullopt;
  }
  return index;
}

Result<Document> Store::ReadText(std::string_view container, std::string_view pk, std::string_view id) {
  HCPRP_ASSIGN_OR_RETURN(auto d, Read(container, pk, id));
  d.body_text = json::serialize(d.body);
  d.body = nullptr;
  return d;
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options) {
  if (options.clock == nullptr) return Error::InvalidArgument("OpenOptions::clock is required");
  if (url.substr(0, 7) == "sqlite:") return sqlite::OpenSqliteStore(url, options);
  if (url.substr(0, 13) == "postgresql://" || url.substr(0, 11) == "postgres://") {
    return postgres::OpenPostgresStore(url, options);
  }
  return Error::InvalidArgument("unsupported store URL \"" + std::string(url) +
                                "\" (expected sqlite:///path, sqlite::memory: or postgresql://...)");
}

}  // namespace hcprp::store
