#include "engine/splitting_store.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <utility>

#include "store/bson_sizes.hpp"

namespace mongolock::detail {

namespace {
using part = std::pair<std::size_t, std::size_t>;

std::vector<std::string> slice(const std::vector<std::string>& v, part p) {
  return {v.begin() + static_cast<std::ptrdiff_t>(p.first), v.begin() + static_cast<std::ptrdiff_t>(p.second)};
}

// A call's parts, sent one after another (each when the one before has answered: a release of
// many parts would otherwise take every worker of the client's pool, and the renewals of every
// provider on it would wait), then answered to the caller as one.
template <class T>
struct part_chain : std::enable_shared_from_this<part_chain<T>> {
  using send_part = std::function<void(part, lock_store::reply<outcome<T>>)>;
  part_chain(std::vector<part> ps, send_part s, std::function<outcome<T>(std::vector<outcome<T>>&)> j,
             lock_store::reply<outcome<T>> r)
      : parts(std::move(ps)), send(std::move(s)), join(std::move(j)), done(std::move(r)) {}
  // Sends part `i`; its answer sends the next, the last one answers the call.
  void go(std::size_t i) {
    send(parts[i], [self = this->shared_from_this(), i](outcome<T> o) {
      self->each.push_back(std::move(o));
      if (i + 1 < self->parts.size()) return self->go(i + 1);
      self->done(self->join(self->each));
    });
  }
  const std::vector<part> parts;
  const send_part send;
  const std::function<outcome<T>(std::vector<outcome<T>>&)> join;
  const lock_store::reply<outcome<T>> done;
  std::vector<outcome<T>> each;  // written by one part's answer at a time
};

// The first failed part's error (ambiguous if any failed part was), its message naming the part.
template <class T>
bool first_failure(const std::vector<outcome<T>>& each, outcome<T>& out) {
  for (std::size_t i = 0; i < each.size(); ++i) {
    if (!each[i].ec) continue;
    if (!out.ec) {
      out.ec = each[i].ec;
      out.message = "part " + std::to_string(i + 1) + " of " + std::to_string(each.size()) + ": " + each[i].message;
    }
    out.ambiguous = out.ambiguous || each[i].ambiguous;
  }
  return static_cast<bool>(out.ec);
}
}  // namespace

std::size_t splitting_store::budget() const noexcept {
  const auto limit = max_bson_->load(std::memory_order_relaxed);
  // Half of a limit below twice the reserve (a test's lowered one): the rest of a command is then
  // a few hundred bytes.
  return limit - std::min(command_reserve_bytes, limit / 2);
}

void splitting_store::prepare(reply<outcome<server_info>> r) {
  inner_->prepare([max = max_bson_, r = std::move(r)](outcome<server_info> o) {
    if (!o.ec && o.value.max_bson_bytes > 0) max->store(o.value.max_bson_bytes, std::memory_order_relaxed);
    r(std::move(o));
  });
}

void splitting_store::read_each(const std::vector<std::string>& names, read_mode m,
                                reply<outcome<std::vector<lock_doc>>> r) {
  auto parts = split_by_bytes(names.size(), budget(),
                              [&](std::size_t i, std::size_t k) { return array_string_bytes(k, names[i].size()); });
  if (parts.size() <= 1) return inner_->read_each(names, m, std::move(r));
  extra_.fetch_add(parts.size() - 1, std::memory_order_relaxed);
  using docs = std::vector<lock_doc>;
  auto send = [inner = inner_, names, m](part p, reply<outcome<docs>> re) {
    inner->read_each(slice(names, p), m, [want = p.second - p.first, re = std::move(re)](outcome<docs> o) {
      // A part that answered another number of documents is a failed find (each_of_find's rule).
      if (!o.ec && o.value.size() != want)
        o = failure<docs>(make_error_code(errc::server_unavailable), "the find answered a different number of documents");
      re(std::move(o));
    });
  };
  auto join = [](std::vector<outcome<docs>>& each) {
    outcome<docs> out;
    if (!first_failure(each, out))
      for (auto& e : each) std::move(e.value.begin(), e.value.end(), std::back_inserter(out.value));
    return out;
  };
  std::make_shared<part_chain<docs>>(std::move(parts), std::move(send), join, std::move(r))->go(0);
}

void splitting_store::release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                                     reply<outcome<std::int64_t>> r) {
  // Pairs only (names[i] is owners[i]'s lease; lock_store.hpp): anything else goes as it came.
  if (names.size() != owners.size()) return inner_->release_owners(names, owners, std::move(r));
  auto parts = split_by_bytes(names.size(), budget(), [&](std::size_t i, std::size_t k) {
    return array_string_bytes(k, names[i].size()) + array_string_bytes(k, owners[i].size());
  });
  if (parts.size() <= 1) return inner_->release_owners(names, owners, std::move(r));
  extra_.fetch_add(parts.size() - 1, std::memory_order_relaxed);
  auto send = [inner = inner_, names, owners](part p, reply<outcome<std::int64_t>> re) {
    inner->release_owners(slice(names, p), slice(owners, p), std::move(re));
  };
  auto join = [](std::vector<outcome<std::int64_t>>& each) {
    outcome<std::int64_t> out;
    first_failure(each, out);
    for (const auto& e : each)
      if (!e.ec) out.value += e.value;
    return out;
  };
  std::make_shared<part_chain<std::int64_t>>(std::move(parts), std::move(send), join, std::move(r))->go(0);
}

}  // namespace mongolock::detail
