#include "args.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include "mongolock/error.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/options.hpp"
#include "mongolock/semaphore.hpp"

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
// --hold-at-least: as long as the longest --wait. --once-per: the record of the last run lives in
// the lock's document, which the clean-up of idle documents deletes once it has been free for
// 24 h by the releasing host's wall clock (client_options::idle_cleanup, docs/design.md section
// 13): 20 h leaves 4 h for that clock's error.
constexpr range hold_range{milliseconds{0}, limits::max_acquire_timeout};
constexpr range once_per_range{milliseconds{0}, std::chrono::hours(20)};
// --margin: 0 (= ttl / 10) or at least 1 ms; below half of --ttl is checked once both are known.
constexpr range margin_range{milliseconds{0}, limits::max_expiry / 2};

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

std::optional<std::chrono::milliseconds> parse_duration(const std::string& text, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<std::chrono::milliseconds> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (text == "0") return std::chrono::milliseconds{0};
  if (text.empty()) return refuse("empty");
  if (text.front() == '-') return refuse("durations cannot be negative");
  if (text.find_first_of(" \t") != std::string::npos) return refuse("spaces are not allowed");
  // Far above every accepted limit, far below int64 overflow: beyond it the text is absurd.
  constexpr std::int64_t cap = 1'000'000'000'000'000;  // ms, about 31,700 years
  const std::string too_large = "too large (above 31,000 years)";
  const std::string too_fine = "durations have millisecond precision";
  std::int64_t total = 0;
  std::size_t p = 0;
  auto digits = [&] {
    const std::size_t from = p;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9') ++p;
    return std::string_view(text).substr(from, p - from);
  };
  do {  // one or more NUMBER UNIT terms, NUMBER = digits [. digits]
    const auto whole = digits();
    std::string_view fraction;
    if (whole.empty()) return refuse("a number must come before each unit");
    if (p < text.size() && text[p] == '.') {
      ++p;
      fraction = digits();
      if (fraction.empty()) return refuse("a decimal point needs digits after it");
      // Trailing zeros say nothing; ten digits or more that do are finer than a millisecond in
      // every unit (an hour is 3.6e6 ms).
      while (fraction.ends_with('0')) fraction.remove_suffix(1);
      if (fraction.size() > 9) return refuse(too_fine);
    }
    std::int64_t scale;
    if (text.compare(p, 2, "ms") == 0) scale = 1, p += 2;
    else if (text.compare(p, 1, "s") == 0) scale = 1000, ++p;
    else if (text.compare(p, 1, "m") == 0) scale = 60'000, ++p;
    else if (text.compare(p, 1, "h") == 0) scale = 3'600'000, ++p;
    else if (p == text.size() && whole.data() == text.data()) scale = 1000;  // a bare number: seconds, as flock -w
    else if (p == text.size())
      return refuse("'" + std::string(text, static_cast<std::size_t>(whole.data() - text.data())) +
                    "' has no unit (ms, s, m or h; a bare number is seconds only on its own)");
    else {
      std::size_t end = p;
      while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
      return refuse("unknown unit '" + text.substr(p, std::max(end - p, std::size_t{1})) + "' (use ms, s, m or h)");
    }
    std::int64_t w = 0, f = 0, denominator = 1;
    if (std::from_chars(whole.data(), whole.data() + whole.size(), w).ec != std::errc{}) return refuse(too_large);
    if (!fraction.empty()) std::from_chars(fraction.data(), fraction.data() + fraction.size(), f);
    for (std::size_t i = 0; i < fraction.size(); ++i) denominator *= 10;
    if (w > cap / scale) return refuse(too_large);
    if ((f * scale) % denominator != 0) return refuse(too_fine);
    total += w * scale + f * scale / denominator;
    if (total > cap) return refuse(too_large);
  } while (p < text.size());
  return std::chrono::milliseconds{total};
}

int exit_code_for(boost::system::error_code ec, int conflict_exit_code) {
  if (ec == errc::busy || ec == errc::timeout) return conflict_exit_code;
  if (ec == errc::server_unavailable || ec == errc::unsupported_server) return exit_unavailable;
  if (ec == errc::not_authorized) return exit_not_authorized;
  if (ec == errc::invalid_name || ec == errc::declaration_mismatch) return exit_usage;
  if (ec == errc::fenced_out) return exit_fenced_out;
  if (ec == errc::invalid_document || ec == errc::invalid_collection || ec == errc::invalid_options) return exit_usage;
  return exit_software;
}

