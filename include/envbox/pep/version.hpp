#pragma once
/// PEP 440 versions ("Version specifiers" spec, sections "Version scheme" and "Normalization").
/// Pure, no I/O.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox::pep {

/// A pre-release kind, in ordering order.
enum class PreKind : std::uint8_t { a = 0, b = 1, rc = 2 };

/// One segment of a local label (`+cu128.post1` has two): numeric segments compare as integers
/// and sort above alphanumeric ones, which compare as lowercase strings.
struct LocalSegment {
    std::string text;          ///< lowercase text as written ("cu128"; numeric: canonical digits)
    std::uint64_t number = 0;  ///< value when `numeric`
    bool numeric = false;
    std::strong_ordering operator<=>(const LocalSegment& other) const;
    bool operator==(const LocalSegment& other) const { return (*this <=> other) == 0; }
};

/// A parsed, normalised PEP 440 version such as `1!2.11.0rc1.post2.dev3+cu128`.
///
/// Ordering is the PEP 440 total order (epoch, zero-padded release, dev < a < b < rc < final <
/// post, then local label); `==` is equality in that order, so `1.0 == 1.0.0` and
/// `1.0rc1 == 1.0c1`. Numbers that do not fit 64 bits make the string invalid.
class Version {
  public:
    struct Pre {
        PreKind kind;
        std::uint64_t number;
        bool operator==(const Pre&) const = default;
    };

    Version() : release_{0} {}
    /// Builds a version from its parts; `release` must not be empty.
    Version(std::vector<std::uint64_t> release, std::uint64_t epoch = 0,
            std::optional<Pre> pre = std::nullopt, std::optional<std::uint64_t> post = std::nullopt,
            std::optional<std::uint64_t> dev = std::nullopt, std::vector<LocalSegment> local = {});

    /// Parses any spelling PEP 440 accepts (case, `v` prefix, `alpha`/`c`/`rev` forms, optional
    /// separators, implicit numbers, surrounding whitespace) into the normalised version.
    static Result<Version> parse(std::string_view text);
    /// As `parse`, without building an error message (for hot loops).
    static std::optional<Version> try_parse(std::string_view text);

    std::uint64_t epoch() const { return epoch_; }
    const std::vector<std::uint64_t>& release() const { return release_; }
    const std::optional<Pre>& pre() const { return pre_; }
    const std::optional<std::uint64_t>& post() const { return post_; }
    const std::optional<std::uint64_t>& dev() const { return dev_; }
    const std::vector<LocalSegment>& local() const { return local_; }
    bool has_local() const { return !local_.empty(); }

    /// Has a pre-release or a dev segment (`1.0.post1.dev1` is a pre-release).
    bool is_prerelease() const { return pre_.has_value() || dev_.has_value(); }
    bool is_postrelease() const { return post_.has_value(); }
    bool is_devrelease() const { return dev_.has_value(); }

    /// Canonical string (`1!2.0rc1.post2.dev3+abc.5`; epoch 0 omitted).
    std::string str() const;
    /// The local label, canonical (`cu128`), or empty.
    std::string local_str() const;
    /// Everything but the local label.
    std::string public_str() const;
    /// Epoch and release only (`1!2.0`).
    std::string base_str() const;

    /// This version without its local label.
    Version public_version() const;
    /// This version reduced to epoch and release.
    Version base_version() const;
    /// This version with pre, post, dev and local removed unless kept by the flags.
    Version without(bool pre, bool post, bool dev, bool local) const;

    std::strong_ordering operator<=>(const Version& other) const { return compare(other, true); }
    /// Ordering of the public parts only (local labels ignored on both sides); allocation-free.
    std::strong_ordering compare_public(const Version& other) const {
        return compare(other, false);
    }
    bool operator==(const Version& other) const { return (*this <=> other) == 0; }

  private:
    std::strong_ordering compare(const Version& other, bool with_local) const;

    std::uint64_t epoch_ = 0;
    std::vector<std::uint64_t> release_;
    std::optional<Pre> pre_;
    std::optional<std::uint64_t> post_;
    std::optional<std::uint64_t> dev_;
    std::vector<LocalSegment> local_;
};

/// Parses a local label (`cu128`, `Ubuntu-1_2`) into segments; nullopt when invalid.
std::optional<std::vector<LocalSegment>> parse_local_label(std::string_view label);

/// packaging's `canonicalize_version`: the canonical string, with trailing `.0` release segments
/// removed when `strip_trailing_zero`; an invalid version is returned unchanged.
std::string canonicalize_version(std::string_view text, bool strip_trailing_zero = true);

}  // namespace envbox::pep
