#pragma once
// One of the requests `IndexSource` allows in flight, private to it (index_source.cpp reads
// pages, index_metadata.cpp metadata and wheels).

#include <atomic>
#include <semaphore>

#include "envbox/util/error.hpp"

namespace envbox::resolve {

/// Holds one of the semaphore's slots for its lifetime. None is taken once the source is being
/// torn down (a resolution that has finished leaves its speculative prefetches unsent): the
/// constructor throws instead.
struct RequestSlot {
    std::counting_semaphore<64>& s;
    RequestSlot(std::counting_semaphore<64>& sem, const std::atomic<bool>& cancelled) : s(sem) {
        s.acquire();
        if (cancelled) {
            s.release();
            throw Error(ErrorCode::generic, "prefetch cancelled: the resolution has finished");
        }
    }
    ~RequestSlot() { s.release(); }
    RequestSlot(const RequestSlot&) = delete;
    RequestSlot& operator=(const RequestSlot&) = delete;
};

}  // namespace envbox::resolve
