#pragma once
// The machines' actions by name, so that a failed check prints what came and what was expected
// (BOOST_TEST(a.what == kind::take) prints "read != take"), not only "false". In the actions'
// namespace, where Boost.Test's printing finds them.
#include <ostream>

#include "sansio/acquire_fsm.hpp"
#include "sansio/declare_fsm.hpp"
#include "sansio/lease_fsm.hpp"
#include "sansio/release_fsm.hpp"

namespace mongolock::detail {

inline std::ostream& operator<<(std::ostream& os, acquire_action::kind k) {
  using enum acquire_action::kind;
  switch (k) {
    case read: return os << "read";
    case recheck: return os << "recheck";
    case take: return os << "take";
    case give_back: return os << "give_back";
    case join: return os << "join";
    case refresh: return os << "refresh";
    case wait_until: return os << "wait_until";
    case grant: return os << "grant";
    case fail: return os << "fail";
  }
  return os << "acquire_action::kind(" << static_cast<int>(k) << ")";
}

inline std::ostream& operator<<(std::ostream& os, lease_action::kind k) {
  using enum lease_action::kind;
  switch (k) {
    case wait_until: return os << "wait_until";
    case renew: return os << "renew";
    case lost: return os << "lost";
    case taken: return os << "taken";
  }
  return os << "lease_action::kind(" << static_cast<int>(k) << ")";
}

inline std::ostream& operator<<(std::ostream& os, release_action::kind k) {
  using enum release_action::kind;
  switch (k) {
    case hand_to_line: return os << "hand_to_line";
    case hand_over: return os << "hand_over";
    case release: return os << "release";
    case read: return os << "read";
    case done: return os << "done";
  }
  return os << "release_action::kind(" << static_cast<int>(k) << ")";
}

inline std::ostream& operator<<(std::ostream& os, release_action::handed h) {
  using enum release_action::handed;
  switch (h) {
    case none: return os << "none";
    case to_line: return os << "to_line";
    case to_local: return os << "to_local";
  }
  return os << "release_action::handed(" << static_cast<int>(h) << ")";
}

inline std::ostream& operator<<(std::ostream& os, declare_action::kind k) {
  using enum declare_action::kind;
  switch (k) {
    case declare: return os << "declare";
    case done: return os << "done";
  }
  return os << "declare_action::kind(" << static_cast<int>(k) << ")";
}

}  // namespace mongolock::detail
