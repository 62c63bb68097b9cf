#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "envbox/util/fs.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/process.hpp"

namespace fs = std::filesystem;
using envbox::LinkMode;

namespace {

struct TempDir {
    fs::path path;
    explicit TempDir(const fs::path& base = fs::temp_directory_path()) {
        std::string tmpl = (base / "envbox-test-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("parallel_for runs every item once and rethrows the first failure") {
    std::vector<std::atomic<int>> seen(1000);
    envbox::parallel_for(seen.size(), 4, [&](std::size_t i) { seen[i]++; });
    for (const auto& s : seen)
        CHECK(s == 1);

    CHECK_THROWS_WITH(envbox::parallel_for(100, 3,
                                           [&](std::size_t i) {
                                               if (i == 5) throw std::runtime_error("item 5");
                                           }),
                      "item 5");
    // With one worker the order is deterministic: nothing starts after the failing item.
    int ran = 0;
    CHECK_THROWS(envbox::parallel_for(100, 1, [&](std::size_t i) {
        ++ran;
        if (i == 5) throw std::runtime_error("item 5");
    }));
    CHECK(ran == 6);
}

TEST_CASE("TaskPool runs the biggest first, lets tasks add tasks, and rethrows a failure") {
    SECTION("order on one thread: priority, then the order added") {
        envbox::TaskPool pool(1);
        std::vector<int> order;
        pool.add(1, [&](envbox::TaskPool&) { order.push_back(1); });
        pool.add(5, [&](envbox::TaskPool& p) {
            order.push_back(5);
            p.add(3, [&](envbox::TaskPool&) { order.push_back(3); });
            p.add(3, [&](envbox::TaskPool&) { order.push_back(33); });
        });
        pool.add(2, [&](envbox::TaskPool&) { order.push_back(2); });
        pool.run();
        CHECK(order == std::vector<int>{5, 3, 33, 2, 1});
    }
    SECTION("many threads, tasks spawning tasks, every one runs once") {
        envbox::TaskPool pool(8);
        std::atomic<int> ran{0};
        for (int i = 0; i < 50; ++i)
            pool.add(static_cast<std::uint64_t>(i), [&](envbox::TaskPool& p) {
                ++ran;
                for (int j = 0; j < 20; ++j)
                    p.add(static_cast<std::uint64_t>(j), [&](envbox::TaskPool&) { ++ran; });
            });
        pool.run();
        CHECK(ran == 50 * 21);
    }
    SECTION("a lane's waiting tasks hold no thread of another lane") {
        // One thread a lane: lane 0's task waits for lane 1's, which it adds itself. On one
        // shared thread it would wait its whole 10 s for a task that cannot start.
        envbox::TaskPool pool(1, 2);
        std::promise<void> ran;
        auto done = ran.get_future();
        bool in_time = false;
        int after = 0;
        pool.add(1, [&](envbox::TaskPool& p) {
            p.add(
                1,
                [&](envbox::TaskPool& q) {
                    ran.set_value();
                    q.add(
                        1, [&](envbox::TaskPool&) { ++after; }, 0);  // back to the waiting lane
                },
                1);
            in_time = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
        });
        pool.run();
        CHECK(in_time);
        CHECK(after == 1);
    }
    SECTION("tasks in a lane other than the first only, and a failure in it") {
        // The calling thread works lane 0, which stays empty (create with every wheel stored).
        envbox::TaskPool pool(2, 2);
        std::atomic<int> ran{0};
        for (int i = 0; i < 10; ++i)
            pool.add(
                1, [&](envbox::TaskPool&) { ++ran; }, 1);
        pool.run();
        CHECK(ran == 10);
        envbox::TaskPool failing(1, 2);
        std::atomic<int> later{0};
        failing.add(
            10, [&](envbox::TaskPool&) { throw std::runtime_error("lane 1 failed"); }, 1);
        for (int i = 0; i < 5; ++i)
            failing.add(
                1, [&](envbox::TaskPool&) { ++later; }, 1);
        CHECK_THROWS_WITH(failing.run(), "lane 1 failed");
        CHECK(later == 0);
        CHECK_THROWS_AS(failing.add(
                            1, [](envbox::TaskPool&) {}, 2),
                        std::out_of_range);
    }
    SECTION("a failure stops new tasks and is rethrown") {
        envbox::TaskPool pool(1);
        std::atomic<int> ran{0};
        pool.add(10, [&](envbox::TaskPool&) { throw std::runtime_error("boom"); });
        for (int i = 0; i < 5; ++i)
            pool.add(1, [&](envbox::TaskPool&) { ++ran; });
        CHECK_THROWS_WITH(pool.run(), "boom");
        CHECK(ran == 0);
    }
}

TEST_CASE("place_file hard-links, and copies when asked") {
    TempDir dir;
    envbox::write_file_atomic(dir.path / "object", "content", 0444);
    CHECK(envbox::place_file(dir.path / "object", dir.path / "linked", LinkMode::hardlink, 0444) ==
          LinkMode::hardlink);
    struct stat a {
    }, b{};
    ::stat((dir.path / "object").c_str(), &a);
    ::stat((dir.path / "linked").c_str(), &b);
    CHECK(a.st_ino == b.st_ino);

    CHECK(envbox::place_file(dir.path / "object", dir.path / "copied", LinkMode::copy, 0555) ==
          LinkMode::copy);
    ::stat((dir.path / "copied").c_str(), &b);
    CHECK(a.st_ino != b.st_ino);
    CHECK((b.st_mode & 0777) == 0555);
    CHECK(envbox::read_file(dir.path / "copied") == "content");

    // Reflink works on btrfs/XFS; elsewhere it falls back to a copy, never fails.
    LinkMode used =
        envbox::place_file(dir.path / "object", dir.path / "cloned", LinkMode::reflink, 0444);
    CHECK(used != LinkMode::hardlink);
    CHECK(envbox::read_file(dir.path / "cloned") == "content");

    // An existing destination is an error naming it.
    CHECK_THROWS_WITH(
        envbox::place_file(dir.path / "object", dir.path / "copied", LinkMode::hardlink, 0444),
        Catch::Contains("copied"));
}

TEST_CASE("place_file falls back to a copy across filesystems (EXDEV)") {
    if (!fs::is_directory("/dev/shm")) return;
    TempDir disk;
    TempDir shm("/dev/shm");
    struct stat a {
    }, b{};
    ::stat(disk.path.c_str(), &a);
    ::stat(shm.path.c_str(), &b);
    if (a.st_dev == b.st_dev) return;  // same filesystem here: nothing to test
    envbox::write_file_atomic(disk.path / "object", "across", 0444);
    LinkMode used =
        envbox::place_file(disk.path / "object", shm.path / "placed", LinkMode::hardlink, 0444);
    CHECK(used == LinkMode::copy);
    CHECK(envbox::read_file(shm.path / "placed") == "across");
}

TEST_CASE("FileLock excludes another process and is released on destruction") {
    TempDir dir;
    fs::path lock_path = dir.path / "env.lock";
    {
        envbox::FileLock held(lock_path);
        CHECK(held.held());
        // flock locks belong to open file descriptions: another process must fail to take it.
        auto r = envbox::run_capture({"flock", "-n", lock_path.string(), "true"});
        CHECK(r.status != 0);
    }
    auto r = envbox::run_capture({"flock", "-n", lock_path.string(), "true"});
    CHECK(r.status == 0);
    auto again = envbox::FileLock::try_lock(lock_path);
    CHECK(again.held());
}

TEST_CASE("run_capture returns status, stdout and stderr") {
    auto r = envbox::run_capture({"sh", "-c", "echo out; echo err >&2; exit 7"});
    CHECK(r.status == 7);
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
    CHECK_THROWS(envbox::run_capture({"/nonexistent/program"}));
}
