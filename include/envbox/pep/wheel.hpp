#pragma once
/// The pure parts of installing a wheel (spec "Binary distribution format", "Recording installed
/// packages", "Entry points"): RECORD rows, the WHEEL file, entry points, archive member paths,
/// script shebangs and console-script launchers. No I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"

namespace envbox::pep {

/// One RECORD row as written (path with `\` turned into `/`; hash and size may be empty).
struct RecordRow {
    std::string path;
    std::string hash;  ///< "algorithm=urlsafe-b64-nopad", or empty
    std::string size;  ///< decimal, or empty
};

/// Parses RECORD: CSV with `,` separators, `"` quoting, `\n` or `\r\n` line ends; every row
/// must have exactly three fields and pass `validate_record_row`. Errors name the line.
Result<std::vector<RecordRow>> parse_record(std::string_view text);

/// Checks one row: a non-empty path, a hash that is empty or `algorithm=value`, a size that is
/// empty or a non-negative integer. The error names every offending field.
std::optional<Error> validate_record_row(const RecordRow& row);

/// Checks a file's sha256 `digest` and `size` against its RECORD row: the hash, when given,
/// must be sha256 and equal; the size, when given, must be equal. Returns what is wrong
/// (naming the path, the expected and the actual value), or nothing.
std::optional<std::string> check_record_row(const RecordRow& row, const Sha256Digest& digest,
                                            std::uint64_t size);

/// Quotes one RECORD/CSV field as Python's csv module does (only when needed).
std::string csv_field(std::string_view field);

/// The `WHEEL` file of a `.dist-info` directory.
struct WheelInfo {
    int version_major = 1;
    int version_minor = 0;
    bool root_is_purelib = false;  ///< `Root-Is-Purelib` compared case-insensitively to "true"
    std::vector<std::string> tags;
    std::optional<std::string> build;
};

/// Parses `WHEEL`. `Wheel-Version` is required; a major version above 1 is an error (the
/// caller warns about a newer minor).
Result<WheelInfo> parse_wheel_info(std::string_view text);

/// A `[console_scripts]` or `[gui_scripts]` entry.
struct EntryPoint {
    std::string name;    ///< script name, case preserved
    std::string module;  ///< "pkg.mod"
    std::string attr;    ///< "main" or "Class.method"
    bool gui = false;
};

/// Parses `entry_points.txt` (INI sections, `name = module:attr [extras]`, `#`/`;` comments),
/// returning the console and gui scripts in file order; other groups are ignored. A script
/// whose value lacks `module:attr` is an error naming the line.
Result<std::vector<EntryPoint>> parse_entry_points(std::string_view text);

/// The archive member path normalised (`./` and empty segments removed), or an error for an
/// unsafe one: absolute, any `..` segment, a drive letter, a backslash, NUL/CR/LF, or empty.
Result<std::string> safe_member_path(std::string_view path);

/// True for a member under a `__pycache__/` directory (compiled caches: never installed, may be
/// missing from RECORD).
bool in_pycache(std::string_view path);

/// True when a script named `name` would be created outside the scripts directory (or be the
/// directory itself): `../x`, `/etc/x`, `.`, `..`, `a/../../x`.
bool script_name_escapes(std::string_view name);

/// `word` as one POSIX shell word: in single quotes, a `'` written `'\''` (as uv does; pip's
/// double quotes let the shell expand `$`) and a `\` written `'"\\"'`, so that the quoted
/// text, read as the inside of a Python string literal, holds no escape but `\'` and `\\` (no
/// SyntaxError, no SyntaxWarning).
std::string sh_quote(std::string_view word);

/// The shebang envbox writes for `python`: `#!PYTHON\n`, or a `/bin/sh` exec trampoline
/// (`'''exec' 'PYTHON' "$0" "$@"`, valid sh and valid Python) when the path has a blank or a
/// newline or the line would exceed 127 bytes (the kernel limit of older Linux). Any other
/// byte (`$`, `` ` ``, `"`, `(`, `\`) is safe in both forms.
std::string shebang_for(std::string_view python);

/// For a script whose first line starts with `#!python` (including `#!pythonw`), replaces
/// that line with `shebang_for(python)`; other content is returned unchanged.
std::string rewrite_shebang(std::string_view content, std::string_view python);

/// The launcher pip writes (distlib's template) for an entry point.
std::string launcher_script(const EntryPoint& entry, std::string_view python);

/// Console scripts pip installs for `entries`: pip's own rule for the `pip` and
/// `easy_install` families (the `pipX`/`pipX.Y` entries are replaced by ones for the target
/// interpreter `major.minor`).
std::vector<EntryPoint> scripts_for_target(std::vector<EntryPoint> entries, int major, int minor);

}  // namespace envbox::pep
