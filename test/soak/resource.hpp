#pragma once
// The soak's protected resource, one file per lock name: it remembers the highest fencing token
// it accepted and who is inside now (token, pid, and that holder's own lease deadline). Every
// access is one read-modify-write under flock(2), so processes see a single order of events.
//
//   enter(token, deadline): a token at or below the highest accepted is refused (fencing: a
//     holder that stalled or was paused past its lease arrives late); otherwise it is accepted.
//     If another holder is still recorded inside and its deadline has not passed, the lock let
//     two holders in while the first one's lease was still valid: an overlap, the one thing the
//     lock must never allow. An occupant past its deadline (paused, stalled, killed inside) is
//     fencing's business, not an overlap.
//   leave(token): clears the occupant if it is still us.
//
// Deadlines and "now" are CLOCK_BOOTTIME nanoseconds: one clock for every process of the machine.
#include <cstdint>
#include <string>

namespace soak {

std::int64_t boot_ns();

struct entry {
  enum class kind { accepted, refused, overlap } what = kind::accepted;
  std::int64_t highest = 0;                                       // refused: the token it was below
  std::int64_t occupant_token = 0, occupant_pid = 0, late_ns = 0;  // overlap: who, how long before its deadline
};

class fenced_resource {
 public:
  explicit fenced_resource(std::string path) : path_(std::move(path)) {}
  entry enter(std::int64_t token, std::int64_t deadline_ns);
  void leave(std::int64_t token);

 private:
  struct state {
    std::int64_t highest = 0, occupant_token = 0, occupant_pid = 0, occupant_deadline = 0;
  };
  template <class Fn>
  void update(Fn&& fn);
  std::string path_;
};

}  // namespace soak
