#pragma once
// The library's (and its tests') way to the private parts of the public classes: a lease made from
// its state, a lock from a provider's state without a provider object, a client's state. Users
// get these objects only from the operations that make them.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mongolock/client.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/provider.hpp"

namespace mongolock::detail {

struct access {
  static lease make_lease(std::shared_ptr<lease_state> st) noexcept { return lease(std::move(st)); }
  static multi_lease make_multi_lease(std::vector<lease> leases) { return multi_lease(std::move(leases)); }
  // `plain`: a lock the user named (lock.hpp); permits are not.
  static lock make_lock(std::shared_ptr<provider_impl> p, std::string name,
                        std::shared_ptr<const lock_options> timing = nullptr, bool plain = false) {
    return lock(std::move(p), std::move(name), std::move(timing), plain);
  }
  // The lock's acquire in any mode (permits.cpp uses acquire_mode::try_in_turn, multi_lock.cpp
  // try_taking_turn, which lock's public set does not offer), through the set's one door.
  template <class Token>
  static auto acquire(lock& l, acquire_mode m, std::optional<std::chrono::milliseconds> t, diagnostics* d,
                      Token&& token) {
    return l.initiate({m, t}, d, std::forward<Token>(token));
  }
  static const std::shared_ptr<client_impl>& impl(const client& c) noexcept { return c.impl_; }
  static const std::shared_ptr<provider_impl>& impl(const lock& l) noexcept { return l.provider_; }
  static const std::shared_ptr<const lock_options>& timing(const lock& l) noexcept { return l.timing_; }
  static bool plain(const lock& l) noexcept { return l.plain_; }
  static const std::shared_ptr<lease_state>& state(const lease& l) noexcept { return l.state_; }
  // A provider over state built without a client (the engine tests' in-memory store).
  static provider make_provider(std::shared_ptr<provider_impl> p) noexcept { return provider(std::move(p)); }
};

}  // namespace mongolock::detail
