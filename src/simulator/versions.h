// The simulator's OpenShift version catalogue: every z-stream of each supported minor in each
// channel group, with whether it is enabled, its end of life and the default version. Built from a
// JSON document (versions.json in this folder is compiled in; --versions FILE replaces it).
//
// A version's ID is "openshift-vX.Y.Z" in the stable channel group and "openshift-vX.Y.Z-<group>"
// in the others; its raw ID is "X.Y.Z".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::simulator {

struct CatalogueVersion {
  std::string raw_id;         // "4.20.8"
  std::string minor;          // "4.20"
  int z = 0;                  // 8
  std::string channel_group;  // "stable", "fast", "candidate", ...
  bool enabled = true;
  bool is_default = false;
  std::string end_of_life;  // RFC 3339

  std::string id() const;      // "openshift-v4.20.8", "openshift-v4.20.8-fast"
  json::object ToOcm() const;  // the OCM Version object
};

// The compiled-in versions.json.
std::string_view BuiltInVersionsJson();

// Immutable once built; thread-safe.
class VersionCatalogue {
 public:
  // InvalidArgument naming what is wrong with the document.
  static Result<VersionCatalogue> Parse(std::string_view json_text);
  // Reads and parses a file; IoError when it cannot be read.
  static Result<VersionCatalogue> Load(const std::string& path);
  // The compiled-in catalogue.
  static const VersionCatalogue& BuiltIn();

  // Ordered by minor, z-stream, then channel group as the document lists them.
  const std::vector<CatalogueVersion>& versions() const { return versions_; }
  const CatalogueVersion& default_version() const { return versions_[default_index_]; }
  // By ID ("openshift-v4.20.8-fast"); nullptr when unknown.
  const CatalogueVersion* Find(std::string_view id) const;

  // Why a cluster or node pool cannot use version `id` ("4.20", "4.20.8", "openshift-v4.20.8",
  // "openshift-v4.20.8-fast") in `channel_group` ("" = the group the ID names, stable for a bare
  // one); nullopt when it can: an enabled version of the catalogue in that group, or for "X.Y" an
  // enabled z-stream of that minor in that group.
  std::optional<std::string> Refusal(std::string_view id, std::string_view channel_group) const;

 private:
  std::vector<CatalogueVersion> versions_;
  size_t default_index_ = 0;
};

}  // namespace hcprp::simulator
