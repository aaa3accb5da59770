#include "mongolock/client.hpp"

#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "store/async_call.hpp"
#include "store/client_impl.hpp"
#include "engine/spawn.hpp"
#include "store/mongo_commands.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;

client::client(asio::any_io_executor ex, std::string_view uri, client_options opts) {
  std::string why;
  if (auto ec = validate(opts, &why)) throw boost::system::system_error(ec, why);
  error_code ec;
  auto db = detail::driver::create(uri, opts, ec, why);
  if (!db) throw boost::system::system_error(ec, why);
  impl_ = std::make_shared<detail::client_impl>(std::move(ex), std::move(opts), std::move(db));
}

client::~client() { impl_->shutdown(); }

asio::any_io_executor client::get_executor() const { return impl_->ex; }
const std::string& client::redacted_uri() const { return impl_->db->redacted_uri(); }
bool client::server_in_reach() const noexcept { return impl_->db->server_in_reach(); }

namespace {
asio::awaitable<std::tuple<error_code, server_version>> version_body(std::shared_ptr<detail::client_impl> impl) {
  using info = detail::outcome<detail::server_info>;
  detail::store_call<info> call = [impl](std::function<void(info)> reply) {
    impl->run<info>(detail::lane::acquisition, std::move(reply), [](mongoc_client_t* c) { return detail::query_server(c); });
  };
  auto r = co_await detail::async_call<info>(impl->ex, call, nullptr, std::nullopt, asio::use_awaitable);
  if (r.ec) {
    impl->log(log_level::debug, [&] { return std::string("server version query failed: " + r.message); });
    co_return std::tuple{r.ec, server_version{}};
  }
  co_return std::tuple{error_code{}, server_version{r.value.version, r.value.max_wire_version}};
}
}  // namespace

void client::start_server_version(std::shared_ptr<detail::client_impl> impl,
                                  asio::any_completion_handler<void(error_code, server_version)> h) {
  auto strand = asio::make_strand(impl->ex);
  detail::spawn_op<error_code, server_version>(strand, version_body(std::move(impl)), std::move(h));
}

}  // namespace mongolock
