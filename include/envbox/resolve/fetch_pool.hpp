#pragma once
/// The bounded pool `IndexSource` fetches pages and metadata on: a fixed set of threads however
/// many packages a resolution names (a manifest of 10 000 requirements costs a queue, not a
/// thread each), and a queue the solver can reorder, so what it waits for goes ahead of
/// speculative prefetches.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace envbox::resolve {

/// Threads fetching pages and metadata at once.
inline constexpr unsigned kFetchWorkers = 32;

/// A fixed set of worker threads running queued jobs in order; a job can be moved to the front
/// (the solver waits for it). At most `workers` jobs run at once. The destructor runs what is
/// queued, then joins. Thread-safe.
class FetchPool {
  public:
    struct Job {
        std::function<void()> run;
        std::atomic<bool> taken{false};  ///< set by the worker that runs it (it runs once)
    };
    explicit FetchPool(unsigned workers);
    ~FetchPool();
    FetchPool(const FetchPool&) = delete;
    FetchPool& operator=(const FetchPool&) = delete;

    /// Queues `f` (at the front when `urgent`); its result or exception comes by the future.
    template <class T>
    std::pair<std::shared_future<T>, std::shared_ptr<Job>> submit(std::function<T()> f,
                                                                  bool urgent) {
        auto task = std::make_shared<std::packaged_task<T()>>(std::move(f));
        auto future = task->get_future().share();
        auto job = std::make_shared<Job>();
        job->run = [task] { (*task)(); };
        push(job, urgent);
        return {future, job};
    }
    /// Moves a queued job to the front (nothing when it has started).
    void promote(const std::shared_ptr<Job>& job);

  private:
    void push(std::shared_ptr<Job> job, bool urgent);
    void work();
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace envbox::resolve
