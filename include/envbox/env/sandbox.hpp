#pragma once
/// The read-only sandbox of `envbox run`: a private mount namespace (inside a user namespace
/// when not root) in which the generation and the store are bind-mounted read-only over
/// themselves, so nothing the command runs can rewrite the environment.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envbox::env {

/// Enters the sandbox for this process (call right before exec). Returns why it could not,
/// with the process left as it was, or nothing on success.
std::optional<std::string> enter_read_only_sandbox(const std::vector<std::filesystem::path>& read_only);

}  // namespace envbox::env
