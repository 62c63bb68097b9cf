#include "envbox/resolve/fetch_pool.hpp"

namespace envbox::resolve {

FetchPool::FetchPool(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i)
        threads_.emplace_back([this] { work(); });
}

FetchPool::~FetchPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
        t.join();
}

void FetchPool::push(std::shared_ptr<Job> job, bool urgent) {
    {
        std::lock_guard lock(mutex_);
        if (urgent)
            queue_.push_front(std::move(job));
        else
            queue_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void FetchPool::promote(const std::shared_ptr<Job>& job) {
    // Queued once more at the front; whichever copy a worker reaches first runs it.
    if (job && !job->taken) push(job, true);
}

void FetchPool::work() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and nothing left
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        if (!job->taken.exchange(true)) job->run();
    }
}

}  // namespace envbox::resolve
