#pragma once
// The least a library can add to a blocking driver call that it runs on a worker thread and
// completes on the caller's io_context (scenario 1's breakdown): one round trip from an
// io_context thread to a worker and back, with no driver call in between.
#include <vector>

namespace bench {

// What a round trip adds, in µs, `n` of them: the worker holds each job for `busy_us` (as a
// driver call would, so that the io thread goes to sleep in its reactor, as an application's
// does while it waits), and that time is subtracted. The worker spins for its next job: the
// best case for the worker side.
std::vector<double> bare_hops(int n, double busy_us);

}  // namespace bench
