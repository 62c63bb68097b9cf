#pragma once
/// SHA-256 (OpenSSL EVP), the hash the store addresses files by and RECORD verifies with.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace envbox {

using Sha256Digest = std::array<std::uint8_t, 32>;

/// Incremental hasher for streaming data (downloads, archive members). Not copyable.
class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    void update(std::string_view data) { update(data.data(), data.size()); }
    /// The digest; the hasher is reset and may be reused.
    Sha256Digest finish();

  private:
    void* ctx_;  // EVP_MD_CTX*, kept out of the header
};

/// Lowercase hex (64 characters), as in lock files and store object names.
std::string to_hex(const Sha256Digest& d);
/// Any bytes in lowercase hex ("\x0d\x0a" → "0d0a").
std::string to_hex(std::string_view bytes);
/// Any bytes in standard base64 with padding (RFC 4648), as HTTP Basic credentials are sent.
std::string to_base64(std::string_view bytes);
/// URL-safe base64 without padding (43 characters), as in a wheel's RECORD.
std::string to_record_b64(const Sha256Digest& d);

Sha256Digest sha256(std::string_view data);
/// Hashes a file's contents; throws `Error` naming the path when it cannot be read. `bytes`,
/// when given, receives the size hashed; `progress` is called with the bytes hashed so far.
Sha256Digest sha256_file(const std::filesystem::path& path, std::uint64_t* bytes = nullptr,
                         const std::function<void(std::uint64_t)>& progress = {});

}  // namespace envbox
