#pragma once
// Starts a program (argv[0] is its path) as a child process; returns its pid.
#include <unistd.h>

#include <string>
#include <vector>

namespace bench {

inline pid_t spawn(std::vector<std::string> args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace bench
