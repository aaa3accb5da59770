#pragma once
// What `mongolock run` needs to start COMMAND, prepared before fork(). The tool is
// multi-threaded (libmongoc's workers), so the child may only call async-signal-safe functions:
// a lock (malloc's, the environment's) held by another thread at fork time stays held forever
// in the child. Hence no setenv, no execvp (its PATH search allocates) and no std::string there.
#include <string>
#include <utility>
#include <vector>

namespace mongolock::cli {

// `parent` (a null-terminated "NAME=value" array, e.g. environ) with every entry named in `set`
// removed, then `set` appended. Removing all of them matters: a duplicate left behind could be
// the one a child's getenv finds.
std::vector<std::string> child_environment(const char* const* parent,
                                           const std::vector<std::pair<std::string, std::string>>& set);

struct resolved_command {
  std::string path;  // what to pass to execve
  int error = 0;     // 0, or the errno execvp would have failed with (ENOENT, EACCES...)
};

// execvp's search, without running anything: a `file` containing '/' is taken as is; otherwise
// each entry of `path_env` in order (an empty entry is the current directory, an unset PATH is
// "/bin:/usr/bin" as in glibc) and the first executable regular file wins. Non-executable
// candidates are skipped and reported as EACCES if nothing else is found.
resolved_command resolve_command(const std::string& file, const char* path_env);

// 127 for "not found", 126 for any other reason it cannot be executed (as POSIX shells do).
int exit_code_for_exec_error(int error);
// "mongolock: cannot run 'FILE': <strerror>\n"
std::string cannot_run_message(const std::string& file, int error);

// A resolved command, its arguments and environment as the C arrays execve takes, plus the
// messages the child may need, all built in the constructor. Not copyable: the arrays point
// into the object's own strings.
class exec_plan {
 public:
  exec_plan(std::string path, std::vector<std::string> argv, std::vector<std::string> environment);
  exec_plan(const exec_plan&) = delete;
  exec_plan& operator=(const exec_plan&) = delete;

  // The child side: execve; if the file has no #! line (ENOEXEC), run it with /bin/sh as execvp
  // does; if that fails, write the message and _exit(127 or 126). Async-signal-safe throughout.
  [[noreturn]] void exec() const noexcept;

 private:
  std::string path_;
  std::vector<std::string> argv_, env_;
  std::vector<char*> argv_ptrs_, sh_argv_ptrs_, env_ptrs_;
  std::vector<std::pair<int, std::string>> messages_;  // execve's errno -> cannot_run_message
  std::string other_message_;                          // for an errno execve(2) does not list
};

}  // namespace mongolock::cli
