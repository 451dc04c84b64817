// The store conformance suite on the SQLite engine: in memory and on a temporary file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "store/store_conformance.h"

namespace hcprp::store::testing {
namespace {

class SqliteMemoryEnvironment final : public StoreEnvironment {
 public:
  Result<std::unique_ptr<Store>> Open(const OpenOptions& options) override {
    return OpenStore("sqlite::memory:", options);
  }
  bool SupportsMultipleHandles() const override { return false; }
};

// A database file in a fresh temporary directory, removed afterwards.
class SqliteFileEnvironment final : public StoreEnvironment {
 public:
  SqliteFileEnvironment() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hcprp-store-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    dir_ = tmpl;
  }
  ~SqliteFileEnvironment() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Result<std::unique_ptr<Store>> Open(const OpenOptions& options) override {
    return OpenStore("sqlite://" + (dir_ / "store.db").string(), options);
  }
  bool SupportsMultipleHandles() const override { return true; }

 private:
  std::filesystem::path dir_;
};

INSTANTIATE_TEST_SUITE_P(
    Sqlite, StoreConformanceTest,
    ::testing::Values(EngineFactory{"Memory", [] { return std::make_unique<SqliteMemoryEnvironment>(); }},
                      EngineFactory{"File", [] { return std::make_unique<SqliteFileEnvironment>(); }}),
    EngineFactoryName);

}  // namespace
}  // namespace hcprp::store::testing
