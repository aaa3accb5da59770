#include "args.hpp"

#include <charconv>
#include <limits>

#include "mongolock/options.hpp"

namespace mongolock::cli {

namespace {

using std::chrono::milliseconds;

// Accepted ranges, checked here so a usage error names the flag (the library would name its own
// field, and an overflowing --wait deadline would time out at once). --ttl is the library's lease
// expiry range, --wait its acquire-timeout limit. --kill-after: a command still running an hour
// after SIGTERM is not stopping, and the lease is already lost; SIGKILL it.
struct range {
  milliseconds min, max;
};
constexpr range ttl_range{milliseconds{100}, limits::max_expiry};
constexpr range wait_range{milliseconds{0}, limits::max_acquire_timeout};
constexpr range kill_after_range{milliseconds{0}, std::chrono::hours(1)};

// In the syntax the user types, with the largest exact unit: "100ms", "24h", "8784h (366 days)".
std::string describe(milliseconds d) {
  using namespace std::chrono;
  if (d.count() == 0) return "0";
  if (d % hours(1) == milliseconds{0}) {
    std::string out = std::to_string(d / hours(1)) + "h";
    if (d > hours(48) && d % hours(24) == milliseconds{0}) out += " (" + std::to_string(d / hours(24)) + " days)";
    return out;
  }
  if (d % minutes(1) == milliseconds{0}) return std::to_string(d / minutes(1)) + "m";
  if (d % seconds(1) == milliseconds{0}) return std::to_string(d / seconds(1)) + "s";
  return std::to_string(d.count()) + "ms";
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  if (text == "0") return std::chrono::milliseconds{0};
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || p == text.data() || value < 0) return std::nullopt;
  const std::string unit(p, end);
  std::int64_t scale;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else return std::nullopt;
  if (value > std::numeric_limits<std::int64_t>::max() / scale / 1000) return std::nullopt;  // absurd
  return std::chrono::milliseconds{value * scale};
}

std::string usage() {
  return R"(usage:
  mongolock [GLOBAL OPTIONS] run NAME [--] COMMAND [ARG...]
  mongolock [GLOBAL OPTIONS] status NAME
  mongolock [GLOBAL OPTIONS] list
  mongolock [GLOBAL OPTIONS] release --force NAME
  mongolock --help | --version

global options (environment variable in brackets):
  --uri URI             MongoDB connection string [MONGOLOCK_URI] (mongodb://127.0.0.1:27017)
  --database DB         database [MONGOLOCK_DATABASE] (mongolock)
  --collection NAME     lock collection [MONGOLOCK_COLLECTION] (locks)
  --ttl DURATION        lease expiry, 100ms..24h [MONGOLOCK_TTL] (30s)
  --wait DURATION       how long `run` waits for the lock, up to 8784h (366 days) [MONGOLOCK_WAIT]
                        (forever; 0 = try once)
  --kill-after DURATION grace between SIGTERM and SIGKILL when the lease is lost, up to 1h
                        [MONGOLOCK_KILL_AFTER] (5s)
  --quiet | --verbose
durations: 250ms, 10s, 2m, 1h, 0

run: COMMAND runs (no shell) only while the lease is held, with MONGOLOCK_NAME, MONGOLOCK_OWNER
and MONGOLOCK_FENCING_TOKEN set. Exit status: COMMAND's (128+N if killed by signal N); 75 not
acquired within --wait; 74 lease lost while COMMAND ran; 69 server unreachable; 64 usage error.
)";
}

namespace {

struct parser {
  const std::vector<std::string>& args;
  std::size_t i = 0;
  parse_result r;

