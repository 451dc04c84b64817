#include "store/postgres/pg_connect_gate.h"

#include <gtest/gtest.h>

namespace hcprp::store::postgres {
namespace {

using namespace std::chrono_literals;
using Tp = ConnectGate::Clock::time_point;

constexpr Tp kT0 = Tp() + 1000s;

TEST(ConnectGate, LetsAttemptsRunSideBySideWhileTheServerAnswers) {
  ConnectGate gate(500ms);
  auto a = gate.Start(kT0);
  EXPECT_TRUE(gate.MayStart(kT0 + 10ms));
  auto b = gate.Start(kT0 + 10ms);
  gate.Finish(b, kT0 + 20ms, /*connected=*/true);
  // `a` is slow, but a later attempt got a session: the server answers.
  EXPECT_TRUE(gate.MayStart(kT0 + 2s));
  EXPECT_EQ(gate.Waited(kT0 + 2s), 0s);
  gate.Finish(a, kT0 + 2s, /*connected=*/true);
  EXPECT_TRUE(gate.MayStart(kT0 + 2s));
}

TEST(ConnectGate, RefusedAttemptsNeverCloseIt) {
  ConnectGate gate(500ms);
  for (int i = 0; i < 10; ++i) {
    Tp now = kT0 + i * 10ms;
    ASSERT_TRUE(gate.MayStart(now));
    gate.Finish(gate.Start(now), now + 1ms, /*connected=*/false);
  }
  EXPECT_TRUE(gate.MayStart(kT0 + 5s));
}

TEST(ConnectGate, AnUnansweredAttemptLetsOneMoreStartPerPeriod) {
  ConnectGate gate(500ms);
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
  ConnectGate gate(500ms);
  (void)gate.Start(kT0);  // hangs (its SYNs lost in a partition)
  (void)gate.Start(kT0 + 1s);
  auto healed = gate.Start(kT0 + 2s);
  EXPECT_FALSE(gate.MayStart(kT0 + 2100ms));
  gate.Finish(healed, kT0 + 2050ms, /*connected=*/true);
  // The attempts started before that success still hang, but no longer count.
  EXPECT_TRUE(gate.MayStart(kT0 + 2100ms));
  EXPECT_EQ(gate.Opens(kT0 + 2100ms), kT0 + 2100ms);
}

TEST(ConnectGate, AttemptsThatEndReopenIt) {
  ConnectGate gate(500ms);
  auto a = gate.Start(kT0);
  auto b = gate.Start(kT0 + 500ms);
  EXPECT_FALSE(gate.MayStart(kT0 + 900ms));
  gate.Finish(a, kT0 + 900ms, /*connected=*/false);  // connect_timeout
  // `b` has waited 400 ms only.
  EXPECT_TRUE(gate.MayStart(kT0 + 900ms));
  gate.Finish(b, kT0 + 950ms, /*connected=*/false);
  EXPECT_TRUE(gate.MayStart(kT0 + 5s));
}

TEST(ConnectGate, TellsAttemptsThatStartedAtTheSameInstantApart) {
  ConnectGate gate(500ms);
  auto a = gate.Start(kT0);
  auto b = gate.Start(kT0);
  ASSERT_TRUE(gate.MayStart(kT0 + 600ms));
  (void)gate.Start(kT0 + 600ms);
  gate.Finish(a, kT0 + 700ms, /*connected=*/false);
  EXPECT_FALSE(gate.MayStart(kT0 + 700ms));  // `b`, started with `a`, still waits
  gate.Finish(b, kT0 + 700ms, /*connected=*/false);
  EXPECT_TRUE(gate.MayStart(kT0 + 700ms));
}

}  // namespace
}  // namespace hcprp::store::postgres
