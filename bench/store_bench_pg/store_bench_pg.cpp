// store_bench_pg: the PostgreSQL engine's operations beside the same SQL statements (pg_sql.h) run
// directly on libpq (prepared, binary parameters, one connection), in one run, alternating rounds
// so that drift hits both sides alike. Both sides use the same server and database, in two schemas
// created by the engine's migrations. Prints ops/s of both and the ratio.
//
//   store_bench_pg [--url postgresql://...] [--seconds-per-round S] [--rounds N] [--only NAME-SUBSTRING]
//
// Without --url it starts a throwaway server (pg_test_server.h: fsync on, 127.0.0.1).
//
// What each side does per operation:
//   point read     store: Read() -> Document with the parsed body.  raw: SELECT, copy body and etag.
//   create         store: Create().  raw: BEGIN; INSERT document; append change; COMMIT.
//   replace+ifm    store: Replace(if_match).  raw: BEGIN; UPDATE .. WHERE etag=$; append change; COMMIT.
//   batch of 5     store: Batch(5 x Create).  raw: BEGIN; 5 x INSERT document; reserve 5 sequence
//                  numbers; 5 x INSERT change; COMMIT.
//   change feed    store: ReadChanges(100) -> parsed Changes.  raw: SELECT 100 changes, copy the columns.
//   (raw+json)     the two reads again, the raw side also parsing the bodies it read.
// The raw side skips what the abstraction adds: JSON serialisation/parsing, etags, index-field
// extraction, validation, the connection pool and error mapping.
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "arm/store_indexes.h"
#include "core/json.h"
#include "store/document_logic.h"
#include "store/postgres/pg_sql.h"
#include "store/postgres/pg_test_server.h"
#include "store/store.h"

namespace {

using namespace hcprp;
using namespace hcprp::store;
using SteadyClock = std::chrono::steady_clock;
namespace sql = hcprp::store::postgres::sql;

constexpr std::string_view kContainer = "resources";
constexpr std::string_view kPk = "0b9f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
constexpr int kReadDocs = 1000;

// The throwaway server, if the benchmark started one: a global so that exit() from Die() stops it too.
std::unique_ptr<hcprp::store::postgres::PgTestServer> g_server;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "store_bench_pg: %s\n", what.c_str());
  std::exit(1);
}

// The store URL that puts the store's tables in `schema`.
std::string SchemaUrl(const std::string& url, const std::string& schema) {
  return std::string(url).append("?schema=").append(schema);
}

template <typename R>
void Check(const R& r, const char* what) {
  if (!r.ok()) Die(std::string(what) + ": " + r.error().ToString());
}

json::value ClusterBody(int i) {
  std::string rid =
      "/subscriptions/" + std::string(kPk) +
      "/resourceGroups/bench-rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/cluster-" +
      std::to_string(i);
  auto v = ParseJson(R"({
    "resourceType": "microsoft.redhatopenshift/hcpopenshiftclusters",
    "properties": {
      "resourceId": ")" +
                     rid + R"(",
      "internalId": "/api/aro_hcp/v1alpha1/clusters/2f4c9a1b7e3d5f6a8b0c",
      "activeOperationId": "6f1e3b2a-9c8d-4e7f-a0b1-c2d3e4f5a6b7",
      "provisioningState": "Succeeded",
      "identity": {"type": "UserAssigned", "userAssignedIdentities": {
        "/subscriptions/x/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp": {}}},
      "systemData": {"createdBy": "user@example.com", "createdByType": "User", "createdAt": "2025-01-01T00:00:00Z",
                     "lastModifiedBy": "user@example.com", "lastModifiedByType": "User",
                     "lastModifiedAt": "2025-01-01T00:00:00Z"},
      "tags": {"env": "bench", "team": "hcp"},
      "resource": {"version": {"id": "4.18.3", "channelGroup": "stable"},
                   "network": {"networkType": "OVNKubernetes", "podCidr": "10.128.0.0/14",
                               "serviceCidr": "172.30.0.0/16", "machineCidr": "10.0.0.0/16", "hostPrefix": 23},
                   "api": {"visibility": "Public"}, "platform": {"managedResourceGroup": "mrg-bench",
                   "subnetId": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s",
                   "outboundType": "LoadBalancer"}},
      "clusterServiceStatus": {"state": "ready", "apiUrl": "https://api.cluster.example.com:443",
                               "consoleUrl": "https://console.cluster.example.com"}
    }})");
  if (!v.ok()) Die("bad body: " + v.error().ToString());
  return std::move(*v);
}

