#pragma once
/// Bounded parallelism for independent work items (ingesting wheels, linking directories).

#include <cstddef>
#include <functional>

namespace envbox {

/// Worker threads to use by default: the machine's hardware concurrency, at least 1
/// (`ENVBOX_JOBS` overrides).
unsigned default_jobs();

/// Calls `fn(i)` for every i in [0, n) on up to `jobs` threads (the calling thread is one of
/// them). Items are handed out one at a time, so one slow item does not hold back the others.
/// If any call throws, no new items are started and the first exception is rethrown here once
/// every running call has returned.
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

}  // namespace envbox
