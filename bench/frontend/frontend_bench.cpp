// frontend_bench: the ARM frontend served by the HTTP server (src/http) on a store with an in-memory
// Cluster Service, beside a minimal server on the same transport answering a fixed JSON body of the
// same size, all driven by wrk. Prints throughput and p50/p99 latency of each run and the ratio to
// the minimal server; with several stores, a table of both side by side.
//
//   frontend_bench [--duration SECONDS] [--connections N] [--wrk-threads N] [--workers N]
//                  [--max-workers N] [--io-threads N] [--dir DIR] [--only get|put] [--keep]
//                  [--stores sqlite|postgresql|sqlite,postgresql] [--pg-url postgresql://...]
//                  [--baseline OTHER_FRONTEND_BENCH]
//
// Stores: "sqlite" is a file in DIR; "postgresql" is a throwaway local server started for the run
// (src/store/postgres/pg_test_server.h: initdb, fsync on, 127.0.0.1) unless --pg-url names one.
// Each store gets a fresh frontend, subscription and cluster names. The HTTP server runs 4 handler
// workers and 1 I/O thread, the pool pinned (the set-up of every earlier figure); --workers,
// --max-workers and --io-threads change them. `hcprp
// serve` keeps 8 workers (--threads), adds more while every one is busy up to 256, and runs 2 I/O
// threads: `--workers 8 --max-workers 256 --io-threads 2`.
//
// Runs:
//   GET  one cluster (subscription check + resource read + rendering), against the minimal server.
//   PUT  creating clusters with unique names (a wrk Lua script numbers them per wrk thread): body
//        parse, validation, one durable store batch and the Cluster Service create before the 201,
//        and no other write (the backend records the internal ID with the create's first status
//        change; no backend runs here). With --baseline, another build's PUT figures beside
//        this build's, with the targets: SQLite >= 3x the baseline with p99 < 40 ms, PostgreSQL
//        >= 2x. The baseline (its frontend_bench with the same options) runs once before and once
//        after this build's runs and is compared by the mean of the two: on this kind of machine
//        the first of several back-to-back runs is often 10% faster than the next.
// Targets: GET >= 70% of the minimal server's throughput with p99 < 5 ms; PUT create >= 50% of the
// store's raw durable batch rate (bench/store_bench, "batch of 5" raw row) on the same machine.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arm/store_indexes.h"
#include "clusterservice/testing/fake_cluster_service.h"
#include "core/clock.h"
#include "core/log.h"
#include "frontend/frontend.h"
#include "http/client.h"
#include "http/message.h"
#include "http/server.h"
#include "metrics/registry.h"
#include "store/metrics_store.h"
#include "store/postgres/pg_test_server.h"
#include "store/store.h"
#include "tls/arm_trust.h"
#include "tls/context.h"
#include "tls/local_ca.h"

namespace {

using namespace hcprp;
namespace bhttp = boost::beast::http;

constexpr std::string_view kSub = "1d3378d3-5a3f-4712-85a1-2485495dfc4b";
constexpr std::string_view kTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
constexpr std::string_view kVersion = "2026-10-01";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "frontend_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string ClusterPrefix() {
  return "/subscriptions/" + std::string(kSub) +
         "/resourceGroups/bench/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/";
}

std::string ClusterBody() {
  // Identities and subnets live in the cluster's subscription, as the service requires.
  const std::string g = "/subscriptions/" + std::string(kSub) + "/resourceGroups/bench";
  const std::string smi = g + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi";
  const std::string vnet = g + "/providers/Microsoft.Network/virtualNetworks/v/subnets/";
  return R"({"location":"eastus","tags":{"env":"bench"},
"identity":{"type":"UserAssigned","userAssignedIdentities":{")" +
         smi + R"(":{}}},
"properties":{"version":{"id":"4.20"},"platform":{
"subnetId":")" +
         vnet + R"(a","vnetIntegrationSubnetId":")" + vnet + R"(b",
"networkSecurityGroupId":")" +
         g + R"(/providers/Microsoft.Network/networkSecurityGroups/n",
"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},
"serviceManagedIdentity":")" +
         smi + R"("}}}}})";
}

frontend::Response Call(frontend::Frontend& fe, bhttp::verb method, const std::string& target,
                        std::string body) {
  frontend::Request req{method, target, 11};
  req.set(bhttp::field::host, "localhost");
  req.set("x-ms-home-tenant-id", kTenant);
  if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return fe.Handle(std::move(req));
}

