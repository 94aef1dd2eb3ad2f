// Status and Result<T>: expected failures as values (leveldb style).
//
// A function that can fail in an expected way (bad input, missing file, full queue) returns a
// Status or a Result<T>. Exceptions from libraries are caught at module edges and turned into
// these; they never cross into the bid path.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rtb {

class Status {
 public:
  enum class Code {
    kOk,
    kInvalidArgument,
    kNotFound,
    kIoError,
    kCorruption,
    kUnavailable,
    kFailedPrecondition,
    kInternal
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return Status(Code::kInvalidArgument, std::move(m));
  }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status IoError(std::string m) { return Status(Code::kIoError, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status FailedPrecondition(std::string m) {
    return Status(Code::kFailedPrecondition, std::move(m));
  }
  static Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code c, std::string m) : code_(c), message_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T>: either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rtb

// RTB_RETURN_IF_ERROR(expr): returns the Status of expr from the enclosing function if not ok.
#define RTB_RETURN_IF_ERROR(expr) \
  do {                            \
    ::rtb::Status _st = (expr);   \
    if (!_st.ok()) return _st;    \
  } while (0)

#define RTB_CONCAT_INNER(a, b) a##b
#define RTB_CONCAT(a, b) RTB_CONCAT_INNER(a, b)
// RTB_ASSIGN_OR_RETURN(lhs, expr): lhs = value of the Result expr, or return its Status.
#define RTB_ASSIGN_OR_RETURN(lhs, expr) \
  RTB_ASSIGN_OR_RETURN_IMPL(RTB_CONCAT(_res_, __LINE__), lhs, expr)
#define RTB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
