#include "envbox/pep/version.hpp"

#include <algorithm>
#include <array>

#include "pep/text.hpp"

namespace envbox::pep {
namespace {

bool is_version_sep(char c) {
    return c == '-' || c == '_' || c == '.';
}

// A cursor over the version text. Every optional component of PEP 440's grammar is tried from a
// saved position and abandoned on failure, which reproduces the backtracking of the reference
// regular expression without running one.
struct Cursor {
    std::string_view s;
    std::size_t i = 0;

    bool done() const { return i >= s.size(); }
    char peek() const { return done() ? '\0' : lower(s[i]); }
    bool take(char c) {
        if (peek() != c) return false;
        ++i;
        return true;
    }
    bool take_sep() {
        if (done() || !is_version_sep(s[i])) return false;
        ++i;
        return true;
    }
    bool take_word(std::string_view w) {
        if (s.size() - i < w.size()) return false;
        for (std::size_t k = 0; k < w.size(); ++k)
            if (lower(s[i + k]) != w[k]) return false;
        i += w.size();
        return true;
    }
    // Digits as a number; false (position unchanged) when none or on 64-bit overflow.
    bool take_number(std::uint64_t& out) {
        std::size_t j = i;
        if (!parse_u64(s, j, out)) return false;
        i = j;
        return true;
    }
};

std::optional<PreKind> take_pre_label(Cursor& c) {
    // Longest spelling first: "preview" before "pre", "alpha" before "a", "rc" beside "c".
    static constexpr std::array<std::pair<std::string_view, PreKind>, 8> labels{{
        {"alpha", PreKind::a},
        {"a", PreKind::a},
        {"beta", PreKind::b},
        {"b", PreKind::b},
        {"preview", PreKind::rc},
        {"pre", PreKind::rc},
        {"rc", PreKind::rc},
        {"c", PreKind::rc},
    }};
    for (const auto& [word, kind] : labels)
        if (c.take_word(word)) return kind;
    return std::nullopt;
}

// [-_.]? LABEL [-_.]? N?  — shared shape of the pre, post (lettered) and dev parts.
template <class TakeLabel>
bool take_lettered(Cursor& c, TakeLabel take_label, std::uint64_t& number) {
    Cursor save = c;
    c.take_sep();
    if (!take_label(c)) {
        c = save;
        return false;
    }
    Cursor after_label = c;
    c.take_sep();
    if (!c.take_number(number)) {
        c = after_label;
        c.take_sep();  // "1.0a." is accepted with an implicit 0, as the reference does
        number = 0;
    }
    return true;
}

// shape: the text and the six parts of a PEP 440 version, filled in place (Version's own
// fields; the fuzzer and the hot path parse without building a Version twice).
bool parse_into(std::string_view text, std::uint64_t& epoch, std::vector<std::uint64_t>& release,
                std::optional<Version::Pre>& pre, std::optional<std::uint64_t>& post,
                std::optional<std::uint64_t>& dev, std::vector<LocalSegment>& local) {
    text = strip_unicode_space(text);
    Cursor c{text};
    c.take('v');

    std::uint64_t n = 0;
    if (!c.take_number(n)) return false;
    if (c.take('!')) {
        epoch = n;
        if (!c.take_number(n)) return false;
    }
    release.push_back(n);
    while (c.peek() == '.') {
        Cursor save = c;
        ++c.i;
        if (!c.take_number(n)) {
            c = save;
            break;
        }
        release.push_back(n);
    }

    std::optional<PreKind> kind;
    std::uint64_t number = 0;
    if (take_lettered(
            c,
            [&](Cursor& cc) {
                kind = take_pre_label(cc);
                return kind.has_value();
            },
            number))
        pre = Version::Pre{*kind, number};

    {
        Cursor save = c;
        if (c.take('-') && c.take_number(number)) {
            post = number;
        } else {
            c = save;
            if (take_lettered(
                    c,
                    [](Cursor& cc) {
                        return cc.take_word("post") || cc.take_word("rev") || cc.take_word("r");
                    },
                    number))
                post = number;
        }
    }
    if (take_lettered(
            c, [](Cursor& cc) { return cc.take_word("dev"); }, number))
        dev = number;

    if (c.take('+')) {
        auto segs = parse_local_label(text.substr(c.i));
        if (!segs) return false;
        local = std::move(*segs);
        c.i = text.size();
    }
    return c.done();
}

}  // namespace

std::strong_ordering LocalSegment::operator<=>(const LocalSegment& other) const {
    if (numeric != other.numeric)
        return numeric ? std::strong_ordering::greater : std::strong_ordering::less;
    if (numeric) return number <=> other.number;
    return text.compare(other.text) <=> 0;
}

std::optional<std::vector<LocalSegment>> parse_local_label(std::string_view label) {
    std::vector<LocalSegment> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t end = start;
        while (end < label.size() && !is_version_sep(label[end]))
            ++end;
        if (end == start) return std::nullopt;  // empty segment: "", "a..b", "a."
        LocalSegment seg;
        bool all_digits = true;
        for (std::size_t k = start; k < end; ++k) {
            char ch = label[k];
            if (!is_ascii_alnum(ch)) return std::nullopt;
            if (!is_ascii_digit(ch)) all_digits = false;
            seg.text += lower(ch);
        }
        if (all_digits) {
            std::size_t j = 0;
            if (!parse_u64(seg.text, j, seg.number)) return std::nullopt;
            seg.numeric = true;
            seg.text = std::to_string(seg.number);
        }
        out.push_back(std::move(seg));
        if (end == label.size()) return out;
        start = end + 1;
    }
}

