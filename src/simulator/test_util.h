// Helpers for the simulator's tests: calls through Simulator::Handle, a cluster body, a temporary
// directory and a fixture over a FakeClock.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/uuid.h"
#include "simulator/simulator.h"

namespace hcprp::simulator {

using http::Verb;

struct Answer {
  unsigned status = 0;
  json::value body;
  const json::object& obj() const { return body.as_object(); }
  std::string str(std::string_view key) const { return std::string(GetString(obj(), key).value_or("")); }
  std::string state() const {
    if (auto* st = GetObject(obj(), "status")) return std::string(GetString(*st, "state").value_or(""));
    return std::string(GetString(obj(), "state").value_or(""));
  }
};

inline Answer Call(Simulator& sim, Verb verb, const std::string& target, const std::string& body = "",
                   const std::string& idempotency_key = "") {
  http::Request req = http::MakeRequest(verb, target, body);
  if (!idempotency_key.empty()) req.set("X-Idempotency-Key", idempotency_key);
  http::Response res = sim.Handle(std::move(req));
  Answer a;
  a.status = res.result_int();
  if (!res.body().empty()) {
    auto v = ParseJson(res.body());
    if (v.ok()) a.body = std::move(*v);
  }
  return a;
}

inline const std::string kBase = "/api/aro_hcp/v1alpha1";

inline std::string ClusterBody(const std::string& name, const std::string& sub = "sub-1") {
  return R"({"name":")" + name + R"(","region":{"id":"westus3"},"azure":{"subscription_id":")" + sub +
         R"(","resource_group_name":"rg","resource_name":")" + name +
         R"("},"version":{"id":"openshift-v4.19"}})";
}

class SimulatorTest : public ::testing::Test {
 protected:
  void StartSim(Profile profile = Profile::kDemo, std::string data_dir = "") {
    SimulatorOptions o;
    o.serve_http = false;
    o.clock = &clock_;
    o.profile = profile;
    o.data_dir = std::move(data_dir);
    o.versions_file = versions_file_;
    o.seed = 42;
    o.event_history = history_;
    auto s = Simulator::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    sim_ = std::move(*s);
  }
  void Advance(Duration d) {
    clock_.Advance(d);
    sim_->RunDueForTest();
  }
  std::string CreateCluster(const std::string& name, const std::string& sub = "sub-1") {
    auto a = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody(name, sub));
    EXPECT_EQ(a.status, 201u) << ToJson(a.body);
    return a.str("href");
  }
  std::string State(const std::string& href) { return Call(*sim_, Verb::get, href + "/status").state(); }
  // Every event after `after`, without waiting.
  json::array Events(uint64_t after) {
    auto a = Call(*sim_, Verb::get, kBase + "/events?after=" + std::to_string(after));
    EXPECT_EQ(a.status, 200u);
    return *GetArray(a.obj(), "items");
  }
  std::vector<std::string> StatesOf(const json::array& events, const std::string& href) {
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (GetString(e.as_object(), "href") == href) out.emplace_back(*GetString(e.as_object(), "state"));
    }
    return out;
  }

  std::string versions_file_;
  FakeClock clock_;
  size_t history_ = 10'000;
  std::unique_ptr<Simulator> sim_;
};

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("hcprp-sim-" + NewUuidV4())) {}
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace hcprp::simulator
