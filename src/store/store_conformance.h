// The conformance suite of the store: every engine runs the same tests (store_conformance.cpp).
// An engine plugs in by providing a factory of test environments and instantiating the suite:
//
//   INSTANTIATE_TEST_SUITE_P(MyEngine, StoreConformanceTest,
//                            ::testing::Values(EngineFactory{"MyEngine", [] { return MakeMyEnv(); }}),
//                            EngineFactoryName);
//
// and by linking the object library hcprp_store_conformance. Engine-specific behaviour (open
// errors, files, processes) is tested separately, next to the engine.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "core/clock.h"
#include "store/store.h"

namespace hcprp::store::testing {

// One empty database for one test.
class StoreEnvironment {
 public:
  virtual ~StoreEnvironment() = default;
  // Opens a store on this environment's database. When SupportsMultipleHandles(), every call opens
  // another handle on the same data (as another process would), and a handle opened after the
  // others were destroyed sees everything they committed. Otherwise every call opens a new, empty
  // database.
  virtual Result<std::unique_ptr<Store>> Open(const OpenOptions& options) = 0;
  virtual bool SupportsMultipleHandles() const = 0;
};

struct EngineFactory {
  std::string name;  // [A-Za-z0-9_]+, the test name suffix
  std::function<std::unique_ptr<StoreEnvironment>()> make;
};

inline void PrintTo(const EngineFactory& f, std::ostream* os) { *os << f.name; }
inline std::string EngineFactoryName(const ::testing::TestParamInfo<EngineFactory>& info) {
  return info.param.name;
}

// What the suite's stores index: /resourceType, /properties/resourceId and /properties/status, with
// Succeeded, Failed and Canceled as the terminal statuses (the shape of the documents the tests write).
IndexSpec TestIndexes();

class StoreConformanceTest : public ::testing::TestWithParam<EngineFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Opens another store on the same environment (options default to the fixture's clock and, when
  // they index nothing, to TestIndexes()).
  std::unique_ptr<Store> OpenAnother(OpenOptions options = {});

  FakeClock clock_;
  std::unique_ptr<StoreEnvironment> env_;
  std::unique_ptr<Store> store_;
};

}  // namespace hcprp::store::testing
