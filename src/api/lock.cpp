// A lock's acquire, as the engine starts it (start_acquire, src/engine/acquire.cpp): a try or a
// timeout it refuses starts at once; a wait takes its provider's turn for the name first, or parks
// behind the acquire that has it (docs/design.md section 7). A plain lock's has no poll group.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "engine/acquire.hpp"
#include "engine/provider_impl.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

void lock::start_acquire(impl_ptr p, std::string name, std::shared_ptr<const lock_options> timing, bool plain,
                         detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                         acquire_handler h) {
  detail::start_acquire(std::move(p), std::move(name), std::move(timing), plain, mode, timeout, d, std::move(h));
}

boost::asio::any_io_executor lock::executor_of(const detail::provider_impl& p) noexcept { return p.ex; }

}  // namespace mongolock