// The figures wrk prints with --latency.
struct WrkResult {
  double requests_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  long non_2xx = 0;
  long errors = 0;
  std::string raw;
};

double ToMs(const std::string& value) {
  size_t unit = value.find_first_not_of("0123456789.");
  if (unit == std::string::npos) return 0;
  double number = std::atof(value.substr(0, unit).c_str());
  std::string u = value.substr(unit);
  if (u == "us") return number / 1000.0;
  if (u == "ms") return number;
  if (u == "s") return number * 1000.0;
  if (u == "m") return number * 60000.0;
  return number;
}

WrkResult RunWrk(const std::string& url, int seconds, int connections, int threads,
                 const std::string& script) {
  std::string cmd = "wrk -t" + std::to_string(threads) + " -c" + std::to_string(connections) + " -d" +
                    std::to_string(seconds) + "s --latency";
  if (!script.empty()) cmd += " -s " + script;
  cmd += " '" + url + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) Die("cannot run wrk");
  WrkResult r;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    r.raw += line;
    std::string s(line);
    size_t k = s.find_first_not_of(' ');
    if (k == std::string::npos) continue;
    s = s.substr(k);
    char value[64] = {0};
    if (s.rfind("Requests/sec:", 0) == 0) {
      r.requests_per_second = std::atof(s.c_str() + 13);
    } else if (s.rfind("50%", 0) == 0 && std::sscanf(s.c_str(), "50%% %63s", value) == 1) {
      r.p50_ms = ToMs(value);
    } else if (s.rfind("99%", 0) == 0 && std::sscanf(s.c_str(), "99%% %63s", value) == 1) {
      r.p99_ms = ToMs(value);
    } else if (s.rfind("Non-2xx or 3xx responses:", 0) == 0) {
      r.non_2xx = std::atol(s.c_str() + 25);
    } else if (s.rfind("Socket errors:", 0) == 0) {
      long a = 0, b = 0, c = 0, d = 0;
      if (std::sscanf(s.c_str(), "Socket errors: connect %ld, read %ld, write %ld, timeout %ld", &a, &b, &c,
                      &d) == 4) {
        r.errors = a + b + c + d;
      }
    }
  }
  int rc = pclose(pipe);
  if (rc != 0 || r.requests_per_second == 0) Die("wrk failed:\n" + r.raw);
  return r;
}

// A wrk script that PUTs a new cluster per request, named by wrk thread and counter.
std::string WritePutScript(const std::filesystem::path& dir) {
  std::filesystem::path path = dir / "put_create.lua";
  std::ofstream out(path);
  // thread_id is a global: setup() sets it in each wrk thread's own Lua state.
  out << "local counter = 0\n"
         "thread_id = 0\n"
         "local next_thread = 0\n"
         "function setup(thread)\n"
         "  next_thread = next_thread + 1\n"
         "  thread:set('thread_id', next_thread)\n"
         "end\n"
         "local body = [==["
      << ClusterBody()
      << "]==]\n"
         "wrk.method = 'PUT'\n"
         "wrk.headers['Content-Type'] = 'application/json'\n"
         "wrk.headers['x-ms-home-tenant-id'] = '"
      << kTenant
      << "'\n"
         "request = function()\n"
         "  counter = counter + 1\n"
         "  local path = '"
      << ClusterPrefix() << "' .. 'c' .. thread_id .. 'n' .. counter .. '?api-version=" << kVersion
      << "'\n"
         "  return wrk.format('PUT', path, nil, body)\n"
         "end\n";
  if (!out) Die("cannot write " + path.string());
  return path.string();
}

