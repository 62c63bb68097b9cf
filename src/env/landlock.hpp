#pragma once
// Landlock as the sandbox's second line (Linux 5.13+, unprivileged): a write barrier around one
// directory, for kernels that refuse namespaces.
//
// Landlock only allows: a ruleset names the access rights it handles, and each handled right is
// then refused everywhere except beneath the directories a rule grants it for. "Write everywhere
// except beneath HOME" cannot be said directly, so it is built from its complement:
//   - only write rights are handled (reading and executing stay as they were);
//   - for each ancestor A of HOME (`/`, `/work`, …), every entry of A other than the next
//     ancestor is granted all write rights (a directory: beneath it; a file: writing and
//     truncating it; a symlink: nothing, its target is granted where it lives); with several
//     protected directories (HOME and the bind mounts that show it elsewhere), an entry is
//     granted when it neither is nor holds one of them;
//   - each writable directory beneath HOME is granted all write rights.
// So everything off the chain `/` → HOME stays writable and HOME is not, except the granted
// directories. The one limit: an ancestor itself gets no new entries, renames or removals (no
// new files directly in `/tmp` when HOME is `/tmp/x/home`, none directly in `~` for the default
// `~/.local/share/envbox`); what already exists in it stays writable. Landlock needs
// no_new_privs, so set-user-ID programs (sudo) do not gain privileges under it.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envbox::env {

/// Whether `p` is `dir` or lies beneath it, by path components (no file system access).
bool is_at_or_below(const std::filesystem::path& p, const std::filesystem::path& dir);

/// The Landlock ABI version this kernel offers, or why there is none.
struct LandlockSupport {
    int abi = 0;      ///< 0 when unavailable
    std::string why;  ///< when abi is 0: "this kernel has no Landlock", "not enabled (lsm=)", …
};
LandlockSupport landlock_support();

/// Restricts this process (and what it execs) as described above: nothing beneath `read_only`
/// is writable but `writable`. Returns why it could not, with the process unrestricted, or
/// nothing on success. Paths must be canonical.
std::optional<std::string> landlock_protect(const std::vector<std::filesystem::path>& read_only,
                                            const std::vector<std::filesystem::path>& writable);

}  // namespace envbox::env
