#pragma once
// What this host has seen of a lock's runs, for `run --once-per` (docs/design.md section 13).
// A run is known by its fencing token; the host notes, for each token larger than any it saw
// before, its own boot-clock time when it first saw it. A token seen at time f means every run
// with that token or a smaller one began before f: so the last recorded run began at least
// (now - f) ago, by this host's clock, without reading any other host's clock.
//
// The notes are valid for one boot (CLOCK_BOOTTIME restarts at zero): a file written in another
// boot is ignored and observation starts over.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mongolock::cli {

struct sighting {
  std::int64_t token = 0;
  std::int64_t seen_ms = 0;  // boot clock
  bool operator==(const sighting&) const = default;
};

struct sightings {
  std::string boot_id;
  std::vector<sighting> seen;  // ascending in token and in time
};

// Most notes kept per lock: the oldest go first (a run older than 16 later takes is long past).
inline constexpr std::size_t max_sightings = 16;

// Notes `token` as seen at `now_ms` unless it was seen before; a token smaller than the last one
// seen (documents restored or wiped) forgets every sighting first.
void note(sightings& s, std::int64_t token, std::int64_t now_ms);
// How long ago, at least, the run with `token` began: now minus the first time this host saw that
// token or a larger one. nullopt if it saw none (the run is new to this host).
std::optional<std::chrono::milliseconds> began_at_least(const sightings& s, std::int64_t token, std::int64_t now_ms);

// The file's text and back. `parse` keeps nothing from another boot than `boot_id`, and nothing
// malformed (a damaged file only restarts the observation).
std::string serialize(const sightings& s);
sightings parse(const std::string& text, const std::string& boot_id);

// /proc/sys/kernel/random/boot_id; empty if unreadable.
std::string current_boot_id();
// The state directory: `configured`, else $XDG_STATE_HOME/mongolock, else
// $HOME/.local/state/mongolock; empty if none of them is set.
std::string state_dir_of(const std::string& configured);
// One file per lock: DIR/<hash of the URI without user information>.<database>.<collection>.<name>,
// each byte of the three names outside [A-Za-z0-9_-] as %XX.
std::string sightings_path(const std::string& dir, const std::string& uri, const std::string& database,
                           const std::string& collection, const std::string& name);

// Reads the file at `path` (creating its directory, 0700, if needed; an existing one must be this
// user's and writable by nobody else), notes `token` seen at `now_ms`, writes it back (a new
// temporary file renamed over it: a crash leaves the old or the new file; no symbolic link is
// followed), all under an exclusive flock of `path`.lock so that runs on this host do not lose
// each other's notes. Fails if the boot id cannot be read.
// Returns the notes with this one; nullopt with `error` set if the file cannot be used.
std::optional<sightings> note_in_file(const std::string& path, std::int64_t token, std::int64_t now_ms,
                                      std::string& error);

}  // namespace mongolock::cli