struct Options {
  int duration = 10;
  int connections = 64;
  int wrk_threads = 2;
  int workers = 4;
  int max_workers = 0;  // 0: the pool pinned at `workers`
  int io_threads = 1;
  int baseline_workers = 0;  // > 0: the --workers of the baseline's run (default: this run's)
  std::string dir;
  std::string only;
  std::vector<std::string> stores = {"sqlite"};
  std::string pg_url;
  bool keep = false;
  long in_process = 0;     // > 0: only call Frontend::Handle this many times per kind, no HTTP (profiling)
  int metrics_rounds = 0;  // > 0: GET with metrics off and on, alternating, this many rounds each
  bool https = false;      // the HTTPS comparison only (GET plain vs TLS, handshakes per second)
  std::string baseline;    // another build's frontend_bench: its PUT run first, printed beside this one's
};

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--duration") {
      o.duration = std::atoi(next().c_str());
    } else if (a == "--connections") {
      o.connections = std::atoi(next().c_str());
    } else if (a == "--wrk-threads") {
      o.wrk_threads = std::atoi(next().c_str());
    } else if (a == "--workers") {
      o.workers = std::atoi(next().c_str());
    } else if (a == "--max-workers") {
      o.max_workers = std::atoi(next().c_str());
    } else if (a == "--io-threads") {
      o.io_threads = std::atoi(next().c_str());
    } else if (a == "--baseline-workers") {
      o.baseline_workers = std::atoi(next().c_str());
    } else if (a == "--dir") {
      o.dir = next();
    } else if (a == "--only") {
      o.only = next();
    } else if (a == "--metrics-rounds") {
      o.metrics_rounds = std::stoi(next());
    } else if (a == "--stores") {
      o.stores = SplitComma(next());
    } else if (a == "--pg-url") {
      o.pg_url = next();
    } else if (a == "--keep") {
      o.keep = true;
    } else if (a == "--https") {
      o.https = true;
    } else if (a == "--baseline") {
      o.baseline = next();
    } else if (a == "--in-process") {
      o.in_process = std::atol(next().c_str());
    } else {
      Die("unknown argument " + a +
          " (--duration S, --connections N, --wrk-threads N, --workers N, --max-workers N, --io-threads N, "
          "--dir DIR, --only get|put, --stores sqlite,postgresql, --pg-url URL, --keep, --metrics-rounds N, "
          "--https, --baseline PATH, --baseline-workers N)");
    }
  }
  if (o.duration < 1 || o.connections < 1 || o.wrk_threads < 1 || o.workers < 1 || o.io_threads < 1 ||
      o.max_workers < 0 || o.baseline_workers < 0) {
    Die("bad option value");
  }
  o.max_workers = std::max(o.max_workers, o.workers);
  if (o.stores.empty()) Die("--stores names no store");
  for (const auto& st : o.stores) {
    if (st != "sqlite" && st != "postgresql") Die("unknown store " + st + " (sqlite, postgresql)");
  }
  return o;
}

void Print(const std::string& name, const WrkResult& r, const WrkResult* baseline) {
  std::printf("%-40s %10.0f req/s   p50 %7.3f ms   p99 %7.3f ms", name.c_str(), r.requests_per_second,
              r.p50_ms, r.p99_ms);
  if (baseline != nullptr) {
    std::printf("   %5.1f%% of minimal", 100.0 * r.requests_per_second / baseline->requests_per_second);
  }
  if (r.non_2xx > 0 || r.errors > 0) std::printf("   (non-2xx %ld, socket errors %ld)", r.non_2xx, r.errors);
  std::printf("\n");
}

http::ServerOptions ServerOptionsFor(const Options& o) {
  http::ServerOptions so;
  so.threads = o.workers;
  so.max_threads = o.max_workers;
  so.io_threads = o.io_threads;
  so.server_header = "hcprp";
  so.on_too_large = [](const http::Request& r) { return frontend::TooLargeResponse(r, 4 * 1024 * 1024); };
  return so;
}

// The figures of one store.
struct StoreRun {
  std::string store;
  std::optional<WrkResult> get;
  std::optional<WrkResult> put;
};

// A frontend on `url` with a registered subscription and one cluster to GET.
struct Fixture {
  std::unique_ptr<store::Store> store;
  std::unique_ptr<store::MetricsStore> metered;  // with metrics only
  clusterservice::testing::FakeClusterService cs{nullptr, clusterservice::testing::ImmediateOptions()};
  std::unique_ptr<frontend::Frontend> fe;
  std::string get_target;
  std::string get_body;
};

