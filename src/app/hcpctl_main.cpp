#include <unistd.h>

#include <iostream>

#include "cli/hcpctl.h"

int main(int argc, char** argv) {
  return hcprp::cli::RunHcpctl(argc, argv, std::cout, std::cerr, isatty(STDERR_FILENO) != 0);
}
