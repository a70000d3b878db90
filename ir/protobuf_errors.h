// What protobuf says about the bytes it refuses, in kiln's own error instead of on stderr. Parsing
// untrusted bytes, protobuf logs some of its reasons (a proto3 string field that is not UTF-8) as
// "[libprotobuf ERROR ...]" lines on stderr and returns only false: a malformed file would print
// that line beside kiln's error, which would say nothing of the cause. While a
// ProtobufErrorCapture is alive, the messages protobuf logs on its thread (below FATAL) are kept
// instead; the readers (ir/checksummed_proto.cc, the ONNX readers) name the first in their error.
// Messages logged on other threads, or with no capture alive, go to the handler that was installed
// before kiln's (protobuf's own: stderr). An application that installs its own handler after kiln's
// first parse replaces kiln's: captures then stay empty, and its handler sees every message. With
// protobuf 22 or newer, whose logging is Abseil's, nothing is captured and first() stays empty.
#pragma once

#include <string>

namespace kiln {

class ProtobufErrorCapture {
 public:
  ProtobufErrorCapture();
  ~ProtobufErrorCapture();
  ProtobufErrorCapture(const ProtobufErrorCapture&) = delete;
  ProtobufErrorCapture& operator=(const ProtobufErrorCapture&) = delete;

  // The first message protobuf logged on this thread while this capture was the innermost alive,
  // up to its first sentence ("String field 'kiln.proto.NodeDef.name' contains invalid UTF-8 data
  // when parsing a protocol buffer"); empty when none.
  const std::string& first() const { return first_; }
  // ": " + first(), or "" when nothing was logged: the tail of a reader's error message.
  std::string Detail() const { return first_.empty() ? "" : ": " + first_; }

 private:
  friend struct ProtobufLogRouting;
  std::string first_;
  ProtobufErrorCapture* enclosing_ = nullptr;
};

}  // namespace kiln
