// The store side of the 100,000-resource benchmark (bench/scale/run.py drives it; README.md there).
//
//   scale_tool load --store URL --template-subscription SUB --template-cluster NAME
//                   --template-node-pool NAME --subscriptions N --clusters K --node-pools P
//     Copies what the frontend and the backend stored for one cluster and one node pool created through
//     the API (subscription SUB: its subscription document, the resource documents, their operations
//     and billing records) into N new subscriptions of K clusters with P node pools each. Every copy is
//     the template's documents with the subscription ID, the names, the operation IDs and the Cluster
//     Service IDs replaced, so the store holds what the frontend would have written; one store batch
//     per subscription and container, as the frontend commits one partition at a time.
//
//   scale_tool resync --store URL --clusters-service URL [--rounds R]
//     Runs the backend's full synchronous pass (Backend::ReconcileOnce: ownership, change feed, the
//     index rebuilt from the store, every in-flight operation checked, deadlines, subscription sweeps)
//     R times on the store and prints each pass's wall time and CPU time. No other backend may hold
//     the shards while it runs.
//
// Both print one JSON line on stdout with the figures.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "arm/documents.h"
#include "arm/store_indexes.h"
#include "backend/backend.h"
#include "clusterservice/http_client.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/uuid.h"
#include "store/store.h"

namespace {

using hcprp::Error;
using hcprp::Result;
using hcprp::Status;
namespace json = hcprp::json;
namespace store = hcprp::store;
namespace arm = hcprp::arm;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "scale_tool: %s\n", what.c_str());
  std::exit(1);
}

std::map<std::string, std::string> ParseFlags(int argc, char** argv, int first) {
  std::map<std::string, std::string> flags;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) Die("expected --flag value, got " + a);
    flags[a.substr(2)] = argv[++i];
  }
  return flags;
}

std::string Need(const std::map<std::string, std::string>& flags, const std::string& name) {
  auto it = flags.find(name);
  if (it == flags.end()) Die("--" + name + " is required");
  return it->second;
}

