// Lock documents as the server may return them: the input is a BSON
// document (wrong types, missing fields, negative or huge expiry_ms, tokens, beats and dates),
// then a few bytes of scenario. The document is parsed as the store parses a read, shown as
// `status` shows it, and fed to an acquire, on a fake clock, until it ends or 64 steps pass.
// Nothing may crash or overflow (UBSan), the JSON must be valid UTF-8, and a document that names
// a holder must never be taken over sooner than the shortest expiry a holder may write, plus
// the margin, after it was first seen.
#include <bson/bson.h>

#include <cstring>

#include "sansio/acquire_fsm.hpp"
#include "engine/lock_info.hpp"
#include "store/mongo_commands.hpp"
#include "fuzz_check.hpp"
#include "json.hpp"

namespace ml = mongolock;
using ml::detail::acquire_action;
using ml::detail::acquire_input;
using kind = acquire_action::kind;
using namespace std::chrono_literals;

namespace {

// The trailing scenario bytes: each read of them past the end yields 0.
struct scenario {
  const std::uint8_t* p;
  std::size_t n;
  std::int64_t i64() {
    std::int64_t v = 0;
    const auto k = std::min(n, sizeof v);
    std::memcpy(&v, p, k);
    p += k, n -= k;
    return v;
  }
  bool flag() { return (i64() & 1) != 0; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  std::uint32_t length = 0;
  std::memcpy(&length, data, 4);  // BSON's own little-endian length prefix
  if (length < 5 || length > size) return 0;
  bson_t doc;
  if (!bson_init_static(&doc, data, length) || !bson_validate(&doc, BSON_VALIDATE_NONE, nullptr)) return 0;
  scenario s{data + length, size - length};

  const ml::detail::lock_doc d = ml::detail::parse_lock(&doc);
  const std::string json = ml::cli::to_json(ml::detail::to_info("name", d), s.i64());
  fuzz::check(bson_utf8_validate(json.data(), json.size(), false), "status output is not valid UTF-8");

  ml::detail::acquire_params p;
  p.owner = "0123456789abcdef0123456789abcdef";
  p.try_once = s.flag();
  p.confirm_silent = s.flag();
  p.wall_now_ms = s.i64();
  p.expiry = 1000ms, p.margin = 100ms, p.backoff_min = 5ms, p.backoff_max = 50ms;
  p.seed = 7;
  using time_point = ml::detail::boot_clock::time_point;
  const time_point t0{std::chrono::hours(1)};
  p.deadline = t0 + 30s;
  ml::detail::acquire_fsm fsm("name", p);
  auto now = t0;
  const bool held_by_other = !d.held.owner.empty() && d.held.owner != p.owner;
  std::optional<time_point> first_seen;
  auto a = fsm.resume(acquire_input::start(now));
  for (int step = 0; step < 64; ++step) {
    switch (a.what) {
      case kind::read:
      case kind::recheck:
        if (!first_seen) first_seen = now;
        a = fsm.resume(a.what == kind::read ? acquire_input::read(ml::detail::success(d), now)
                                            : acquire_input::recheck(ml::detail::success(d), now));
        break;
      case kind::wait_until:
        fuzz::check(a.at >= now, "a wait into the past");
        now = a.at;
        a = fsm.resume(acquire_input::timer(now));
        break;
      case kind::take:
        // A blind take (no read yet) matches only a free document: its filter is the guard.
        if (held_by_other && fsm.request().observed.exists)
          fuzz::check(now - *first_seen >= ml::limits::min_expiry + p.margin, "took over a holder too soon");
        // Lost the race: the document stays.
        a = fsm.resume(acquire_input::take(ml::detail::success(false), now, now));
        break;
      case kind::give_back:
        a = fsm.resume(acquire_input::given_back(ml::detail::success(true), now));
        break;
      case kind::join:  // applied or raced: the document read next is the same either way
        fuzz::check(fsm.join_ticket() >= 0 && fsm.join_ticket() < INT64_MAX, "joined with an unusable ticket");
        a = fsm.resume(acquire_input::joined(ml::detail::success(s.flag()), now, now));
        break;
      case kind::refresh:  // still in line, or not (then it reads at once)
        a = fsm.resume(acquire_input::refreshed(ml::detail::success(s.flag()), now, now));
        break;
      case kind::grant:
      case kind::fail:
        return 0;
    }
  }
  return 0;
}
