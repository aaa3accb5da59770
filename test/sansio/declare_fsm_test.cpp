// declare_fsm without I/O: when a semaphore's or rw_lock's declaration is sent, and what each
// answer of the store means (docs/design.md section 10).
#include <boost/test/unit_test.hpp>

#include "mongolock/error.hpp"
#include "printable.hpp"
#include "sansio/declare_fsm.hpp"

namespace ml = mongolock;
using namespace mongolock::detail;

namespace {

using dkind = declare_action::kind;
const declaration three_permits{"semaphore", 3};

declare_fsm semaphore_of_three() { return declare_fsm("jobs", three_permits); }

outcome<declaration> holds(declaration d) { return success(std::move(d)); }

// Started for a name not seen declared: the one declaration it asks for, answered with `r`.
declare_action answered(const outcome<declaration>& r) {
  const auto f = semaphore_of_three();
  const auto a = f.resume(declare_input::start(false));
  BOOST_TEST_REQUIRE(a.what == dkind::declare);
  return f.resume(declare_input::declared(r));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(declare_fsm_suite)

BOOST_AUTO_TEST_CASE(a_name_seen_declared_is_not_declared_again) {
  const auto a = semaphore_of_three().resume(declare_input::start(true));
  BOOST_TEST(a.what == dkind::done);
  BOOST_TEST(!a.ec);
  BOOST_TEST(!a.remember, "already remembered");
}

BOOST_AUTO_TEST_CASE(a_new_name_is_declared_and_remembered_when_the_store_holds_ours) {
  const auto f = semaphore_of_three();
  BOOST_TEST(f.resume(declare_input::start(false)).what == dkind::declare);
  BOOST_TEST((f.mine() == three_permits));
  const auto a = f.resume(declare_input::declared(holds(three_permits)));
  BOOST_TEST(a.what == dkind::done);
  BOOST_TEST(!a.ec);
  BOOST_TEST(a.remember);
}

BOOST_AUTO_TEST_CASE(another_primitive_s_declaration_is_a_mismatch_with_both_in_the_reason) {
  auto a = answered(holds(declaration{"rw_lock", 2}));
  BOOST_TEST(a.what == dkind::done);
  BOOST_TEST((a.ec == ml::errc::declaration_mismatch));
  BOOST_TEST(a.why == "'jobs' is declared as a rw_lock of 2 permits, not a semaphore of 3");
  BOOST_TEST(!a.remember);
  a = answered(holds(declaration{"semaphore", 4}));  // the same kind, another number
  BOOST_TEST((a.ec == ml::errc::declaration_mismatch));
  BOOST_TEST(a.why == "'jobs' is declared as a semaphore of 4 permits, not a semaphore of 3");
  a = answered(holds(declaration{"lock", 0}));  // a plain lock's name
  BOOST_TEST((a.ec == ml::errc::declaration_mismatch));
  BOOST_TEST(a.why == "'jobs' is declared as a lock, not a semaphore of 3");
}

BOOST_AUTO_TEST_CASE(a_failed_declaration_names_the_name_and_is_not_remembered) {
  outcome<declaration> r;
  r.ec = make_error_code(ml::errc::server_unavailable);
  r.message = "no primary";
  const auto a = answered(r);
  BOOST_TEST(a.what == dkind::done);
  BOOST_TEST((a.ec == ml::errc::server_unavailable));
  BOOST_TEST(a.why == "declaring 'jobs': no primary");
  BOOST_TEST(!a.remember);
}

BOOST_AUTO_TEST_SUITE_END()
