#include "model/time_source.hpp"

namespace mongolock::detail {
namespace {
thread_local time_source* installed = nullptr;
}

time_source* installed_time_source() noexcept { return installed; }

time_source_scope::time_source_scope(time_source* s) noexcept : previous_(installed) { installed = s; }
time_source_scope::~time_source_scope() { installed = previous_; }

}  // namespace mongolock::detail
