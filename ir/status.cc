#include "ir/status.h"

#include <cstdio>

namespace kiln {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kFailedPrecondition:
      return "failed precondition";
    case ErrorCode::kDataLoss:
      return "data loss";
    case ErrorCode::kUnimplemented:
      return "unimplemented";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

std::string Error::ToString() const { return std::string(ErrorCodeName(code_)) + ": " + message_; }

Error Error::WithContext(const std::string& context) const {
  return Error(code_, context + ": " + message_);
}

void InternalCheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "kiln internal check failed at %s:%d: %s\n", file, line, condition);
  std::abort();
}

}  // namespace kiln
