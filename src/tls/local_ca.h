// The local certificate authority of a single-machine deployment. On first start `hcprp serve` (and
// the other commands, given the same directory) creates under <data-dir>/tls/:
//
//   ca.pem, ca-key.pem                  the authority every other certificate chains to
//   server.pem, server-key.pem          the listeners' certificate (localhost, 127.0.0.1, ::1)
//   client.pem, client-key.pem          an ARM client certificate: what callers of the frontend present
//   arm-client-certificates.json        the frontend's trusted ARM set, listing client.pem (arm_trust.h)
//   rp-client.pem, rp-client-key.pem    the resource provider's certificate towards the Cluster Service
//   control-token                       the bearer token of the simulator's /control listener
//
// Files that exist are kept: replace any of them (rotation) and the listeners pick it up.
#pragma once

#include <chrono>
#include <string>

#include "core/clock.h"
#include "core/result.h"

namespace hcprp::tls {

// How long the certificates EnsureLocalFiles issues (server and client) are valid: the public web's
// limit of 398 days, which every client enforcing a validity limit accepts.
inline constexpr std::chrono::hours kLeafValidity{24 * 398};

struct LocalFiles {
  std::string dir;
  std::string ca, ca_key;
  std::string server_cert, server_key;
  std::string client_cert, client_key;
  std::string trusted_set;
  std::string rp_client_cert, rp_client_key;
  std::string control_token;
};

// The paths under `dir` (nothing is read or written).
LocalFiles LocalFilesIn(const std::string& dir);

// Creates what is missing under `dir` (mode 0700; keys 0600). A certificate authority is created only
// when ca.pem is missing; certificates missing beside an existing one are signed by it. IoError when
// the directory cannot be written.
Result<LocalFiles> EnsureLocalFiles(const std::string& dir, const Clock& clock);

}  // namespace hcprp::tls