  bool fail(std::string e) {
    if (r.error.empty()) r.error = std::move(e);
    return false;
  }
  bool set_duration(const std::string& flag, const std::string& value, range allowed,
                    std::chrono::milliseconds& out) {
    auto d = parse_duration(value);
    if (!d) return fail("invalid duration for " + flag + ": '" + value + "' (use e.g. 250ms, 10s, 2m, 1h)");
    if (*d < allowed.min || *d > allowed.max)
      return fail(flag + " must be between " + describe(allowed.min) + " and " + describe(allowed.max));
    out = *d;
    return true;
  }
  // Returns true if args[i] was a global option (and consumes it with its value).
  bool global_option() {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) return fail("option " + a + " needs a value");
      out = args[++i];
      ++i;
      return true;
    };
    std::string v;
    auto& o = r.opts;
    if (a == "--uri") return value(o.uri);
    if (a == "--database") return value(o.database);
    if (a == "--collection") return value(o.collection);
    if (a == "--ttl") return value(v) && set_duration(a, v, ttl_range, o.ttl);
    if (a == "--kill-after") return value(v) && set_duration(a, v, kill_after_range, o.kill_after);
    if (a == "--wait") {
      std::chrono::milliseconds w{};
      if (!(value(v) && set_duration(a, v, wait_range, w))) return false;
      o.wait = w;
      return true;
    }
    if (a == "--quiet") return ++i, o.quiet = true, true;
    if (a == "--verbose") return ++i, o.verbose = true, true;
    return false;
  }
};

}  // namespace

parse_result parse_args(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& environment) {
  parser p{args, 0, {}};
  auto& o = p.r.opts;
  for (const auto& [k, v] : environment) {
    if (k == "MONGOLOCK_URI") o.uri = v;
    else if (k == "MONGOLOCK_DATABASE") o.database = v;
    else if (k == "MONGOLOCK_COLLECTION") o.collection = v;
    else if (k == "MONGOLOCK_TTL") p.set_duration(k, v, ttl_range, o.ttl);
    else if (k == "MONGOLOCK_KILL_AFTER") p.set_duration(k, v, kill_after_range, o.kill_after);
    else if (k == "MONGOLOCK_WAIT") {
      std::chrono::milliseconds w{};
      if (p.set_duration(k, v, wait_range, w)) o.wait = w;
    }
  }
  if (!p.r.error.empty()) return p.r;

  auto& i = p.i;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") { o.cmd = command::help; return p.r; }
    if (a == "--version") { o.cmd = command::version; return p.r; }
    if (o.cmd == command::none && !a.starts_with("-")) {
      if (a == "run") o.cmd = command::run;
      else if (a == "status") o.cmd = command::status;
      else if (a == "list") o.cmd = command::list;
      else if (a == "release") o.cmd = command::release;
      else { p.fail("unknown command '" + a + "'"); return p.r; }
      ++i;
      continue;
    }
    if (a == "--force" && o.cmd == command::release) { o.force = true; ++i; continue; }
    if (a.starts_with("-") && a != "--") {
      if (!p.global_option()) {
        p.fail(p.r.error.empty() ? "unknown option '" + a + "'" : p.r.error);
        return p.r;
      }
      continue;
    }
    if (o.cmd == command::none) { p.fail("missing command"); return p.r; }
    if (o.cmd == command::list) { p.fail("list takes no arguments"); return p.r; }
    if (o.name.empty() && a != "--") { o.name = a; ++i; continue; }
    if (o.cmd != command::run) { p.fail("unexpected argument '" + a + "'"); return p.r; }
    if (a == "--") ++i;
    o.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());  // COMMAND [ARG...]: never parsed
    break;
  }
  if (!p.r.error.empty()) return p.r;
  switch (o.cmd) {
    case command::none: p.fail("missing command"); break;
    case command::run:
      if (o.name.empty()) p.fail("run needs a lock NAME");
      else if (o.argv.empty()) p.fail("run needs a COMMAND");
      break;
    case command::status:
      if (o.name.empty()) p.fail("status needs a lock NAME");
      break;
    case command::release:
      if (!o.force) p.fail("release needs --force (it removes the current holder, whoever it is)");
      else if (o.name.empty()) p.fail("release needs a lock NAME");
      break;
    default: break;
  }
  if (o.kill_after.count() == 0 && p.r.error.empty()) o.kill_after = std::chrono::milliseconds{1};
  return p.r;
}

}  // namespace mongolock::cli
