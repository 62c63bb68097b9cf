#include "envbox/util/sha256.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox {
namespace {
EVP_MD_CTX* ctx_of(void* p) {
    return static_cast<EVP_MD_CTX*>(p);
}
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_of(ctx_), EVP_sha256(), nullptr) != 1)
        throw Error(ErrorCode::generic, "OpenSSL: cannot initialise SHA-256");
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(ctx_of(ctx_));
}

void Sha256::update(const void* data, std::size_t size) {
    EVP_DigestUpdate(ctx_of(ctx_), data, size);
}

Sha256Digest Sha256::finish() {
    Sha256Digest d{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_of(ctx_), d.data(), &len);
    EVP_DigestInit_ex(ctx_of(ctx_), EVP_sha256(), nullptr);
    return d;
}

std::string to_hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

std::string to_hex(const Sha256Digest& d) {
    return to_hex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

std::string to_record_b64(const Sha256Digest& d) {
    static constexpr char table[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    for (; i + 3 <= d.size(); i += 3) {
        std::uint32_t v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
        for (int s = 18; s >= 0; s -= 6)
            out += table[(v >> s) & 63];
    }
    std::size_t rest = d.size() - i;  // 32 = 10 * 3 + 2
    if (rest == 2) {
        std::uint32_t v = (d[i] << 16) | (d[i + 1] << 8);
        out += table[(v >> 18) & 63];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
    }
    return out;
}

Sha256Digest sha256(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.finish();
}

Sha256Digest sha256_file(const std::filesystem::path& path, std::uint64_t* bytes,
                         const std::function<void(std::uint64_t)>& progress) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error(ErrorCode::generic,
                    "cannot open " + path.string() + ": " + std::strerror(errno));
    Sha256 h;
    std::vector<char> buf(1 << 20);
    std::uint64_t total = 0;
    for (;;) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            throw Error(ErrorCode::generic,
                        "cannot read " + path.string() + ": " + std::strerror(err));
        }
        h.update(buf.data(), static_cast<std::size_t>(n));
        total += static_cast<std::uint64_t>(n);
        if (progress) progress(total);
    }
    ::close(fd);
    if (bytes) *bytes = total;
    return h.finish();
}

std::string to_base64(std::string_view in) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    auto byte = [&](std::size_t i) {
        return i < in.size() ? static_cast<unsigned>(static_cast<unsigned char>(in[i])) : 0u;
    };
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 3) {
        const unsigned v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
        out += k[v >> 18];
        out += k[(v >> 12) & 63];
        out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
        out += i + 2 < in.size() ? k[v & 63] : '=';
    }
    return out;
}

}  // namespace envbox
