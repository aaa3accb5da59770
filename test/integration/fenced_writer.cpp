// mongolock-fenced-writer: a holder that writes one MongoDB document after a pause, whatever
// became of its lease meanwhile (code that ignores cancellation, or a process frozen past its
// lease: the fence suite SIGSTOPs it during the pause). Its write is the lease's fenced update,
// or with --mode plain the same update unfenced, so the suite can show the difference.
//
//   mongolock-fenced-writer --uri URI --db DB --coll COLL --name NAME --id ID --value V
//                           [--mode fenced|plain] [--expiry-ms E] [--pause-ms P]
// Prints "acquired token=T", then "WRITE applied", "WRITE fenced_out <reason>" or
// "WRITE error <reason>"; exits 0 once it has written (or been refused), 1 otherwise.
#include <mongoc/mongoc.h>

#include <boost/asio.hpp>
#include <iostream>
#include <string>
#include <thread>

#include "mongolock.hpp"

namespace asio = boost::asio;
namespace ml = mongolock;

namespace {

struct args {
  std::string uri, db = "mongolock_test", coll = "fenced", name, id, value, mode = "fenced";
  int expiry_ms = 1000, pause_ms = 300;
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

asio::awaitable<int> body(ml::client& db, const args& a) {
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
