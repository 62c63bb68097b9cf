#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "envbox/resolve/fetch_pool.hpp"

// The pool the index source fetches on: bounded however many jobs are queued, the solver's
// urgent job ahead of speculative ones, every queued job run before the pool goes.
namespace {

using envbox::resolve::FetchPool;

// Holds the pool's only worker until `release` (so jobs queue up behind it).
struct Gate {
    std::promise<void> open;
    std::shared_future<void> opened = open.get_future().share();
    void release() { open.set_value(); }
};

}  // namespace

TEST_CASE("a fetch pool runs at most its workers' count of jobs at once", "[resolve][pool]") {
    std::atomic<int> running{0}, most{0};
    auto job = [&](int i) {
        return [&, i] {
            int now = ++running;
            for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            --running;
            return i * i;
        };
    };
    std::vector<std::shared_future<int>> results;
    {
        FetchPool pool(3);
        for (int i = 0; i < 40; ++i)
            results.push_back(pool.submit<int>(job(i), /*urgent=*/i % 5 == 0).first);
        for (int i = 0; i < 40; ++i)
            CHECK(results[static_cast<std::size_t>(i)].get() == i * i);
    }
    CHECK(most <= 3);
    CHECK(most >= 1);
}

TEST_CASE("a fetch pool's job passes its exception by its future", "[resolve][pool]") {
    FetchPool pool(2);
    auto [f, job] = pool.submit<int>([]() -> int { throw std::runtime_error("HTTP 500"); }, true);
    CHECK_THROWS_WITH(f.get(), "HTTP 500");
    CHECK(job->taken);
}

TEST_CASE("urgent and promoted jobs go ahead of queued ones", "[resolve][pool]") {
    std::mutex m;
    std::vector<std::string> order;
    auto record = [&](std::string name) {
        return [&, name] {
            std::lock_guard lock(m);
            order.push_back(name);
            return 0;
        };
    };
    Gate gate;
    std::promise<void> started;
    FetchPool pool(1);
    auto [blocker, _] = pool.submit<int>(
        [&] {
            started.set_value();
            gate.opened.wait();
            return 0;
        },
        false);
    started.get_future().wait();  // the worker is busy: what follows queues
    auto a = pool.submit<int>(record("a"), false);
    auto b = pool.submit<int>(record("b"), false);
    auto c = pool.submit<int>(record("c"), false);
    auto urgent = pool.submit<int>(record("urgent"), true);
    pool.promote(c.second);
    gate.release();
    for (auto* f : {&a.first, &b.first, &c.first, &urgent.first})
        f->get();
    CHECK(order == std::vector<std::string>{"c", "urgent", "a", "b"});
    // A job runs once, though promoting it queued it twice; promoting a finished one is nothing.
    pool.promote(c.second);
    pool.promote(nullptr);
    auto last = pool.submit<int>(record("last"), false);
    last.first.get();
    CHECK(order == std::vector<std::string>{"c", "urgent", "a", "b", "last"});
}

TEST_CASE("a fetch pool runs what is queued before it goes", "[resolve][pool]") {
    std::atomic<int> done{0};
    Gate gate;
    {
        FetchPool pool(1);
        pool.submit<int>(
            [&] {
                gate.opened.wait();
                return 0;
            },
            false);
        for (int i = 0; i < 10; ++i)
            pool.submit<int>(
                [&] {
                    ++done;
                    return 0;
                },
                false);
        gate.release();
    }
    CHECK(done == 10);
}
