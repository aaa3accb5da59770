#include "sansio/declare_fsm.hpp"

#include "mongolock/error.hpp"

namespace mongolock::detail {

declare_action declare_fsm::resume(const declare_input& in) const {
  declare_action a;
  if (in.what == declare_input::kind::start) {
    if (!in.known) a.what = declare_action::kind::declare;
    return a;  // known: done, nothing to remember again
  }
  const auto& r = in.reply;
  if (r.ec) {
    a.ec = r.ec;
    a.why = "declaring '" + name_ + "': " + r.message;
    return a;
  }
  if (r.value != mine_) {
    a.ec = make_error_code(errc::declaration_mismatch);
    a.why = "'" + name_ + "' is declared as " + describe(r.value) + ", not a " + mine_.kind + " of " +
            std::to_string(mine_.permits);
    return a;
  }
  a.remember = true;
  return a;
}

}  // namespace mongolock::detail
