#pragma once
// The one check of an acquire timeout given per call (async_acquire_for and try_options::within of
// every primitive, detail/acquire_surface.hpp): the option's own check is in options.cpp.
#include <chrono>
#include <optional>
#include <string>

#include "mongolock/error.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

// {} for no timeout or one in 0..limits::max_acquire_timeout; else invalid_options, with why.
inline boost::system::error_code check_acquire_timeout(std::optional<std::chrono::milliseconds> t,
                                                       std::string* why = nullptr) {
  const char* reason = !t                                  ? nullptr
                       : t->count() < 0                    ? "the acquire timeout is negative"
                       : *t > limits::max_acquire_timeout ? "the acquire timeout is above 366 days"
                                                           : nullptr;
  if (!reason) return {};
  if (why) *why = reason;
  return make_error_code(errc::invalid_options);
}

}  // namespace mongolock::detail
