// mongolock-fenced-writer: a holder that writes one MongoDB document after a pause, whatever
// became of its lease meanwhile (code that ignores cancellation, or a process frozen past its
// lease: the fence suite SIGSTOPs it during the pause). Its write is the lease's fenced update,
// or with --mode plain the same update unfenced, so the suite can show the difference.
//
//   mongolock-fenced-writer --uri URI --db DB --coll COLL --name NAME --id ID --value V
//                           [--mode fenced|plain] [--expiry-ms E] [--pause-ms P]
// Prints "acquired token=T", then "WRITE applied", "WRITE fenced_out <reason>" or
// "WRITE error <reason>"; exits 0 once it has written (or been refused), 1 otherwise.
//
// With --rounds N (the fence suite's soak): N times acquire, pause a random 0..--pause-ms (a
// blocking sleep: renewals stop, as in a freeze; past the expiry the lock is taken over), write
// the history document ID, release. Each write is a compare-and-swap on the document's `last`
// (re-read and retried when another write came between) that sets last = T and h.T = the last
// it replaced, so the document keeps the order in which writes were applied; fenced, or plain
// with --mode plain. Prints "SOAK applied=A refused=R".
#include <mongoc/mongoc.h>

#include <boost/asio.hpp>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "mongolock.hpp"

namespace asio = boost::asio;
namespace ml = mongolock;

namespace {

struct args {
  std::string uri, db = "mongolock_test", coll = "fenced", name, id, value, mode = "fenced";
  int expiry_ms = 1000, pause_ms = 300, rounds = 0;
};

void say(const std::string& line) { std::cout << line << std::endl; }

// The unfenced update, straight through libmongoc: what an application without the check does.
bool plain_update(const args& a) {
  mongoc_client_t* c = mongoc_client_new(a.uri.c_str());
  mongoc_collection_t* col = mongoc_client_get_collection(c, a.db.c_str(), a.coll.c_str());
  bson_t* filter = BCON_NEW("_id", BCON_UTF8(a.id.c_str()));
  bson_t* change = BCON_NEW("$set", "{", "value", BCON_UTF8(a.value.c_str()), "}");
  bson_error_t err;
  const bool ok = mongoc_collection_update_one(col, filter, change, nullptr, nullptr, &err);
  if (!ok) say(std::string("WRITE error ") + err.message);
  bson_destroy(filter);
  bson_destroy(change);
  mongoc_collection_destroy(col);
  mongoc_client_destroy(c);
  return ok;
}

// The history document's `last` (0 when absent), read through libmongoc: the soak's CAS base.
std::int64_t read_last(mongoc_collection_t* col, const std::string& id) {
  bson_t* filter = BCON_NEW("_id", BCON_UTF8(id.c_str()));
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(col, filter, nullptr, nullptr);
  const bson_t* doc = nullptr;
  std::int64_t last = 0;
  bson_iter_t it;
  if (mongoc_cursor_next(cur, &doc) && bson_iter_init_find(&it, doc, "last")) last = bson_iter_as_int64(&it);
  mongoc_cursor_destroy(cur);
  bson_destroy(filter);
  return last;
}

asio::awaitable<int> soak(ml::client& db, const args& a) {
  ml::lock_options o;
  o.expiry = std::chrono::milliseconds(a.expiry_ms);
  o.backoff_max = std::chrono::milliseconds(50);
  ml::provider p(db, a.db, "locks", o);
  mongoc_client_t* c = mongoc_client_new(a.uri.c_str());
  mongoc_collection_t* col = mongoc_client_get_collection(c, a.db.c_str(), a.coll.c_str());
  std::mt19937 rng(std::random_device{}());
  const ml::fenced_collection where{a.db, a.coll};
  int applied = 0, refused = 0;
  for (int round = 0; round < a.rounds; ++round) {
    auto lease = co_await p.create_lock(a.name).async_acquire();
    const auto t = lease.fencing_token();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % static_cast<unsigned>(a.pause_ms + 1)));
    for (int attempt = 0; attempt < 20; ++attempt) {
      const auto last = read_last(col, a.id);
      const std::string filter =
          R"({"_id": ")" + a.id + R"(", "last": {"$numberLong": ")" + std::to_string(last) + R"("}})";
      const std::string update = R"({"$set": {"last": {"$numberLong": ")" + std::to_string(t) + R"("}, "h.)" +
                                 std::to_string(t) + R"(": {"$numberLong": ")" + std::to_string(last) + R"("}}})";
      std::int64_t matched = 0;
      if (a.mode == "plain") {
        bson_error_t err;
        bson_t* f = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(filter.data()), -1, &err);
        bson_t* u = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(update.data()), -1, &err);
        bson_t reply;
        if (mongoc_collection_update_one(col, f, u, nullptr, &reply, &err)) {
          bson_iter_t it;
          if (bson_iter_init_find(&it, &reply, "matchedCount")) matched = bson_iter_as_int64(&it);
        }
        bson_destroy(&reply);
        bson_destroy(f);
        bson_destroy(u);
      } else {
        // With the token, not the lease: a lease known lost refuses before sending
        // (fenced_surface.hpp), and the soak is of the fence, as a holder that has not noticed.
        auto [ec, r] = co_await ml::async_fenced_update(db, t, where, filter, update, asio::as_tuple(asio::deferred));
        if (ec == ml::errc::fenced_out) {
          ++refused;
          break;
        }
        if (ec) say("WRITE error " + ec.message());
        matched = r.matched;
      }
      if (matched == 1) {
        ++applied;
        break;
      }
    }
    co_await lease.async_release(asio::as_tuple(asio::deferred));
  }
  mongoc_collection_destroy(col);
  mongoc_client_destroy(c);
  say("SOAK applied=" + std::to_string(applied) + " refused=" + std::to_string(refused));
  co_return 0;
}