// With `registry`, the frontend and the store record their metrics there, as in hcprp.
std::unique_ptr<Fixture> OpenFixture(const std::string& url, const Clock& clock, const Logger& logger,
                                     metrics::Registry* registry = nullptr) {
  auto f = std::make_unique<Fixture>();
  auto opened = store::OpenStore(url, {.clock = &clock, .indexes = arm::StoreIndexes()});
  if (!opened.ok()) Die("store " + url + ": " + opened.error().ToString());
  f->store = std::move(opened).value();
  store::Store* used = f->store.get();
  frontend::FrontendOptions fo;
  if (registry != nullptr) {
    f->metered = std::make_unique<store::MetricsStore>(used, registry, store::EngineOfUrl(url));
    used = f->metered.get();
    fo.metrics = registry;
  }
  auto created = frontend::Frontend::Create(fo, used, &f->cs, &clock, logger);
  if (!created.ok()) Die("frontend: " + created.error().ToString());
  f->fe = std::move(created).value();
  auto sub =
      Call(*f->fe, bhttp::verb::put, "/subscriptions/" + std::string(kSub) + "?api-version=2.0",
           R"({"state":"Registered","registrationDate":"2025-01-01T00:00:00Z","properties":{"tenantId":")" +
               std::string(kTenant) + R"("}})");
  if (sub.result_int() != 200) Die("subscription PUT: " + sub.body());
  f->get_target = ClusterPrefix() + "getme?api-version=" + std::string(kVersion);
  auto put = Call(*f->fe, bhttp::verb::put, f->get_target, ClusterBody());
  if (put.result_int() != 201) Die("cluster PUT: " + put.body());
  auto get = Call(*f->fe, bhttp::verb::get, f->get_target, "");
  if (get.result_int() != 200) Die("cluster GET: " + get.body());
  f->get_body = get.body();
  return f;
}

void RunInProcess(const Options& o, Fixture& f) {
  // One thread calling Handle directly: the cost of the frontend itself, for perf or callgrind.
  using Steady = std::chrono::steady_clock;
  if (o.only.empty() || o.only == "get") {
    auto start = Steady::now();
    for (long i = 0; i < o.in_process; ++i) {
      if (Call(*f.fe, bhttp::verb::get, f.get_target, "").result_int() != 200) Die("GET failed");
    }
    double secs = std::chrono::duration<double>(Steady::now() - start).count();
    std::printf("in-process GET: %ld calls, %.1f us each\n", o.in_process, 1e6 * secs / o.in_process);
  }
  if (o.only.empty() || o.only == "put") {
    auto start = Steady::now();
    for (long i = 0; i < o.in_process; ++i) {
      std::string target =
          ClusterPrefix() + "p" + std::to_string(i) + "?api-version=" + std::string(kVersion);
      auto r = Call(*f.fe, bhttp::verb::put, target, ClusterBody());
      if (r.result_int() != 201) Die("PUT failed: " + r.body());
    }
    double secs = std::chrono::duration<double>(Steady::now() - start).count();
    std::printf("in-process PUT create: %ld calls, %.1f us each\n", o.in_process, 1e6 * secs / o.in_process);
  }
}

// GET and PUT through the HTTP server on one store, each beside the minimal server's run of the same
// kind (`base_get`, `base_put`, measured once).
StoreRun RunStore(const Options& o, const std::string& name, Fixture& f, const std::string& script,
                  const WrkResult* base_get, const WrkResult* base_put) {
  StoreRun run{name, std::nullopt, std::nullopt};
  auto* fe_ptr = f.fe.get();
  auto server = http::Server::Start(ServerOptionsFor(o),
                                    [fe_ptr](http::Request&& r) { return fe_ptr->Handle(std::move(r)); });
  if (!server.ok()) Die("frontend server: " + server.error().ToString());
  const std::string base = "http://127.0.0.1:" + std::to_string((*server)->port());
  if (base_get != nullptr) {
    run.get = RunWrk(base + f.get_target, o.duration, o.connections, o.wrk_threads, "");
    Print("frontend GET cluster (" + name + ")", *run.get, base_get);
  }
  if (base_put != nullptr) {
    run.put = RunWrk(base + f.get_target, o.duration, o.connections, o.wrk_threads, script);
    Print("frontend PUT create cluster (" + name + ")", *run.put, base_put);
  }
  (*server)->Stop();
  return run;
}

// The PUT figures of another build's frontend_bench (`--baseline PATH`), run with this run's options:
// store name -> figures, from the table it prints last.
std::map<std::string, WrkResult> RunBaselinePut(const Options& o) {
  std::string stores;
  for (const auto& st : o.stores) stores += (stores.empty() ? "" : ",") + st;
  std::string cmd =
      "'" + o.baseline + "' --only put --duration " + std::to_string(o.duration) + " --connections " +
      std::to_string(o.connections) + " --wrk-threads " + std::to_string(o.wrk_threads) + " --workers " +
      std::to_string(o.baseline_workers > 0 ? o.baseline_workers : o.workers) + " --stores " + stores;
  if (!o.pg_url.empty()) cmd += " --pg-url '" + o.pg_url + "'";
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) Die("cannot run " + o.baseline);
  std::map<std::string, WrkResult> out;
  std::string raw;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    raw += line;
    char store[64] = {0};
    WrkResult r;
    if (std::sscanf(line, "%63s PUT %lf %lf %lf %ld", store, &r.requests_per_second, &r.p50_ms, &r.p99_ms,
                    &r.non_2xx) == 5) {
      out[store] = r;
    }
  }
  // The baseline exits 2 when one of its own targets is not met; only missing figures are fatal.
  pclose(pipe);
  if (out.size() != o.stores.size()) Die("the baseline printed no PUT figures:\n" + raw);
  return out;
}

}  // namespace

