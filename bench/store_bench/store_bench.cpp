// store_bench: the SQLite engine's operations beside the same SQL statements run directly on sqlite3
// (same schema from store/sqlite/sql.h, same settings: WAL, synchronous=FULL, a file on disk), in one
// run, alternating rounds so that disk and CPU drift hit both sides alike. Prints ops/s of both, the
// ratio, and fsyncs per operation (counted by a pass-through VFS used by both sides).
//
//   store_bench [--seconds-per-round S] [--rounds N] [--dir DIR] [--only NAME-PREFIX]
//               [--side store|raw|raw+json [--iterations N]]
// --side runs one side only; with --iterations it runs exactly N calls of it and prints nothing, for
// instruction counting: valgrind --tool=callgrind store_bench --only read --side store --iterations N.
//
// What each side does per operation:
//   point read     store: Read() -> Document with the parsed body.  raw: SELECT, copy body and etag.
//   create         store: Create().  raw: BEGIN IMMEDIATE; INSERT document; INSERT change; COMMIT.
//   replace+ifm    store: Replace(if_match).  raw: BEGIN; UPDATE .. WHERE etag=?; INSERT change; COMMIT.
//   batch of 5     store: Batch(5 x Create).  raw: BEGIN; 5 x (INSERT document; INSERT change); COMMIT.
//   change feed    store: ReadChanges(100) -> parsed Changes.  raw: SELECT 100 changes, copy the columns.
// The raw side skips what the abstraction adds: JSON serialisation/parsing, index-field extraction,
// validation, connection pooling and error mapping. A third side, "raw+json", runs the raw SQL plus
// the JSON work any caller of the raw SQL needs to use a document (parse bodies read, serialise and
// extract the indexed fields of bodies written), to separate the cost of JSON from the cost of the
// store's own layers.
#include <sqlite3.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "arm/store_indexes.h"
#include "core/json.h"
#include "store/document_logic.h"
#include "store/sqlite/sql.h"
#include "store/sqlite/test_vfs.h"
#include "store/store.h"

namespace {

using namespace hcprp;
using namespace hcprp::store;
using Clock = std::chrono::steady_clock;
namespace sql = hcprp::store::sqlite::sql;

// Parses like the store does (a reused parser, the default allocator).
json::value Parse(std::string_view text) {
  thread_local json::parser parser;
  parser.reset();
  boost::system::error_code ec;
  parser.write(text.data(), text.size(), ec);
  if (ec) std::abort();
  return parser.release();
}

void ParseAndDrop(std::string_view text) {
  json::value v = Parse(text);
  if (!v.is_object()) std::abort();
}

constexpr std::string_view kContainer = "resources";
constexpr std::string_view kPk = "0b9f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
constexpr int kReadDocs = 1000;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "store_bench: %s\n", what.c_str());
  std::exit(1);
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
// The raw side: one connection, the engine's SQL, prepared once.