asio::awaitable<int> body(ml::client& db, const args& a) {
  if (a.rounds > 0) co_return co_await soak(db, a);
  ml::lock_options o;
  o.expiry = std::chrono::milliseconds(a.expiry_ms);
  ml::provider p(db, a.db, "locks", o);
  auto lease = co_await p.create_lock(a.name).async_acquire();
  say("acquired token=" + std::to_string(lease.fencing_token()));
  std::this_thread::sleep_for(std::chrono::milliseconds(a.pause_ms));  // ignores the lease on purpose
  if (a.mode == "plain") {
    if (!plain_update(a)) co_return 1;
    say("WRITE applied");
    co_return 0;
  }
  ml::diagnostics d;
  const std::string filter = R"({"_id": ")" + a.id + R"("})";
  const std::string update = R"({"$set": {"value": ")" + a.value + R"("}})";
  const ml::fenced_collection where{a.db, a.coll};  // named: see fence.hpp on GCC 12
  auto [ec, r] = co_await lease.async_fenced_update(where, filter, update, d, asio::as_tuple(asio::deferred));
  if (ec == ml::errc::fenced_out) say("WRITE fenced_out " + d.reason);
  else if (ec) say("WRITE error " + ec.message() + ": " + d.reason);
  else say("WRITE applied matched=" + std::to_string(r.matched));
  co_return ec && ec != ml::errc::fenced_out ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--uri") a.uri = v;
    else if (k == "--db") a.db = v;
    else if (k == "--coll") a.coll = v;
    else if (k == "--name") a.name = v;
    else if (k == "--id") a.id = v;
    else if (k == "--value") a.value = v;
    else if (k == "--mode") a.mode = v;
    else if (k == "--expiry-ms") a.expiry_ms = std::stoi(v);
    else if (k == "--pause-ms") a.pause_ms = std::stoi(v);
    else if (k == "--rounds") a.rounds = std::stoi(v);
    else {
      std::cerr << "unknown argument " << k << "\n";
      return 2;
    }
  }
  asio::io_context io;
  ml::client db(io.get_executor(), a.uri);
  int rc = 1;
  asio::co_spawn(io, body(db, a), [&](std::exception_ptr e, int r) {
    rc = e ? 1 : r;
    io.stop();  // the lease (lost or not) is not released: the next holder took it over
  });
  io.run();
  return rc;
}
