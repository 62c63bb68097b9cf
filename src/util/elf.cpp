// The ELF reader (util/elf.hpp): section headers, the dynamic section, the dynamic symbol table
// and its GNU version tables, each offset and size checked against the bytes before use.

#include "envbox/util/elf.hpp"

#include <cstring>
#include <map>
#include <tuple>

#include "envbox/util/error.hpp"

namespace envbox::elf {
namespace {

constexpr std::uint32_t kDynamic = 6, kNoBits = 8, kDynSym = 11;
constexpr std::uint32_t kVerDef = 0x6ffffffd, kVerNeed = 0x6ffffffe, kVerSym = 0x6fffffff;
constexpr std::int64_t kNeeded = 1, kSoname = 14, kRpath = 15, kRunpath = 29;

// The bytes and how to read integers from them: class and byte order from e_ident.
class Reader {
  public:
    Reader(std::string_view bytes, const std::string& what) : b_(bytes), what_(what) {
        if (!is_elf(bytes) || bytes.size() < 52) bad("is not an ELF file");
        if (bytes[4] != 1 && bytes[4] != 2) bad("has an unknown ELF class");
        if (bytes[5] != 1 && bytes[5] != 2) bad("has an unknown byte order");
        wide_ = bytes[4] == 2;
        little_ = bytes[5] == 1;
        if (wide_ && bytes.size() < 64) bad("is shorter than its ELF header");
    }
    [[noreturn]] void bad(const std::string& why) const {
        throw Error(ErrorCode::integrity, what_ + " " + why);
    }
    bool wide() const { return wide_; }
    std::uint64_t size() const { return b_.size(); }
    // An unsigned integer of `n` bytes at `at`, which must lie inside the file.
    std::uint64_t u(std::uint64_t at, unsigned n) const {
        if (at > b_.size() || n > b_.size() - at) bad("is truncated (a field past its end)");
        std::uint64_t v = 0;
        for (unsigned i = 0; i < n; ++i) {
            const auto byte = static_cast<unsigned char>(b_[at + (little_ ? n - 1 - i : i)]);
            v = (v << 8) | byte;
        }
        return v;
    }
    std::uint64_t word(std::uint64_t at) const { return u(at, wide_ ? 8 : 4); }
    // The range [at, at + len) checked to lie inside the file.
    void range(std::uint64_t at, std::uint64_t len, const char* what) const {
        if (at > b_.size() || len > b_.size() - at)
            bad(std::string("has a ") + what + " past its end");
    }
    std::string_view bytes(std::uint64_t at, std::uint64_t len) const { return b_.substr(at, len); }
    // Counts `n` units of work (bytes scanned or copied, table entries walked): a file is read
    // in work bounded by its size (16 per byte and 1 Mi), however its tables point into each
    // other, so no file of a few MiB costs seconds or gigabytes.
    void spend(std::uint64_t n) const {
        spent_ += n;
        if (spent_ > 16 * b_.size() + (1u << 20))
            bad("takes more work to read than its " + std::to_string(b_.size()) +
                " bytes allow (tables that point into each other)");
    }

  private:
    std::string_view b_;
    const std::string& what_;
    bool wide_ = false, little_ = true;
    mutable std::uint64_t spent_ = 0;
};

struct Section {
    std::uint32_t type = 0, link = 0, info = 0;
    std::uint64_t offset = 0, size = 0, entsize = 0;
};

std::vector<Section> sections(const Reader& r, const Limits& limits) {
    const bool w = r.wide();
    const std::uint64_t shoff = r.word(w ? 40 : 32);
    const std::uint64_t entsize = r.u(w ? 58 : 46, 2), count = r.u(w ? 60 : 48, 2);
    if (shoff == 0 || count == 0) r.bad("has no section headers (envbox reads those)");
    if (entsize != (w ? 64u : 40u)) r.bad("has section headers of an unknown size");
    if (count > limits.max_entries * 16) r.bad("has too many sections");
    r.range(shoff, count * entsize, "section header table");
    std::vector<Section> out(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t at = shoff + i * entsize;
        Section& s = out[i];
        s.type = static_cast<std::uint32_t>(r.u(at + 4, 4));
        s.offset = r.word(at + (w ? 24 : 16));
        s.size = r.word(at + (w ? 32 : 20));
        s.link = static_cast<std::uint32_t>(r.u(at + (w ? 40 : 24), 4));
        s.info = static_cast<std::uint32_t>(r.u(at + (w ? 44 : 28), 4));
        s.entsize = r.word(at + (w ? 56 : 36));
        if (s.type != kNoBits) r.range(s.offset, s.size, "section");
    }
    return out;
}

// A string table: NUL-terminated strings at offsets inside it.
class Strings {
  public:
    Strings(const Reader& r, const Section& s, const Limits& l)
        : r_(r), text_(checked(r, s)), max_(l.max_string) {}
    static std::string_view checked(const Reader& r, const Section& s) {
        r.range(s.offset, s.size, "string table");  // a NOBITS one is never range-checked above
        return r.bytes(s.offset, s.size);
    }
    std::string at(std::uint64_t offset) const {
        if (offset >= text_.size()) r_.bad("names a string past its string table");
        // Scanned no further than the longest string allowed.
        const std::string_view window = text_.substr(offset, max_ + 1);
        const std::size_t length = window.find('\0');
        r_.spend(length == std::string_view::npos ? window.size() : length + 1);
        if (length == std::string_view::npos && window.size() <= max_)
            r_.bad("has a string without its NUL");
        if (length == std::string_view::npos)
            r_.bad("has a string longer than " + std::to_string(max_) + " bytes");
        return std::string(window.substr(0, length));
    }