// ------------------------------------------------------------------------------------------------
// The raw side: one libpq connection, the engine's SQL, prepared once, binary parameters.

constexpr Oid kBytea = 17, kInt8 = 20, kInt2 = 21, kBool = 16, kText = 25;

// Parameters of one call: values point at caller-owned bytes or at the numbers stored here.
struct Args {
  std::vector<const char*> v;
  std::vector<int> len, fmt;
  std::vector<Oid> types;
  char nums[32][8] = {};
  int n_nums = 0;
  void Bytes(std::string_view s, Oid t = kBytea) {
    v.push_back(s.data());
    len.push_back(static_cast<int>(s.size()));
    fmt.push_back(1);
    types.push_back(t);
  }
  void Null(Oid t) {
    v.push_back(nullptr);
    len.push_back(0);
    fmt.push_back(1);
    types.push_back(t);
  }
  void Int(int64_t x, Oid t = kInt8) {
    int bytes = t == kInt8 ? 8 : t == kInt2 ? 2 : 1;
    char* b = nums[n_nums++];
    auto u = static_cast<uint64_t>(x);
    for (int i = bytes - 1; i >= 0; --i, u >>= 8) b[i] = static_cast<char>(u & 0xff);
    v.push_back(b);
    len.push_back(bytes);
    fmt.push_back(1);
    types.push_back(t);
  }
};

int64_t GetInt8(const PGresult* r, int row, int col) {
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r, row, col));
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}

class Raw {
 public:
  Raw(const std::string& url, const std::string& schema) {
    std::string options = "-c search_path=" + schema;
    const char* keys[] = {"dbname", "options", nullptr};
    const char* values[] = {url.c_str(), options.c_str(), nullptr};
    c_ = PQconnectdbParams(keys, values, 1);
    if (PQstatus(c_) != CONNECTION_OK) Die(std::string("raw connect: ") + PQerrorMessage(c_));
  }
  ~Raw() { PQfinish(c_); }

  PGresult* Run(const postgres::Statement& st, const Args& a, ExecStatusType want) {
    if (std::find(prepared_.begin(), prepared_.end(), st.name) == prepared_.end()) {
      PGresult* p = PQprepare(c_, st.name, st.sql, static_cast<int>(a.v.size()), a.types.data());
      if (PQresultStatus(p) != PGRES_COMMAND_OK) Die(std::string("raw prepare: ") + PQerrorMessage(c_));
      PQclear(p);
      prepared_.push_back(st.name);
    }
    PGresult* r =
        PQexecPrepared(c_, st.name, static_cast<int>(a.v.size()), a.v.data(), a.len.data(), a.fmt.data(), 1);
    if (PQresultStatus(r) != want) Die(std::string("raw ") + st.name + ": " + PQerrorMessage(c_));
    return r;
  }
  void Command(const postgres::Statement& st, const Args& a) { PQclear(Run(st, a, PGRES_COMMAND_OK)); }

