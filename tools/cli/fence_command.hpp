#pragma once
// `mongolock fence`: one fenced write (include/mongolock/fence.hpp) from the shell, with the
// token `run` handed to its COMMAND.
#include <boost/asio/awaitable.hpp>

#include "args.hpp"
#include "mongolock/client.hpp"

namespace mongolock::cli {

// Prints {"matched":N,"upserted":N} on success; the exit status as docs/cli.md lists it.
boost::asio::awaitable<int> fence_command(mongolock::client& db, const options& o);

}  // namespace mongolock::cli
