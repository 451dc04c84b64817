// frontend_bench: the ARM frontend served by the HTTP server (src/http) on a SQLite file store with
// an in-memory Cluster Service, beside a minimal server on the same transport answering a fixed JSON
// body of the same size, both driven by wrk. Prints throughput and p50/p99 latency of each run and
// the ratio to the minimal server.
//
//   frontend_bench [--duration SECONDS] [--connections N] [--wrk-threads N] [--workers N]
//                  [--dir DIR] [--only get|put] [--keep]
//
// Runs:
//   GET  one cluster (subscription check + resource read + rendering), against the minimal server.
//   PUT  creating clusters with unique names (a wrk Lua script numbers them per wrk thread): body
//        parse, validation, two durable store batches and the Cluster Service create.
// Targets: GET >= 40% of the minimal server's throughput with p99 < 5 ms; PUT create >= 50% of the
// store's raw durable batch rate (bench/store_bench, "batch of 5" raw row) on the same machine.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "frontend/frontend.h"
#include "frontend/testing/fake_cluster_service.h"
#include "http/message.h"
#include "http/server.h"
#include "store/store.h"

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
  return R"({"location":"eastus","tags":{"env":"bench"},
"identity":{"type":"UserAssigned","userAssignedIdentities":{
"/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi":{}}},
"properties":{"version":{"id":"4.19"},"platform":{
"subnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/b",
"networkSecurityGroupId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkSecurityGroups/n",
"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},
"serviceManagedIdentity":"/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi"}}}}})";
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
  std::string dir;
  std::string only;
  bool keep = false;
  long in_process = 0;  // > 0: only call Frontend::Handle this many times per kind, no HTTP (profiling)
};

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
    } else if (a == "--dir") {
      o.dir = next();
    } else if (a == "--only") {
      o.only = next();
    } else if (a == "--keep") {
      o.keep = true;
    } else if (a == "--in-process") {
      o.in_process = std::atol(next().c_str());
    } else {
      Die("unknown argument " + a +
          " (--duration S, --connections N, --wrk-threads N, --workers N, --dir DIR, --only get|put, "
          "--keep)");
    }
  }
  if (o.duration < 1 || o.connections < 1 || o.wrk_threads < 1 || o.workers < 1) Die("bad option value");
  return o;
}

