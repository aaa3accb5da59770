#include "fence_command.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <iostream>

#include "mongolock/fence.hpp"

namespace mongolock::cli {

boost::asio::awaitable<int> fence_command(mongolock::client& db, const options& o) {
  // DB.COLLECTION: the database ends at the first '.', as in MongoDB's namespaces (a collection
  // name may hold dots, a database name may not).
  const auto dot = o.name.find('.');
  fenced_collection where;
  where.database = o.name.substr(0, dot);
  where.collection = o.name.substr(dot + 1);
  where.fence_field = o.fence_field;
  fenced_op op;
  op.kind = o.remove ? fenced_kind::remove : o.replace ? fenced_kind::replace : fenced_kind::update;
  op.filter = document(o.argv[0]);
  if (!o.remove) op.change = document(o.argv[1]);
  op.upsert = o.upsert;
  std::vector<fenced_op> ops;
  ops.push_back(std::move(op));
  diagnostics why;
  auto [ec, r] = co_await async_fenced_write(db, o.fencing_token, where, std::move(ops), why,
                                             boost::asio::as_tuple(boost::asio::use_awaitable));
  if (ec) {
    if (!o.quiet || ec != errc::fenced_out)
      std::cerr << "mongolock: " << ec.message() << (why.reason.empty() ? "" : " (" + why.reason + ")") << "\n";
    co_return exit_code_for(ec);
  }
  std::cout << "{\"matched\":" << r.matched << ",\"upserted\":" << r.upserted << "}" << std::endl;
  co_return 0;
}

}  // namespace mongolock::cli