// Clients on `threads` threads, each with its own keep-alive connection, sending GET `target` for
// `seconds`; requests per second. Any answer but 200 ends the run.
double KeepAliveGets(const http::ClientOptions& co, uint16_t port, const std::string& target, int seconds,
                     int threads) {
  std::atomic<long> done{0};
  std::atomic<bool> failed{false};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      http::Client c(co);
      while (std::chrono::steady_clock::now() < until && !failed.load()) {
        auto r = c.Send(http::Endpoint{"127.0.0.1", port}, http::MakeRequest(bhttp::verb::get, target, ""),
                        std::chrono::seconds(10));
        if (!r.ok() || r->result_int() != 200) {
          std::fprintf(stderr, "GET failed: %s\n",
                       r.ok() ? std::to_string(r->result_int()).c_str() : r.error().ToString().c_str());
          failed = true;
          return;
        }
        done.fetch_add(1);
      }
    });
  }
  for (auto& t : ts) t.join();
  if (failed) Die("keep-alive GETs failed");
  return static_cast<double>(done.load()) / seconds;
}

// New TLS connections per second, one GET each: with `resume`, each thread's client resumes its last
// session; without, every handshake is a full one.
double NewConnectionGets(const http::ClientOptions& co, uint16_t port, const std::string& target, int seconds,
                         int threads, bool resume, std::atomic<long>* resumed) {
  std::atomic<long> done{0};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      auto c = std::make_unique<http::Client>(co);
      while (std::chrono::steady_clock::now() < until) {
        if (!resume) c = std::make_unique<http::Client>(co);  // no session to resume
        auto r = c->Send(http::Endpoint{"127.0.0.1", port}, http::MakeRequest(bhttp::verb::get, target, ""),
                         std::chrono::seconds(10));
        if (!r.ok() || r->result_int() != 200) Die("GET on a new connection failed");
        c->CloseIdle();
        done.fetch_add(1);
      }
      resumed->fetch_add(static_cast<long>(c->sessions_resumed()));
    });
  }
  for (auto& t : ts) t.join();
  return static_cast<double>(done.load()) / seconds;
}

