#include "envbox/util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace envbox {

unsigned default_jobs() {
    if (const char* env = std::getenv("ENVBOX_JOBS"); env && *env) {
        try {
            int n = std::stoi(env);
            if (n > 0) return static_cast<unsigned>(n);
        } catch (const std::exception&) {
        }
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn) {
    if (n == 0) return;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr first;
    std::mutex mutex;
    auto worker = [&] {
        for (;;) {
            if (failed.load(std::memory_order_relaxed)) return;
            std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= n) return;
            try {
                fn(i);
            } catch (...) {
                std::lock_guard lock(mutex);
                if (!first) first = std::current_exception();
                failed = true;
            }
        }
    };
    std::size_t threads = std::min<std::size_t>(std::max(1u, jobs), n);
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (first) std::rethrow_exception(first);
}

}  // namespace envbox