  private:
    const Reader& r_;
    std::string_view text_;
    std::size_t max_;
};

const Section& linked(const Reader& r, const std::vector<Section>& all, const Section& s) {
    if (s.link == 0 || s.link >= all.size()) r.bad("has a section linked to no section");
    return all[s.link];
}

std::vector<std::string> split_path(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t colon = list.find(':', start);
        out.push_back(list.substr(start, colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    return out;
}

void read_dynamic(const Reader& r, const std::vector<Section>& all, const Section& dyn,
                  const Limits& limits, Facts& f) {
    const Strings strings(r, linked(r, all, dyn), limits);
    const unsigned n = r.wide() ? 16 : 8;
    std::size_t entries = 0;
    for (std::uint64_t at = dyn.offset; at + n <= dyn.offset + dyn.size; at += n) {
        const std::uint64_t raw = r.word(at);
        const std::int64_t tag =
            r.wide() ? static_cast<std::int64_t>(raw) : static_cast<std::int32_t>(raw);
        if (tag == 0) break;
        const std::uint64_t value = r.word(at + n / 2);
        if (tag != kNeeded && tag != kSoname && tag != kRpath && tag != kRunpath) continue;
        if (++entries > limits.max_entries) r.bad("has too many dynamic entries");
        std::string s = strings.at(value);
        if (tag == kNeeded) f.needed.push_back(std::move(s));
        if (tag == kSoname) f.soname = std::move(s);
        if (tag == kRpath) f.rpath = split_path(s);
        if (tag == kRunpath) f.runpath = split_path(s);
    }
}

// Version index → (name, library) from the version definitions and needs.
struct Versions {
    std::map<std::uint16_t, std::pair<std::string, std::string>> names;
};

void read_verdef(const Reader& r, const Section& s, const Strings& str, const Limits& l,
                 Versions& v) {
    std::uint64_t at = s.offset;
    for (std::size_t i = 0; i < l.max_entries; ++i) {
        r.range(at, 20, "version definition");
        r.spend(20);
        if (at + 20 > s.offset + s.size) r.bad("has a version definition past its section");
        const auto index = static_cast<std::uint16_t>(r.u(at + 4, 2) & 0x7fff);
        const std::uint64_t aux = r.u(at + 12, 4), next = r.u(at + 16, 4);
        const bool base = (r.u(at + 2, 2) & 1) != 0;  // VER_FLG_BASE: the file's own name
        if (!base && r.u(at + 6, 2) > 0) {
            r.range(at + aux, 8, "version definition name");
            v.names[index] = {str.at(r.u(at + aux, 4)), ""};
        }
        if (next == 0) return;
        at += next;
    }
    r.bad("has too many version definitions");
}

void read_verneed(const Reader& r, const Section& s, const Strings& str, const Limits& l,
                  Versions& v) {
    std::uint64_t at = s.offset;
    std::size_t seen = 0;
    for (std::size_t i = 0; i < l.max_entries; ++i) {
        r.range(at, 16, "version need");
        r.spend(16);
        if (at + 16 > s.offset + s.size) r.bad("has a version need past its section");
        const std::string file = str.at(r.u(at + 4, 4));
        const std::uint64_t count = r.u(at + 2, 2), next = r.u(at + 12, 4);
        std::uint64_t aux = at + r.u(at + 8, 4);
        for (std::uint64_t k = 0; k < count; ++k) {
            if (++seen > l.max_entries) r.bad("has too many version needs");
            r.range(aux, 16, "version need entry");
            r.spend(16);
            const auto index = static_cast<std::uint16_t>(r.u(aux + 6, 2) & 0x7fff);
            v.names[index] = {str.at(r.u(aux + 8, 4)), file};
            const std::uint64_t step = r.u(aux + 12, 4);
            if (step == 0) break;
            aux += step;
        }
        if (next == 0) return;
        at += next;
    }
    r.bad("has too many version needs");
}

Versions versions(const Reader& r, const std::vector<Section>& all, const Limits& l) {
    Versions v;
    for (const auto& s : all) {
        if (s.type != kVerDef && s.type != kVerNeed) continue;
        const Strings str(r, linked(r, all, s), l);
        if (s.type == kVerDef) read_verdef(r, s, str, l, v);
        if (s.type == kVerNeed) read_verneed(r, s, str, l, v);
    }
    return v;
}

void read_symbols(const Reader& r, const std::vector<Section>& all, const Section& dynsym,
                  const Limits& l, Facts& f) {
    const bool w = r.wide();
    const std::uint64_t entsize = w ? 24 : 16;
    if (dynsym.entsize != entsize) r.bad("has dynamic symbols of an unknown size");
    const std::uint64_t count = dynsym.size / entsize;
    if (count > l.max_symbols) r.bad("has more than " + std::to_string(l.max_symbols) + " symbols");
    const Strings names(r, linked(r, all, dynsym), l);
    const Section* versym = nullptr;
    for (const auto& s : all)
        if (s.type == kVerSym) versym = &s;
    if (versym && versym->size < count * 2) r.bad("has a version table shorter than its symbols");
    const Versions v = versym ? versions(r, all, l) : Versions{};
    // Names are copied out: at most a few times the file's own size, so a table of symbols that
    // all name one long string cannot make gigabytes of copies.
    const std::uint64_t budget = 8 * r.size() + (1u << 20);
    std::uint64_t total = 0;
    for (std::uint64_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
        const std::uint64_t at = dynsym.offset + i * entsize;
        const auto info = static_cast<unsigned>(r.u(at + (w ? 4 : 12), 1));
        const auto other = static_cast<unsigned>(r.u(at + (w ? 5 : 13), 1));
        const auto shndx = r.u(at + (w ? 6 : 14), 2);
        const unsigned bind = info >> 4, type = info & 0xf;
        if ((bind != 1 && bind != 2 && bind != 10) || type == 3 || type == 4) continue;
        Symbol s;
        s.name = names.at(r.u(at, 4));
        if (s.name.empty()) continue;
        s.weak = bind == 2;
        if (versym) {
            const std::uint64_t vs = r.u(versym->offset + i * 2, 2);
            s.hidden = (vs & 0x8000) != 0;
            if (auto it = v.names.find(static_cast<std::uint16_t>(vs & 0x7fff));
                it != v.names.end())
                std::tie(s.version, s.library) = it->second;
        }
        r.spend(s.version.size() + s.library.size() + entsize);
        total += s.name.size() + s.version.size() + s.library.size();
        if (total > budget)
            r.bad("names more symbol text than " + std::to_string(budget) + " bytes");
        if (shndx == 0) {
            s.hidden = false;  // meaningful for a definition only
            f.undefined.push_back(std::move(s));
        } else if ((other & 3) == 0 || (other & 3) == 3) {  // default or protected
            s.library.clear();
            f.exports.push_back(std::move(s));
        }
    }
}

}  // namespace

bool is_elf(std::string_view head) {
    return head.size() >= 4 && std::memcmp(head.data(),
                                           "\x7f"
                                           "ELF",
                                           4) == 0;
}

Facts read_facts(std::string_view bytes, const std::string& what, const Limits& limits) {
    const Reader r(bytes, what);
    Facts f;
    f.elf_class = r.wide() ? 64 : 32;
    f.shared = r.u(16, 2) == 3;
    f.machine = static_cast<int>(r.u(18, 2));
    const std::vector<Section> all = sections(r, limits);
    for (const auto& s : all) {
        if (s.type == kDynamic) {
            read_dynamic(r, all, s, limits, f);
            break;
        }
    }
    for (const auto& s : all) {
        if (s.type == kDynSym) {
            read_symbols(r, all, s, limits, f);
            break;
        }
    }
    return f;
}

}  // namespace envbox::elf
