#pragma once
// The state of one `Ingest`, private to the store. The steps live in three files:
//   ingest.cpp         the archive's directory read and checked, the tasks, running them
//   ingest_member.cpp  one member: decoded, hashed, staged as an object unless stored already
//   ingest_finish.cpp  the wheel checked against its RECORD and name, objects moved in

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/filename.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"
#include "envbox/util/zip.hpp"

namespace envbox::store {

// Members up to this size are hashed in memory and written only when the object is new;
// larger ones stream to a staging file while they are hashed.
constexpr std::size_t kInMemoryLimit = 1 << 20;
// A streamed member's pages are handed to the disk every this many bytes.
constexpr std::uint64_t kWritebackChunk = 16 << 20;

// The dist-info texts read into memory (WHEEL, METADATA, RECORD: torch's RECORD is a few MB),
// refused beyond these sizes before a byte is decoded.
constexpr std::uint64_t kMaxWheelInfo = 1 << 20, kMaxMetadata = 16 << 20, kMaxRecord = 64 << 20;

inline std::uint64_t dist_info_text_limit(std::string_view leaf) {
    return leaf == "RECORD" ? kMaxRecord : leaf == "METADATA" ? kMaxMetadata : kMaxWheelInfo;
}

using Clock = std::chrono::steady_clock;
inline double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

/// The archive is not the file the lock names (`integrity`).
Error digest_mismatch(const std::string& filename, const std::filesystem::path& archive,
                      const std::string& expected, const std::string& actual);

/// When a wheel proves damaged, the better report is that the file is not the one the lock
/// names: hashes it and throws that if so; returns when the digest matches.
void blame_the_file_if_not_the_locked_one(const std::string& filename,
                                          const std::filesystem::path& archive,
                                          const std::string& expected);

struct Ingest::Impl {
    const Store& store;
    std::filesystem::path archive;
    std::string wheel_sha256, filename;
    bool check_digest;
    pep::WheelFilename parsed_name;
    zip::File file;
    std::filesystem::path staging;
    UniqueFd staging_fd;

    // The wheel's regular files, in archive order, with their zip member index.
    std::vector<WheelFile> files;
    std::vector<std::size_t> member_of;
    std::vector<Sha256Digest> digests;
    std::vector<std::string> texts;  // RECORD, WHEEL and METADATA contents (others empty)
    // Where each member's bytes are whole once its task has run (`ingested_members`).
    enum class Whole : std::uint8_t { not_yet, in_store, staged_here };
    std::vector<Whole> whole;
    std::set<std::string> seen;  // normalised member names

    struct Task {
        std::size_t begin = 0, end = 0;  // files [begin, end); begin == end: the archive digest
        std::uint64_t cost = 0;
    };
    std::vector<Task> tasks;
    std::string actual_digest;

    std::mutex mutex;                // guards what follows
    std::set<std::string> staged;    // object names staged in this ingest ("ab-cdef…")
    std::vector<std::string> moves;  // staged names, moved in by finish
    std::set<std::string> replace;   // digests to store again whatever is there
    IngestStats stats;

    Impl(const Store& s, const std::filesystem::path& a, const std::string& sha,
         const std::string& name, bool check, pep::WheelFilename parsed);
    ~Impl();

    Error member_error(const std::string& what) const {
        return Error(ErrorCode::integrity, filename + ": " + what);
    }

    // ---- ingest.cpp: before any task runs ----
    /// Every member checked (safe path, regular file, no duplicate) and listed in `files`.
    void read_members();
    /// Each member's size in the zip directory must be RECORD's, before any member is decoded.
    void check_sizes_against_record();
    /// Splits the members' work into `tasks`.
    void plan_tasks();
    /// Creates and opens this ingest's staging directory under the store's tmp/.
    void open_staging();

    // ---- ingest_member.cpp: task work, thread-safe across distinct members ----
    /// Hashes file k's member and stages its object unless the store (or this ingest) has it.
    void ingest_file(std::size_t k, std::string& content);
    /// Throws when file `f` is a dist-info text envbox reads (RECORD, WHEEL, METADATA) larger
    /// than it reads; returns whether it is one.
    bool check_text_limit(const WheelFile& f) const;
    /// Creates the staging file `name` for a streamed member, read-only from the start.
    UniqueFd open_stream(const std::string& name, mode_t mode) const;
    /// Decodes file k's member into `content` (out < 0) or the stream file `out`, hashing it;
    /// adds the time spent hashing and writing to `hashing` and `writing`.
    void decode_member(std::size_t k, std::string& content, int out, const std::string& stream_name,
                       Clock::duration& hashing, Clock::duration& writing);
    /// Whether this ingest is to stage the object of `f` (named `rel` in the store and
    /// `staged_name` here): `staged_here` when the store has no untouched one and no other task
    /// staged it; else where it is, `in_store` or `not_yet` (another task writes it).
    Whole claim_object(const WheelFile& f, const std::string& rel, const std::string& staged_name);
    /// Writes an in-memory member as the staged object `staged_name`.
    void stage_content(const std::string& content, const std::string& staged_name,
                       mode_t mode) const;
    /// Finishes the stream file as the staged object `staged_name`.
    void stage_stream(UniqueFd out, const std::string& stream_name,
                      const std::string& staged_name) const;

    // ---- ingest_finish.cpp: once every task has run ----
    /// The one .dist-info directory named for this wheel.
    std::string find_dist_info() const;
    /// The text of `<dist_info>/<leaf>` as a task kept it, or null when the wheel has none.
    const std::string* text_of(const std::string& dist_info, const std::string& leaf) const;
    /// Fills root_is_purelib, name and version of `w` from WHEEL and METADATA.
    void read_wheel_and_metadata(WheelFiles& w) const;
    /// Every member listed in RECORD with a matching sha256 and size, nothing listed missing.
    void check_record(const WheelFiles& w) const;
    /// Moves the staged objects into the store, never replacing an untouched object.
    void move_objects_in() const;
};

}  // namespace envbox::store