// The frontend (on the first store) behind a plain and behind an HTTPS listener with ARM client-certificate
// authentication, driven by the same in-process client: GET with keep-alive, then new connections.
int RunHttps(const Options& o, Fixture& f, const std::filesystem::path& dir, const Clock& clock) {
  auto files = tls::EnsureLocalFiles((dir / "tls").string(), clock);
  if (!files.ok()) Die("TLS files: " + files.error().ToString());
  auto server_ctx = tls::ServerContext::Load({files->server_cert, files->server_key, "", true});
  if (!server_ctx.ok()) Die("server context: " + server_ctx.error().ToString());
  auto auth = tls::ArmAuthenticator::Load(files->trusted_set, &clock);
  if (!auth.ok()) Die("trusted set: " + auth.error().ToString());
  auto client_ctx = tls::ClientContext::Load({files->ca, files->client_cert, files->client_key});
  if (!client_ctx.ok()) Die("client context: " + client_ctx.error().ToString());

  auto* fe = f.fe.get();
  auto handler = [fe](http::Request&& r) { return fe->Handle(std::move(r)); };
  auto plain = http::Server::Start(ServerOptionsFor(o), handler);
  http::ServerOptions tso = ServerOptionsFor(o);
  tso.tls.context = *server_ctx;
  tls::ArmAuthenticator* a = auth->get();
  tso.tls.authenticate = [a](const tls::PeerCertificate* p) -> std::optional<http::Refusal> {
    if (auto refusal = a->Check(p)) return http::Refusal{std::string(tls::RefusalName(*refusal))};
    return std::nullopt;
  };
  auto secure = http::Server::Start(tso, handler);
  if (!plain.ok() || !secure.ok()) Die("cannot start the servers");
  http::ClientOptions plain_co;
  http::ClientOptions tls_co;
  tls_co.tls = *client_ctx;
  const int threads = std::min(o.connections, 8);
  std::printf(
      "frontend_bench --https: %d client threads in this process, %d s per figure, %d handler workers\n",
      threads, o.duration, o.workers);
  std::printf("GET %s (frontend on %s)\n\n", f.get_target.c_str(), o.stores.front().c_str());
  // Alternating rounds so that both see the same load on the machine.
  double plain_rps = 0, tls_rps = 0;
  for (int round = 0; round < 2; ++round) {
    plain_rps += KeepAliveGets(plain_co, (*plain)->port(), f.get_target, o.duration, threads) / 2;
    tls_rps += KeepAliveGets(tls_co, (*secure)->port(), f.get_target, o.duration, threads) / 2;
  }
  std::printf("GET keep-alive, plain HTTP:             %10.0f req/s\n", plain_rps);
  std::printf("GET keep-alive, HTTPS + client cert:    %10.0f req/s   %5.1f%% of plain; target >= 80%%: %s\n",
              tls_rps, 100.0 * tls_rps / plain_rps, tls_rps >= 0.8 * plain_rps ? "met" : "NOT met");
  std::atomic<long> resumed_full{0}, resumed{0};
  double full =
      NewConnectionGets(tls_co, (*secure)->port(), f.get_target, o.duration, threads, false, &resumed_full);
  double resumed_rate =
      NewConnectionGets(tls_co, (*secure)->port(), f.get_target, o.duration, threads, true, &resumed);
  double plain_new =
      NewConnectionGets(plain_co, (*plain)->port(), f.get_target, o.duration, threads, true, &resumed_full);
  std::printf("new connection + GET, plain HTTP:       %10.0f conn/s\n", plain_new);
  std::printf("new TLS handshake + GET, full:          %10.0f conn/s\n", full);
  std::printf("new TLS handshake + GET, resumed:       %10.0f conn/s   (%ld of %.0f handshakes resumed)\n",
              resumed_rate, resumed.load(), resumed_rate * o.duration);
  (*secure)->Stop();
  (*plain)->Stop();
  return 0;
}

namespace {

std::filesystem::path WorkDir(const Options& o) {
  std::filesystem::path dir = o.dir;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "frontend_bench.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp failed");
    dir = tmpl;
  }
  std::filesystem::create_directories(dir);
  return dir;
}

using StoreUrls = std::vector<std::pair<std::string, std::string>>;  // store name, URL

// The store URLs, a throwaway PostgreSQL server started into `pg_server` when one is wanted and none
// is named.
StoreUrls UrlsOfStores(const Options& o, const std::filesystem::path& dir,
                       std::unique_ptr<store::postgres::PgTestServer>& pg_server) {
  StoreUrls urls;
  for (const auto& name : o.stores) {
    if (name == "sqlite") {
      urls.emplace_back(name, "sqlite://" + (dir / "store.db").string());
    } else {
      std::string url = o.pg_url;
      if (url.empty()) {
        auto started = store::postgres::PgTestServer::Start("frontend_bench");
        if (!started.ok()) Die("PostgreSQL test server: " + started.error().ToString());
        pg_server = std::move(started).value();
        url = pg_server->Url();
      }
      // A fresh schema per run, so that earlier runs' clusters do not collide with this one's names.
      url += (url.find('?') == std::string::npos ? "?" : "&");
      url += "schema=frontend_bench_" + std::to_string(getpid());
      urls.emplace_back(name, url);
    }
  }
  return urls;
}

// The same GET against two frontends on the same kind of store (the first one's), `plain` without
// metrics and one recording them, alternating so that both see the same load on the machine. False
// when a response was not 2xx.
bool CompareMetricsOnOff(const Options& o, const StoreUrls& urls, const std::filesystem::path& dir,
                         const Clock& clock, const Logger& logger, Fixture& plain) {
  bool ok = true;
  metrics::Registry registry;
  std::string url = urls.front().second;
  if (urls.front().first == "sqlite") url = "sqlite://" + (dir / "store_metrics.db").string();
  auto metered = OpenFixture(url, clock, logger, &registry);
  double off = 0, on = 0;
  for (int round = 0; round < o.metrics_rounds; ++round) {
    for (bool with : {false, true}) {
      Fixture& f = with ? *metered : plain;
      auto* fe_ptr = f.fe.get();
      auto server = http::Server::Start(ServerOptionsFor(o),
                                        [fe_ptr](http::Request&& r) { return fe_ptr->Handle(std::move(r)); });
      if (!server.ok()) Die("frontend server: " + server.error().ToString());
      const std::string base = "http://127.0.0.1:" + std::to_string((*server)->port());
      WrkResult w = RunWrk(base + f.get_target, o.duration, o.connections, o.wrk_threads, "");
      (*server)->Stop();
      std::printf("metrics %-3s round %d: GET %.0f req/s, p99 %.2f ms\n", with ? "on" : "off", round + 1,
                  w.requests_per_second, w.p99_ms);
      (with ? on : off) += w.requests_per_second;
      if (w.non_2xx > 0) ok = false;
    }
  }
  const double ratio = off > 0 ? on / off : 0;
  std::printf("GET with metrics on: %.1f%% of metrics off (%d rounds of %d s each); target >= 97%%: %s\n",
              100 * ratio, o.metrics_rounds, o.duration, ratio >= 0.97 ? "met" : "NOT met");
  return ok;
}

