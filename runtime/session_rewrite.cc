#include "runtime/session_rewrite.h"

#include <atomic>

namespace kiln {
namespace {
std::atomic<SessionGraphRewrite> registered{nullptr};
}  // namespace

void RegisterSessionGraphRewrite(SessionGraphRewrite rewrite) { registered.store(rewrite); }

SessionGraphRewrite RegisteredSessionGraphRewrite() { return registered.load(); }

}  // namespace kiln
