#pragma once
// The acquire driver (acquire.cpp) as the rest of the engine starts it: an acquire's body, the
// parking of an acquire behind the one that has its name's turn, the turn's passing on, and the
// line's entries it leaves behind (docs/design.md section 7).
#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "engine/name_turns.hpp"
#include "model/boot_clock.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/lock.hpp"

namespace mongolock::detail {

struct provider_impl;

// Runs one acquire on a strand of its own. `holds_turn`: it has its name's turn (a wait); a try
// never does. `enrolled`: the line entry a hand-off of this provider made for it.
void start_body(std::shared_ptr<provider_impl> p, std::string name, std::shared_ptr<const lock_options> timing,
                bool plain, acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                std::chrono::steady_clock::time_point since, bool holds_turn,
                boost::asio::any_completion_handler<void(boost::system::error_code, lease)> h,
                std::optional<line_enrollment> enrolled = std::nullopt);
// Called under name_turns' lock, in the initiating context: the parked acquire answers its
// caller's cancellation and its own deadline while it waits.
void park(const std::shared_ptr<provider_impl>& p, const std::shared_ptr<parked_acquire>& w);

// Hands the turn of `name` to the next parked acquire and starts it.
void pass_turn(const std::shared_ptr<provider_impl>& p, const std::string& name);
// Starts a parked acquire whose turn came (it reads and waits like any acquire).
void resume_parked(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next);
// Takes `owner`'s entry out of the line of `name` in the background. `gave_up`: the acquire ends
// without a lease; if the entry is no longer there, a releaser may have handed the lock to it,
// and that is freed too. After a grant (not `gave_up`) a missing entry means nothing: the lock
// that owner id names is the lease just granted (docs/design.md section 7, point 10).
enum class leaving { gave_up, granted };
void leave_line_in_background(const std::shared_ptr<provider_impl>& p, const std::string& name,
                              const std::string& owner, leaving why = leaving::gave_up);
// Completes a parked acquire with the lease a hand-off took for it: (owner, token), its clock
// started at `sent`. If it was cancelled or timed out meanwhile, the lock is
// given back instead and the turn passes on; past `bound` (a late grant) it is given back and
// the acquire goes on the usual way.
void grant_handed_over(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next,
                       std::string owner, std::int64_t token, boot_clock::time_point sent,
                       boot_clock::time_point bound);

}  // namespace mongolock::detail
