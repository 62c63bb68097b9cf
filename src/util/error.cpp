#include "envbox/util/error.hpp"

#include <algorithm>
#include <cstring>

namespace envbox {

Error::Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

Error::Error(ErrorCode code, std::string message, int sys_errno)
    : code_(code), message_(std::move(message)), sys_errno_(sys_errno) {}

Error sys_error(std::string_view what, int err) {
    std::string msg(what);
    msg += ": ";
    msg += std::strerror(err);
    return Error(ErrorCode::generic, std::move(msg), err);
}

Error sys_error(std::string_view what, const std::error_code& ec) {
    const bool is_errno =
        ec.category() == std::system_category() || ec.category() == std::generic_category();
    std::string msg(what);
    msg += ": ";
    msg += ec.message();
    return Error(ErrorCode::generic, std::move(msg), is_errno ? ec.value() : 0);
}

Error& Error::add_context(std::string line) {
    context_.push_back(std::move(line));
    return *this;
}

std::string Error::describe() const {
    std::string out = message_;
    for (const auto& line : context_) {
        out += "\n  while ";
        out += line;
    }
    return out;
}

Error parse_error(std::string_view what, std::string_view input, std::size_t pos) {
    std::string msg(what);
    msg += "\n    ";
    msg += input;
    msg += "\n    ";
    msg.append(std::min(pos, input.size()), ' ');
    msg += '^';
    return Error(ErrorCode::invalid_input, std::move(msg));
}

}  // namespace envbox