size_t NeedCount(const std::map<std::string, std::string>& flags, const std::string& name, size_t def) {
  auto it = flags.find(name);
  if (it == flags.end()) return def;
  return static_cast<size_t>(std::stoull(it->second));
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string LastSegment(std::string_view href) {
  size_t slash = href.rfind('/');
  return std::string(slash == std::string_view::npos ? href : href.substr(slash + 1));
}

std::string_view TypeOf(const json::value& body) {
  const auto* o = body.if_object();
  if (o == nullptr) return {};
  const auto* t = o->if_contains("resourceType");
  return t != nullptr && t->is_string() ? std::string_view(t->get_string()) : std::string_view();
}

// The documents of one template entity (the subscription, the cluster or the node pool), as text.
struct TemplateDoc {
  std::string container;
  std::string id;
  std::string text;
  std::optional<int64_t> ttl;
  bool operation = false;
};

enum class Entity { kSubscription, kCluster, kNodePool };

struct Template {
  std::string subscription;  // lower-cased
  std::string cluster, node_pool;
  std::string cluster_cs_id, node_pool_cs_id;  // last segments of the internal IDs
  std::map<Entity, std::vector<TemplateDoc>> docs;
};

Template ReadTemplate(store::Store& s, const std::map<std::string, std::string>& flags) {
  Template t;
  t.subscription = arm::PartitionKey(Need(flags, "template-subscription"));
  t.cluster = Need(flags, "template-cluster");
  t.node_pool = Need(flags, "template-node-pool");
  for (std::string_view container : {store::kResources, store::kBilling}) {
    store::QueryOptions q;
    q.container = std::string(container);
    q.partition_key = t.subscription;
    q.max_items = 1000;
    Status st = store::ForEachDocument(s, q, [&](const store::Document& d) {
      TemplateDoc td{std::string(container), d.id, json::serialize(d.body), d.ttl_seconds,
                     TypeOf(d.body) == arm::kOperationDocType};
      std::string_view type = TypeOf(d.body);
      if (container == store::kResources && (type == arm::kClusterDocType || type == arm::kNodePoolDocType)) {
        auto r = arm::ResourceDocument::FromBody(d.body);
        if (!r.ok()) Die("template resource unreadable: " + r.error().ToString());
        (type == arm::kClusterDocType ? t.cluster_cs_id : t.node_pool_cs_id) = LastSegment(r->internal_id);
      }
      Entity e = td.text.find("/nodePools/" + t.node_pool) != std::string::npos ? Entity::kNodePool
                 : td.text.find("/hcpOpenShiftClusters/" + t.cluster) != std::string::npos
                     ? Entity::kCluster
                     : Entity::kSubscription;
      t.docs[e].push_back(std::move(td));
    });
    if (!st.ok()) Die("reading the template: " + st.error().ToString());
  }
  if (t.cluster_cs_id.empty() || t.node_pool_cs_id.empty() || t.docs[Entity::kSubscription].empty()) {
    Die("the template subscription needs its subscription document, one cluster and one node pool");
  }
  return t;
}

// The copies of one entity's documents for a new subscription and names.
void CloneEntity(const Template& t, Entity e, const std::string& sub, const std::string& cluster,
                 const std::string& pool, const std::string& cluster_cs, const std::string& pool_cs,
                 std::map<std::string, std::vector<store::WriteOp>>& ops_by_container) {
  auto it = t.docs.find(e);
  if (it == t.docs.end()) return;
  std::map<std::string, std::string> op_ids;  // template operation ID -> new one
  for (const TemplateDoc& d : it->second) {
    if (d.operation) op_ids[d.id] = hcprp::NewUuidV4();
  }
  std::map<std::string, std::string> resource_ids;  // template resource document id -> new one
  std::vector<std::pair<const TemplateDoc*, std::string>> texts;
  for (const TemplateDoc& d : it->second) {
    std::string text = d.text;
    for (const auto& [from, to] : op_ids) ReplaceAll(text, from, to);
    ReplaceAll(text, t.subscription, sub);
    ReplaceAll(text, t.node_pool, pool);
    ReplaceAll(text, t.cluster, cluster);
    ReplaceAll(text, t.node_pool_cs_id, pool_cs);
    ReplaceAll(text, t.cluster_cs_id, cluster_cs);
    json::value body = json::parse(text);
    std::string_view type = TypeOf(body);
    if (d.container == store::kResources && (type == arm::kClusterDocType || type == arm::kNodePoolDocType)) {
      auto r = arm::ResourceDocument::FromBody(body);
      if (!r.ok()) Die("copied resource unreadable: " + r.error().ToString());
      resource_ids[d.id] = arm::ResourceDocumentId(r->resource_id);
    }
    texts.emplace_back(&d, std::move(text));
  }
  for (auto& [d, text] : texts) {
    std::string id = d->id;
    if (auto o = op_ids.find(id); o != op_ids.end()) {
      id = o->second;
    } else if (auto r = resource_ids.find(id); r != resource_ids.end()) {
      id = r->second;
    } else if (e == Entity::kSubscription && id == t.subscription) {
      id = sub;
    } else {
      for (const auto& [from, to] : op_ids) ReplaceAll(id, from, to);
    }
    ops_by_container[d->container].push_back(store::WriteOp::Create(id, json::parse(text), d->ttl));
  }
}

std::string SubscriptionId(size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "5ca1e000-0000-4000-8000-%012zu", i);
  return buf;
}

