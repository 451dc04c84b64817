// hcpctl: an ARM client for people. RunHcpctl is the whole program minus main(), so tests can run it
// against a frontend and read what it prints.
#pragma once

#include <iosfwd>

namespace hcprp::cli {

// Parses argv, runs the command and returns the process exit code: 0 on success, 1 when the service
// answered with an error or an operation ended Failed/Canceled, 2 for usage errors, 3 when the
// endpoint cannot be reached.
int RunHcpctl(int argc, char** argv, std::ostream& out, std::ostream& err, bool progress_on_terminal);

}  // namespace hcprp::cli
