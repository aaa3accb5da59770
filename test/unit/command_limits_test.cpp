// Every command within the server's limits (docs/design.md section 14, "Every command within the
// server's limits"), counted in bytes on the commands the library's own builders make: the
// weight of a list known before it is built, the parts a long list is split into at the real
// 16 MiB, and the commands whose lists are bounded by count, at their bounds.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "mongolock/limits.hpp"
#include "store/bson_sizes.hpp"
#include "store/bson_util.hpp"
#include "store/mongo_commands.hpp"

namespace md = mongolock::detail;

namespace {

constexpr std::size_t mib16 = 16 * 1024 * 1024;

// `n` names of the documented maximum length (512 bytes), each ending in its number, and an owner
// id of the library's length (32 characters) each.
struct longest_leases {
  std::vector<std::string> names, owners;
  explicit longest_leases(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      auto name = std::to_string(i) + "-";
      name.resize(mongolock::limits::max_name_bytes, 'n');
      names.push_back(std::move(name));
      auto owner = std::to_string(i);
      owner.resize(32, 'o');
      owners.push_back(std::move(owner));
    }
  }
  std::vector<std::string> names_of(std::pair<std::size_t, std::size_t> p) const {
    return {names.begin() + static_cast<long>(p.first), names.begin() + static_cast<long>(p.second)};
  }
  std::vector<std::string> owners_of(std::pair<std::size_t, std::size_t> p) const {
    return {owners.begin() + static_cast<long>(p.first), owners.begin() + static_cast<long>(p.second)};
  }
};

// The bytes of the update statement that frees `names` held by `owners`: its filter and change.
std::size_t release_statement_bytes(const std::vector<std::string>& names, const std::vector<std::string>& owners) {
  md::bson_doc filter, change;
  md::build_release_owners(names, owners, filter.get(), change.get());
  return filter.get()->len + change.get()->len;
}

// The parts splitting_store makes of a release of `l` at the real limit.
std::vector<std::pair<std::size_t, std::size_t>> release_parts(const longest_leases& l) {
  return md::split_by_bytes(l.names.size(), md::default_max_bson_bytes - md::command_reserve_bytes,
                            [&](std::size_t i, std::size_t k) {
                              return md::array_string_bytes(k, l.names[i].size()) +
                                     md::array_string_bytes(k, l.owners[i].size());
                            });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(command_sizes)

// The weight splitting_store counts is what BSON adds, at every index width (1 to 5 digits).
BOOST_AUTO_TEST_CASE(a_strings_weight_in_an_array_is_what_bson_adds) {
  md::bson_doc doc;
  bson_t array;
  BSON_APPEND_ARRAY_BEGIN(doc.get(), "a", &array);
  for (std::size_t i = 0; i < 12000; ++i) {
    const std::string value(i % 97, 'v');
    const auto before = array.len;
    md::append_str(&array, std::to_string(i).c_str(), value);
    BOOST_TEST_REQUIRE(array.len - before == md::array_string_bytes(i, value.size()), "index " << i);
  }
  bson_append_array_end(doc.get(), &array);
}

BOOST_AUTO_TEST_CASE(parts_weigh_at_most_the_budget_and_cover_every_element_in_order) {
  const std::vector<std::size_t> weights{5, 7, 3, 9, 1, 1, 1, 12, 4};
  const auto parts = md::split_by_bytes(weights.size(), 10, [&](std::size_t i, std::size_t) { return weights[i]; });
  std::size_t next = 0;
  for (const auto& [first, last] : parts) {
    BOOST_TEST(first == next);
    BOOST_TEST(last > first);
    std::size_t sum = 0;
    for (std::size_t i = first; i < last; ++i) sum += weights[i];
    // 12 alone is over 10: a part of its own (the server then refuses that part only).
    BOOST_TEST((sum <= 10 || last - first == 1), "part [" << first << ", " << last << ") weighs " << sum);
    next = last;
  }
  BOOST_TEST(next == weights.size());
  BOOST_TEST(parts.size() == 6u);  // {5} {7,3} {9,1} {1,1} {12} {4}: greedy, in order
  BOOST_TEST(md::split_by_bytes(0, 10, [](std::size_t, std::size_t) { return std::size_t{1}; }).empty());
  BOOST_TEST(md::split_by_bytes(3, 10, [](std::size_t, std::size_t) { return std::size_t{3}; }).size() == 1u);
}

// The release of every lease a provider holds: 30,000 leases of 512-byte names make one statement
// of more than 16 MiB, which libmongoc and the server refuse; in parts, each is under it.
BOOST_AUTO_TEST_CASE(a_release_of_30000_longest_names_is_over_16_mib_whole_and_under_it_in_each_part) {
  const longest_leases all(30000);
  BOOST_TEST(release_statement_bytes(all.names, all.owners) > mib16 + 16 * 1024);
  const auto parts = release_parts(all);
  BOOST_TEST(parts.size() == 2u);
  for (const auto& p : parts) {
    const auto bytes = release_statement_bytes(all.names_of(p), all.owners_of(p));
    BOOST_TEST(bytes <= mib16 - 8 * 1024, "part [" << p.first << ", " << p.second << "): " << bytes << " bytes");
  }
  // provider.hpp's figure: 29,000 such leases still go in one command.
  BOOST_TEST(release_parts(longest_leases(29000)).size() == 1u);
}

// The commands bounded by count stay far under the limit at their bounds: a renewal of 256 leases
// (renewal_batch.hpp) and a take of the longest name that removes a full line (max_line entries),
// 256 of which make group commit's largest command (group_commit.hpp).
BOOST_AUTO_TEST_CASE(the_commands_bounded_by_count_stay_under_the_limit_at_their_bounds) {
  const longest_leases l(256);
  std::vector<md::held_lease> held;
  for (std::size_t i = 0; i < 256; ++i) held.push_back({l.names[i], l.owners[i], std::int64_t{1} << 62});
  md::bson_doc renewal_filter, renewal_change;
  md::holder_meta meta;
  meta.host = std::string(255, 'h');
  meta.label = std::string(255, 'l');
  meta.value = std::string(mongolock::limits::max_election_value, 'v');
  md::build_renewal(held, std::chrono::milliseconds{30000}, 0, renewal_filter.get(), renewal_change.get(), &meta);
  const std::size_t renewal = renewal_filter.get()->len + renewal_change.get()->len;
  BOOST_TEST_MESSAGE("a renewal of 256 leases of 512-byte names: " << renewal << " bytes");
  BOOST_TEST(renewal < 2 * 1024 * 1024);

  md::take_request t;
  t.name = l.names[0];
  t.owner = l.owners[0];
  t.token = std::int64_t{1} << 62;
  t.expiry = std::chrono::milliseconds{30000};
  t.meta = meta;
  t.observed.exists = true;
  t.observed.held = {l.owners[1], t.token - 1, 7, std::chrono::milliseconds{30000}};
  for (std::size_t i = 0; i < md::max_line; ++i) t.leaving.push_back({l.owners[i], static_cast<std::int64_t>(i)});
  md::bson_doc swap_filter, swap_change;
  md::build_swap(t, 0, swap_filter.get(), swap_change.get(), std::int64_t{1});
  const std::size_t take = swap_filter.get()->len + swap_change.get()->len;
  BOOST_TEST_MESSAGE("a take of a 512-byte name that empties a full line: " << take << " bytes");
  BOOST_TEST(take < 6 * 1024);
  BOOST_TEST(256 * take < 2 * 1024 * 1024);
}

BOOST_AUTO_TEST_SUITE_END()
