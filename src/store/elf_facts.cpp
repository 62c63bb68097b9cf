// ELF facts of a wheel's native files: `wheels/<sha256>/elf` (`envbox-elf-facts 2`), read from
// the wheel's objects once the fetch has stored it (or, for a wheel stored without them, the
// first time a link check asks), then kept beside its file list. One block per file:
//   file PATH CLASS MACHINE SHARED        (or: file PATH - - - WHY, when it did not read)
//   soname NAME / needed NAME / rpath DIR / runpath DIR
//   def NAME VERSION HIDDEN               (a symbol it exports)
//   und NAME VERSION LIBRARY WEAK         (a symbol it leaves undefined)
// Every field is percent-encoded, "-" standing for an empty one.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envbox/pep/digest.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "store/file_list.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

// The reader's version is in the header: facts an older reader wrote are read again.
constexpr std::string_view kFactsHeader = "envbox-elf-facts 2";
constexpr std::size_t kMaxFactsBytes = std::size_t{1} << 30;

std::string facts_enc(std::string_view v) {
    if (v.empty()) return "-";
    if (v == "-") return "%2D";
    return kv::percent_encode(v);
}

bool may_be_elf(const WheelFile& f) {
    const std::string_view p = f.path;
    const std::size_t slash = p.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? p : p.substr(slash + 1);
    return f.executable || name.ends_with(".so") || name.find(".so.") != std::string_view::npos;
}

// The facts of one object; nullopt when it is not an ELF file.
std::optional<ElfFile> read_elf_object(const Store& store, const WheelFile& f) {
    UniqueFd fd(::openat(store.objects_dir_fd(),
                         store.object_relpath(f.digest, f.executable).c_str(),
                         O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) throw sys_error("cannot open the store's object of " + f.path, errno);
    char head[4] = {};
    if (f.size < 4 || ::pread(fd.get(), head, 4, 0) != 4 || !elf::is_elf(std::string_view(head, 4)))
        return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != f.size)
        throw Error(ErrorCode::integrity, "the store's object of " + f.path + " is not " +
                                              std::to_string(f.size) + " bytes long; " +
                                              "`envbox verify --store` finds it, and " +
                                              "`envbox create --force` repairs it");
    ElfFile out;
    out.path = f.path;
    void* map = ::mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (map == MAP_FAILED) throw sys_error("cannot map the store's object of " + f.path, errno);
    try {
        out.facts =
            elf::read_facts(std::string_view(static_cast<const char*>(map), f.size), f.path);
    } catch (const Error& e) {
        out.unreadable = e.what();
    }
    ::munmap(map, f.size);
    return out;
}

std::string serialise_facts(const std::vector<ElfFile>& files) {
    kv::Writer w(kFactsHeader);
    for (const auto& f : files) {
        const elf::Facts& e = f.facts;
        if (!f.unreadable.empty()) {
            w.add_fields("file", {facts_enc(f.path), "-", "-", "-", facts_enc(f.unreadable)});
            continue;
        }
        w.add_fields("file", {facts_enc(f.path), std::to_string(e.elf_class),
                              std::to_string(e.machine), e.shared ? "1" : "0"});
        if (!e.soname.empty()) w.add("soname", facts_enc(e.soname));
        for (const auto& n : e.needed)
            w.add("needed", facts_enc(n));
        for (const auto& d : e.rpath)
            w.add("rpath", facts_enc(d));
        for (const auto& d : e.runpath)
            w.add("runpath", facts_enc(d));
        for (const auto& s : e.exports)
            w.add_fields("def", {facts_enc(s.name), facts_enc(s.version), s.hidden ? "1" : "0"});
        for (const auto& s : e.undefined)
            w.add_fields("und", {facts_enc(s.name), facts_enc(s.version), facts_enc(s.library),
                                 s.weak ? "1" : "0"});
    }
    return std::move(w).take();
}

std::string facts_dec(std::string_view v, const kv::Reader& r) {
    if (v == "-") return {};
    auto out = kv::percent_decode(v);
    if (!out || out->empty()) throw r.error("malformed field");
    return *out;
}

bool facts_flag(std::string_view v, const kv::Reader& r) {
    if (v != "0" && v != "1") throw r.error("malformed flag");
    return v == "1";
}

