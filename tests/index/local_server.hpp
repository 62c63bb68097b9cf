#pragma once
// A one-thread HTTP/1.1 server on 127.0.0.1 for in-process tests of the HTTP client: each
// connection gets one answer from `handler` (the request's head in, the whole response out),
// then is closed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace envbox::test {

class LocalServer {
  public:
    using Handler = std::function<std::string(const std::string& request_head)>;

    explicit LocalServer(Handler handler) : handler_(std::move(handler)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::listen(fd_, 16);
        socklen_t len = sizeof addr;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~LocalServer() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    LocalServer(const LocalServer&) = delete;
    LocalServer& operator=(const LocalServer&) = delete;

    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + path;
    }
    int requests() const { return requests_; }

    /// The value of header `name` (given in lowercase) in a request head, "" when absent.
    static std::string header(const std::string& head, const std::string& name) {
        std::string lower = head;
        for (auto& c : lower)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto at = lower.find("\r\n" + name + ":");
        if (at == std::string::npos) return {};
        auto start = head.find_first_not_of(' ', at + 3 + name.size());
        return head.substr(start, head.find("\r\n", start) - start);
    }

  private:
    void serve() {
        while (!stop_) {
            int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            std::string head;
            char buf[4096];
            while (head.find("\r\n\r\n") == std::string::npos) {
                ssize_t n = ::read(c, buf, sizeof buf);
                if (n <= 0) break;
                head.append(buf, static_cast<std::size_t>(n));
            }
            ++requests_;
            std::string answer = handler_(head);
            for (std::size_t off = 0; off < answer.size();) {
                ssize_t n = ::write(c, answer.data() + off, answer.size() - off);
                if (n <= 0) break;
                off += static_cast<std::size_t>(n);
            }
            ::close(c);
        }
    }

    Handler handler_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::thread thread_;
};

}  // namespace envbox::test
