// The mongolock tool's exec plan: the child's environment and the PATH search, prepared before
// fork() so the child only calls async-signal-safe functions.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "exec_plan.hpp"

namespace cli = mongolock::cli;
namespace fs = std::filesystem;

namespace {

// A scratch directory with files of the given modes, removed at the end of the test.
struct scratch {
  fs::path dir = fs::temp_directory_path() / ("mongolock-exec-" + std::to_string(::getpid()));
  scratch() { fs::create_directories(dir); }
  ~scratch() { fs::remove_all(dir); }
  std::string file(const std::string& rel, const std::string& body, fs::perms mode) {
    const auto p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << body;
    fs::permissions(p, mode);
    return p.string();
  }
};
constexpr auto rwx = fs::perms::owner_all;
constexpr auto rw = fs::perms::owner_read | fs::perms::owner_write;

// Forks, runs plan.exec() in the child with stdout to `out`, returns the wait status.
int run_plan(const cli::exec_plan& plan, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    plan.exec();
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_exec)

BOOST_AUTO_TEST_CASE(environment_adds_and_replaces) {
  const char* parent[] = {"PATH=/bin", "MONGOLOCK_NAME=old", "HOME=/root", "MONGOLOCK_NAME=dup",
                          "MONGOLOCK_NAMEX=keep", "NOEQUALS", nullptr};
  const auto env = cli::child_environment(parent, {{"MONGOLOCK_NAME", "job"}, {"MONGOLOCK_FENCING_TOKEN", "42"}});
  // Every earlier MONGOLOCK_NAME goes (a duplicate would let a child read the stale one); others stay in order.
  BOOST_TEST(env == (std::vector<std::string>{"PATH=/bin", "HOME=/root", "MONGOLOCK_NAMEX=keep", "NOEQUALS",
                                              "MONGOLOCK_NAME=job", "MONGOLOCK_FENCING_TOKEN=42"}));
  const char* empty[] = {nullptr};
  BOOST_TEST(cli::child_environment(empty, {{"A", ""}}) == std::vector<std::string>{"A="});
}

BOOST_AUTO_TEST_CASE(path_search_as_execvp) {
  scratch s;
  const auto d = s.dir.string();
  s.file("a/tool", "", rw);                  // not executable: skipped, remembered as EACCES
  const auto b = s.file("b/tool", "", rwx);  // the first executable one wins
  s.file("c/tool", "", rwx);
  fs::create_directories(s.dir / "d/tool");  // a directory is not a command
  const std::string path = d + "/missing:" + d + "/a:" + d + "/d:" + d + "/b:" + d + "/c";
  BOOST_TEST(cli::resolve_command("tool", path.c_str()).path == b);
  BOOST_TEST(cli::resolve_command("tool", path.c_str()).error == 0);

  const std::string denied = d + "/a:" + d + "/d";
  BOOST_TEST(cli::resolve_command("tool", denied.c_str()).error == EACCES);
  BOOST_TEST(cli::resolve_command("nothing-here", path.c_str()).error == ENOENT);
  BOOST_TEST(cli::resolve_command("", path.c_str()).error == ENOENT);
  BOOST_TEST(cli::resolve_command("sh", nullptr).error == 0);  // unset PATH: execvp's default /bin:/usr/bin
}

BOOST_AUTO_TEST_CASE(slash_means_no_search) {
  scratch s;
  const auto x = s.file("x", "", rwx), n = s.file("n", "", rw);
  BOOST_TEST(cli::resolve_command(x, "/nonexistent").path == x);
  BOOST_TEST(cli::resolve_command(x, "/nonexistent").error == 0);
  BOOST_TEST(cli::resolve_command(n, "/bin").error == EACCES);
  BOOST_TEST(cli::resolve_command(s.dir.string() + "/none", "/bin").error == ENOENT);
  BOOST_TEST(cli::resolve_command(s.dir.string(), "/bin").error == EACCES);
}

BOOST_AUTO_TEST_CASE(empty_path_entry_is_the_current_directory) {
  scratch s;
  s.file("here", "", rwx);
  const auto cwd = fs::current_path();
  fs::current_path(s.dir);
  const auto r = cli::resolve_command("here", "/nonexistent::/also-not");
  fs::current_path(cwd);
  BOOST_TEST(r.error == 0);
  BOOST_TEST(r.path == "here");
}

BOOST_AUTO_TEST_CASE(exit_codes_and_message) {
  BOOST_TEST(cli::exit_code_for_exec_error(ENOENT) == 127);
  BOOST_TEST(cli::exit_code_for_exec_error(EACCES) == 126);
  BOOST_TEST(cli::cannot_run_message("nope", ENOENT) == "mongolock: cannot run 'nope': No such file or directory\n");
}

BOOST_AUTO_TEST_CASE(child_execs_with_the_prepared_environment) {
  scratch s;
  const cli::exec_plan plan("/bin/sh", {"sh", "-c", "echo \"$MONGOLOCK_NAME $0\""}, {"MONGOLOCK_NAME=job"});
  const auto out = (s.dir / "out").string();
  const int status = run_plan(plan, out);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_TEST(slurp(out) == "job sh\n");
}

BOOST_AUTO_TEST_CASE(child_runs_a_script_without_shebang_with_sh) {
  scratch s;  // execvp does this on ENOEXEC; execve alone would fail
  const auto script = s.file("script", "echo \"script $1\"\n", rwx);
  const cli::exec_plan plan(script, {"script", "arg"}, {});
  const auto out = (s.dir / "out").string();
  const int status = run_plan(plan, out);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_TEST(slurp(out) == "script arg\n");
}

BOOST_AUTO_TEST_CASE(child_exits_127_or_126_when_exec_fails) {
  scratch s;  // the file vanished between the search and exec, or cannot be executed after all
  const auto out = (s.dir / "out").string();
  const cli::exec_plan gone((s.dir / "gone").string(), {"gone"}, {});
  int status = run_plan(gone, out);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 127));
  const cli::exec_plan dir(s.dir.string(), {"dir"}, {});
  status = run_plan(dir, out);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 126));
}

BOOST_AUTO_TEST_SUITE_END()