class Raw {
 public:
  explicit Raw(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        sqlite::TestVfs::Get().name()) != SQLITE_OK) {
      Die("raw open");
    }
    Exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA temp_store=MEMORY; PRAGMA "
        "cache_size=-16384");
    Exec(sql::kSchema);
    begin_ = Prepare(sql::kBegin);
    commit_ = Prepare(sql::kCommit);
    read_ = Prepare(sql::kReadDoc);
    insert_ = Prepare(sql::kInsertDoc);
    update_ = Prepare(sql::kUpdateDoc);
    change_ = Prepare(sql::kInsertChange);
    changes_ = Prepare(sql::kReadChanges);
  }
  ~Raw() {
    for (auto* s : {begin_, commit_, read_, insert_, update_, change_, changes_}) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }

  void Exec(const char* q) {
    if (sqlite3_exec(db_, q, nullptr, nullptr, nullptr) != SQLITE_OK)
      Die(std::string("raw exec: ") + sqlite3_errmsg(db_));
  }
  sqlite3_stmt* Prepare(const char* q) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, q, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
      Die("raw prepare");
    return s;
  }
  void Step(sqlite3_stmt* s, int want) {
    if (sqlite3_step(s) != want) Die(std::string("raw step: ") + sqlite3_errmsg(db_));
    sqlite3_reset(s);
  }
  static void Text(sqlite3_stmt* s, int i, std::string_view v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  static void Blob(sqlite3_stmt* s, int i, std::string_view v) {
    sqlite3_bind_blob(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }

  // The document columns the store writes for one version (precomputed: the raw side does no JSON).
  struct Doc {
    std::string id, body, etag, resource_type, resource_id;
  };
  void BindDoc(sqlite3_stmt* s, const Doc& d, int64_t ts) {
    Text(s, 1, kContainer);
    Blob(s, 2, kPk);
    Blob(s, 3, d.id);
    Text(s, 4, d.body);
    Text(s, 5, d.etag);
    sqlite3_bind_int64(s, 6, ts);
    sqlite3_bind_null(s, 7);
    sqlite3_bind_null(s, 8);
    Text(s, 9, d.resource_type);
    Text(s, 10, d.resource_id);
    sqlite3_bind_null(s, 11);
    sqlite3_bind_int64(s, 12, 0);
  }
  void InsertChange(const Doc& d, int kind, int64_t ts) {
    Text(change_, 1, kContainer);
    sqlite3_bind_int64(change_, 2, kind);
    Blob(change_, 3, kPk);
    Blob(change_, 4, d.id);
    Text(change_, 5, d.body);
    Text(change_, 6, d.etag);
    sqlite3_bind_int64(change_, 7, ts);
    sqlite3_bind_null(change_, 8);
    Step(change_, SQLITE_DONE);
  }
  void Create(const Doc& d, int64_t ts) {
    Step(begin_, SQLITE_DONE);
    BindDoc(insert_, d, ts);
    Step(insert_, SQLITE_DONE);
    InsertChange(d, sql::kKindCreate, ts);
    Step(commit_, SQLITE_DONE);
  }
  void CreateBatch(const std::vector<Doc>& docs, int64_t ts) {
    Step(begin_, SQLITE_DONE);
    for (const auto& d : docs) {
      BindDoc(insert_, d, ts);
      Step(insert_, SQLITE_DONE);
      InsertChange(d, sql::kKindCreate, ts);
    }
    Step(commit_, SQLITE_DONE);
  }
  void ReplaceIfMatch(const Doc& d, const std::string& if_match, int64_t ts) {
    Step(begin_, SQLITE_DONE);
    BindDoc(update_, d, ts);
    Text(update_, 13, if_match);
    sqlite3_bind_int64(update_, 14, ts);
    Step(update_, SQLITE_DONE);
    if (sqlite3_changes(db_) != 1) Die("raw replace matched nothing");
    InsertChange(d, sql::kKindReplace, ts);
    Step(commit_, SQLITE_DONE);
  }
  // Copies what a caller needs out of the row, as the store does (without parsing).
  void Read(std::string_view id, int64_t now, std::string& body, std::string& etag) {
    Text(read_, 1, kContainer);
    Blob(read_, 2, kPk);
    Blob(read_, 3, id);
    sqlite3_bind_int64(read_, 4, now);
    if (sqlite3_step(read_) != SQLITE_ROW) Die("raw read: no row");
    body.assign(reinterpret_cast<const char*>(sqlite3_column_text(read_, 0)),
                static_cast<size_t>(sqlite3_column_bytes(read_, 0)));
    etag.assign(reinterpret_cast<const char*>(sqlite3_column_text(read_, 1)),
                static_cast<size_t>(sqlite3_column_bytes(read_, 1)));
    sqlite3_reset(read_);
  }
  struct ChangeRow {
    int64_t seq, kind, ts;
    std::string pk, id, body, etag;
  };
  size_t ReadChanges(int64_t after, int limit, std::vector<ChangeRow>& out) {
    out.clear();
    Text(changes_, 1, kContainer);
    sqlite3_bind_int64(changes_, 2, after);
    auto col = [&](int i) {
      return std::string(static_cast<const char*>(sqlite3_column_blob(changes_, i)),
                         static_cast<size_t>(sqlite3_column_bytes(changes_, i)));
    };
    // The statement has no LIMIT (the engine stops stepping when its page is full): the same here.
    while (out.size() < static_cast<size_t>(limit) && sqlite3_step(changes_) == SQLITE_ROW) {
      ChangeRow r;
      r.seq = sqlite3_column_int64(changes_, 0);
      r.kind = sqlite3_column_int64(changes_, 1);
      r.pk = col(2);
      r.id = col(3);
      r.body = col(4);
      r.etag = col(5);
      r.ts = sqlite3_column_int64(changes_, 6);
      out.push_back(std::move(r));
    }
    sqlite3_reset(changes_);
    return out.size();
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt *begin_, *commit_, *read_, *insert_, *update_, *change_, *changes_;
};

// ------------------------------------------------------------------------------------------------

struct Sample {
  double ops_per_sec = 0;
  double syncs_per_op = 0;
  double cpu_us_per_call = 0;  // this thread's CPU time (user + system), insensitive to disk latency
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `op` (which does `ops_per_call` operations) for `budget`.
Sample Measure(const std::function<void()>& op, int ops_per_call, std::chrono::duration<double> budget) {
  auto& vfs = sqlite::TestVfs::Get();
  uint64_t syncs0 = vfs.syncs();
  uint64_t n = 0;
  double cpu0 = ThreadCpuSeconds();
  auto t0 = Clock::now();
  auto end = t0 + std::chrono::duration_cast<Clock::duration>(budget);
  Clock::time_point now;
  do {
    for (int i = 0; i < 16; ++i) op();
    n += 16;
    now = Clock::now();
  } while (now < end);
  double secs = std::chrono::duration<double>(now - t0).count();
  double cpu = ThreadCpuSeconds() - cpu0;
  double ops = static_cast<double>(n) * ops_per_call;
  return {ops / secs, static_cast<double>(vfs.syncs() - syncs0) / ops, cpu * 1e6 / static_cast<double>(n)};
}

std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  char buf[64] = {};
  if (std::fgets(buf, sizeof buf, f) == nullptr) buf[0] = 0;
  std::fclose(f);
  std::string s(buf);
  return s.substr(0, s.find(' ', s.find(' ', s.find(' ') + 1) + 1));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  double seconds = 1.0;
  int rounds = 5;
  std::string dir, only, side;
  long iterations = -1;  // >= 0: run each side exactly this many calls, once (for callgrind)
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--only") {
      o.only = argv[i + 1];
    } else if (a == "--iterations") {
      o.iterations = std::atol(argv[i + 1]);
    } else if (a == "--side") {  // "store" or "raw": run one side only (profiling)
      o.side = argv[i + 1];
    } else if (a == "--seconds-per-round") {
      o.seconds = std::atof(argv[i + 1]);
    } else if (a == "--rounds") {
      o.rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "--dir") {
      o.dir = argv[i + 1];
    } else {
      Die("unknown flag " + a);
    }
  }
  return o;
}

