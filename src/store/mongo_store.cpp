#include "store/mongo_store.hpp"

#include "mongolock/error.hpp"

namespace mongolock::detail {

template <class R, class Fn>
void mongo_store::run(lane l, reply<R> r, Fn fn) {
  client_->run<R>(l, std::move(r), std::move(fn));
}

void mongo_store::prepare(reply<outcome<server_info>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_](mongoc_client_t* c) { return detail::prepare(c, *cfg); });
}

void mongo_store::read(const std::string& name, read_mode mode, reply<outcome<lock_doc>> r) {
  run(lane::acquisition, std::move(r),
      [cfg = cfg_, name, mode](mongoc_client_t* c) { return read_lock(c, *cfg, name, mode); });
}

void mongo_store::read_each(const std::vector<std::string>& names, read_mode mode,
                            reply<outcome<std::vector<lock_doc>>> r) {
  run(lane::acquisition, std::move(r),
      [cfg = cfg_, names, mode](mongoc_client_t* c) { return read_locks(c, *cfg, names, mode); });
}

void mongo_store::list(reply<outcome<std::vector<named_doc>>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_](mongoc_client_t* c) { return read_all(c, *cfg); });
}

void mongo_store::take(const take_request& t, reply<outcome<bool>> r) {
  run(t.hand_over ? lane::maintenance : lane::acquisition, std::move(r),
      [cfg = cfg_, t](mongoc_client_t* c) { return detail::take(c, *cfg, t); });
}

void mongo_store::renew(const std::vector<held_lease>& held, std::chrono::milliseconds expiry,
                        reply<outcome<std::vector<bool>>> r) {
  run(lane::maintenance, std::move(r),
      [cfg = cfg_, held, expiry](mongoc_client_t* c) { return detail::renew(c, *cfg, held, expiry); });
}

void mongo_store::release(const std::string& name, const std::string& owner, std::int64_t token,
                          reply<outcome<bool>> r) {
  run(lane::maintenance, std::move(r), [cfg = cfg_, name, owner, token](mongoc_client_t* c) {
    return detail::release(c, *cfg, name, owner, token);
  });
}

void mongo_store::write_grouped(const std::vector<grouped_write>& writes,
                                reply<outcome<std::vector<grouped_outcome>>> r) {
  // Each statement on the lane its single command takes (docs/design.md section 5): takes and line
  // writes wait behind maintenance, releases do not.
  const bool releases = !writes.empty() && writes.front().what == grouped_write::kind::release;
  run(releases ? lane::maintenance : lane::acquisition, std::move(r),
      [cfg = cfg_, writes](mongoc_client_t* c) { return detail::write_grouped(c, *cfg, writes); });
}

void mongo_store::release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                                 reply<outcome<std::int64_t>> r) {
  run(lane::maintenance, std::move(r),
      [cfg = cfg_, names, owners](mongoc_client_t* c) { return detail::release_owners(c, *cfg, names, owners); });
}

void mongo_store::join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                            reply<outcome<bool>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_, name, owner, ticket](mongoc_client_t* c) {
    return detail::join_line(c, *cfg, name, owner, ticket);
  });
}

void mongo_store::leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) {
  run(lane::acquisition, std::move(r),
      [cfg = cfg_, name, owner](mongoc_client_t* c) { return detail::leave_line(c, *cfg, name, owner); });
}

void mongo_store::refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                               reply<outcome<bool>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_, name, owner, ticket](mongoc_client_t* c) {
    return detail::refresh_line(c, *cfg, name, owner, ticket);
  });
}

void mongo_store::proclaim(const std::string& name, const std::string& owner, std::int64_t token,
                           const std::string& value, reply<outcome<bool>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_, name, owner, token, value](mongoc_client_t* c) {
    return detail::proclaim(c, *cfg, name, owner, token, value);
  });
}

void mongo_store::record_run(const std::string& name, const std::string& owner, std::int64_t token,
                             reply<outcome<bool>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_, name, owner, token](mongoc_client_t* c) {
    return detail::record_run(c, *cfg, name, owner, token);
  });
}

void mongo_store::declare(const std::string& name, const declaration& d, reply<outcome<declaration>> r) {
  run(lane::acquisition, std::move(r), [cfg = cfg_, name, d](mongoc_client_t* c) { return detail::declare(c, *cfg, name, d); });
}

void mongo_store::force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) {
  run(lane::maintenance, std::move(r),
      [cfg = cfg_, name, immediate](mongoc_client_t* c) { return detail::force_release(c, *cfg, name, immediate); });
}

}  // namespace mongolock::detail
