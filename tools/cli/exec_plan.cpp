#include "exec_plan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace mongolock::cli {

namespace {

// What execve(path) would most likely answer, found without executing it.
int probe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EACCES;  // execve(2) on a directory or a device
  if (::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) != 0) return errno;
  return 0;
}

// Errors after which execvp tries the next PATH entry (glibc's list); EACCES is remembered.
bool try_next(int error) {
  return error == ENOENT || error == ENOTDIR || error == ESTALE || error == ENODEV || error == ETIMEDOUT;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> child_environment(const char* const* parent,
                                           const std::vector<std::pair<std::string, std::string>>& set) {
  auto overridden = [&](std::string_view entry) {
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) return false;
    for (const auto& [name, value] : set)
      if (entry.substr(0, eq) == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (; *parent; ++parent)
    if (!overridden(*parent)) env.emplace_back(*parent);
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

resolved_command resolve_command(const std::string& file, const char* path_env) {
  if (file.empty()) return {"", ENOENT};
  if (file.find('/') != std::string::npos) return {file, probe(file)};
  const std::string_view search = path_env ? path_env : "/bin:/usr/bin";
  bool denied = false;
  for (std::size_t start = 0;;) {
    const auto colon = search.find(':', start);
    const auto dir = search.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    const std::string candidate = dir.empty() ? file : std::string(dir) + "/" + file;
    const int error = probe(candidate);
    if (error == 0) return {candidate, 0};
    if (error == EACCES) denied = true;
    else if (!try_next(error)) return {candidate, error};  // as execvp: anything else ends the search
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return {"", denied ? EACCES : ENOENT};
}

int exit_code_for_exec_error(int error) { return error == ENOENT ? 127 : 126; }

std::string cannot_run_message(const std::string& file, int error) {
  return "mongolock: cannot run '" + file + "': " + std::strerror(error) + "\n";
}

exec_plan::exec_plan(std::string path, std::vector<std::string> argv, std::vector<std::string> environment)
    : path_(std::move(path)), argv_(std::move(argv)), env_(std::move(environment)) {
  argv_ptrs_ = pointers(argv_);
  env_ptrs_ = pointers(env_);
  // execvp's fallback for a file without #!: /bin/sh FILE ARG...
  static char sh[] = "/bin/sh";
  sh_argv_ptrs_ = {sh, path_.data()};
  for (std::size_t i = 1; i < argv_.size(); ++i) sh_argv_ptrs_.push_back(argv_[i].data());
  sh_argv_ptrs_.push_back(nullptr);
  // strerror is not async-signal-safe: every message the child may write is built here.
  const std::string& shown = argv_.empty() ? path_ : argv_[0];
  for (int e : {E2BIG, EACCES, EFAULT, EINVAL, EIO, EISDIR, ELIBBAD, ELOOP, EMFILE, ENAMETOOLONG, ENFILE,
                ENOENT, ENOEXEC, ENOMEM, ENOTDIR, EPERM, ETXTBSY})
    messages_.emplace_back(e, cannot_run_message(shown, e));
  other_message_ = "mongolock: cannot run '" + shown + "'\n";
}

void exec_plan::exec() const noexcept {
  ::execve(path_.c_str(), argv_ptrs_.data(), env_ptrs_.data());
  if (errno == ENOEXEC) {
    ::execve(sh_argv_ptrs_[0], sh_argv_ptrs_.data(), env_ptrs_.data());
    errno = ENOEXEC;  // report the file, not the shell
  }
  const int error = errno;
  const std::string* message = &other_message_;
  for (const auto& [e, text] : messages_)
    if (e == error) message = &text;
  [[maybe_unused]] auto n = ::write(2, message->data(), message->size());
  ::_exit(exit_code_for_exec_error(error));
}

}  // namespace mongolock::cli
