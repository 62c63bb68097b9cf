#pragma once
// What `envbox diff` prints of ops::diff's result (text, markdown, JSON), and the text git's
// diff driver shows for a lock (`diff --textconv`). Pure functions of ops' values, no terminal
// and no I/O, so the unit tests pin them byte for byte (tests/lock/golden/diff.*).

#include <string>

#include "envbox/ops/diff.hpp"

namespace envbox::cli {

/// One line per change below `A → B`, then the size deltas and counts; `color`: ANSI colours
/// by kind. Every value from a lock is shown with its hidden characters escaped.
std::string render_text(const ops::Diff& d, bool color);

/// A summary line and a table (package, before, after, change, CUDA, download) for a pull
/// request; a value's `|` is escaped so it cannot end its cell.
std::string render_markdown(const ops::Diff& d);

/// One JSON object and a newline: {"a", "b", "unchanged", "download_delta", "installed_delta",
/// "changes": [{"name", "kind", "before", "after", "detail", "wheel_before", "wheel_after",
/// "sha256_before", "sha256_after", "index_before", "index_after", "cuda_before", "cuda_after",
/// "download_delta"}]}; an absent value is null, except the indexes ("" is "no index").
std::string render_json(const ops::Diff& d);

/// The text git shows for a lock with `diff.pylock.textconv`: one stable line per package,
/// with its wheel's tags, size and sha256, so a re-uploaded wheel shows as a changed line.
std::string render_textconv(const ops::LockView& v);

}  // namespace envbox::cli
