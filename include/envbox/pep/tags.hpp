#pragma once
/// Platform compatibility tags (PEP 425, PEP 600 manylinux, PEP 656 musllinux, PEP 803 abi3t)
/// and the ordered list of tags a *target* supports. Pure, no I/O: the target is data from the
/// manifest, never read from the host.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox::pep {

/// One `interpreter-abi-platform` triple, lowercase.
struct Tag {
    std::string interpreter;
    std::string abi;
    std::string platform;

    std::string str() const { return interpreter + "-" + abi + "-" + platform; }
    auto operator<=>(const Tag&) const = default;
};

/// Options for `parse_tag`.
struct TagParseOptions {
    bool validate_order = false;        ///< each dotted set must be sorted, without repeats
    std::optional<std::int64_t> limit;  ///< maximum number of expanded tags (must be ≥ 0)
};

/// Expands a possibly compressed tag (`py2.py3-none-any`) into its tags, sorted and unique.
/// Invalid: wrong part count, empty components, an interpreter that is not an identifier.
Result<std::vector<Tag>> parse_tag(std::string_view text, const TagParseOptions& options = {});

/// Tags of CPython `python_version` (major[, minor]) with `abis` on `platforms`, best first:
/// the given ABIs, then `abi3` (`abi3t` for free-threaded ABIs), `none`, then `abi3` of older
/// minors down to 3.2.
std::vector<Tag> cpython_tags(const std::vector<int>& python_version,
                              const std::vector<std::string>& abis,
                              const std::vector<std::string>& platforms);

/// Pure-Python tags: `pyXY`/`pyX`/older minors on each platform, then `interpreter-none-any`,
/// then the same `py*` tags with platform `any`.
std::vector<Tag> compatible_tags(const std::vector<int>& python_version,
                                 const std::optional<std::string>& interpreter,
                                 const std::vector<std::string>& platforms);

/// Tags of a non-CPython interpreter: each ABI (plus `none`) on each platform.
std::vector<Tag> generic_tags(const std::string& interpreter, std::vector<std::string> abis,
                              const std::vector<std::string>& platforms);

/// `pyXY-none-any`, `pyX-none-any`, older minors.
std::vector<Tag> pure_python_tags(const std::vector<int>& python_version);

/// manylinux platform tags a glibc `major.minor` system on `arch` runs, best first, with the
/// legacy aliases (`manylinux2014`, `manylinux2010`, `manylinux1`) after their `_2_N` twins.
std::vector<std::string> manylinux_platforms(int glibc_major, int glibc_minor,
                                             std::string_view arch);

/// Platform tags for a target named by its best platform tag (`manylinux_2_28_x86_64`,
/// `manylinux2014_aarch64`, `musllinux_1_2_x86_64`, `linux_x86_64`), best first; the generic
/// `linux_<arch>` comes last, after every manylinux tag (pip and uv order).
Result<std::vector<std::string>> target_platforms(std::string_view platform_tag);

/// The ordered tags one target supports, with O(1) rank lookup (lower rank = preferred).
class TargetTags {
  public:
    explicit TargetTags(std::vector<Tag> ordered);

    /// CPython `major.minor` (free-threaded when `free_threaded`) on `platform_tag`.
    static Result<TargetTags> cpython(int major, int minor, std::string_view platform_tag,
                                      bool free_threaded = false);

    const std::vector<Tag>& tags() const { return tags_; }
    /// The rank of `tag`, or nullopt when the target cannot run it.
    std::optional<std::size_t> rank(const Tag& tag) const;
    /// The best rank among `tags` (a wheel's expanded tag set), or nullopt if none is supported.
    std::optional<std::size_t> best_rank(const std::vector<Tag>& tags) const;

  private:
    std::vector<Tag> tags_;
    std::unordered_map<std::string, std::size_t> rank_;
};

}  // namespace envbox::pep
