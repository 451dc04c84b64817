// Experimental features: `aro-hcp.experimental.*` tags, honoured only for a subscription that
// registered the experimental-features AFEC (DecodeOptions::experimental_release_features), as the
// real service does. Without the AFEC the tags are ordinary tags: kept, shown, never checked.
//
// With it, a decode checks the experimental tags of the body (an unknown one is refused with
// `Invalid value: "<tag>": unrecognized experimental tag` at `tags[<tag>]`, a known one with a value
// the service cannot use at the same target) and records what they turn on in
// Resource::experimental:
//
//   cluster tag (prefix aro-hcp.experimental.cluster.)  value               -> Resource::experimental
//   single-replica                                      "SingleReplica"/""  -> controlPlaneAvailability
//   size-override                                       "Minimal"/""        -> controlPlanePodSizing
//   control-plane-operator-image-override               an image            -> controlPlaneOperatorImage
//   control-plane-exact-version                         X.Y.Z[-pre]         -> controlPlaneExactVersion
//   max-creation-duration (create only)                 Go duration >= 1m   -> createDeadlineSeconds
//   max-deletion-duration                               Go duration >= 1m   -> deleteDeadlineSeconds
//   node pool tag (prefix aro-hcp.experimental.nodepool.)
//   max-creation-duration (create only)                 Go duration >= 1m   -> createDeadlineSeconds
//
// A cluster version.id with a patch ("4.20.3", allowed with the AFEC) pins the control plane to that
// release: it becomes controlPlaneExactVersion and version.id keeps its release line ("4.20"); the
// exact-version tag, when set, wins over it. Tag names compare case-insensitively.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {

// The AFEC as ARM names it in a subscription's properties.registeredFeatures (compared
// case-insensitively; it counts when its state is "Registered").
inline constexpr std::string_view kExperimentalReleaseFeatures =
    "Microsoft.RedHatOpenShift/ExperimentalReleaseFeatures";

// Members of Resource::experimental.
inline constexpr std::string_view kControlPlaneAvailability = "controlPlaneAvailability";  // "SingleReplica"
inline constexpr std::string_view kControlPlanePodSizing = "controlPlanePodSizing";        // "Minimal"
inline constexpr std::string_view kControlPlaneOperatorImage = "controlPlaneOperatorImage";
inline constexpr std::string_view kControlPlaneExactVersion = "controlPlaneExactVersion";
inline constexpr std::string_view kCreateDeadlineSeconds = "createDeadlineSeconds";
inline constexpr std::string_view kDeleteDeadlineSeconds = "deleteDeadlineSeconds";

// Checks the experimental tags of `body` (canonical, with tags) and returns the features they turn
// on; problems are appended to `out`. A cluster's version.id with a patch is moved to the exact
// version as the header says. `create`: the body creates the resource (creation deadlines are
// read on create only). Call only when the subscription registered the AFEC.
json::object AdmitExperimentalFeatures(Kind kind, json::object& body, bool create,
                                       std::vector<FieldError>& out);

// A Go time.ParseDuration text ("90s", "1h30m", "1.5h", "-2m", "0") in nanoseconds; nullopt when it
// is not one (or overflows).
std::optional<int64_t> ParseGoDuration(std::string_view text);

}  // namespace hcprp::api
