#pragma once
// The CLI's argument parser called as the tests call it: arguments and, optionally, environment.
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"

namespace {
inline mongolock::cli::parse_result parse(std::vector<std::string> args,
                                          std::vector<std::pair<std::string, std::string>> env = {}) {
  return mongolock::cli::parse_args(args, env);
}
}  // namespace
