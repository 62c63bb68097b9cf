#pragma once
/// Edits of a manifest's text (`envbox add`, `envbox remove`) that keep everything else as the
/// person wrote it: comments, blank lines, quoting, the layout of the `requirements` array.
/// toml++ locates and validates; the edit itself is a splice of the original bytes. Pure: no
/// I/O, only the text given.
///
/// Every edit checks its own result: the new text must parse as a manifest whose requirements
/// and `[sources]` are exactly the ones meant and whose every other setting is unchanged, or the
/// edit is refused (ErrorCode::invalid_input, naming `source`) and nothing is to be written.
/// `project` is the project's shared file (`envbox.toml`) the manifest is read with, when the
/// project has one: its indexes are the manifest's too.

#include <string>
#include <string_view>

#include "envbox/lock/manifest.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

/// What `add_requirement` did.
enum class RequirementChange {
    added,     ///< appended to the array
    replaced,  ///< a requirement of the same (canonical) name was replaced in place
    kept,      ///< it was already there exactly as written: the text is unchanged
};

struct RequirementEdit {
    std::string text;  ///< the whole manifest after the edit
    RequirementChange change = RequirementChange::added;
};

/// `text` with `written` (one PEP 508 requirement, as the user typed it) in
/// `[environment].requirements`: in the place of the first requirement of the same canonical
/// name (later ones of that name are removed), else appended after the last one, on a line of
/// its own in a multi-line array (indented like its neighbour, trailing comma kept as the
/// array has it) or after ", " in a one-line array. A requirement that does not parse is an
/// error (ErrorCode::usage).
Result<RequirementEdit> add_requirement(std::string_view text, std::string_view source,
                                        std::string_view written,
                                        const ProjectFile* project = nullptr);

/// `text` without the requirements of canonical name `name` (PEP 503). An element alone on its
/// line goes with its line (and the comment after it); the separating comma is fixed so the
/// array stays valid and keeps its trailing-comma style. A name no requirement has is an error
/// (ErrorCode::usage) listing what is required.
Result<std::string> remove_requirement(std::string_view text, std::string_view source,
                                       std::string_view name, const ProjectFile* project = nullptr);

/// `text` with `[sources]` pinning `package` to the index named `index` (which must be an
/// `[[index]]` of the manifest, else ErrorCode::usage naming them): an existing entry of the
/// same canonical name gets the new value in place; otherwise a line `package = "index"` after
/// the table's last entry (or inside an inline table), or a new `[sources]` table at the end.
Result<std::string> pin_source(std::string_view text, std::string_view source,
                               std::string_view package, std::string_view index,
                               const ProjectFile* project = nullptr);

/// `text` with `[sources]` naming the folder `path` (relative to the manifest's folder) for
/// `package`, as `{ path = "…", editable = true }` (or without `editable`), placed as
/// `pin_source` places an entry; an index pin of that package is replaced.
Result<std::string> pin_local_source(std::string_view text, std::string_view source,
                                     std::string_view package, std::string_view path, bool editable,
                                     const ProjectFile* project = nullptr);

/// `s` as a TOML string: `toml_string`'s `"…"` (lock/writer.hpp), or `'…'` when that needs no
/// escape and `"…"` would (a marker's quotes).
std::string toml_quote(std::string_view s);

}  // namespace envbox::lock