void Print(const char* name, const WrkResult& r, const WrkResult* baseline) {
  std::printf("%-28s %10.0f req/s   p50 %7.3f ms   p99 %7.3f ms", name, r.requests_per_second, r.p50_ms,
              r.p99_ms);
  if (baseline != nullptr) {
    std::printf("   %5.1f%% of minimal", 100.0 * r.requests_per_second / baseline->requests_per_second);
  }
  if (r.non_2xx > 0 || r.errors > 0) std::printf("   (non-2xx %ld, socket errors %ld)", r.non_2xx, r.errors);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  std::filesystem::path dir = o.dir;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "frontend_bench.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp failed");
    dir = tmpl;
  }
  std::filesystem::create_directories(dir);

  SystemClock clock;
  auto opened = store::OpenStore("sqlite://" + (dir / "store.db").string(), {.clock = &clock});
  if (!opened.ok()) Die("store: " + opened.error().ToString());
  std::unique_ptr<store::Store> st = std::move(opened).value();
  frontend::testing::FakeClusterService cs;
  // Access logs are formatted and written as in production, to a sink nobody reads.
  std::FILE* devnull = std::fopen("/dev/null", "w");
  if (devnull == nullptr) Die("cannot open /dev/null");
  Logger logger(std::make_shared<StreamLogSink>(devnull), &clock, LogLevel::kInfo, "frontend");
  auto created = frontend::Frontend::Create({}, st.get(), &cs, &clock, logger);
  if (!created.ok()) Die("frontend: " + created.error().ToString());
  std::unique_ptr<frontend::Frontend> fe = std::move(created).value();

  auto sub =
      Call(*fe, bhttp::verb::put, "/subscriptions/" + std::string(kSub) + "?api-version=2.0",
           R"({"state":"Registered","registrationDate":"2025-01-01T00:00:00Z","properties":{"tenantId":")" +
               std::string(kTenant) + R"("}})");
  if (sub.result_int() != 200) Die("subscription PUT: " + sub.body());
  const std::string get_target = ClusterPrefix() + "getme?api-version=" + std::string(kVersion);
  auto put = Call(*fe, bhttp::verb::put, get_target, ClusterBody());
  if (put.result_int() != 201) Die("cluster PUT: " + put.body());
  auto get = Call(*fe, bhttp::verb::get, get_target, "");
  if (get.result_int() != 200) Die("cluster GET: " + get.body());

  if (o.in_process > 0) {
    // One thread calling Handle directly: the cost of the frontend itself, for perf or callgrind.
    using Steady = std::chrono::steady_clock;
    if (o.only.empty() || o.only == "get") {
      auto start = Steady::now();
      for (long i = 0; i < o.in_process; ++i) {
        if (Call(*fe, bhttp::verb::get, get_target, "").result_int() != 200) Die("GET failed");
      }
      double secs = std::chrono::duration<double>(Steady::now() - start).count();
      std::printf("in-process GET: %ld calls, %.1f us each\n", o.in_process, 1e6 * secs / o.in_process);
    }
    if (o.only.empty() || o.only == "put") {
      auto start = Steady::now();
      for (long i = 0; i < o.in_process; ++i) {
        std::string target =
            ClusterPrefix() + "p" + std::to_string(i) + "?api-version=" + std::string(kVersion);
        auto r = Call(*fe, bhttp::verb::put, target, ClusterBody());
        if (r.result_int() != 201) Die("PUT failed: " + r.body());
      }
      double secs = std::chrono::duration<double>(Steady::now() - start).count();
      std::printf("in-process PUT create: %ld calls, %.1f us each\n", o.in_process,
                  1e6 * secs / o.in_process);
    }
    fe.reset();
    st.reset();
    std::fclose(devnull);
    if (!o.keep && o.dir.empty()) std::filesystem::remove_all(dir);
    return 0;
  }

  http::ServerOptions so;
  so.threads = o.workers;
  so.max_threads = o.workers;
  so.io_threads = 1;
  so.server_header = "hcprp";
  so.on_too_large = [](const http::Request& r) { return frontend::TooLargeResponse(r, 4 * 1024 * 1024); };
  auto* fe_ptr = fe.get();
  auto fe_server =
      http::Server::Start(so, [fe_ptr](http::Request&& r) { return fe_ptr->Handle(std::move(r)); });
  if (!fe_server.ok()) Die("frontend server: " + fe_server.error().ToString());
  const std::string fixed_body = get.body();
  auto minimal = http::Server::Start(so, [&fixed_body](http::Request&& r) {
    http::Response res{bhttp::status::ok, r.version()};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = fixed_body;
    res.keep_alive(r.keep_alive());
    return res;
  });
  if (!minimal.ok()) Die("minimal server: " + minimal.error().ToString());

  const std::string fe_base = "http://127.0.0.1:" + std::to_string((*fe_server)->port());
  const std::string min_base = "http://127.0.0.1:" + std::to_string((*minimal)->port());
  const std::string script = WritePutScript(dir);
  std::printf("frontend_bench: wrk -t%d -c%d -d%ds --latency; %d handler workers each; store %s\n",
              o.wrk_threads, o.connections, o.duration, o.workers, (dir / "store.db").c_str());
  std::printf("GET body %zu bytes (the minimal server answers the same bytes)\n\n", fixed_body.size());

  bool ok = true;
  if (o.only.empty() || o.only == "get") {
    WrkResult base = RunWrk(min_base + get_target, o.duration, o.connections, o.wrk_threads, "");
    WrkResult fe_get = RunWrk(fe_base + get_target, o.duration, o.connections, o.wrk_threads, "");
    Print("minimal server GET", base, nullptr);
    Print("frontend GET cluster", fe_get, &base);
    bool met = fe_get.requests_per_second >= 0.4 * base.requests_per_second && fe_get.p99_ms < 5.0 &&
               fe_get.non_2xx == 0;
    std::printf("  target GET >= 40%% of minimal, p99 < 5 ms: %s\n\n", met ? "met" : "NOT met");
    ok = ok && met;
  }
  if (o.only.empty() || o.only == "put") {
    WrkResult base = RunWrk(min_base + get_target, o.duration, o.connections, o.wrk_threads, script);
    WrkResult fe_put = RunWrk(fe_base + get_target, o.duration, o.connections, o.wrk_threads, script);
    Print("minimal server PUT", base, nullptr);
    Print("frontend PUT create cluster", fe_put, &base);
    std::printf(
        "  each create commits 2 durable store batches (resource + operation, then the internal ID).\n"
        "  target PUT >= 50%% of the store's raw durable batch rate: compare %.0f req/s with the raw\n"
        "  \"batch of 5\" row of store_bench on this machine (build target store_bench, then\n"
        "  bench/store_bench/store_bench --dir %s); met when %.0f >= 0.5 x that rate.\n",
        fe_put.requests_per_second, dir.c_str(), fe_put.requests_per_second);
    if (fe_put.non_2xx > 0) ok = false;
  }

  (*fe_server)->Stop();
  (*minimal)->Stop();
  fe.reset();
  st.reset();
  std::fclose(devnull);
  if (!o.keep && o.dir.empty()) std::filesystem::remove_all(dir);
  return ok ? 0 : 2;
}