int Load(const std::map<std::string, std::string>& flags) {
  hcprp::SystemClock clock;
  auto opened = store::OpenStore(Need(flags, "store"), {.clock = &clock, .indexes = arm::StoreIndexes()});
  if (!opened.ok()) Die("opening the store: " + opened.error().ToString());
  store::Store& s = **opened;
  Template t = ReadTemplate(s, flags);
  size_t subs = NeedCount(flags, "subscriptions", 10000);
  size_t clusters = NeedCount(flags, "clusters", 2);
  size_t pools = NeedCount(flags, "node-pools", 4);
  size_t first = NeedCount(flags, "first", 0);

  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = CpuSeconds();
  size_t docs = 0, resources = 0, batches = 0;
  for (size_t i = first; i < first + subs; ++i) {
    std::string sub = SubscriptionId(i);
    std::map<std::string, std::vector<store::WriteOp>> ops;
    CloneEntity(t, Entity::kSubscription, sub, "", "", "", "", ops);
    for (size_t c = 0; c < clusters; ++c) {
      char cs[40];
      std::snprintf(cs, sizeof cs, "scale%08zx%04zx", i, c);
      std::string cluster = "c" + std::to_string(c);
      CloneEntity(t, Entity::kCluster, sub, cluster, "", cs, "", ops);
      ++resources;
      for (size_t p = 0; p < pools; ++p) {
        char ps[48];
        std::snprintf(ps, sizeof ps, "scale%08zx%04zx%04zx", i, c, p);
        CloneEntity(t, Entity::kNodePool, sub, cluster, "np" + std::to_string(p), cs, ps, ops);
        ++resources;
      }
    }
    for (auto& [container, batch] : ops) {
      docs += batch.size();
      auto r = s.Batch(container, sub, std::move(batch));
      if (!r.ok()) Die("writing subscription " + sub + ": " + r.error().ToString());
      ++batches;
    }
    if ((i - first + 1) % 1000 == 0) {
      std::fprintf(stderr, "scale_tool: %zu subscriptions loaded\n", i - first + 1);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json::object out{{"subscriptions", subs},
                   {"resources", resources},
                   {"documents", docs},
                   {"batches", batches},
                   {"seconds", secs},
                   {"cpu_seconds", CpuSeconds() - cpu0},
                   {"first_subscription", SubscriptionId(first)}};
  std::printf("%s\n", json::serialize(out).c_str());
  return 0;
}

int Resync(const std::map<std::string, std::string>& flags) {
  hcprp::SystemClock clock;
  auto opened = store::OpenStore(Need(flags, "store"), {.clock = &clock, .indexes = arm::StoreIndexes()});
  if (!opened.ok()) Die("opening the store: " + opened.error().ToString());
  hcprp::clusterservice::HttpClientOptions co;
  co.base_url = Need(flags, "clusters-service");
  auto cs = hcprp::clusterservice::HttpClient::Create(co);
  if (!cs.ok()) Die("Cluster Service client: " + cs.error().ToString());
  hcprp::Logger logger(std::make_shared<hcprp::StreamLogSink>(stderr), &clock, hcprp::LogLevel::kWarn);
  hcprp::backend::BackendOptions o;
  o.owner = "scale-resync";
  o.gc_enabled = false;  // the orphan collector lists the Cluster Service, not the store
  auto b = hcprp::backend::Backend::Create(o, opened->get(), cs->get(), &clock, logger, nullptr);
  if (!b.ok()) Die("backend: " + b.error().ToString());
  size_t rounds = NeedCount(flags, "rounds", 3);
  json::array passes;
  for (size_t r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double cpu0 = CpuSeconds();
    Status st = (*b)->ReconcileOnce();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) Die("ReconcileOnce: " + st.error().ToString());
    auto stats = (*b)->Stats();
    passes.push_back(json::object{{"seconds", secs},
                                  {"cpu_seconds", CpuSeconds() - cpu0},
                                  {"in_flight", stats.in_flight},
                                  {"checks", stats.checks}});
  }
  (*b)->Stop();
  std::printf("%s\n", json::serialize(json::object{{"passes", std::move(passes)}}).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: scale_tool load|resync --flag value ...");
  std::string cmd = argv[1];
  auto flags = ParseFlags(argc, argv, 2);
  if (cmd == "load") return Load(flags);
  if (cmd == "resync") return Resync(flags);
  Die("unknown command " + cmd);
}