// The table of every store's figures and the targets they meet; false when a response was not 2xx or
// the GET target on SQLite is not met.
bool PrintRuns(const std::vector<StoreRun>& runs, const std::optional<WrkResult>& base_get, bool want_get,
               bool want_put) {
  bool ok = true;
  std::printf("\n%-12s %-4s %10s %10s %10s %8s\n", "store", "kind", "req/s", "p50 ms", "p99 ms", "non-2xx");
  for (const auto& r : runs) {
    for (const auto& [kind, result] : {std::pair{"GET", &r.get}, std::pair{"PUT", &r.put}}) {
      if (!result->has_value()) continue;
      const WrkResult& w = **result;
      std::printf("%-12s %-4s %10.0f %10.3f %10.3f %8ld\n", r.store.c_str(), kind, w.requests_per_second,
                  w.p50_ms, w.p99_ms, w.non_2xx);
      if (w.non_2xx > 0) ok = false;
    }
  }
  if (runs.size() == 2 && want_get && want_put) {
    std::printf("\n%s / %s: GET %.0f%%, PUT %.0f%% of the throughput\n", runs[1].store.c_str(),
                runs[0].store.c_str(),
                100.0 * runs[1].get->requests_per_second / runs[0].get->requests_per_second,
                100.0 * runs[1].put->requests_per_second / runs[0].put->requests_per_second);
  }
  for (const auto& r : runs) {
    if (r.store == "sqlite" && r.get) {
      bool met = r.get->requests_per_second >= 0.7 * base_get->requests_per_second && r.get->p99_ms < 5.0;
      std::printf("target GET on sqlite >= 70%% of minimal, p99 < 5 ms: %s\n", met ? "met" : "NOT met");
      ok = ok && met;
    }
  }
  if (want_put) {
    std::printf(
        "PUT: a create writes one durable store batch (resource + operation) and answers; the backend\n"
        "  records the internal ID with the create's first status change.\n");
  }
  return ok;
}

