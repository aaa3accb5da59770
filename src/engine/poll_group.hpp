#pragma once
// The waits of one acquire of several documents, polled together (docs/design.md section 10,
// Waiting and Cost): a semaphore acquire's N permit waits, or a rw_lock writer's R. Without it
// each wait reads its own document on its own backoff: N finds per look at the permits. With it:
// 1. Aligned wake-ups. A member's timer wait registers its `at` here instead of arming its own
//    timer; the group arms one timer at the earliest registered `at` and wakes every registered
//    member then. Early is safe: a woken machine only reads (or fails past its deadline), and a
//    read sooner than its backoff asked for is one more observation (section 10 says why).
// 2. Gathered reads. The members woken together each ask for a read at once; the group waits
//    until every woken member has asked or dropped out, then sends one find (`read_each`) of the
//    names asked and answers each with its document and the one receive time.
//
// Members run on strands of their own; the group's state lives on its own strand, and every
// member is completed on its own (a post). A plain lock's acquire has no group: its driver path
// is today's (fsm_driver.hpp's hooks are taken only when a member is present).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/spawn.hpp"
#include "model/clocks.hpp"
#include "model/lock_document.hpp"
#include "store/async_call.hpp"

namespace mongolock::detail {

struct provider_impl;

// One document read in a gathered find, as a member's async_call answer (ec and message as an
// outcome's, so async_call can fail it on a cancellation or the deadline).
struct polled_doc {
  boost::system::error_code ec;
  std::string message;
  lock_doc value;
  // When the find's reply arrived (the same for every member it answered); unset on an error
  // of async_call's own (cancelled, out of time).
  std::optional<boot_clock::time_point> received;
};

// The state a member's strand and the group share about one member: touched on the member's
// strand only (the group posts there).
struct poll_member_state {
  std::shared_ptr<boot_timer> timer;  // the acquire's own timer, which the group's wake cancels
  std::uint64_t seq = 0;              // the current registration; a wake of an older one is stale
  bool waiting = false;
  bool woken = false;
};

class poll_group : public std::enable_shared_from_this<poll_group> {
 public:
  explicit poll_group(std::shared_ptr<provider_impl> p);

  // ---- each posted to the group's strand ----
  // Member `id` waits until `at` (registration `seq`), woken through `st` on `ex`.
  void enlist(std::uint64_t id, std::uint64_t seq, boot_clock::time_point at, strand_type ex,
              std::shared_ptr<poll_member_state> st);
  // Registration `seq` of `id` ended without the group's wake (cancelled, or its own slack
  // timer): no longer registered, and not awaited by a gather.
  void withdraw(std::uint64_t id, std::uint64_t seq);
  // Woken by the group (registration `seq`), `id` does not read now (it failed or is cancelled).
  void skip(std::uint64_t id, std::uint64_t seq);
  // Woken by the group (registration `seq`), `id` asks for a read of `name`; `reply` gets it.
  void ask(std::uint64_t id, std::uint64_t seq, std::string name, deadline_t deadline,
           std::function<void(polled_doc)> reply);
  // `id` is done (its acquire ended): whatever it had here goes, its unsent read answered aborted.
  void leave(std::uint64_t id);

  std::uint64_t next_id() noexcept { return ++ids_; }  // on the member's strand: atomic
  strand_type strand() const { return strand_; }

 private:
  struct member {
    strand_type ex;
    std::shared_ptr<poll_member_state> st;
    std::uint64_t seq = 0;
    std::optional<boot_clock::time_point> at;  // registered, waiting to be woken
  };
  struct asked {
    std::uint64_t id;
    // A copy: a member cancelled meanwhile ends (and its FSM with it) before the group hears.
    std::string name;
    deadline_t deadline;
    std::function<void(polled_doc)> reply;
  };

  void rearm();
  void fire(std::uint64_t generation);
  void maybe_send();

  std::shared_ptr<provider_impl> p_;
  strand_type strand_;
  boot_timer timer_;
  std::uint64_t generation_ = 0;  // of the timer's wait: a stale completion does nothing
  std::optional<boot_clock::time_point> armed_;
  std::unordered_map<std::uint64_t, member> members_;
  std::unordered_map<std::uint64_t, std::uint64_t> pending_;  // woken, not yet asked: id -> seq
  std::vector<asked> asked_;
  std::atomic<std::uint64_t> ids_{0};
};

// A member's end of the group, owned by its acquire (acquire.cpp), used on its strand only.
class poll_member {
 public:
  enum class woke { by_group, by_itself, cancelled };

  poll_member(std::shared_ptr<poll_group> g, strand_type ex, std::shared_ptr<boot_timer> timer);
  ~poll_member();
  poll_member(const poll_member&) = delete;
  poll_member& operator=(const poll_member&) = delete;

  // The driver's timer wait, aligned with the group's.
  boost::asio::awaitable<woke> wait(boot_clock::time_point at);
  // Woken by the group, the machine will not read (it failed, or was cancelled before its read
  // went out): the gather does not wait for it.
  void drop_read();
  // A read asked for after a wake by the group goes into the gather.
  bool in_gather() const noexcept { return gather_seq_.has_value(); }
  boost::asio::awaitable<polled_doc> read(const std::string* name, deadline_t deadline);

 private:
  std::shared_ptr<poll_group> g_;
  strand_type ex_;
  std::shared_ptr<poll_member_state> st_;
  std::uint64_t id_;
  std::optional<std::uint64_t> gather_seq_;  // woken by the group, its read not yet asked
};

}  // namespace mongolock::detail