  struct Doc {
    std::string id, body, etag, resource_type, resource_id;
  };
  void BindDoc(Args& a, const Doc& d, int64_t ts) {
    a.Bytes(kContainer);
    a.Bytes(kPk);
    a.Bytes(d.id);
    a.Bytes(d.body);
    a.Bytes(d.etag, kText);
    a.Int(ts);
    a.Null(kInt8);
    a.Null(kInt8);
    a.Bytes(d.resource_type);
    a.Bytes(d.resource_id);
    a.Null(kBytea);
    a.Int(0, kBool);
  }
  void AppendChange(const Doc& d, int16_t kind, int64_t ts) {
    Args a;
    a.Bytes(kContainer);
    a.Int(kind, kInt2);
    a.Bytes(kPk);
    a.Bytes(d.id);
    a.Bytes(d.body);
    a.Bytes(d.etag, kText);
    a.Int(ts);
    a.Null(kInt8);
    Command(sql::kInsertChange, a);
  }
  void Insert(const Doc& d, int64_t ts) {
    Args a;
    BindDoc(a, d, ts);
    PGresult* r = Run(sql::kInsertDoc, a, PGRES_TUPLES_OK);
    if (PQntuples(r) != 1) Die("raw insert conflicted");
    PQclear(r);
  }
  void Create(const Doc& d, int64_t ts) {
    Command(sql::kBegin, Args());
    Insert(d, ts);
    AppendChange(d, sql::kKindCreate, ts);
    Command(sql::kCommit, Args());
  }
  void CreateBatch(const std::vector<Doc>& docs, int64_t ts) {
    Command(sql::kBegin, Args());
    for (const auto& d : docs) Insert(d, ts);
    for (const auto& d : docs) AppendChange(d, sql::kKindCreate, ts);
    Command(sql::kCommit, Args());
  }
  void ReplaceIfMatch(const Doc& d, const std::string& if_match, int64_t ts) {
    Command(sql::kBegin, Args());
    Args a;
    BindDoc(a, d, ts);
    a.Bytes(if_match, kText);
    a.Int(ts);
    PGresult* r = Run(sql::kUpdateDoc, a, PGRES_COMMAND_OK);
    if (std::strcmp(PQcmdTuples(r), "1") != 0) Die("raw replace matched nothing");
    PQclear(r);
    AppendChange(d, sql::kKindReplace, ts);
    Command(sql::kCommit, Args());
  }
  void Read(std::string_view id, int64_t now, std::string& body, std::string& etag) {
    Args a;
    a.Bytes(kContainer);
    a.Bytes(kPk);
    a.Bytes(id);
    a.Int(now);
    PGresult* r = Run(sql::kReadDoc, a, PGRES_TUPLES_OK);
    if (PQntuples(r) != 1) Die("raw read: no row");
    body.assign(PQgetvalue(r, 0, 0), static_cast<size_t>(PQgetlength(r, 0, 0)));
    etag.assign(PQgetvalue(r, 0, 1), static_cast<size_t>(PQgetlength(r, 0, 1)));
    PQclear(r);
  }
  struct ChangeRow {
    int64_t seq, ts;
    std::string pk, id, body, etag;
  };
  size_t ReadChanges(int64_t after, int limit, std::vector<ChangeRow>& out) {
    out.clear();
    Args n;
    n.Bytes(kContainer);
    n.Int(sql::kNumberChunk);
    PQclear(Run(sql::kNumberChanges, n, PGRES_TUPLES_OK));
    Args a;
    a.Bytes(kContainer);
    a.Int(after);
    a.Int(limit);
    PGresult* r = Run(sql::kReadChanges, a, PGRES_TUPLES_OK);
    auto col = [&](int row, int i) {
      return std::string(PQgetvalue(r, row, i), static_cast<size_t>(PQgetlength(r, row, i)));
    };
    for (int i = 0; i < PQntuples(r); ++i) {
      out.push_back({GetInt8(r, i, 0), GetInt8(r, i, 6), col(i, 2), col(i, 3), col(i, 4), col(i, 5)});
    }
    PQclear(r);
    return out.size();
  }

 private:
  PGconn* c_ = nullptr;
  std::vector<const char*> prepared_;
};

// ------------------------------------------------------------------------------------------------

// Runs `op` (which does `ops_per_call` operations) for `budget`; returns operations per second.
double Measure(const std::function<void()>& op, int ops_per_call, std::chrono::duration<double> budget) {
  uint64_t n = 0;
  auto t0 = SteadyClock::now();
  auto end = t0 + std::chrono::duration_cast<SteadyClock::duration>(budget);
  SteadyClock::time_point now;
  do {
    for (int i = 0; i < 8; ++i) op();
    n += 8;
    now = SteadyClock::now();
  } while (now < end);
  return static_cast<double>(n) * ops_per_call / std::chrono::duration<double>(now - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  double seconds = 1.0;
  int rounds = 5;
  std::string url, only;
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--url") {
      o.url = argv[i + 1];
    } else if (a == "--only") {
      o.only = argv[i + 1];
    } else if (a == "--seconds-per-round") {
      o.seconds = std::atof(argv[i + 1]);
    } else if (a == "--rounds") {
      o.rounds = std::max(1, std::atoi(argv[i + 1]));
    } else {
      Die("unknown flag " + a);
    }
  }
  return o;
}

