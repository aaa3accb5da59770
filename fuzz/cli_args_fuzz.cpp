// The CLI's argument parsing: any argv (the input split at NUL bytes) is
// either options or a usage error, never a crash; every duration the parser accepts is within
// its cap and reads back the same when written in milliseconds.
#include <chrono>
#include <vector>

#include "args.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input = fuzz::text(data, size);
  if (auto d = mongolock::cli::parse_duration(input)) {
    fuzz::check(d->count() >= 0 && d->count() <= 1'000'000'000'000'000'000, "a duration out of range");
    const auto again = mongolock::cli::parse_duration(std::to_string(d->count()) + "ms");
    fuzz::check(again && *again == *d, "a duration does not read back as milliseconds");
  }
  std::vector<std::string> args;
  std::size_t from = 0;
  for (std::size_t i = 0; i <= input.size(); ++i)
    if (i == input.size() || input[i] == '\0') args.push_back(input.substr(from, i - from)), from = i + 1;
  const auto r = mongolock::cli::parse_args(args, {{"MONGOLOCK_URI", "mongodb://u:pw@h/"}});
  if (r.error.empty() && r.opts.cmd == mongolock::cli::command::run)
    fuzz::check(!r.opts.argv.empty(), "run accepted without a command");
  return 0;
}
