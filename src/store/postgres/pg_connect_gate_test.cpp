#include "store/postgres/pg_connect_gate.h"

#include <gtest/gtest.h>

namespace hcprp::store::postgres {
namespace {

using namespace std::chrono_literals;
using Tp = ConnectGate::Clock::time_point;
constexpr auto kConnected = ConnectGate::Outcome::kConnected;
constexpr auto kNotAnswered = ConnectGate::Outcome::kNotAnswered;
constexpr auto kTurnedDown = ConnectGate::Outcome::kTurnedDown;

constexpr Tp kT0 = Tp() + 1000s;

// The rule for unanswered attempts alone: failures start no back-off.
ConnectGate WithoutBackoff() { return ConnectGate(500ms, 0ms, 0ms); }

TEST(ConnectGate, LetsAttemptsRunSideBySideWhileTheServerAnswers) {
  ConnectGate gate = WithoutBackoff();
  auto a = gate.Start(kT0);
  EXPECT_TRUE(gate.MayStart(kT0 + 10ms));
  auto b = gate.Start(kT0 + 10ms);
  gate.Finish(b, kT0 + 20ms, kConnected);
  // `a` is slow, but a later attempt got a session: the server answers.
  EXPECT_TRUE(gate.MayStart(kT0 + 2s));
  EXPECT_EQ(gate.Waited(kT0 + 2s), 0s);
  gate.Finish(a, kT0 + 2s, kConnected);
  EXPECT_TRUE(gate.MayStart(kT0 + 2s));
}

TEST(ConnectGate, AttemptsNoServerAnsweredNeverCloseIt) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  for (int i = 0; i < 10; ++i) {
    Tp now = kT0 + i * 10ms;
    ASSERT_TRUE(gate.MayStart(now));
    gate.Finish(gate.Start(now), now + 1ms, kNotAnswered);  // nothing listens (a server restarting)
  }
  EXPECT_EQ(gate.failures(), 0);
  EXPECT_TRUE(gate.MayStart(kT0 + 101ms));
}

TEST(ConnectGate, AttemptsTurnedDownInARowBackOffDoublingUpToTheMaximum) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  Tp now = kT0;
  ASSERT_TRUE(gate.MayStart(now));
  gate.Finish(gate.Start(now), now + 5ms, kTurnedDown);  // turned down: the server is read-only
  EXPECT_EQ(gate.failures(), 1);
  EXPECT_FALSE(gate.MayStart(kT0 + 104ms));
  EXPECT_EQ(gate.Opens(kT0 + 50ms), kT0 + 105ms);
  // Each further failure doubles the wait after it: 200, 400, 800, then 1000 ms for good.
  const std::chrono::milliseconds waits[] = {200ms, 400ms, 800ms, 1000ms, 1000ms};
  for (auto wait : waits) {
    now = gate.Opens(now + 1ms);
    ASSERT_TRUE(gate.MayStart(now));
    gate.Finish(gate.Start(now), now + 5ms, kTurnedDown);
    EXPECT_FALSE(gate.MayStart(now + 5ms + wait - 1ms)) << wait.count();
    EXPECT_EQ(gate.Opens(now + 5ms), now + 5ms + wait) << wait.count();
  }
  EXPECT_EQ(gate.failures(), 6);
  EXPECT_EQ(gate.Waited(now + 6ms), 0s);  // failed, not unanswered
}

TEST(ConnectGate, AfterOneTurnedDownOnlyOneAttemptStartsPerBackoff) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  gate.Finish(gate.Start(kT0), kT0 + 1ms, kTurnedDown);
  ASSERT_TRUE(gate.MayStart(kT0 + 101ms));
  (void)gate.Start(kT0 + 101ms);  // still connecting
  EXPECT_FALSE(gate.MayStart(kT0 + 150ms));
  EXPECT_EQ(gate.Opens(kT0 + 150ms), kT0 + 201ms);
}

TEST(ConnectGate, TellsWhetherAnAttemptTurnedDownStartedSinceAnInstant) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  EXPECT_FALSE(gate.TurnedDownSince(kT0));
  gate.Finish(gate.Start(kT0), kT0 + 5ms, kTurnedDown);
  EXPECT_TRUE(gate.TurnedDownSince(kT0));
  // A call that came after that attempt started waits for the next one's outcome.
  EXPECT_FALSE(gate.TurnedDownSince(kT0 + 1ms));
  gate.Finish(gate.Start(kT0 + 105ms), kT0 + 110ms, kTurnedDown);
  EXPECT_TRUE(gate.TurnedDownSince(kT0 + 1ms));
  gate.Finish(gate.Start(kT0 + 310ms), kT0 + 320ms, kConnected);
  EXPECT_FALSE(gate.TurnedDownSince(kT0));
}

