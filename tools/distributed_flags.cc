#include "tools/distributed_flags.h"

#include <cstdlib>

namespace kiln::cli {

void DeclareRanksFlags(Flags& flags) { flags.Option("distributed").Option("distributed-timeout"); }

Result<Ranks> RanksFromFlags(const Flags& flags, const std::string& backend) {
  Ranks out;
  if (!flags.Has("distributed")) {
    if (flags.Has("distributed-timeout"))
      return MakeError(ErrorCode::kInvalidArgument,
                       "--distributed-timeout needs --distributed mpi or nccl");
    return out;
  }
  const std::string kind = flags.Get("distributed");
  if (kind != "mpi" && kind != "nccl")
    return MakeError(ErrorCode::kInvalidArgument, "--distributed '", kind,
                     "': expected mpi (cpu and reference backends) or nccl (cuda backends)");
  const bool cuda = backend.rfind("cuda", 0) == 0;
  if (kind == "nccl" && !backend.empty() && !cuda)
    return MakeError(ErrorCode::kInvalidArgument, "--distributed nccl with --backend ", backend,
                     ": NCCL all-reduces on a CUDA device (--backend cuda or cuda-sim); "
                     "--distributed mpi runs on the host backends");
  if (kind == "mpi" && cuda)
    return MakeError(ErrorCode::kInvalidArgument, "--distributed mpi with --backend ", backend,
                     ": the cuda backends all-reduce on the device, through NCCL "
                     "(--distributed nccl)");
  out.on_device = kind == "nccl";
  double timeout = 60;
  if (flags.Has("distributed-timeout")) {
    const std::string text = flags.Get("distributed-timeout");
    char* end = nullptr;
    timeout = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(timeout > 0))
      return MakeError(ErrorCode::kInvalidArgument,
                       "--distributed-timeout must be a positive number of seconds, got '", text,
                       "'");
  }
  KILN_ASSIGN_OR_RETURN(out.comm, OpenMpiCommunicator(timeout));
  return out;
}

std::string ForRank(std::string text, const Communicator* comm) {
  static const std::string kRank = "{rank}";
  const std::string rank = std::to_string(comm ? comm->rank() : 0);
  for (size_t at = text.find(kRank); at != std::string::npos; at = text.find(kRank, at))
    text.replace(at, kRank.size(), rank), at += rank.size();
  return text;
}

}  // namespace kiln::cli
