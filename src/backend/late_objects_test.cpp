#include "backend/late_objects.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;

const TimePoint kT0 = FromUnixMillis(1'700'000'000'000);

TEST(LateObjectTest, OnlyARecentObjectNotBeingDeletedAndMadeOutsideTheRestoreGapMayBeLate) {
  EXPECT_TRUE(MayBeLateObject("validating", kT0 - 1s, std::nullopt, kT0));
  EXPECT_TRUE(MayBeLateObject("ready", kT0 - kLateObjectAge, std::nullopt, kT0));
  EXPECT_TRUE(MayBeLateObject("ready", kT0 + 5s, std::nullopt, kT0)) << "clocks differ";
  EXPECT_FALSE(MayBeLateObject("ready", kT0 - kLateObjectAge - 1s, std::nullopt, kT0))
      << "an older object is the orphan collector's";
  EXPECT_FALSE(MayBeLateObject("uninstalling", kT0 - 1s, std::nullopt, kT0));
  EXPECT_FALSE(MayBeLateObject("deleted", kT0 - 1s, std::nullopt, kT0));
  EXPECT_FALSE(MayBeLateObject("ready", std::nullopt, std::nullopt, kT0)) << "no creation time";
  const RestoreGap gap{kT0 - 5min, kT0 - 1min};
  EXPECT_FALSE(MayBeLateObject("ready", kT0 - 2min, gap, kT0)) << "held for the operator, never deleted";
  EXPECT_TRUE(MayBeLateObject("ready", kT0 - 30s, gap, kT0)) << "made after this backend started";
}

TEST(LateObjectTest, DeletedOnlyWhenNothingCanRecordItAndTheStoreKnowsTheResourceEnded) {
  const std::string href = "/api/clusters_mgmt/v1/clusters/a";
  LateObjectFacts deleted;  // no document; the create canceled by the DELETE, the delete done
  deleted.ended = true;
  EXPECT_TRUE(IsLateObject(href, deleted));

  LateObjectFacts unknown;  // no document and no operation: nothing says how it ended
  EXPECT_FALSE(IsLateObject(href, unknown));

  LateObjectFacts recorded = deleted;  // the document points at it
  recorded.document = true;
  recorded.recorded_href = href;
  EXPECT_FALSE(IsLateObject(href, recorded));

  LateObjectFacts in_doubt = deleted;  // a create in flight may still record it
  in_doubt.document = true;
  in_doubt.active_operation = true;
  EXPECT_FALSE(IsLateObject(href, in_doubt));

  LateObjectFacts racing = deleted;  // an operation whose document write has not reached the resource
  racing.operation_in_flight = true;
  EXPECT_FALSE(IsLateObject(href, racing));

  LateObjectFacts superseded = deleted;  // created again since: the document points at another object
  superseded.document = true;
  superseded.recorded_href = "/api/clusters_mgmt/v1/clusters/b";
  EXPECT_TRUE(IsLateObject(href, superseded));

  LateObjectFacts failed = deleted;  // the create failed and recorded no object
  failed.document = true;
  EXPECT_TRUE(IsLateObject(href, failed));
}

}  // namespace
}  // namespace hcprp::backend