TEST(ConnectGate, ASuccessEndsTheBackoff) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  Tp now = kT0;
  for (int i = 0; i < 5; ++i) {
    now = gate.Opens(now);
    gate.Finish(gate.Start(now), now + 1ms, kTurnedDown);
  }
  ASSERT_EQ(gate.failures(), 5);
  now = gate.Opens(now);
  auto ok = gate.Start(now);
  gate.Finish(ok, now + 2ms, kConnected);
  EXPECT_EQ(gate.failures(), 0);
  EXPECT_TRUE(gate.MayStart(now + 2ms));
  // The next failure starts again from the shortest wait.
  gate.Finish(gate.Start(now + 3ms), now + 4ms, kTurnedDown);
  EXPECT_EQ(gate.Opens(now + 4ms), now + 104ms);
}

TEST(ConnectGate, AnAttemptOlderThanTheLastSuccessTurnedDownDoesNotCount) {
  ConnectGate gate(500ms, 100ms, 1000ms);
  auto old = gate.Start(kT0);
  gate.Finish(gate.Start(kT0 + 10ms), kT0 + 20ms, kConnected);
  gate.Finish(old, kT0 + 5s, kTurnedDown);  // its connect_timeout, long after
  EXPECT_EQ(gate.failures(), 0);
  EXPECT_TRUE(gate.MayStart(kT0 + 5s));
}

TEST(ConnectGate, AnUnansweredAttemptLetsOneMoreStartPerPeriod) {
  ConnectGate gate = WithoutBackoff();
  (void)gate.Start(kT0);
  EXPECT_TRUE(gate.MayStart(kT0 + 499ms));
  (void)gate.Start(kT0 + 100ms);
  // The first has waited a period and nothing succeeded since: closed until a period after the newest.
  EXPECT_FALSE(gate.MayStart(kT0 + 500ms));
  EXPECT_EQ(gate.Opens(kT0 + 500ms), kT0 + 600ms);
  EXPECT_EQ(gate.Waited(kT0 + 500ms), 500ms);
  EXPECT_TRUE(gate.MayStart(kT0 + 600ms));
  (void)gate.Start(kT0 + 600ms);
  EXPECT_FALSE(gate.MayStart(kT0 + 1099ms));
  EXPECT_EQ(gate.Opens(kT0 + 700ms), kT0 + 1100ms);
  EXPECT_TRUE(gate.MayStart(kT0 + 1100ms));
}

TEST(ConnectGate, ASuccessOpensItForEveryone) {
  ConnectGate gate = WithoutBackoff();
  (void)gate.Start(kT0);  // hangs (its SYNs lost in a partition)
  (void)gate.Start(kT0 + 1s);
  auto healed = gate.Start(kT0 + 2s);
  EXPECT_FALSE(gate.MayStart(kT0 + 2100ms));
  gate.Finish(healed, kT0 + 2050ms, kConnected);
  // The attempts started before that success still hang, but no longer count.
  EXPECT_TRUE(gate.MayStart(kT0 + 2100ms));
  EXPECT_EQ(gate.Opens(kT0 + 2100ms), kT0 + 2100ms);
}

TEST(ConnectGate, AttemptsThatEndReopenIt) {
  ConnectGate gate = WithoutBackoff();
  auto a = gate.Start(kT0);
  auto b = gate.Start(kT0 + 500ms);
  EXPECT_FALSE(gate.MayStart(kT0 + 900ms));
  gate.Finish(a, kT0 + 900ms, kTurnedDown);  // connect_timeout
  // `b` has waited 400 ms only.
  EXPECT_TRUE(gate.MayStart(kT0 + 900ms));
  gate.Finish(b, kT0 + 950ms, kTurnedDown);
  EXPECT_TRUE(gate.MayStart(kT0 + 5s));
}

TEST(ConnectGate, TellsAttemptsThatStartedAtTheSameInstantApart) {
  ConnectGate gate = WithoutBackoff();
  auto a = gate.Start(kT0);
  auto b = gate.Start(kT0);
  ASSERT_TRUE(gate.MayStart(kT0 + 600ms));
  (void)gate.Start(kT0 + 600ms);
  gate.Finish(a, kT0 + 700ms, kTurnedDown);
  EXPECT_FALSE(gate.MayStart(kT0 + 700ms));  // `b`, started with `a`, still waits
  gate.Finish(b, kT0 + 700ms, kTurnedDown);
  EXPECT_TRUE(gate.MayStart(kT0 + 700ms));
}

}  // namespace
}  // namespace hcprp::store::postgres
