#pragma once
#include <boost/asio/awaitable.hpp>

#include "args.hpp"
#include "mongolock/provider.hpp"

namespace mongolock::cli {

// `mongolock run`: holds the lease while COMMAND runs; returns the tool's exit status.
boost::asio::awaitable<int> run_command(provider& locks, const options& o);

}  // namespace mongolock::cli
