// Errors that a user can cause come back as values, never as crashes.
//
// `Error` carries a code and a message that names what went wrong (node, op, file, source line,
// what was expected). `Status` is "ok or an Error"; `Result<T>` is "a T or an Error". Functions
// that can fail on user input return one of these; KILN_RETURN_IF_ERROR and KILN_ASSIGN_OR_RETURN
// propagate failures. CHECK-style aborts are reserved for kiln's own invariants.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

enum class ErrorCode {
  kInvalidArgument,     // a value, shape, dtype or attribute the caller passed is wrong
  kNotFound,            // a named node, feed, file or op does not exist
  kAlreadyExists,       // a name is taken
  kFailedPrecondition,  // the operation is not valid in the current state
  kDataLoss,            // a file is truncated, corrupt or fails its checksum
  kUnimplemented,       // a feature or op is not supported
  kOutOfRange,          // an index or size is beyond its limit
  kResourceExhausted,   // out of memory or over a size limit
  kInternal,            // a bug in kiln
};

const char* ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>".
  std::string ToString() const;
  // A copy whose message is "<context>: <message>".
  Error WithContext(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  std::string ToString() const { return ok() ? "ok" : error_->ToString(); }

 private:
  std::optional<Error> error_;
};

inline Status OkStatus() { return Status(); }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  // From a failed Status (KILN_RETURN_IF_ERROR); an OK one is a bug in the caller, and gives a
  // Result holding an internal error rather than undefined behaviour.
  Result(Status status)  // NOLINT: implicit by design
      : v_(status.ok() ? Error(ErrorCode::kInternal, "a Result was made from an OK status")
                       : status.error()) {}
  bool ok() const { return v_.index() == 0; }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

// Builds an Error from streamed parts: MakeError(ErrorCode::kNotFound, "no node '", name, "'").
template <typename... Args>
Error MakeError(ErrorCode code, const Args&... parts);

[[noreturn]] void InternalCheckFailed(const char* file, int line, const char* condition);

}  // namespace kiln

#include <sstream>

template <typename... Args>
kiln::Error kiln::MakeError(ErrorCode code, const Args&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Error(code, os.str());
}

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

#define KILN_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    ::kiln::Status kiln_status_ = (expr);                \
    if (!kiln_status_.ok()) return kiln_status_.error(); \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.error();               \
  lhs = std::move(tmp).value()

#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(kiln_result_, __LINE__), lhs, expr)

// For kiln's own invariants only: never for anything a file, a feed or a caller controls.
#define KILN_CHECK(cond)                                                 \
  do {                                                                   \
    if (!(cond)) ::kiln::InternalCheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)
