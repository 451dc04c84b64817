#include "app/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hcprp::app {
namespace {

namespace fs = std::filesystem;

TEST(IsLoopback, ParsesAddressesInsteadOfMatchingText) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1", "localhost",
                           "LocalHost", "localhost."}) {
    EXPECT_TRUE(IsLoopback(host)) << host;
  }
  for (const char* host : {"127.evil.example", "127.0.0.1.nip.io", "localhost.evil.example", "0.0.0.0",
                           "::", "10.0.0.1", "[::2]", "", "1.127.0.0.1", "127.1"}) {
    EXPECT_FALSE(IsLoopback(host)) << host;
  }
}

mode_t ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

TEST(SecureDataDir, DatabasesAndTokenBecomeOwnerOnly) {
  fs::path dir = fs::temp_directory_path() / ("hcprp-datadir-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "clusters-service");
  const fs::path files[] = {dir / "hcprp.db",
                            dir / "hcprp.db-wal",
                            dir / "hcprp.db-shm",
                            dir / "admin-token",
                            dir / "clusters-service" / "simulator.db",
                            dir / "clusters-service" / "simulator.db-journal"};
  for (const auto& f : files) {
    std::ofstream(f) << "x";
    fs::permissions(f, fs::perms(0644));
  }
  fs::permissions(dir, fs::perms(0755));
  fs::permissions(dir / "clusters-service", fs::perms(0755));
  std::ofstream(dir / "unrelated.txt") << "x";
  fs::permissions(dir / "unrelated.txt", fs::perms(0644));
  ASSERT_TRUE(SecureDataDir(dir.string()).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(dir / "clusters-service"), 0700u);
  for (const auto& f : files) EXPECT_EQ(ModeOf(f), 0600u) << f;
  EXPECT_EQ(ModeOf(dir / "unrelated.txt"), 0644u) << "only what hcprp keeps there";
  // A new folder is created owner-only too.
  ASSERT_TRUE(SecureDataDir((dir / "new").string()).ok());
  EXPECT_EQ(ModeOf(dir / "new"), 0700u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hcprp::app