std::string usage() {
  return R"(usage:
  mongolock [GLOBAL OPTIONS] run NAME [--] COMMAND [ARG...]
  mongolock [GLOBAL OPTIONS] run NAME -c 'SHELL COMMAND'     (runs sh -c, as flock -c)
  mongolock [GLOBAL OPTIONS] run -n N NAME [--] COMMAND...   (a permit of the semaphore NAME of N)
  mongolock [GLOBAL OPTIONS] run --shared|--exclusive [--readers R] NAME [--] COMMAND...
                                      (a reader or the writer of the rw_lock NAME, R readers: 16)
  mongolock [GLOBAL OPTIONS] status NAME
  mongolock [GLOBAL OPTIONS] list [--held]
  mongolock [GLOBAL OPTIONS] release --force [--now] NAME
  mongolock [GLOBAL OPTIONS] fence [--token T] [--field F] [--upsert] [--replace | --delete]
                                   DB.COLLECTION FILTER [UPDATE]
  mongolock --help | --version

global options (environment variable in brackets):
  --uri URI               MongoDB connection string [MONGOLOCK_URI] (mongodb://127.0.0.1:27017)
  --database DB           database [MONGOLOCK_DATABASE] (mongolock)
  --collection NAME       lock collection [MONGOLOCK_COLLECTION] (locks)
  --label TEXT            shown by status/list next to the holder's host and pid [MONGOLOCK_LABEL]
  -t, --ttl DURATION      lease expiry, 100ms..24h [MONGOLOCK_TTL] (30s)
  --margin DURATION       clock-rate margin, below half of --ttl [MONGOLOCK_MARGIN] (ttl/10):
                          safe while the waiter's clock runs at most (ttl+margin)/(ttl-margin)
                          times as fast as the holder's (10%: 1.22; 25%: 1.67)
  -w, --wait DURATION     how long `run` waits for the lock, up to 8784h (366 days) [MONGOLOCK_WAIT]
                          (forever; 0 = try once: one look, which against an unreachable
                          server takes the URI's serverSelectionTimeoutMS, 5s by default; a
                          holder silent for over 3 x its ttl is watched for its ttl + margin,
                          then taken over, for every kind of lock)
  --kill-after DURATION   grace between SIGTERM and SIGKILL when the lease is lost, up to 1h
                          (SIGKILL at most a margin past the lease's deadline)
                          [MONGOLOCK_KILL_AFTER] (5s)
  -E, --conflict-exit-code N  exit status of `run` when the lock is busy or --wait ran out,
                          0..255 (75)
  -q, --quiet | -v, --verbose
--opt=VALUE and -oVALUE work too. durations: 250ms, 1.5s, 1m30s, 2h, 0; a bare number is
seconds (-w 5, -w 0.5)

run: COMMAND runs (no shell) only while the lease is held, with MONGOLOCK_NAME, MONGOLOCK_OWNER
and MONGOLOCK_FENCING_TOKEN set (a permit or a reader: also MONGOLOCK_PERMIT, its permit's name
and token; the writer: the highest token of its permits). A NAME declared with another -n or
--readers, or as the other kind, exits 64. Exit status: COMMAND's (128+N if killed by signal N); 75 (or -E)
not acquired within --wait; 74 lease lost while COMMAND ran; 69 server unreachable; 77 not
authorized (authentication failed, or a privilege is missing); 64 usage error; 127 COMMAND not
found, 126 not executable; 128+N if mongolock got signal N while waiting (nothing ran); 79
skipped by --once-per.

run, scheduled jobs (a plain lock; docs/cli.md "Scheduled jobs"; before or after `run`):
  --hold-at-least D   keep the lock held (renewed) until D after it was acquired, even if
                      COMMAND ended first
  --once-per D        run COMMAND only if the last run recorded under NAME was first seen by
                      this host at least D ago, else exit 79; a COMMAND that exits 0 is recorded.
                      A host that has not seen that run yet skips once and counts from now.
                      Needs --wait, and D must exceed --wait plus the spread of the hosts' start
                      times (a host that waited longer than D would run it again; exit 64 if D
                      does not exceed --wait). Up to 20h (the record goes with a lock document
                      idle for 24h)
  --state-dir DIR     what this host has seen, per lock [MONGOLOCK_STATE_DIR]
                      ($XDG_STATE_HOME/mongolock, or ~/.local/state/mongolock)

release --force: the holder loses its lease at its next renewal; new holders first wait out its
lease (one --ttl of the holder's, plus a margin), so the two never overlap. --now frees the lock
at once (for a holder known to be dead). Exit 0 if taken from a holder, 1 if there was none.

fence: one fenced write of one document (docs/design.md section 15): FILTER and UPDATE are
extended JSON; the write applies only if the document's fence field (--field, "fence") is at most
the token (--token, else $MONGOLOCK_FENCING_TOKEN, which `run` sets for COMMAND), and raises it
to the token. --replace: UPDATE is the whole new document; --delete: no UPDATE; --upsert: FILTER
must hold an _id. Prints {"matched":N,"upserted":N}. Exit 0 written (or nothing matched: see
matched), 76 fenced out (a newer holder wrote the document; nothing changed), 64 bad input, 69,
77, 70 as for run.

status: one JSON line; exit 0 if the lock is held, 1 if it is free or was never used (a shell
test: `if mongolock status NAME >/dev/null; then ...`). list: one JSON object per line
(`mongolock list | jq -s .` makes an array); --held: only the locks held now. A holder silent
for longer than its ttl (by the wall clocks) is also named on stderr: it may have crashed.
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
    std::string why;
    auto d = parse_duration(value, &why);
    if (!d) return fail("invalid duration for " + flag + ": '" + value + "': " + why);
    if (*d < allowed.min || *d > allowed.max)
      return fail(flag + " must be between " + describe(allowed.min) + " and " + describe(allowed.max));
    out = *d;
    return true;
  }
  // A fencing token as `run` hands it to COMMAND: a positive int64 in decimal.
  bool set_token(const std::string& flag, const std::string& value, std::int64_t& out) {
    std::int64_t n = 0;
    const auto end = value.data() + value.size();
    const auto [p, ec] = std::from_chars(value.data(), end, n);
    if (value.empty() || ec != std::errc{} || p != end || n <= 0)
      return fail(flag + " must be a positive integer (a fencing token), not '" + value + "'");
    out = n;
    return true;
  }
  bool set_exit_code(const std::string& flag, const std::string& value, int& out) {
    int n = -1;
    const auto end = value.data() + value.size();
    const auto [p, ec] = std::from_chars(value.data(), end, n);
    if (value.empty() || ec != std::errc{} || p != end || n < 0 || n > 255)
      return fail(flag + " must be a number from 0 to 255");
    out = n;
    return true;
  }
  // args[i] as getopt_long reads it: "--opt=VALUE" and "-oVALUE" carry their value attached.
  struct flag_arg {
    std::string flag;
    std::optional<std::string> attached;
  };
  flag_arg split_flag() const {
    flag_arg f{args[i], std::nullopt};
    if (f.flag.starts_with("--")) {
      if (const auto eq = f.flag.find('='); eq != std::string::npos) f.attached = f.flag.substr(eq + 1), f.flag.resize(eq);
    } else if (f.flag.size() > 2) {
      f.attached = f.flag.substr(2), f.flag.resize(2);
    }
    return f;
  }
  // The option's value, attached or the next argument; consumes what it used.
  bool take_value(const flag_arg& f, std::string& out) {
    if (f.attached) out = *f.attached, i += 1;
    else if (i + 1 >= args.size()) return fail("option " + f.flag + " needs a value");
    else out = args[i + 1], i += 2;
    return true;
  }

  // Returns true if args[i] was a global option (and consumes it with its value). As getopt_long:
  // "--opt VALUE", "--opt=VALUE", "-o VALUE", "-oVALUE". Messages use the user's spelling.
  bool global_option() {
    const flag_arg f = split_flag();
    const std::string& flag = f.flag;
    const std::optional<std::string>& attached = f.attached;
    static constexpr std::pair<std::string_view, std::string_view> shorts[] = {
        {"-w", "--wait"}, {"-t", "--ttl"}, {"-q", "--quiet"}, {"-v", "--verbose"}, {"-E", "--conflict-exit-code"}};
    std::string_view name = flag;
    for (auto [letter, long_name] : shorts)
      if (flag == letter) name = long_name;
    auto value = [&](std::string& out) { return take_value(f, out); };
    auto set = [&](bool& out) {
      if (attached) return fail(flag + " takes no value");
      ++i;
      return out = true;
    };
    std::string v;
    auto& o = r.opts;
    if (name == "--uri") return value(o.uri);
    if (name == "--database") return value(o.database);
    if (name == "--collection") return value(o.collection);
    if (name == "--label") return value(o.label);
    if (name == "--ttl") return value(v) && set_duration(flag, v, ttl_range, o.ttl);
    if (name == "--kill-after") return value(v) && set_duration(flag, v, kill_after_range, o.kill_after);
    if (name == "--margin") return value(v) && set_duration(flag, v, margin_range, o.margin);
    if (name == "--wait") {
      std::chrono::milliseconds w{};
      if (!(value(v) && set_duration(flag, v, wait_range, w))) return false;
      o.wait = w;
      return true;
    }
    if (name == "--conflict-exit-code") return value(v) && set_exit_code(flag, v, o.conflict_exit_code);
    // run's scheduled-job options (a plain lock only: checked once the command line is read),
    // accepted before `run` as the option table of docs/cli.md lists them, and after it.
    if (name == "--hold-at-least") return value(v) && set_duration(flag, v, hold_range, o.hold_at_least);
    if (name == "--once-per") return value(v) && set_duration(flag, v, once_per_range, o.once_per);
    if (name == "--state-dir") return value(o.state_dir);
    if (name == "--quiet") return set(o.quiet);
    if (name == "--verbose") return set(o.verbose);
    return false;
  }
};

}  // namespace

parse_result parse_args(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& environment) {
  parser p{args, 0, {}};
  auto& o = p.r.opts;
  std::string env_token;
  for (const auto& [k, v] : environment) {
    if (k == "MONGOLOCK_URI") o.uri = v;
    else if (k == "MONGOLOCK_DATABASE") o.database = v;
    else if (k == "MONGOLOCK_COLLECTION") o.collection = v;
    else if (k == "MONGOLOCK_LABEL") o.label = v;
    else if (k == "MONGOLOCK_TTL") p.set_duration(k, v, ttl_range, o.ttl);
    else if (k == "MONGOLOCK_KILL_AFTER") p.set_duration(k, v, kill_after_range, o.kill_after);
    else if (k == "MONGOLOCK_MARGIN") p.set_duration(k, v, margin_range, o.margin);
    else if (k == "MONGOLOCK_STATE_DIR") o.state_dir = v;
    else if (k == "MONGOLOCK_FENCING_TOKEN") env_token = v;  // read by fence only (a nested run has one)
    else if (k == "MONGOLOCK_WAIT") {
      std::chrono::milliseconds w{};
      if (p.set_duration(k, v, wait_range, w)) o.wait = w;
    }
  }
  // Reported after the command line is read: --help and --version answer whatever the
  // environment says (a bad MONGOLOCK_* variable must not hide the help that explains it).
  const std::string environment_error = std::move(p.r.error);
  p.r.error.clear();

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
      else if (a == "fence") o.cmd = command::fence;
      else { p.fail("unknown command '" + a + "'"); return p.r; }
      ++i;
      continue;
    }
    if (a == "--force" && o.cmd == command::release) { o.force = true; ++i; continue; }
    if (o.cmd == command::fence && a.starts_with("--")) {
      const auto f = p.split_flag();
      bool* flag = f.flag == "--upsert" ? &o.upsert : f.flag == "--replace" ? &o.replace
                                                    : f.flag == "--delete"  ? &o.remove : nullptr;
      if (flag) {
        if (f.attached) { p.fail(f.flag + " takes no value"); return p.r; }
        *flag = true;
        ++i;
        continue;
      }
      if (f.flag == "--token" || f.flag == "--field") {
        std::string v;
        if (!p.take_value(f, v)) return p.r;
        if (f.flag == "--field") o.fence_field = v;
        else if (!p.set_token(f.flag, v, o.fencing_token)) return p.r;
        continue;
      }
    }
    if (a == "--now" && o.cmd == command::release) { o.now = true; ++i; continue; }
    if (a == "--held" || a.starts_with("--held=")) {
      if (o.cmd != command::list) { p.fail("--held goes after list: mongolock list --held"); return p.r; }
      if (a != "--held") { p.fail("--held takes no value"); return p.r; }
      o.held_only = true;
      ++i;
      continue;
    }
    // flock(1)'s -c: the command is one string for `sh -c`, so pipes and && need no quoting games.
    if (o.cmd == command::run && a.starts_with("-") && a != "--") {
      const auto f = p.split_flag();
      if (f.flag == "--shared" || f.flag == "--exclusive") {
        if (f.attached) { p.fail(f.flag + " takes no value"); return p.r; }
        (f.flag == "--shared" ? o.shared : o.exclusive) = true;
        ++i;
        continue;
      }
      if (f.flag == "-n" || f.flag == "--permits" || f.flag == "--readers") {
        std::string v;
        if (!p.take_value(f, v)) return p.r;
        int n = 0;
        const auto end = v.data() + v.size();
        const auto [at, ec] = std::from_chars(v.data(), end, n);
        if (v.empty() || ec != std::errc{} || at != end || n < 1 || n > limits::max_permits) {
          p.fail(f.flag + " must be a number from 1 to " + std::to_string(limits::max_permits));
          return p.r;
        }
        (f.flag == "--readers" ? o.readers : o.permits) = n;
        continue;
      }
      if (f.flag == "-c" || f.flag == "--command") {
        std::string script;
        if (!p.take_value(f, script)) return p.r;
        if (o.name.empty()) { p.fail(f.flag + " comes after the lock NAME"); return p.r; }
        if (i < args.size()) { p.fail("give either " + f.flag + " 'shell command' or COMMAND [ARG...], not both"); return p.r; }
        o.argv = {"sh", "-c", script};
        break;
      }
    }
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
    if (o.cmd == command::fence) {
      if (o.argv.size() == 2) { p.fail("fence takes DB.COLLECTION FILTER [UPDATE], not '" + a + "'"); return p.r; }
      o.argv.push_back(a);
      ++i;
      continue;
    }
    if (o.cmd != command::run) { p.fail("unexpected argument '" + a + "'"); return p.r; }
    if (a == "--") ++i;
    o.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());  // COMMAND [ARG...]: never parsed
    break;
  }
  if (!p.r.error.empty()) return p.r;
  if (!environment_error.empty()) {
    p.r.error = environment_error;
    return p.r;
  }
  switch (o.cmd) {
    case command::none: p.fail("missing command"); break;
    case command::run:
      if (o.name.empty()) p.fail("run needs a lock NAME");
      else if (o.argv.empty()) p.fail("run needs a COMMAND");
      else if ((o.permits > 0) + o.shared + o.exclusive > 1) p.fail("give one of -n, --shared and --exclusive");
      else if (o.readers != 16 && !o.shared && !o.exclusive) p.fail("--readers goes with --shared or --exclusive");
      else if ((o.hold_at_least.count() > 0 || o.once_per.count() > 0) && (o.permits > 0 || o.shared || o.exclusive))
        p.fail("--hold-at-least and --once-per go with a plain lock (not -n, --shared or --exclusive)");
      // --once-per keeps two runs D apart, not one period's attempts apart: a host that waits in
      // line longer than D first saw the running job's token more than D before it is handed the
      // lock, and runs it again. D must exceed the start spread plus --wait (docs/design.md section
      // 13); the spread is the user's to know, --wait is checked here.
      else if (o.once_per.count() > 0 && !o.wait)
        p.fail("--once-per " + describe(o.once_per) + " needs --wait: a host that waits without bound can run the "
               "job again in the same period, whatever D; give --wait below D less the spread of the hosts' start times");
      else if (o.once_per.count() > 0 && o.once_per <= *o.wait)
        p.fail("--once-per " + describe(o.once_per) + " must exceed --wait " + describe(*o.wait) + ": a host that "
               "waits in line longer than D can run the job again in the same period; give D above --wait plus the "
               "spread of the hosts' start times");
      break;
    case command::status:
      if (o.name.empty()) p.fail("status needs a lock NAME");
      break;
    case command::fence:
      if (o.fencing_token == 0 && !env_token.empty() &&
          !p.set_token("MONGOLOCK_FENCING_TOKEN", env_token, o.fencing_token))
        break;
      if (o.name.find('.') == std::string::npos) p.fail("fence needs DB.COLLECTION, FILTER and UPDATE");
      else if (o.argv.empty()) p.fail("fence needs a FILTER (extended JSON)");
      else if (o.replace && o.remove) p.fail("give one of --replace and --delete");
      else if (o.remove && o.argv.size() != 1) p.fail("fence --delete takes no UPDATE");
      else if (!o.remove && o.argv.size() != 2) p.fail("fence needs an UPDATE (or --delete)");
      else if (o.fencing_token == 0) p.fail("fence needs a token: --token T, or MONGOLOCK_FENCING_TOKEN (set by run)");
      break;
    case command::release:
      if (!o.force) p.fail("release needs --force (it removes the current holder, whoever it is)");
      else if (o.name.empty()) p.fail("release needs a lock NAME");
      break;
    default: break;
  }
  // Global options that only run uses: given to another command, a mistake to point out rather
  // than ignore (--state-dir is harmless, as MONGOLOCK_STATE_DIR is).
  if (o.cmd != command::run && o.cmd != command::none) {
    if (o.once_per.count() > 0) p.fail("--once-per goes with run");
    else if (o.hold_at_least.count() > 0) p.fail("--hold-at-least goes with run");
  }
  if (o.margin.count() > 0 && o.margin * 2 >= o.ttl && p.r.error.empty())
    p.fail("--margin " + describe(o.margin) + " must be below half of --ttl " + describe(o.ttl));
  if (o.kill_after.count() == 0 && p.r.error.empty()) o.kill_after = std::chrono::milliseconds{1};
  return p.r;
}

}  // namespace mongolock::cli
