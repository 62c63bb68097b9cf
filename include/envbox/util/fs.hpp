#pragma once
/// Filesystem primitives with the guarantees the store and generations rely on.

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace envbox {

/// How durable a write must be before it becomes visible.
enum class Durability {
    none,   ///< rename only; the caller makes a batch durable with one `sync_filesystem`
    fsync,  ///< fsync the file before the rename and the directory after it
};

/// Writes `content` to `path` atomically: a temporary file in the same directory, then
/// rename(2) over `path`. Readers see the old file or the new one, never a partial one; on any
/// failure the temporary file is removed, `path` is untouched and `Error` names the path and
/// the system error (ENOSPC, EACCES, …).
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       mode_t mode = 0644, Durability durability = Durability::fsync);

/// Reads a whole file; throws `Error` naming the path on failure.
std::string read_file(const std::filesystem::path& path);

/// syncfs(2) on the filesystem holding `path`: one call makes every earlier write on that
/// filesystem durable (cheaper than one fsync per file for tens of thousands of files).
void sync_filesystem(const std::filesystem::path& path);

}  // namespace envbox
