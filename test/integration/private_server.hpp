#pragma once
// A standalone server of the test's own (started by the project's script), to be frozen with
// SIGSTOP, killed with SIGKILL or restarted on its port without disturbing the other suites. Not
// available against MONGOLOCK_TEST_URI.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "fixture.hpp"

namespace test {

class private_server {
 public:
  explicit private_server(const std::string& tag) {
    const char* s = std::getenv("MONGOLOCK_SCRIPTS");
    if (!s || std::getenv("MONGOLOCK_TEST_URI")) {
      BOOST_TEST_MESSAGE("skipped: needs the project's scripts to start a private server");
      return;
    }
    scripts_ = s;
    dir_ = "/tmp/mongolock-" + tag + "-" + std::to_string(::getpid());
    uri = run(scripts_ + "/mongod start standalone " + dir_ + " 2>/dev/null");
    BOOST_REQUIRE(!uri.empty());
    pid_ = std::stoi(read_file(dir_ + "/pids"));
  }
  ~private_server() {
    if (pid_ <= 0) return;
    thaw();
    run(scripts_ + "/mongod stop " + dir_ + " 2>&1");
  }
  bool available() const { return pid_ > 0; }

  // kill(SIGSTOP) returns before the target's threads have stopped; wait until every one of them
  // shows state 'T' in /proc, or a request sent right after could still be served.
  void freeze() {
    ::kill(pid_, SIGSTOP);
    for (int i = 0; i < 500; ++i) {
      if (all_threads_stopped()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    BOOST_FAIL("server " << pid_ << " did not stop");
  }
  void thaw() { ::kill(pid_, SIGCONT); }

  // A crash (TOOLCHAIN.md: SIGKILL): returns once the process has exited, so its sockets are
  // closed (not our child: a zombie until the init process reaps it).
  void kill() {
    ::kill(pid_, SIGKILL);
    for (int i = 0; i < 500; ++i) {
      if (state() == 'Z' || state() == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    BOOST_FAIL("server " << pid_ << " did not exit");
  }
  // The server again on the same port, once it answers (the emulator comes back empty).
  void restart() {
    const auto said = run(scripts_ + "/mongod restart " + dir_ + " 2>&1");
    BOOST_REQUIRE_MESSAGE(said.ends_with(uri), said);
    pid_ = std::stoi(read_file(dir_ + "/pids"));
  }

  std::string uri;

 private:
  // The state letter of /proc/PID/stat (of one of its threads with `task`); 0 once it is gone.
  char state(const std::string& task = "") const {
    std::ifstream in("/proc/" + std::to_string(pid_) + task + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
  }
  bool all_threads_stopped() const {
    for (auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/task"))
      if (state("/task/" + t.path().filename().string()) != 'T') return false;
    return true;
  }
  static std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    char buf[512];
    while (p && std::fgets(buf, sizeof buf, p)) out += buf;
    if (p) ::pclose(p);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  std::string scripts_, dir_;
  pid_t pid_ = -1;
};

}  // namespace test
