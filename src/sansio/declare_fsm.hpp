#pragma once
// Whether a semaphore's or rw_lock's name must be declared before its permits are taken, and what
// the store's answer to a declaration means (docs/design.md section 10), decided without I/O: the
// driver (src/primitives/permits.cpp, ensure_declared) sends the one `declare` asked for and feeds
// the reply back. Unit-tested in test/sansio/declare_fsm_test.cpp.
//
// Rules:
// - a name this process already saw declared as `mine` is not declared again (no command);
// - the store answers with the declaration it holds: ours (new or the same as before), or
//   another primitive's; only ours lets the permits be taken, anything else is
//   errc::declaration_mismatch with both in the reason;
// - a failed declaration says which name it was for; it is not remembered.
#include <boost/system/error_code.hpp>
#include <string>

#include "model/lock_document.hpp"

namespace mongolock::detail {

struct declare_action {
  enum class kind {
    declare,  // send the declaration mine() (the store's declare), then resume(declared)
    done,     // `ec` and `why`; `remember`: the name is declared as ours, skip it from now on
  };
  kind what = kind::done;
  boost::system::error_code ec;
  std::string why;
  bool remember = false;
};

// What happened: the check began (`known`: this process has seen the name declared as ours), or
// the store answered the declaration.
struct declare_input {
  enum class kind { start, declared };
  kind what = kind::start;
  bool known = false;           // start
  outcome<declaration> reply;   // declared: the declaration the store holds for the name

  static declare_input start(bool known) { return {kind::start, known, {}}; }
  static declare_input declared(outcome<declaration> r) { return {kind::declared, false, std::move(r)}; }
};

class declare_fsm {
 public:
  declare_fsm(std::string name, declaration mine) : name_(std::move(name)), mine_(std::move(mine)) {}

  declare_action resume(const declare_input& in) const;
  const declaration& mine() const { return mine_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  declaration mine_;
};

}  // namespace mongolock::detail
