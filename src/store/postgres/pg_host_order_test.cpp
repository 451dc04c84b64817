#include "store/postgres/pg_host_order.h"

#include <gtest/gtest.h>

namespace hcprp::store::postgres {
namespace {

TEST(HostsWithFirst, MovesTheServerWithItsPortToTheFront) {
  HostList list{.hosts = "db1,db2,db3", .ports = "5432,5433,5434"};
  EXPECT_EQ(HostsWithFirst(list, "db2", "5433"),
            (HostList{.hosts = "db2,db1,db3", .ports = "5433,5432,5434"}));
  EXPECT_EQ(HostsWithFirst(list, "db3", "5434"),
            (HostList{.hosts = "db3,db1,db2", .ports = "5434,5432,5433"}));
  EXPECT_EQ(HostsWithFirst(list, "db1", "5432"), list);
}

TEST(HostsWithFirst, TellsServersOnOneHostApartByPort) {
  HostList list{.hosts = "127.0.0.1,127.0.0.1", .ports = "6001,6002"};
  EXPECT_EQ(HostsWithFirst(list, "127.0.0.1", "6002"),
            (HostList{.hosts = "127.0.0.1,127.0.0.1", .ports = "6002,6001"}));
}

TEST(HostsWithFirst, KeepsAPortThatServesEveryHost) {
  EXPECT_EQ(HostsWithFirst({.hosts = "db1,db2", .ports = "5432"}, "db2", "5432"),
            (HostList{.hosts = "db2,db1", .ports = "5432"}));
  EXPECT_EQ(HostsWithFirst({.hosts = "db1,db2", .ports = ""}, "db2", "5432"),
            (HostList{.hosts = "db2,db1", .ports = ""}));
}

TEST(HostsWithFirst, LeavesTheOrderAloneWhenItCannot) {
  EXPECT_EQ(HostsWithFirst({.hosts = "db1,db2", .ports = "1,2"}, "db3", "1"), std::nullopt);
  EXPECT_EQ(HostsWithFirst({.hosts = "db1,db2", .ports = "1,2"}, "db2", "1"), std::nullopt);
  EXPECT_EQ(HostsWithFirst({.hosts = "db1", .ports = "1"}, "db1", "1"), std::nullopt);
  EXPECT_EQ(HostsWithFirst({.hosts = "db1,db2,db3", .ports = "1,2"}, "db2", "2"), std::nullopt);
}

TEST(HostsWithLast, MovesTheServerWithItsPortToTheBack) {
  HostList list{.hosts = "db1,db2,db3", .ports = "5432,5433,5434"};
  EXPECT_EQ(HostsWithLast(list, "db1", "5432"),
            (HostList{.hosts = "db2,db3,db1", .ports = "5433,5434,5432"}));
  EXPECT_EQ(HostsWithLast(list, "db3", "5434"), list);
  EXPECT_EQ(HostsWithLast({.hosts = "db1,db2", .ports = "5432"}, "db1", "5432"),
            (HostList{.hosts = "db2,db1", .ports = "5432"}));
  EXPECT_EQ(HostsWithLast(list, "db4", "5432"), std::nullopt);
}

TEST(HostOrder, TriesAServerThatStoppedAnsweringLast) {
  HostOrder order("postgresql://u@db1:5432,db2:5433,db3:5434/hcprp?target_session_attrs=read-write");
  order.Connected("db2", "5433");
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db2,db1,db3", .ports = "5433,5432,5434"}));
  order.Unresponsive("db2", "5433");
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db1,db3,db2", .ports = "5432,5434,5433"}));
  order.Unresponsive("db1", "5432");
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db3,db2,db1", .ports = "5434,5433,5432"}));
  EXPECT_TRUE(order.Avoided("db1", "5432"));
  EXPECT_FALSE(order.Avoided("db2", "5433"));  // only the last one found unresponsive
  order.Connected("db1", "5432");              // the one that worked again goes first
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db1,db2,db3", .ports = "5432,5433,5434"}));
  EXPECT_FALSE(order.Avoided("db1", "5432"));
}

TEST(HostOrder, ASessionOnAnotherServerKeepsTheUnresponsiveOneAvoided) {
  HostOrder order("postgresql://u@db1:5432,db2:5433/hcprp");
  order.Unresponsive("db1", "5432");
  order.Connected("db2", "5433");
  EXPECT_TRUE(order.Avoided("db1", "5432"));
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db2,db1", .ports = "5433,5432"}));
}

TEST(HostOrder, AvoidsNothingWithOneHost) {
  HostOrder order("postgresql://u@db1:5432/hcprp");
  order.Unresponsive("db1", "5432");
  EXPECT_FALSE(order.Avoided("db1", "5432"));
}

TEST(HostOrder, AnUnresponsiveServerBeforeAnySessionLeavesTheUrlsFirstServerBehind) {
  HostOrder order("postgresql://u@db1:5432,db2:5433/hcprp");
  order.Unresponsive("db1", "5432");
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "db2,db1", .ports = "5433,5432"}));
}

TEST(HostOrder, KeepsTheUrlsOrderUntilASessionOpens) {
  HostOrder order("postgresql://u@db1:5432,db2:5433/hcprp?target_session_attrs=read-write");
  EXPECT_EQ(order.Preferred(), std::nullopt);
}

TEST(HostOrder, HasNothingToReorderWithOneHost) {
  HostOrder order("postgresql://u@db1:5432/hcprp");
  EXPECT_EQ(order.Preferred(), std::nullopt);
}

}  // namespace
}  // namespace hcprp::store::postgres
