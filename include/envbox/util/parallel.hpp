#pragma once
/// Bounded parallelism for independent work items (ingesting wheels, linking directories).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

namespace envbox {

/// The machine's hardware concurrency, at least 1 (the cli's default for `Context::jobs`, which
/// `ENVBOX_JOBS` overrides).
unsigned hardware_jobs();

/// Calls `fn(i)` for every i in [0, n) on up to `jobs` threads (the calling thread is one of
/// them). Items are handed out one at a time, so one slow item does not hold back the others.
/// If any call throws, no new items are started and the first exception is rethrown here once
/// every running call has returned.
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

/// Tasks of unequal size on up to `jobs` threads, the highest priority first (give a task its
/// work as its priority and the biggest start first, so the longest one is not left running
/// alone at the end). A running task may add more tasks. `run` returns when every task has run;
/// if one throws, no new task starts and the first exception is rethrown once the running ones
/// return.
///
/// Tasks of different kinds can go into lanes of their own, each with its own `jobs` threads:
/// a lane of tasks that wait (writes the kernel throttles) then holds no thread another lane's
/// CPU work could use. `create` ingests in one lane and compiles bytecode in the other.
class TaskPool {
  public:
    using Task = std::function<void(TaskPool&)>;
    explicit TaskPool(unsigned jobs, unsigned lanes = 1);
    /// Queues `task` in `lane` (below the pool's lanes, else std::out_of_range).
    void add(std::uint64_t priority, Task task, unsigned lane = 0);
    /// Runs every task (the calling thread is one of the workers).
    void run();

  private:
    struct Entry {
        std::uint64_t priority;
        std::uint64_t order;  // first added first among equals
        Task task;
        bool operator<(const Entry& o) const {
            return priority != o.priority ? priority < o.priority : order > o.order;
        }
    };
    struct Lane {
        std::priority_queue<Entry> queue;
        std::condition_variable wake;
    };
    void work(Lane& lane);
    bool idle() const;  // nothing queued in any lane, nothing running: nothing can add more
    unsigned jobs_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<Lane>> lanes_;
    std::uint64_t added_ = 0;
    unsigned running_ = 0;
    std::exception_ptr error_;
};

}  // namespace envbox
