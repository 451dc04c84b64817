#include "store/write_health.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "store/fault_injecting_store.h"

namespace hcprp::store {
namespace {

class WriteHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OpenOptions o;
    o.clock = &clock_;
    auto s = OpenStore("sqlite::memory:", o);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    inner_ = std::move(s).value();
    faulty_ = std::make_unique<FaultInjectingStore>(*inner_);
    health_ = std::make_unique<WriteHealthStore>(faulty_.get());
  }

  FakeClock clock_;
  std::unique_ptr<Store> inner_;
  std::unique_ptr<FaultInjectingStore> faulty_;
  std::unique_ptr<WriteHealthStore> health_;
};

TEST_F(WriteHealthTest, AFailedWriteMarksTheStoreUntilAWriteSucceeds) {
  EXPECT_TRUE(health_->CheckWritable().ok());
  faulty_->FailAllCalls(Error::IoError("disk I/O error: database or disk is full"));
  auto failed = health_->Create(kResources, "p", "a", json::object{});
  ASSERT_FALSE(failed.ok());
  ASSERT_TRUE(health_->failure().has_value());
  EXPECT_TRUE(health_->failure()->Is(ErrorCode::kIoError));
  // Reads still work on a full disk; they do not clear the mark.
  faulty_->ClearFaults();
  faulty_->FailAllCalls(Error::IoError("still full"), FaultInjectingStore::Method::kUpsert);
  EXPECT_TRUE(health_->Read(kResources, "p", "a").error().IsNotFound());
  EXPECT_TRUE(health_->failure().has_value());
  // The probe write fails while the disk is full ...
  Status probe = health_->CheckWritable();
  ASSERT_FALSE(probe.ok());
  EXPECT_TRUE(probe.error().Is(ErrorCode::kIoError));
  // ... and succeeds once it is not: no client write needed to recover.
  faulty_->ClearFaults();
  EXPECT_TRUE(health_->CheckWritable().ok());
  EXPECT_FALSE(health_->failure().has_value());
  EXPECT_TRUE(inner_->Read(kLocks, "readyz", "probe").ok());
}

TEST_F(WriteHealthTest, AnswersAboutTheDataDoNotCount) {
  ASSERT_TRUE(health_->Create(kResources, "p", "a", json::object{}).ok());
  EXPECT_FALSE(health_->Create(kResources, "p", "a", json::object{}).ok());  // already exists
  EXPECT_FALSE(health_->Replace(kResources, "p", "missing", json::object{}).ok());
  EXPECT_FALSE(health_->Upsert(kResources, "p", "a", json::object{}, std::string("\"stale\"")).ok());
  EXPECT_FALSE(health_->failure().has_value());
  faulty_->FailNthCall(1, Error::Unavailable("connection refused"), FaultInjectingStore::Method::kBatch);
  EXPECT_FALSE(health_->Batch(kResources, "p", {WriteOp::Delete("a")}).ok());
  EXPECT_TRUE(health_->failure().has_value());
  EXPECT_TRUE(health_->Delete(kResources, "p", "a").ok());
  EXPECT_FALSE(health_->failure().has_value());
}

}  // namespace
}  // namespace hcprp::store