Version::Version(std::vector<std::uint64_t> release, std::uint64_t epoch, std::optional<Pre> pre,
                 std::optional<std::uint64_t> post, std::optional<std::uint64_t> dev,
                 std::vector<LocalSegment> local)
    : epoch_(epoch),
      release_(std::move(release)),
      pre_(pre),
      post_(post),
      dev_(dev),
      local_(std::move(local)) {
    if (release_.empty()) release_.push_back(0);
}

std::optional<Version> Version::try_parse(std::string_view text) {
    Version v;
    v.release_.clear();
    if (!parse_into(text, v.epoch_, v.release_, v.pre_, v.post_, v.dev_, v.local_))
        return std::nullopt;
    return v;
}

Result<Version> Version::parse(std::string_view text) {
    if (auto v = try_parse(text)) return std::move(*v);
    return Error(ErrorCode::invalid_input,
                 "invalid version (not PEP 440): '" + std::string(text) + "'");
}

std::string Version::base_str() const {
    std::string out;
    if (epoch_ != 0) out += std::to_string(epoch_) + "!";
    for (std::size_t k = 0; k < release_.size(); ++k) {
        if (k) out += '.';
        out += std::to_string(release_[k]);
    }
    return out;
}

std::string Version::public_str() const {
    std::string out = base_str();
    if (pre_) {
        static constexpr std::array<std::string_view, 3> names{"a", "b", "rc"};
        out += names[static_cast<std::size_t>(pre_->kind)];
        out += std::to_string(pre_->number);
    }
    if (post_) out += ".post" + std::to_string(*post_);
    if (dev_) out += ".dev" + std::to_string(*dev_);
    return out;
}

std::string Version::local_str() const {
    std::string out;
    for (std::size_t k = 0; k < local_.size(); ++k) {
        if (k) out += '.';
        out += local_[k].text;
    }
    return out;
}

std::string Version::str() const {
    std::string out = public_str();
    if (!local_.empty()) out += "+" + local_str();
    return out;
}

Version Version::without(bool pre, bool post, bool dev, bool local) const {
    Version v = *this;
    if (pre) v.pre_.reset();
    if (post) v.post_.reset();
    if (dev) v.dev_.reset();
    if (local) v.local_.clear();
    return v;
}

Version Version::public_version() const {
    return without(false, false, false, true);
}
Version Version::base_version() const {
    return without(true, true, true, true);
}

std::strong_ordering Version::compare(const Version& o, bool with_local) const {
    if (auto c = epoch_ <=> o.epoch_; c != 0) return c;
    // Release, zero-padded: compare the common prefix, then any non-zero tail wins.
    const std::size_t n = std::max(release_.size(), o.release_.size());
    for (std::size_t k = 0; k < n; ++k) {
        std::uint64_t a = k < release_.size() ? release_[k] : 0;
        std::uint64_t b = k < o.release_.size() ? o.release_[k] : 0;
        if (a != b) return a <=> b;
    }
    // Pre: a dev-only release sorts before every pre-release; no pre sorts after them all.
    auto pre_key = [](const Version& v) -> std::pair<int, std::uint64_t> {
        if (v.pre_) return {static_cast<int>(v.pre_->kind), v.pre_->number};
        if (!v.post_ && v.dev_) return {-1, 0};
        return {3, 0};
    };
    if (auto c = pre_key(*this) <=> pre_key(o); c != 0) return c;
    // Post: absent sorts lowest. Dev: absent sorts highest.
    auto post_key = [](const Version& v) {
        return v.post_ ? std::pair<int, std::uint64_t>{1, *v.post_}
                       : std::pair<int, std::uint64_t>{0, 0};
    };
    if (auto c = post_key(*this) <=> post_key(o); c != 0) return c;
    auto dev_key = [](const Version& v) {
        return v.dev_ ? std::pair<int, std::uint64_t>{0, *v.dev_}
                      : std::pair<int, std::uint64_t>{1, 0};
    };
    if (auto c = dev_key(*this) <=> dev_key(o); c != 0) return c;
    // Local: absent sorts lowest; otherwise segment-wise, a longer label wins a tie.
    if (!with_local) return std::strong_ordering::equal;
    return std::lexicographical_compare_three_way(local_.begin(), local_.end(), o.local_.begin(),
                                                  o.local_.end());
}

std::string canonicalize_version(std::string_view text, bool strip_trailing_zero) {
    auto v = Version::try_parse(text);
    if (!v) return std::string(text);
    if (!strip_trailing_zero) return v->str();
    std::vector<std::uint64_t> release = v->release();
    while (release.size() > 1 && release.back() == 0)
        release.pop_back();
    return Version(std::move(release), v->epoch(), v->pre(), v->post(), v->dev(), v->local()).str();
}

}  // namespace envbox::pep
