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

TaskPool::TaskPool(unsigned jobs, unsigned lanes) : jobs_(jobs == 0 ? 1 : jobs) {
    for (unsigned l = 0; l < std::max(1u, lanes); ++l)
        lanes_.push_back(std::make_unique<Lane>());
}

void TaskPool::add(std::uint64_t priority, Task task, unsigned lane) {
    Lane& l = *lanes_.at(lane);
    {
        std::lock_guard lock(mutex_);
        l.queue.push(Entry{priority, added_++, std::move(task)});
    }
    l.wake.notify_one();
}

bool TaskPool::idle() const {
    if (running_ > 0) return false;
    for (const auto& l : lanes_)
        if (!l->queue.empty()) return false;
    return true;
}

void TaskPool::work(Lane& lane) {
    std::unique_lock lock(mutex_);
    for (;;) {
        lane.wake.wait(lock, [&] { return error_ || !lane.queue.empty() || idle(); });
        if (error_ || lane.queue.empty()) {
            // Failed, or nothing queued and nothing running that could queue more: done.
            for (auto& l : lanes_)
                l->wake.notify_all();
            return;
        }
        Task task = std::move(const_cast<Entry&>(lane.queue.top()).task);
        lane.queue.pop();
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
        if (error_ || idle())
            for (auto& l : lanes_)
                l->wake.notify_all();
    }
}

void TaskPool::run() {
    std::vector<std::thread> pool;
    pool.reserve(jobs_ * lanes_.size() - 1);
    for (std::size_t l = 0; l < lanes_.size(); ++l)
        for (unsigned t = l == 0 ? 1 : 0; t < jobs_; ++t)
            pool.emplace_back([this, l] { work(*lanes_[l]); });
    work(*lanes_[0]);
    for (auto& t : pool)
        t.join();
    if (error_) std::rethrow_exception(error_);
}

}  // namespace envbox
