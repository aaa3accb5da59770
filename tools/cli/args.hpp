#pragma once
// Command line of the `mongolock` tool: parsing only, no I/O, so it is unit-testable.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mongolock::cli {

inline constexpr int exit_usage = 64;        // EX_USAGE
inline constexpr int exit_unavailable = 69;  // EX_UNAVAILABLE: server unreachable
inline constexpr int exit_software = 70;     // EX_SOFTWARE: server error
inline constexpr int exit_lost = 74;         // lease lost while COMMAND ran
inline constexpr int exit_not_acquired = 75; // EX_TEMPFAIL: not acquired within --wait
inline constexpr int exit_not_authorized = 77;  // EX_NOPERM: authentication or privileges
inline constexpr int exit_skipped = 79;       // run --once-per: the job ran within the period
inline constexpr int exit_fenced_out = 76;    // fence: a newer token wrote the document; nothing changed

// The exit status for a library failure: the lock busy or --wait out -> `conflict_exit_code`;
// server unreachable or unsupported 69; not authorized 77; a bad lock name or a permit count that
// does not match the name's declaration 64; a fenced write refused 76, or given a bad document,
// namespace or token 64; anything else 70.
int exit_code_for(boost::system::error_code ec, int conflict_exit_code = exit_not_acquired);

// "250ms", "10s", "2m", "1h", "0", compound "1m30s", fractional "1.5s". nullopt for anything else
// (negative, no unit, finer than a millisecond, absurdly large...), with the rule it broke in
// `why` if given ("durations have millisecond precision"), for the usage error to say.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text, std::string* why = nullptr);

enum class command { none, run, status, list, release, fence, help, version };

struct options {
  std::string uri = "mongodb://127.0.0.1:27017";
  std::string database = "mongolock";
  std::string collection = "locks";
  std::string label;  // written into the lock document with host and pid (status shows it)
  std::chrono::milliseconds ttl{30000};
  std::chrono::milliseconds margin{0};  // 0 = ttl / 10; below ttl / 2 (docs/design.md section 2: the clock-rate rule)
  std::optional<std::chrono::milliseconds> wait;  // nullopt = forever; 0 = try once
  std::chrono::milliseconds kill_after{5000};
  int conflict_exit_code = exit_not_acquired;  // -E: lock busy or --wait ran out (as flock -E)
  bool quiet = false, verbose = false, force = false;
  bool now = false;  // release --force --now: free at once (force_mode::immediate)
  bool held_only = false;  // list --held: only the locks held now
  command cmd = command::none;
  // run's kind of lock: a plain lock (neither), a permit of the semaphore NAME of `permits`
  // (-n N), or a reader (--shared) or the writer (--exclusive) of the rw_lock NAME with `readers`
  // read permits (--readers R).
  int permits = 0;
  bool shared = false, exclusive = false;
  int readers = 16;
  // Scheduled jobs (docs/design.md section 13), plain locks only. `hold_at_least`: the lock stays
  // held until that long after it was acquired, even if COMMAND ended first. `once_per`: COMMAND
  // runs only if the last recorded run was first seen by this host at least that long ago, and a
  // run that exits 0 is recorded. `state_dir`: where this host keeps what it has seen.
  std::chrono::milliseconds hold_at_least{0};
  std::chrono::milliseconds once_per{0};
  std::string state_dir;
  std::string name;
  std::vector<std::string> argv;  // run: COMMAND [ARG...]
  // fence DB.COLLECTION FILTER [UPDATE] (docs/cli.md "Fenced writes"): `name` holds the
  // namespace, `argv` the documents. The token: --token, else MONGOLOCK_FENCING_TOKEN (as `run`
  // sets it for COMMAND); 0 = none given.
  std::int64_t fencing_token = 0;
  std::string fence_field = "fence";
  bool upsert = false, replace = false, remove = false;
};

struct parse_result {
  options opts;
  std::string error;  // non-empty: usage error, exit 64
};

// `env` looks up MONGOLOCK_* variables (std::getenv in the tool, a map in tests). Command-line
// options override the environment.

parse_result parse_args(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& environment);

std::string usage();

}  // namespace mongolock::cli
