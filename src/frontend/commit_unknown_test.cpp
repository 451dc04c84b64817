// A store write whose COMMIT answer was lost (the PostgreSQL primary died or failed over during the
// COMMIT): the store returns kUnavailable and the write may or may not have landed. The frontend
// never answers such a request with success (503 + Retry-After), and the client's retry of the same
// request creates nothing twice: the resource and its operation are keyed by the resource ID, so the
// retry finds them (409 while the create runs, the same operation for a DELETE), and the Cluster
// Service create carries the operation ID as idempotency key.
#include <gtest/gtest.h>

#include "arm/cloud_error.h"
#include "frontend/testing/scenario.h"
#include "store/fault_injecting_store.h"

namespace hcprp::frontend::testing {
namespace {

using Faults = store::FaultInjectingStore;

std::string Header(const Response& r, std::string_view name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value());
}

std::string V() { return "?api-version=" + std::string(kStable); }

class CommitOutcomeUnknownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s.RegisterSubscription();
    auto fe = Frontend::Create({}, &faulty, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
    ASSERT_TRUE(fe.ok());
    s.frontend = std::move(fe).value();
  }

  // The nth next batch commits, then its caller gets kUnavailable as if the answer were lost.
  void LoseCommitAnswerOfBatch(uint64_t nth) {
    faulty.SetCrashPoint(Faults::CrashPoint::kAfterCommit, nullptr, nth, Faults::Method::kBatch);
  }

  void ExpectUnavailable(const Response& r) {
    EXPECT_EQ(r.result_int(), 503u) << r.body();
    EXPECT_EQ(Header(r, "Retry-After"), std::to_string(arm::kUnavailableRetryAfterSeconds));
    EXPECT_EQ(Header(r, "x-ms-error-code"), "ServiceUnavailable");
  }

  Scenario s;
  Faults faulty{*s.store};
};

TEST_F(CommitOutcomeUnknownTest, CreateWhoseCommitLandedIs503AndItsRetryCreatesNothingTwice) {
  const std::string path = ClusterPath("lost");
  LoseCommitAnswerOfBatch(1);  // the batch that writes the resource and its create operation
  ExpectUnavailable(s.Put(path + V(), ClusterBody()));
  // It landed: the resource is Accepted with its create operation; the Cluster Service was not
  // asked (the backend creates it after its recovery grace, with the operation ID as key).
  auto resource = s.Resource(path);
  ASSERT_TRUE(resource);
  EXPECT_EQ(resource->provisioning_state, "Accepted");
  ASSERT_EQ(s.Operations().size(), 1u);
  const std::string op_id = s.Operations()[0].id;
  EXPECT_EQ(s.cs.ObjectCount(), 0u);

  // The client retries: the create runs, so 409 and nothing new.
  auto retry = s.Put(path + V(), ClusterBody());
  EXPECT_EQ(retry.result_int(), 409u) << retry.body();
  ASSERT_EQ(s.Operations().size(), 1u);
  EXPECT_EQ(s.Operations()[0].id, op_id);
  EXPECT_EQ(s.cs.ObjectCount(), 0u);
}

TEST_F(CommitOutcomeUnknownTest, CreateWhoseCommitDidNotLandIs503AndItsRetryCreates) {
  const std::string path = ClusterPath("never");
  faulty.SetCrashPoint(Faults::CrashPoint::kBeforeCommit, nullptr, 1, Faults::Method::kBatch);
  ExpectUnavailable(s.Put(path + V(), ClusterBody()));
  EXPECT_FALSE(s.Resource(path));
  EXPECT_TRUE(s.Operations().empty());
  auto retry = s.Put(path + V(), ClusterBody());
  EXPECT_EQ(retry.result_int(), 201u) << retry.body();
  EXPECT_EQ(s.Operations().size(), 1u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

TEST_F(CommitOutcomeUnknownTest, DeleteWhoseCommitLandedIs503AndItsRetryAnswersTheSameOperation) {
  const std::string path = ClusterPath("gone");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishAll();
  LoseCommitAnswerOfBatch(1);  // the batch that marks the resource Deleting with its operation
  ExpectUnavailable(s.Delete(path + V()));
  auto resource = s.Resource(path);
  ASSERT_TRUE(resource);
  EXPECT_EQ(resource->provisioning_state, "Deleting");
  ASSERT_TRUE(resource->active_operation_id);
  const std::string op_id = *resource->active_operation_id;
  auto retry = s.Delete(path + V());
  ASSERT_EQ(retry.result_int(), 202u) << retry.body();
  EXPECT_EQ(OperationIdOf(Header(retry, "Azure-AsyncOperation")), op_id);
  size_t deletes = 0;
  for (const auto& op : s.Operations()) deletes += op.request == arm::OperationRequest::kDelete ? 1 : 0;
  EXPECT_EQ(deletes, 1u);
}

}  // namespace
}  // namespace hcprp::frontend::testing