void PrintBaselineComparison(const Options& o, const std::vector<StoreRun>& runs,
                             const std::map<std::string, WrkResult>& baseline_before,
                             const std::map<std::string, WrkResult>& baseline_after) {
  std::printf(
      "\nPUT create, this build beside the baseline (%s), same options; the baseline's\n"
      "req/s and p99 are the means of its runs before and after this build's:\n",
      o.baseline.c_str());
  std::printf("%-12s %17s %10s %10s %12s %10s %8s  %s\n", "store", "base before/after", "base req/s",
              "base p99", "req/s", "p99 ms", "ratio", "target");
  for (const auto& r : runs) {
    const WrkResult& before = baseline_before.at(r.store);
    const WrkResult& after = baseline_after.at(r.store);
    if (!r.put) continue;
    const double base_rate = (before.requests_per_second + after.requests_per_second) / 2;
    const double base_p99 = (before.p99_ms + after.p99_ms) / 2;
    const double ratio = r.put->requests_per_second / base_rate;
    const bool sqlite = r.store == "sqlite";
    const bool met = sqlite ? ratio >= 3.0 && r.put->p99_ms < 40.0 : ratio >= 2.0;
    std::printf("%-12s %8.0f/%-8.0f %10.0f %10.3f %12.0f %10.3f %7.2fx  %s: %s\n", r.store.c_str(),
                before.requests_per_second, after.requests_per_second, base_rate, base_p99,
                r.put->requests_per_second, r.put->p99_ms, ratio, sqlite ? ">= 3x, p99 < 40 ms" : ">= 2x",
                met ? "met" : "NOT met");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  const std::filesystem::path dir = WorkDir(o);

  SystemClock clock;
  // Access logs are formatted and written as in production, to a sink nobody reads.
  std::FILE* devnull = std::fopen("/dev/null", "w");
  if (devnull == nullptr) Die("cannot open /dev/null");
  Logger logger(std::make_shared<StreamLogSink>(devnull), &clock, LogLevel::kInfo, "frontend");

  std::unique_ptr<store::postgres::PgTestServer> pg_server;
  const StoreUrls urls = UrlsOfStores(o, dir, pg_server);

  if (o.https) {
    auto f = OpenFixture(urls.front().second, clock, logger);
    int rc = RunHttps(o, *f, dir, clock);
    std::fclose(devnull);
    if (!o.keep && o.dir.empty()) std::filesystem::remove_all(dir);
    return rc;
  }

  if (o.in_process > 0) {
    for (const auto& [name, url] : urls) {
      std::printf("store %s\n", name.c_str());
      auto f = OpenFixture(url, clock, logger);
      RunInProcess(o, *f);
    }
    std::fclose(devnull);
    if (!o.keep && o.dir.empty()) std::filesystem::remove_all(dir);
    return 0;
  }

  const std::string script = WritePutScript(dir);
  std::map<std::string, WrkResult> baseline_before, baseline_after;
  const bool with_baseline = !o.baseline.empty() && (o.only.empty() || o.only == "put");
  if (with_baseline) {
    std::printf("baseline: %s (PUT, same options, --workers %d), run before and after this build\n",
                o.baseline.c_str(), o.baseline_workers > 0 ? o.baseline_workers : o.workers);
    baseline_before = RunBaselinePut(o);
  }
  std::printf("frontend_bench: wrk -t%d -c%d -d%ds --latency; %d-%d handler workers, %d I/O threads each\n",
              o.wrk_threads, o.connections, o.duration, o.workers, o.max_workers, o.io_threads);
  for (const auto& [name, url] : urls) std::printf("store %-10s %s\n", name.c_str(), url.c_str());

  // The minimal server answers the GET body of the first store's cluster (the same for every store).
  std::vector<std::unique_ptr<Fixture>> fixtures;
  for (const auto& [name, url] : urls) fixtures.push_back(OpenFixture(url, clock, logger));
  const std::string fixed_body = fixtures.front()->get_body;
  std::printf("GET body %zu bytes (the minimal server answers the same bytes)\n\n", fixed_body.size());
  auto minimal = http::Server::Start(ServerOptionsFor(o), [&fixed_body](http::Request&& r) {
    http::Response res{bhttp::status::ok, r.version()};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = fixed_body;
    res.keep_alive(r.keep_alive());
    return res;
  });
  if (!minimal.ok()) Die("minimal server: " + minimal.error().ToString());
  const std::string min_base = "http://127.0.0.1:" + std::to_string((*minimal)->port());
  const std::string get_target = fixtures.front()->get_target;
  const bool want_get = o.only.empty() || o.only == "get";
  const bool want_put = o.only.empty() || o.only == "put";
  std::optional<WrkResult> base_get;
  std::optional<WrkResult> base_put;
  if (want_get) {
    base_get = RunWrk(min_base + get_target, o.duration, o.connections, o.wrk_threads, "");
    Print("minimal server GET", *base_get, nullptr);
  }
  if (want_put) {
    base_put = RunWrk(min_base + get_target, o.duration, o.connections, o.wrk_threads, script);
    Print("minimal server PUT", *base_put, nullptr);
  }

  std::vector<StoreRun> runs;
  for (size_t i = 0; i < urls.size(); ++i) {
    runs.push_back(RunStore(o, urls[i].first, *fixtures[i], script, base_get ? &*base_get : nullptr,
                            base_put ? &*base_put : nullptr));
  }

  bool ok = true;
  if (o.metrics_rounds > 0 && want_get)
    ok = CompareMetricsOnOff(o, urls, dir, clock, logger, *fixtures.front());
  ok = PrintRuns(runs, base_get, want_get, want_put) && ok;
  (*minimal)->Stop();
  fixtures.clear();
  pg_server.reset();  // before the baseline's second run, which starts its own
  if (with_baseline) {
    baseline_after = RunBaselinePut(o);
    PrintBaselineComparison(o, runs, baseline_before, baseline_after);
  }
  std::fclose(devnull);
  if (!o.keep && o.dir.empty()) std::filesystem::remove_all(dir);
  return ok ? 0 : 2;
}
