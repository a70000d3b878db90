#include "ir/protobuf_errors.h"

#include <google/protobuf/stubs/common.h>

#if GOOGLE_PROTOBUF_VERSION < 4022000
#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#endif

namespace kiln {

struct ProtobufLogRouting {
  static thread_local ProtobufErrorCapture* innermost;
#if GOOGLE_PROTOBUF_VERSION < 4022000
  static std::atomic<google::protobuf::LogHandler*> previous;
  static std::atomic<bool> installed;

  static void Handle(google::protobuf::LogLevel level, const char* filename, int line,
                     const std::string& message) {
    ProtobufErrorCapture* capture = innermost;
    if (capture == nullptr || level >= google::protobuf::LOGLEVEL_FATAL) {
      if (!installed.load())  // another thread's message while the handler is being installed
        std::fprintf(stderr, "[libprotobuf %s:%d] %s\n", filename, line, message.c_str());
      else if (google::protobuf::LogHandler* chained = previous.load())
        chained(level, filename, line, message);  // none: the application silenced protobuf
      return;
    }
    if (!capture->first_.empty()) return;
    const size_t sentence = message.find(". ");
    capture->first_ = message.substr(0, sentence);
    while (!capture->first_.empty() &&
           (capture->first_.back() == ' ' || capture->first_.back() == '.'))
      capture->first_.pop_back();
  }

  static void InstallOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
      previous.store(google::protobuf::SetLogHandler(&Handle));
      installed.store(true);
    });
  }
#else
  static void InstallOnce() {}
#endif
};

thread_local ProtobufErrorCapture* ProtobufLogRouting::innermost = nullptr;
#if GOOGLE_PROTOBUF_VERSION < 4022000
std::atomic<google::protobuf::LogHandler*> ProtobufLogRouting::previous{nullptr};
std::atomic<bool> ProtobufLogRouting::installed{false};
#endif

ProtobufErrorCapture::ProtobufErrorCapture() : enclosing_(ProtobufLogRouting::innermost) {
  ProtobufLogRouting::InstallOnce();
  ProtobufLogRouting::innermost = this;
}

ProtobufErrorCapture::~ProtobufErrorCapture() { ProtobufLogRouting::innermost = enclosing_; }

}  // namespace kiln