// What the operations of the three sides work on: the store and the raw database, each holding the
// documents to read (which also fill its change feed) and the one to replace.
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
  // As RawDoc, doing the JSON work itself.
  Raw::Doc RawJsonDoc(std::string id) const {
    auto f = indexer.Extract(body);
    return Raw::Doc{std::move(id), json::serialize(body), internal::NewEtag(), std::move(*f.resource_type),
                    std::move(*f.resource_id)};
  }
};

void Seed(Fixture& f) {
  std::vector<WriteOp> setup;
  for (int i = 0; i < kReadDocs; ++i) {
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
  std::function<void()> store_op, raw_op, raw_json_op;
};

std::vector<Bench> MakeBenches(Fixture& f) {
  return {
      {"point read", 1,
       [&f] {
         auto d = f.store.Read(kContainer, kPk, f.AnyReadId());
         Check(d, "read");
       },
       [&f] { f.raw.Read(f.AnyReadId(), f.clock.NowMillis(), f.sink_body, f.sink_etag); },
       [&f] {
         f.raw.Read(f.AnyReadId(), f.clock.NowMillis(), f.sink_body, f.sink_etag);
         ParseAndDrop(f.sink_body);
       }},
      {"create", 1, [&f] { Check(f.store.Create(kContainer, kPk, f.FreshId(), f.body), "create"); },
       [&f] { f.raw.Create(f.RawDoc(f.FreshId()), f.clock.NowMillis()); },
       [&f] { f.raw.Create(f.RawJsonDoc(f.FreshId()), f.clock.NowMillis()); }},
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
       },
       [&f] {
         Raw::Doc d = f.RawJsonDoc("replace-target");
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
       },
       [&f] {
         std::vector<Raw::Doc> docs;
         for (int i = 0; i < 5; ++i) docs.push_back(f.RawJsonDoc(f.FreshId()));
         f.raw.CreateBatch(docs, f.clock.NowMillis());
       }},
      {"change feed, 100/page", 100,
       [&f] {
         auto p = f.store.ReadChanges(kContainer, std::to_string(f.Next() % (kReadDocs - 100)), 100);
         Check(p, "read changes");
         if (p->changes.size() != 100) Die("short change page");
       },
       [&f] {
         if (f.raw.ReadChanges(static_cast<int64_t>(f.Next() % (kReadDocs - 100)), 100, f.raw_changes) != 100)
           Die("short raw page");
       },
       [&f] {
         if (f.raw.ReadChanges(static_cast<int64_t>(f.Next() % (kReadDocs - 100)), 100, f.raw_changes) != 100)
           Die("short raw page");
         std::vector<json::value> page;  // a caller holds the page's documents, as the store returns them
         page.reserve(f.raw_changes.size());
         for (const auto& c : f.raw_changes) page.push_back(Parse(c.body));
       }},
  };
}

struct Row {
  std::string name;
  double store, raw, raw_json, ratio_raw, ratio_raw_json, store_syncs, raw_syncs;
  double cpu[3];
};

