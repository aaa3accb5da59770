#pragma once
// mongolock::client owns the MongoDB driver pool and the small worker pool that runs every
// blocking libmongoc call, so io_context threads never block on the database.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "mongolock/detail/initiation.hpp"
#include "mongolock/options.hpp"

namespace mongolock {
namespace detail {
struct client_impl;
struct access;
}

struct server_version {
  std::string version;       // e.g. "8.0.4"
  int max_wire_version = 0;  // the server's wire protocol version
};

class client {
 public:
  // Throws boost::system::system_error with errc::invalid_uri or errc::invalid_options; the
  // message never contains the URI's password. Does not connect: the first operation does.
  client(boost::asio::any_io_executor ex, std::string_view uri, client_options opts = {});
  // Runs the driver calls already queued and waits for them (each bounded by socket_timeout);
  // replies that arrive after the io_context stopped are dropped. Leases that outlive the client
  // stop renewing and are lost at their local deadline. For a clean exit, co_await
  // provider::async_shutdown() first: it frees every lock this process holds or is giving back.
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  boost::asio::any_io_executor get_executor() const;
  // The URI with any password replaced by ****.
  const std::string& redacted_uri() const;
  // Whether a server may still answer or apply what this client sends: one it can write to is
  // known (the driver's view of the deployment), or a command it wrote is not yet answered. False
  // once every server is unknown or unreachable and every call is still looking for one (a call
  // selecting a server has sent nothing). A process leaving before its shutdown ends can tell
  // from it whether waiting on could still change anything on a server (the mongolock tool's run
  // does, when it got no lock: docs/cli.md).
  bool server_in_reach() const noexcept;

  // Pings the server and reads its version. Completes with errc::server_unavailable when no
  // server answers within server_selection_timeout. Cancellation: terminal (partial and total are
  // ignored); the ping may still reach the server (it has no side effect).
  template <class Token = boost::asio::deferred_t>
  auto async_server_version(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, server_version)>(
        detail::initiation(get_executor(),
                           [](auto handler, std::shared_ptr<detail::client_impl> impl) {
                             start_server_version(std::move(impl), std::move(handler));
                           }),
        token, impl_);
  }

 private:
  friend class provider;
  friend struct detail::access;
  static void start_server_version(
      std::shared_ptr<detail::client_impl>,
      boost::asio::any_completion_handler<void(boost::system::error_code, server_version)>);
  std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace mongolock
