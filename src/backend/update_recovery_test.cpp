// The decisions of the unconfirmed-update recovery on their own: no store, no Cluster Service.
#include "backend/update_recovery.h"

#include <gtest/gtest.h>

#include "arm/operation_writes.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;

BackendOptions Options() {
  BackendOptions o;
  o.update_held_after = 1s;
  o.update_recovery_grace = 5s;
  return o;
}

TEST(DecideUnconfirmed, AYoungUpdateIsLeftToItsFrontendWhateverTheObjectShows) {
  const BackendOptions o = Options();
  EXPECT_FALSE(ShouldReadUnconfirmed(500ms, o));
  for (UpdateSeen seen : {UpdateSeen::kNotRead, UpdateSeen::kHeld, UpdateSeen::kNotHeld, UpdateSeen::kGone}) {
    EXPECT_EQ(DecideUnconfirmed(500ms, seen, o), UnconfirmedStep::kWait);
  }
}

TEST(DecideUnconfirmed, AnObjectThatHoldsTheUpdateConfirmsItWithoutWaitingForTheGrace) {
  const BackendOptions o = Options();
  EXPECT_TRUE(ShouldReadUnconfirmed(1s, o));
  EXPECT_EQ(DecideUnconfirmed(1s, UpdateSeen::kHeld, o), UnconfirmedStep::kConfirm);
  EXPECT_EQ(DecideUnconfirmed(10min, UpdateSeen::kHeld, o), UnconfirmedStep::kConfirm);
}

TEST(DecideUnconfirmed, AMissingObjectIsLeftToTheOrdinaryCheck) {
  EXPECT_EQ(DecideUnconfirmed(2s, UpdateSeen::kGone, Options()), UnconfirmedStep::kConfirm);
}

TEST(DecideUnconfirmed, AnObjectWithoutTheUpdateIsSentItOnceTheFrontendIsTakenForGone) {
  const BackendOptions o = Options();
  EXPECT_EQ(DecideUnconfirmed(2s, UpdateSeen::kNotHeld, o), UnconfirmedStep::kWait);
  EXPECT_EQ(DecideUnconfirmed(4999ms, UpdateSeen::kNotHeld, o), UnconfirmedStep::kWait);
  EXPECT_EQ(DecideUnconfirmed(5s, UpdateSeen::kNotHeld, o), UnconfirmedStep::kSend);
}

TEST(DecideUnconfirmed, AnUnreadObjectDecidesNothing) {
  EXPECT_EQ(DecideUnconfirmed(1h, UpdateSeen::kNotRead, Options()), UnconfirmedStep::kWait);
}

TEST(AfterSent, TakenConfirmsRefusedFailsAndAnythingElseWaits) {
  EXPECT_EQ(AfterSent(json::object{{"id", "c"}}), UnconfirmedStep::kConfirm);
  EXPECT_EQ(AfterSent(Error::InvalidArgument("no upgrade path")), UnconfirmedStep::kFail);
  EXPECT_EQ(AfterSent(Error::Conflict("cannot be updated in state updating")), UnconfirmedStep::kWait);
  EXPECT_EQ(AfterSent(Error::Unavailable("down")), UnconfirmedStep::kWait);
  EXPECT_EQ(AfterSent(Error::NotFound("gone")), UnconfirmedStep::kWait);
}

store::Document Doc(std::string id, std::string_view json_text) {
  store::Document d;
  d.id = std::move(id);
  d.body = ParseJson(json_text).value();
  d.etag = "e-" + d.id;
  return d;
}

TEST(PlanUpdateConfirmation, RemovesTheMarkWhileTheStatusIsTheOneReadAndTouchesTheResource) {
  const store::Document op =
      Doc("op1",
          R"({"resourceType":"operation","properties":{"status":"Updating","awaitingClusterService":true}})");
  const store::Document res =
      Doc("r1", R"({"resourceType":"cluster","properties":{"activeOperationId":"op1"}})");
  auto writes = PlanUpdateConfirmation(op, res);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].id, "op1");
  ASSERT_EQ(writes[0].patch.size(), 1u);
  EXPECT_EQ(writes[0].patch[0].kind, store::PatchOp::Kind::kRemove);
  EXPECT_EQ(writes[0].patch[0].path, arm::kPathAwaitingClusterService);
  ASSERT_EQ(writes[0].conditions.size(), 2u);
  EXPECT_EQ(writes[0].conditions[0].path, arm::kPathStatus);
  EXPECT_EQ(writes[0].conditions[0].equals, json::value("Updating"));
  EXPECT_EQ(writes[0].conditions[1].path, arm::kPathAwaitingClusterService);
  EXPECT_EQ(writes[0].conditions[1].equals, json::value(true));
  // The resource is written (a new ETag) with what it holds, only while it names the operation.
  EXPECT_EQ(writes[1].id, "r1");
  ASSERT_EQ(writes[1].patch.size(), 1u);
  EXPECT_EQ(writes[1].patch[0].path, arm::kPathActiveOperationId);
  EXPECT_EQ(writes[1].patch[0].value, json::value("op1"));
  ASSERT_EQ(writes[1].conditions.size(), 1u);
  EXPECT_EQ(writes[1].conditions[0].equals, json::value("op1"));
}

TEST(PlanUpdateConfirmation, ASupersededOrMissingResourceIsLeftAlone) {
  const store::Document op =
      Doc("op1",
          R"({"resourceType":"operation","properties":{"status":"Accepted","awaitingClusterService":true}})");
  EXPECT_EQ(PlanUpdateConfirmation(op, std::nullopt).size(), 1u);
  EXPECT_EQ(PlanUpdateConfirmation(
                op, Doc("r1", R"({"resourceType":"cluster","properties":{"activeOperationId":"op2"}})"))
                .size(),
            1u);
  EXPECT_EQ(PlanUpdateConfirmation(op, Doc("r1", R"({"resourceType":"cluster","properties":{}})")).size(),
            1u);
}

}  // namespace
}  // namespace hcprp::backend