// Fresh schemas, created by the engine's migrations on both sides.
void CreateSchemas(const std::string& url, const Clock& clock, const IndexSpec& indexes,
                   std::initializer_list<std::string> schemas) {
  for (const auto& schema : schemas) {
    PGconn* c = PQconnectdb(url.c_str());
    if (PQstatus(c) != CONNECTION_OK) Die(std::string("connect: ") + PQerrorMessage(c));
    PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + schema + " CASCADE").c_str()));
    PQfinish(c);
    Check(OpenStore(SchemaUrl(url, schema), {.clock = &clock, .indexes = indexes}), "migrate");
  }
}

// What the operations of both sides work on: the store and the raw schema, each holding the documents
// to read (which also fill its change feed) and the one to replace.
struct Fixture {
  Store& store;
  Raw& raw;
  const SystemClock& clock;
  const json::value& body;
  const std::string& body_text;
  const internal::DocumentIndexer& indexer;
  internal::IndexedFields fields;
  std::vector<std::string> read_ids;
  std::string store_etag, raw_etag;
  uint64_t rng = 88172645463325252ull;
  uint64_t seq = 0;
  std::string sink_body, sink_etag;
  std::vector<Raw::ChangeRow> raw_changes;
  json::value sink_json;

  uint64_t Next() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  }
  const std::string& AnyReadId() { return read_ids[Next() % kReadDocs]; }
  std::string FreshId() { return "new-" + std::to_string(++seq); }
  Raw::Doc RawDoc(std::string id) const {
    return Raw::Doc{std::move(id), body_text, internal::NewEtag(), *fields.resource_type,
                    *fields.resource_id};
  }
};

void Seed(Fixture& f) {
  std::vector<WriteOp> setup;
  for (int i = 0; i < kReadDocs + 100; ++i) {  // more changes than the feed benchmark's start positions
    f.read_ids.push_back("read-" + std::to_string(i));
    setup.push_back(WriteOp::Create(f.read_ids.back(), f.body));
  }
  Check(f.store.Batch(kContainer, kPk, std::move(setup)), "setup");
  std::vector<Raw::Doc> docs;
  for (const auto& id : f.read_ids) docs.push_back(f.RawDoc(id));
  f.raw.CreateBatch(docs, f.clock.NowMillis());
  auto target = f.store.Create(kContainer, kPk, "replace-target", f.body);
  Check(target, "create replace target");
  f.store_etag = target->etag;
  Raw::Doc raw_target = f.RawDoc("replace-target");
  f.raw.Create(raw_target, f.clock.NowMillis());
  f.raw_etag = raw_target.etag;
}

struct Bench {
  std::string name;
  int ops_per_call;
  std::function<void()> store_op, raw_op;
};

std::vector<Bench> MakeBenches(Fixture& f) {
  auto store_read = [&f] { Check(f.store.Read(kContainer, kPk, f.AnyReadId()), "read"); };
  auto store_feed = [&f] {
    auto p = f.store.ReadChanges(kContainer, std::to_string(f.Next() % kReadDocs), 100);
    Check(p, "read changes");
    if (p->changes.size() != 100) Die("short change page");
  };
  return {
      {"point read", 1, store_read,
       [&f] { f.raw.Read(f.AnyReadId(), f.clock.NowMillis(), f.sink_body, f.sink_etag); }},
      {"create", 1, [&f] { Check(f.store.Create(kContainer, kPk, f.FreshId(), f.body), "create"); },
       [&f] { f.raw.Create(f.RawDoc(f.FreshId()), f.clock.NowMillis()); }},
      {"replace with If-Match", 1,
       [&f] {
         auto r = f.store.Replace(kContainer, kPk, "replace-target", f.body, f.store_etag);
         Check(r, "replace");
         f.store_etag = std::move(r->etag);
       },
       [&f] {
         Raw::Doc d = f.RawDoc("replace-target");
         f.raw.ReplaceIfMatch(d, f.raw_etag, f.clock.NowMillis());
         f.raw_etag = std::move(d.etag);
       }},
      {"batch of 5 creates", 5,
       [&f] {
         std::vector<WriteOp> ops;
         for (int i = 0; i < 5; ++i) ops.push_back(WriteOp::Create(f.FreshId(), f.body));
         Check(f.store.Batch(kContainer, kPk, std::move(ops)), "batch");
       },
       [&f] {
         std::vector<Raw::Doc> docs;
         for (int i = 0; i < 5; ++i) docs.push_back(f.RawDoc(f.FreshId()));
         f.raw.CreateBatch(docs, f.clock.NowMillis());
       }},
      {"change feed, 100/page", 100, store_feed,
       [&f] {
         if (f.raw.ReadChanges(static_cast<int64_t>(f.Next() % kReadDocs), 100, f.raw_changes) != 100)
           Die("short raw page");
       }},
      // The same reads against a raw caller that also parses what it read (as any user of a body must):
      // the store's own cost beyond the JSON parse both sides pay.
      {"point read (raw+json)", 1, store_read,
       [&f] {
         f.raw.Read(f.AnyReadId(), f.clock.NowMillis(), f.sink_body, f.sink_etag);
         f.sink_json = json::parse(f.sink_body);
       }},
      {"change feed (raw+json)", 100, store_feed,
       [&f] {
         if (f.raw.ReadChanges(static_cast<int64_t>(f.Next() % kReadDocs), 100, f.raw_changes) != 100)
           Die("short raw page");
         for (const Raw::ChangeRow& c : f.raw_changes) f.sink_json = json::parse(c.body);
       }},
  };
}

