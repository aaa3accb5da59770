#pragma once
// One simulated process on virtual time, its memory store answering at once, and providers on it:
// for counting a machine's calls exactly (docs/design.md section 11, "Virtual time").
#include <boost/test/unit_test.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/access.hpp"
#include "engine/provider_impl.hpp"
#include "memory_store.hpp"
#include "mongolock/provider.hpp"
#include "mongolock/semaphore.hpp"
#include "world.hpp"

namespace sim {

struct one_host {
  explicit one_host(mongolock::lock_options o) : options(std::move(o)) {}

  mongolock::lock_options options;
  world w;
  process& p = w.add_process();
  const inside in{p};
  std::shared_ptr<test::memory_store> store = std::make_shared<test::memory_store>(p.io.get_executor());
  mongolock::provider mine = provider(), theirs = provider();

  mongolock::provider provider() { return provider(options); }
  mongolock::provider provider(const mongolock::lock_options& o) {
    return mongolock::detail::access::make_provider(
        std::make_shared<mongolock::detail::provider_impl>(p.io.get_executor(), store, o, nullptr));
  }
  // Every permit of `name` (of `permits`) held by `theirs`.
  std::vector<mongolock::lease> hold_permits(const std::string& name, int permits) {
    auto them = theirs.create_semaphore(name, permits);
    std::vector<mongolock::lease> held;
    for (int i = 0; i < permits; ++i) {
      auto [ec, l] = run<mongolock::lease>([&](auto k) { them.async_acquire_for(std::chrono::seconds{1}, k); });
      BOOST_REQUIRE(!ec);
      held.push_back(std::move(l));
    }
    return held;
  }
  // Starts an operation with a handler of (error_code, T) and runs the world until it completes.
  template <class T, class Start>
  std::pair<boost::system::error_code, T> run(Start start) {
    std::optional<std::pair<boost::system::error_code, T>> got;
    start([&got](boost::system::error_code ec, T v) { got.emplace(ec, std::move(v)); });
    p.mail = true;
    BOOST_REQUIRE(w.run_until([&] { return got.has_value(); }, w.now() + std::chrono::hours{1}));
    return std::move(*got);
  }
  // The same for a handler of the error_code alone.
  boost::system::error_code run(auto start) {
    std::optional<boost::system::error_code> got;
    start([&got](boost::system::error_code ec) { got = ec; });
    p.mail = true;
    BOOST_REQUIRE(w.run_until([&] { return got.has_value(); }, w.now() + std::chrono::hours{1}));
    return *got;
  }
  // The calls of kind `o` since call `from` whose name starts with `prefix`, and how many names
  // each asked.
  std::vector<std::size_t> since(std::size_t from, test::op o, const std::string& prefix) const {
    std::vector<std::size_t> out;
    const auto calls = store->calls();
    for (std::size_t i = from; i < calls.size(); ++i)
      if (calls[i].what == o && calls[i].name.rfind(prefix, 0) == 0)
        out.push_back(o == test::op::read_each ? static_cast<std::size_t>(calls[i].token) : 1);
    return out;
  }
};

}  // namespace sim