void read_facts_file_line(std::vector<ElfFile>& out, const std::vector<std::string_view>& f,
                          const kv::Reader& r) {
    if (f.size() != 4 && f.size() != 5) throw r.error("malformed file line");
    ElfFile file;
    file.path = facts_dec(f[0], r);
    if (f.size() == 5) {
        file.unreadable = facts_dec(f[4], r);
    } else {
        const int cls = f[1] == "64" ? 64 : f[1] == "32" ? 32 : 0;
        if (!cls || f[2].empty() || f[2].size() > 5 ||
            f[2].find_first_not_of("0123456789") != std::string_view::npos)
            throw r.error("malformed file line");
        file.facts.elf_class = cls;
        file.facts.machine = std::stoi(std::string(f[2]));
        file.facts.shared = facts_flag(f[3], r);
    }
    out.push_back(std::move(file));
}

std::vector<ElfFile> parse_facts(std::string_view text, const std::string& what) {
    kv::Reader r(text, what, ' ', {.max_line_bytes = 1 << 20, .max_lines = 64'000'000});
    auto head = r.next();
    if (!head || head->text != kFactsHeader) throw r.error("not an envbox ELF facts list");
    std::vector<ElfFile> out;
    while (auto l = r.next()) {
        const auto f = kv::split_fields(l->value);
        if (l->key == "file") {
            read_facts_file_line(out, f, r);
            continue;
        }
        if (out.empty() || !out.back().unreadable.empty()) throw r.error("a line outside a file");
        elf::Facts& e = out.back().facts;
        if (l->key == "def" && f.size() == 3)
            e.exports.push_back(
                {facts_dec(f[0], r), facts_dec(f[1], r), "", false, facts_flag(f[2], r)});
        else if (l->key == "und" && f.size() == 4)
            e.undefined.push_back({facts_dec(f[0], r), facts_dec(f[1], r), facts_dec(f[2], r),
                                   facts_flag(f[3], r), false});
        else if (f.size() != 1)
            throw r.error("malformed line");
        else if (l->key == "soname")
            e.soname = facts_dec(f[0], r);
        else if (l->key == "needed")
            e.needed.push_back(facts_dec(f[0], r));
        else if (l->key == "rpath")
            e.rpath.push_back(facts_dec(f[0], r));
        else if (l->key == "runpath")
            e.runpath.push_back(facts_dec(f[0], r));
        else
            throw r.error("unknown line");
    }
    return out;
}

}  // namespace

std::optional<std::vector<ElfFile>> Store::kept_elf_facts(const WheelFiles& w) const {
    require_digest(w.wheel_sha256, "wheel");
    const fs::path dir = layout_.wheels() / w.wheel_sha256, path = dir / "elf";
    UniqueFd fd = open_own_dir_at_path(layout_.root(), dir);
    if (!fd) return std::nullopt;
    try {
        if (auto text = read_own_file(fd.get(), path, kMaxFactsBytes))
            return parse_facts(*text, path.string());
    } catch (const Error&) {
        // damaged or of an older reader: read again from the objects and replaced (a planted
        // link is refused when they are kept)
    }
    return std::nullopt;
}

std::vector<const WheelFile*> Store::elf_candidates(const WheelFiles& w) {
    std::vector<const WheelFile*> out;
    for (const auto& f : w.files)
        if (may_be_elf(f)) out.push_back(&f);
    return out;
}

std::optional<ElfFile> Store::read_elf_member(const WheelFile& f) const {
    return read_elf_object(*this, f);
}

void Store::keep_elf_facts(const WheelFiles& w, const std::vector<ElfFile>& facts) const {
    require_digest(w.wheel_sha256, "wheel");
    const fs::path path = layout_.wheels() / w.wheel_sha256 / "elf";
    try {
        // The fetch keeps them before the wheel's file list is published: its folder may be new.
        (void)make_own_dir_at_path(layout_.root(), path.parent_path());
        require_no_link_below(layout_.root(), path, /*is_file=*/true);
        write_file_atomic(path, serialise_facts(facts), 0444, Durability::none);
    } catch (const Error& e) {
        if (e.code() == ErrorCode::integrity) throw;  // a planted link
        // a read-only store (verify, doctor): the facts are used, not kept
    }
}

}  // namespace envbox::store