struct Row {
  std::string name;
  double store, raw;
};

// Each benchmark --only selects: a warm-up, then rounds that alternate which side goes first.
std::vector<Row> RunBenches(const std::vector<Bench>& benches, const Options& o) {
  std::vector<Row> rows;
  auto budget = std::chrono::duration<double>(o.seconds);
  for (const auto& b : benches) {
    if (!o.only.empty() && b.name.find(o.only) == std::string::npos) continue;
    Measure(b.store_op, b.ops_per_call, budget / 10);  // warm-up: caches, statement preparation
    Measure(b.raw_op, b.ops_per_call, budget / 10);
    std::vector<double> s, r;
    for (int round = 0; round < o.rounds; ++round) {
      bool store_first = round % 2 == 0;
      double a = Measure(store_first ? b.store_op : b.raw_op, b.ops_per_call, budget);
      double c = Measure(store_first ? b.raw_op : b.store_op, b.ops_per_call, budget);
      s.push_back(store_first ? a : c);
      r.push_back(store_first ? c : a);
    }
    rows.push_back({b.name, Median(s), Median(r)});
    std::fprintf(stderr, "  %s done\n", b.name.c_str());
  }
  return rows;
}

void PrintRows(const std::vector<Row>& rows) {
  std::printf("\n%-24s %14s %14s %10s\n", "operation", "store ops/s", "raw ops/s", "store/raw");
  for (const auto& row : rows) {
    std::printf("%-24s %14.0f %14.0f %9.1f%%\n", row.name.c_str(), row.store, row.raw,
                100.0 * row.store / row.raw);
  }
  std::printf("\nops/s count documents (a batch call is 5 operations, a change page 100).\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseOptions(argc, argv);
  if (o.url.empty()) {
    auto s = postgres::PgTestServer::Start("bench");
    Check(s, "start a PostgreSQL server");
    g_server = std::move(*s);
    o.url = g_server->Url();
  }

  SystemClock clock;
  const std::string store_schema = "bench_store", raw_schema = "bench_raw";
  const IndexSpec indexes = arm::StoreIndexes();
  CreateSchemas(o.url, clock, indexes, {store_schema, raw_schema});
  auto opened = OpenStore(SchemaUrl(o.url, store_schema), {.clock = &clock, .indexes = indexes});
  Check(opened, "open store");
  Raw raw(o.url, raw_schema);

  const json::value body = ClusterBody(0);
  const std::string body_text = json::serialize(body);
  std::printf("store_bench_pg: %s, document body %zu bytes, %d rounds x %.1f s per side\n",
              g_server ? "throwaway server (fsync on)" : o.url.c_str(), body_text.size(), o.rounds,
              o.seconds);

  auto indexer = internal::DocumentIndexer::Make(indexes);
  Check(indexer, "index spec");
  Fixture f{**opened, raw, clock, body, body_text, *indexer, indexer->Extract(body)};
  Seed(f);
  PrintRows(RunBenches(MakeBenches(f), o));
  opened->reset();
  return 0;
}
