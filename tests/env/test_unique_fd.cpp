// UniqueFd: one owner per descriptor, closed exactly once.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <utility>

#include "envbox/util/unique_fd.hpp"

using envbox::UniqueFd;

namespace {
bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}
}  // namespace

TEST_CASE("UniqueFd closes on destruction, reset, and not after release", "[env][unique-fd]") {
    int raw = -1;
    {
        UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        REQUIRE(fd);
        raw = fd.get();
        CHECK(is_open(raw));
    }
    CHECK_FALSE(is_open(raw));

    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = a.get();
    UniqueFd b = std::move(a);
    CHECK_FALSE(a);
    CHECK(b.get() == raw);
    a = std::move(b);
    CHECK(a.get() == raw);
    CHECK(is_open(raw));
    a.reset();
    CHECK_FALSE(a);
    CHECK_FALSE(is_open(raw));

    UniqueFd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = c.release();
    CHECK_FALSE(c);
    CHECK(is_open(raw));
    ::close(raw);
    CHECK_FALSE(UniqueFd());
    CHECK_FALSE(UniqueFd(-1));
}
