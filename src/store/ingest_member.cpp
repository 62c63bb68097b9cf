// Ingest, one member (a task's work): decoded and hashed, in memory when small or streamed to a
// staging file, then staged as an object unless the store or this ingest has it already.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envbox/util/fs.hpp"
#include "store/ingest_impl.hpp"
#include "store/sys.hpp"

namespace envbox::store {
namespace {

const struct timespec kObjectTimes[2] = {{kObjectMtime, 0}, {kObjectMtime, 0}};

// Adds one member's times to the ingest's when it goes out of scope, however the member ends
// (stored, already present, or failed while staging).
struct TimeAccount {
    std::mutex& mutex;
    IngestStats& stats;
    Clock::time_point started, decoded;
    Clock::duration hashing, writing;
    ~TimeAccount() {
        auto total = Clock::now() - started;
        std::lock_guard lock(mutex);
        stats.decode_s += seconds(decoded - started - hashing - writing);
        stats.hash_s += seconds(hashing);
        stats.write_s += seconds(total - (decoded - started) + writing);
    }
};

}  // namespace

bool Ingest::Impl::check_text_limit(const WheelFile& f) const {
    const bool keep_text = f.path.ends_with(".dist-info/RECORD") ||
                           f.path.ends_with(".dist-info/WHEEL") ||
                           f.path.ends_with(".dist-info/METADATA");
    if (!keep_text) return false;
    const std::string_view leaf = std::string_view(f.path).substr(f.path.rfind('/') + 1);
    if (f.size > dist_info_text_limit(leaf))
        throw member_error("member '" + f.path + "' is " + std::to_string(f.size) +
                           " bytes; envbox reads at most " +
                           std::to_string(dist_info_text_limit(leaf)) + " bytes of a wheel's " +
                           std::string(leaf));
    return true;
}

UniqueFd Ingest::Impl::open_stream(const std::string& name, mode_t mode) const {
    UniqueFd out(
        ::openat(staging_fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!out) sys_fail("cannot create", staging / name, errno);
    // The umask must not leak into a store shared by several users.
    if (::fchmod(out.get(), mode) != 0) sys_fail("cannot set the mode of", staging / name, errno);
    return out;
}

// Decoding stops at the first byte past the size the central directory gives
// (zip::File::extract).
void Ingest::Impl::decode_member(std::size_t k, std::string& content, int out,
                                 const std::string& stream_name, Clock::duration& hashing,
                                 Clock::duration& writing) {
    content.clear();
    Sha256 hasher;
    std::uint64_t unflushed = 0;
    try {
        file.extract(member_of[k], [&](const char* data, std::size_t n) {
            auto t0 = Clock::now();
            hasher.update(data, n);
            auto t1 = Clock::now();
            hashing += t1 - t0;
            if (out < 0) {
                content.append(data, n);
                return;
            }
            write_or_fail(out, data, n, staging / stream_name);
            // Publishing waits for the data to reach the disk: start writing big members out
            // while they are still being decoded.
            if ((unflushed += n) >= kWritebackChunk) {
                start_writeback(out);
                unflushed = 0;
            }
            writing += Clock::now() - t1;
        });
    } catch (Error& e) {
        if (e.code() == ErrorCode::integrity) throw member_error(e.what());
        throw;
    }
    digests[k] = hasher.finish();
    files[k].digest = to_hex(digests[k]);
}

Ingest::Impl::Whole Ingest::Impl::claim_object(const WheelFile& f, const std::string& rel,
                                               const std::string& staged_name) {
    struct stat st {};
    // A touched object (written through an environment, chmod-ed, truncated by a crash) is
    // never reused: this ingest stages a fresh one, which replaces it.
    bool present = !replace.count(f.digest) &&
                   ::fstatat(store.objects_dir_fd(), rel.c_str(), &st, 0) == 0 &&
                   !object_touched(st, f.size, f.executable);
    if (present) return Whole::in_store;
    std::lock_guard lock(mutex);
    return staged.insert(staged_name).second ? Whole::staged_here : Whole::not_yet;
}

void Ingest::Impl::stage_content(const std::string& content, const std::string& staged_name,
                                 mode_t mode) const {
    UniqueFd sf(::openat(staging_fd.get(), staged_name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!sf) sys_fail("cannot create", staging / staged_name, errno);
    if (::fchmod(sf.get(), mode) != 0)
        sys_fail("cannot set the mode of", staging / staged_name, errno);
    write_or_fail(sf.get(), content.data(), content.size(), staging / staged_name);
    if (::futimens(sf.get(), kObjectTimes) != 0)
        sys_fail("cannot set the mtime of", staging / staged_name, errno);
    start_writeback(sf.get());
}

void Ingest::Impl::stage_stream(UniqueFd out, const std::string& stream_name,
                                const std::string& staged_name) const {
    if (::futimens(out.get(), kObjectTimes) != 0)
        sys_fail("cannot set the mtime of", staging / stream_name, errno);
    start_writeback(out.get());
    out.reset();
    if (::renameat(staging_fd.get(), stream_name.c_str(), staging_fd.get(), staged_name.c_str()) !=
        0)
        sys_fail("cannot stage", staging / staged_name, errno);
}

void Ingest::Impl::ingest_file(std::size_t k, std::string& content) {
    WheelFile& f = files[k];
    const bool keep_text = check_text_limit(f);
    // Objects are created read-only from the start (the descriptor stays writable), with their
    // fixed mtime set through the descriptor: no chmod or utimensat by path later.
    const mode_t mode = object_mode(f.executable);
    // In memory when small (or a dist-info file, bounded above: torch's RECORD is megabytes),
    // streamed to a staging file otherwise.
    const bool in_memory = keep_text || file.members()[member_of[k]].size <= kInMemoryLimit;
    const std::string stream_name = "stream-" + std::to_string(k);
    UniqueFd out;
    if (!in_memory) out = open_stream(stream_name, mode);
    Clock::duration hashing{}, writing{};
    const auto started = Clock::now();
    decode_member(k, content, out.get(), stream_name, hashing, writing);
    TimeAccount account{mutex, stats, started, Clock::now(), hashing, writing};
    if (keep_text) texts[k] = content;

    std::string rel = store.object_relpath(f.digest, f.executable);
    std::string staged_name = rel;
    staged_name[2] = '-';
    const Whole claim = claim_object(f, rel, staged_name);
    if (claim != Whole::staged_here) {
        if (out) {
            out.reset();
            ::unlinkat(staging_fd.get(), stream_name.c_str(), 0);
        }
        whole[k] = claim;
        return;
    }
    if (out)
        stage_stream(std::move(out), stream_name, staged_name);
    else
        stage_content(content, staged_name, mode);
    whole[k] = Whole::staged_here;
    std::lock_guard lock(mutex);
    moves.push_back(std::move(staged_name));
    stats.new_objects++;
    stats.new_object_bytes += f.size;
}

}  // namespace envbox::store
