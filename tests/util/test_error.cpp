#include <catch2/catch.hpp>

#include "envbox/util/error.hpp"

using envbox::Error;
using envbox::ErrorCode;

TEST_CASE("errors carry a code and a context chain, outermost last") {
    Error e(ErrorCode::integrity, "sha256 mismatch for torch-2.11.0+cu128-….whl");
    e.add_context("fetching torch 2.11.0+cu128").add_context("creating train-cu128");
    CHECK(envbox::exit_status(e.code()) == 5);
    CHECK(e.describe() ==
          "sha256 mismatch for torch-2.11.0+cu128-….whl\n"
          "  while fetching torch 2.11.0+cu128\n"
          "  while creating train-cu128");
}

TEST_CASE("exit statuses are the documented ones") {
    CHECK(envbox::exit_status(ErrorCode::generic) == 1);
    CHECK(envbox::exit_status(ErrorCode::usage) == 2);
    CHECK(envbox::exit_status(ErrorCode::invalid_input) == 3);
    CHECK(envbox::exit_status(ErrorCode::network) == 4);
    CHECK(envbox::exit_status(ErrorCode::cuda) == 6);
    CHECK(envbox::exit_status(ErrorCode::interrupted) == 130);
}

TEST_CASE("Result holds a value or throws its error") {
    envbox::Result<int> ok = 3;
    envbox::Result<int> bad = Error(ErrorCode::invalid_input, "bad");
    CHECK(*ok == 3);
    CHECK_FALSE(bad.ok());
    CHECK_THROWS_AS(bad.value(), Error);
    CHECK(envbox::parse_error("Expected comma", "a >= 1 2", 7).message() ==
          "Expected comma\n    a >= 1 2\n           ^");
}