// Warm-up (caches, statement preparation), then rounds that rotate the order of the sides.
Row MeasureSides(const Bench& b, const std::function<void()>* const (&sides)[3], const Options& o) {
  auto budget = std::chrono::duration<double>(o.seconds);
  for (const auto* f : sides) Measure(*f, b.ops_per_call, budget / 10);
  std::vector<double> ops[3], syncs[3], cpu[3], ratio_raw, ratio_raw_json;
  for (int round = 0; round < o.rounds; ++round) {
    Sample got[3];
    for (int k = 0; k < 3; ++k) {
      int which = (round + k) % 3;
      got[which] = Measure(*sides[which], b.ops_per_call, budget);
    }
    for (int k = 0; k < 3; ++k) {
      ops[k].push_back(got[k].ops_per_sec);
      syncs[k].push_back(got[k].syncs_per_op * b.ops_per_call);
      cpu[k].push_back(got[k].cpu_us_per_call);
    }
    ratio_raw.push_back(got[0].ops_per_sec / got[1].ops_per_sec);
    ratio_raw_json.push_back(got[0].ops_per_sec / got[2].ops_per_sec);
  }
  return {b.name,           Median(ops[0]),    Median(ops[1]),
          Median(ops[2]),   Median(ratio_raw), Median(ratio_raw_json),
          Median(syncs[0]), Median(syncs[1]),  {Median(cpu[0]), Median(cpu[1]), Median(cpu[2])}};
}

// The rows of the benchmarks --only selects; none with --iterations, which only runs the side chosen.
std::vector<Row> RunBenches(std::vector<Bench>& benches, const Options& o) {
  std::vector<Row> rows;
  for (auto& b : benches) {
    if (!o.only.empty() && b.name.rfind(o.only, 0) != 0) continue;  // a prefix of the name
    if (o.side == "store") b.raw_op = b.raw_json_op = b.store_op;
    if (o.side == "raw") b.store_op = b.raw_json_op = b.raw_op;
    const std::function<void()>* const sides[3] = {&b.store_op, &b.raw_op, &b.raw_json_op};
    if (o.iterations >= 0) {
      for (long i = 0; i < o.iterations; ++i) (*sides[o.side == "raw" ? 1 : o.side == "raw+json" ? 2 : 0])();
      continue;
    }
    rows.push_back(MeasureSides(b, sides, o));
    std::fprintf(stderr, "  %s done\n", b.name.c_str());
  }
  return rows;
}

void PrintRows(const std::vector<Row>& rows) {
  std::printf("\n%-22s %11s %11s %11s %9s %9s   %-22s %s\n", "", "store", "raw", "raw+json", "store/",
              "store/", "CPU us/call", "fsyncs/call");
  std::printf("%-22s %11s %11s %11s %9s %9s   %6s %7s %8s   %5s %5s\n", "operation", "ops/s", "ops/s",
              "ops/s", "raw", "raw+json", "store", "raw", "raw+json", "store", "raw");
  for (const auto& row : rows) {
    std::printf("%-22s %11.0f %11.0f %11.0f %8.1f%% %8.1f%%   %6.1f %7.1f %8.1f   %5.2f %5.2f\n",
                row.name.c_str(), row.store, row.raw, row.raw_json, 100.0 * row.ratio_raw,
                100.0 * row.ratio_raw_json, row.cpu[0], row.cpu[1], row.cpu[2], row.store_syncs,
                row.raw_syncs);
  }
  std::printf(
      "\nops/s count documents (a batch call is 5 operations, a change page 100). Ratios are medians of\n"
      "per-round ratios; CPU time and fsyncs are per call (medians). Load average at the end: %s\n",
      LoadAverage().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseOptions(argc, argv);
  if (o.dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "store-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp");
    o.dir = tmpl;
  }
  auto& vfs = sqlite::TestVfs::Get();
  std::string store_path = o.dir + "/store.db", raw_path = o.dir + "/raw.db";
  for (const auto& p : {store_path, raw_path}) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix);
  }

  SystemClock clock;
  const IndexSpec indexes = arm::StoreIndexes();
  auto opened =
      OpenStore("sqlite://" + store_path + "?vfs=" + vfs.name(), {.clock = &clock, .indexes = indexes});
  Check(opened, "open store");
  Raw raw(raw_path);

  const json::value body = ClusterBody(0);
  const std::string body_text = json::serialize(body);
  std::printf("store_bench: files in %s, document body %zu bytes, %d rounds x %.1f s per side\n",
              o.dir.c_str(), body_text.size(), o.rounds, o.seconds);

  auto indexer = internal::DocumentIndexer::Make(indexes);
  Check(indexer, "index spec");
  Fixture f{**opened, raw, clock, body, body_text, *indexer, indexer->Extract(body)};
  Seed(f);
  std::vector<Bench> benches = MakeBenches(f);
  PrintRows(RunBenches(benches, o));
  opened->reset();  // close the store before removing its files
  std::error_code ec;
  std::filesystem::remove_all(o.dir, ec);
  return 0;
}
