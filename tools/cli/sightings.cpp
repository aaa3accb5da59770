#include "sightings.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

namespace mongolock::cli {

void note(sightings& s, std::int64_t token, std::int64_t now_ms) {
  if (token <= 0 || (!s.seen.empty() && s.seen.back().token == token)) return;
  // Tokens only increase (docs/design.md section 1); a smaller one means the lock's documents were
  // restored or wiped, and the old sightings would date new runs by old ones: start over.
  if (!s.seen.empty() && s.seen.back().token > token) s.seen.clear();
  s.seen.push_back({token, now_ms});
  if (s.seen.size() > max_sightings) s.seen.erase(s.seen.begin(), s.seen.end() - max_sightings);
}

std::optional<std::chrono::milliseconds> began_at_least(const sightings& s, std::int64_t token, std::int64_t now_ms) {
  // The first sighting of a token >= `token` is the earliest (tokens and times ascend together).
  const auto first = std::find_if(s.seen.begin(), s.seen.end(), [&](const sighting& x) { return x.token >= token; });
  if (first == s.seen.end()) return std::nullopt;
  return std::chrono::milliseconds{std::max<std::int64_t>(0, now_ms - first->seen_ms)};
}

std::string serialize(const sightings& s) {
  std::string out = "mongolock-sightings 1\nboot " + s.boot_id + "\n";
  for (const auto& x : s.seen) out += std::to_string(x.token) + " " + std::to_string(x.seen_ms) + "\n";
  return out;
}

sightings parse(const std::string& text, const std::string& boot_id) {
  sightings s{boot_id, {}};
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "mongolock-sightings 1") return s;
  if (!std::getline(in, line) || line != "boot " + boot_id || boot_id.empty()) return s;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    sighting x;
    std::string rest;
    if (!(fields >> x.token >> x.seen_ms) || (fields >> rest)) return {boot_id, {}};
    // Ascending, or the file was not written by note(): start over.
    if (x.token <= 0 || (!s.seen.empty() && (x.token <= s.seen.back().token || x.seen_ms < s.seen.back().seen_ms)))
      return {boot_id, {}};
    s.seen.push_back(x);
  }
  if (s.seen.size() > max_sightings) s.seen.erase(s.seen.begin(), s.seen.end() - max_sightings);
  return s;
}

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string state_dir_of(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return std::string(xdg) + "/mongolock";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/state/mongolock";
  return {};  // no shared fallback such as /var/tmp: another user could plant files there
}

namespace {
// The URI without its user information: which cluster, never a password (not even hashed).
std::string cluster_of(const std::string& uri) {
  const auto scheme = uri.find("://");
  const auto from = scheme == std::string::npos ? 0 : scheme + 3;
  const auto at = uri.find('@', from);
  const auto end = uri.find_first_of("/?", from);
  if (at != std::string::npos && (end == std::string::npos || at < end)) return uri.substr(0, from) + uri.substr(at + 1);
  return uri;
}
}  // namespace

std::string sightings_path(const std::string& dir, const std::string& uri, const std::string& database,
                           const std::string& collection, const std::string& name) {
  // Database, collection and name each escaped, so that "a.b" + "c" and "a" + "b.c" differ; the
  // cluster as a hash, so that two clusters' tokens never share one file.
  std::string file = std::to_string(std::hash<std::string>{}(cluster_of(uri)) % 1'000'000'007);
  for (const std::string* part : {&database, &collection, &name}) {
    file += '.';
    for (unsigned char c : *part) {
      if (std::isalnum(c) || c == '_' || c == '-') {
        file += static_cast<char>(c);
      } else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        file += hex;
      }
    }
  }
  // A file name has at most 255 bytes: a longer one keeps its start and a hash of the whole.
  if (file.size() > 200) file = file.substr(0, 180) + "~" + std::to_string(std::hash<std::string>{}(file));
  return dir + "/" + file;
}

namespace {

// mkdir -p, mode 0700 (what a host has seen is nobody else's business); the last directory must
// be this user's own and writable by nobody else, or another user could plant or redirect files.
bool make_dirs(const std::string& dir, std::string& error) {
  for (std::size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      error = "cannot create " + part + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    error = dir + " must be a directory of this user that nobody else can write to";
    return false;
  }
  return true;
}

class file_lock {
 public:
  explicit file_lock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~file_lock() {
    if (fd_ >= 0) ::close(fd_);
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The file's text; empty if it does not exist. Never follows a symbolic link.
std::optional<std::string> read_text(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::string{};
    error = "cannot read " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < 65536) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

// Writes `text` to a new temporary file beside `path` (mkstemp: never an existing file) and renames
// it over `path`.
bool replace_file(const std::string& path, const std::string& text, std::string& error) {
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) {
    error = "cannot create a file beside " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::optional<sightings> note_in_file(const std::string& path, std::int64_t token, std::int64_t now_ms,
                                      std::string& error) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0 || !make_dirs(path.substr(0, slash), error)) {
    if (error.empty()) error = "no state directory for " + path;
    return std::nullopt;
  }
  const auto boot = current_boot_id();
  if (boot.empty()) {
    error = "cannot read /proc/sys/kernel/random/boot_id: without it, sightings cannot be dated";
    return std::nullopt;
  }
  const file_lock locked(path + ".lock");
  if (!locked.held()) {
    error = "cannot lock " + path + ".lock: " + std::strerror(errno);
    return std::nullopt;
  }
  const auto text = read_text(path, error);
  if (!text) return std::nullopt;
  auto s = parse(*text, boot);
  note(s, token, now_ms);
  if (!replace_file(path, serialize(s), error)) return std::nullopt;
  return s;
}

}  // namespace mongolock::cli
