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

unsigned hardware_jobs() {
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
    for (std::size_t t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (auto& t : pool)
        t.join();
    if (first) std::rethrow_exception(first);
}

void TaskPool::add(std::uint64_t priority, Task task) {
    {
        std::lock_guard lock(mutex_);
        queue_.push(Entry{priority, added_++, std::move(task)});
    }
    wake_.notify_one();
}

void TaskPool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return error_ || !queue_.empty() || running_ == 0; });
        if (error_ || queue_.empty()) {
            // Failed, or nothing queued and nothing running that could queue more: done.
            wake_.notify_all();
            return;
        }
        Task task = std::move(const_cast<Entry&>(queue_.top()).task);
        queue_.pop();
        ++running_;
        lock.unlock();
        std::exception_ptr failure;
        try {
            task(*this);
        } catch (...) {
            failure = std::current_exception();
        }
        lock.lock();
        --running_;
        if (failure && !error_) error_ = failure;
        if (error_ || (queue_.empty() && running_ == 0)) wake_.notify_all();
    }
}

void TaskPool::run() {
    std::vector<std::thread> pool;
    pool.reserve(jobs_ - 1);
    for (unsigned t = 1; t < jobs_; ++t)
        pool.emplace_back([this] { work(); });
    work();
    for (auto& t : pool)
        t.join();
    if (error_) std::rethrow_exception(error_);
}

}  // namespace envbox
