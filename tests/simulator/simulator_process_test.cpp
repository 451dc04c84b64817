// Runs `hcprp clusters-service` as a child process, kills it with SIGKILL in the middle of a cluster
// installation, restarts it on the same data dir and checks that the cluster, its idempotency key and
// its transition in progress survived; then stops it with SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "core/json.h"
#include "core/uuid.h"
#include "http/client.h"
#include "http/url.h"

namespace hcprp {
namespace {

using namespace std::chrono_literals;

const std::string kBase = "/api/aro_hcp/v1alpha1";

// A child process whose stdout we read until it prints its URL.
class Process {
 public:
  explicit Process(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Process() {
    if (pid_ > 0) Kill(SIGKILL);
    if (out_) fclose(out_);
  }

  // The "http://host:port" the simulator prints, or "" when it exited first.
  std::string WaitForUrl() {
    char line[1024];
    while (out_ && fgets(line, sizeof line, out_)) {
      std::string s(line);
      auto pos = s.find("http://");
      if (s.find("listening on") != std::string::npos && pos != std::string::npos) {
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        return s.substr(pos);
      }
    }
    return "";
  }

  // Sends `sig` and reaps the child; returns its exit status (or -signal).
  int Kill(int sig) {
    if (pid_ <= 0) return 0;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

struct Answer {
  unsigned status = 0;
  json::object body;
};

Answer Call(http::Client& c, const std::string& base, http::Verb verb, const std::string& target,
            const std::string& body = "", const std::string& key = "") {
  auto req = http::MakeRequest(verb, base + target, body);
  if (!key.empty()) req.set("X-Idempotency-Key", key);
  auto res = c.Send(std::move(req), 10s);
  Answer a;
  if (!res.ok()) return a;
  a.status = res->result_int();
  if (auto v = ParseJson(res->body()); v.ok() && v->is_object()) a.body = v->as_object();
  return a;
}

std::string State(http::Client& c, const std::string& base, const std::string& href) {
  auto a = Call(c, base, http::Verb::get, href + "/status");
  return std::string(GetString(a.body, "state").value_or(""));
}

// Waits through the event stream until `href` reaches `state` (or `deadline` passes).
bool WaitForState(http::Client& c, const std::string& base, const std::string& href, const std::string& state,
                  std::chrono::seconds deadline) {
  auto latest = Call(c, base, http::Verb::get, kBase + "/events?after=latest");
  uint64_t after = static_cast<uint64_t>(GetInt(latest.body, "last_sequence").value_or(0));
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (State(c, base, href) == state) return true;
    auto page = Call(c, base, http::Verb::get, kBase + "/events?timeout=1000&after=" + std::to_string(after));
    if (page.status != 200) return false;
    after = static_cast<uint64_t>(GetInt(page.body, "last_sequence").value_or(static_cast<int64_t>(after)));
  }
  return State(c, base, href) == state;
}

TEST(SimulatorProcess, SurvivesKillNineAndStopsGracefully) {
  auto dir = std::filesystem::temp_directory_path() / ("hcprp-sim-e2e-" + NewUuidV4());
  // demo x2: validating 2 s, pending 2 s, installing 12 s.
  std::vector<std::string> args = {HCPRP_BINARY, "clusters-service", "--listen", "127.0.0.1:0", "--data-dir",
                                   dir.string(), "--profile", "demo", "--time-scale", "2",
                                   // plain HTTP keeps this test about restarts; TLS is tested in src/http
                                   "--insecure-http"};
  http::Client client;
  std::string href, id;
  uint64_t sequence = 0;
  {
    Process p(args);
    std::string base = p.WaitForUrl();
    ASSERT_FALSE(base.empty()) << "the simulator did not start";
    auto created =
        Call(client, base, http::Verb::post, kBase + "/clusters",
             R"({"name":"e2e","azure":{"subscription_id":"s","resource_group_name":"rg"}})", "op-1");
    ASSERT_EQ(created.status, 201u);
    href = std::string(*GetString(created.body, "href"));
    id = std::string(*GetString(created.body, "id"));
    ASSERT_TRUE(WaitForState(client, base, href, "installing", 20s));
    auto latest = Call(client, base, http::Verb::get, kBase + "/events?after=latest");
    sequence = static_cast<uint64_t>(*GetInt(latest.body, "last_sequence"));
    EXPECT_EQ(p.Kill(SIGKILL), -SIGKILL);
  }
  client.CloseIdle();
  {
    Process p(args);
    std::string base = p.WaitForUrl();
    ASSERT_FALSE(base.empty()) << "the simulator did not restart";
    EXPECT_EQ(State(client, base, href), "installing");
    auto again = Call(client, base, http::Verb::post, kBase + "/clusters",
                      R"({"name":"e2e","azure":{"subscription_id":"s","resource_group_name":"rg"}})", "op-1");
    EXPECT_EQ(again.status, 200u);
    EXPECT_EQ(GetString(again.body, "id"), id);
    // The sequence continued from where the killed process was.
    auto latest = Call(client, base, http::Verb::get, kBase + "/events?after=latest");
    EXPECT_GE(static_cast<uint64_t>(*GetInt(latest.body, "last_sequence")), sequence);
    EXPECT_TRUE(WaitForState(client, base, href, "ready", 30s));
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(p.Kill(SIGTERM), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hcprp
