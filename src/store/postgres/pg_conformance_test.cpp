// The store conformance suite on the PostgreSQL engine: every test gets a fresh schema on a
// throwaway server started by the test process (see pg_test_server.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

#include "store/postgres/pg_test_server.h"
#include "store/store_conformance.h"

namespace hcprp::store::testing {
namespace {

using postgres::PgTestServer;

class PgSchemaEnvironment final : public StoreEnvironment {
 public:
  PgSchemaEnvironment() {
    std::string error;
    server_ = PgTestServer::Shared(&error);
    if (server_ == nullptr) ADD_FAILURE() << "cannot start the PostgreSQL test server: " << error;
    static std::atomic<int> counter{0};
    schema_ = "conf_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  }
  ~PgSchemaEnvironment() override {
    if (server_ != nullptr) (void)server_->Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
  }
  Result<std::unique_ptr<Store>> Open(const OpenOptions& options) override {
    if (server_ == nullptr) return Error::Unavailable("no PostgreSQL test server");
    return OpenStore(server_->Url() + "?schema=" + schema_, options);
  }
  bool SupportsMultipleHandles() const override { return true; }

 private:
  PgTestServer* server_ = nullptr;
  std::string schema_;
};

INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest,
                         ::testing::Values(EngineFactory{
                             "Schema", [] { return std::make_unique<PgSchemaEnvironment>(); }}),
                         EngineFactoryName);

}  // namespace
}  // namespace hcprp::store::testing
