#include "tools/lib/event_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstring>

#include "ir/crc32c.h"
#include "proto/tensorboard.pb.h"
#include "tools/command.h"

namespace kiln::cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "node" for port 0, "node:port" otherwise: TensorFlow's input names.
std::string InputName(const TensorRef& ref) {
  return ref.port == 0 ? ref.node : ref.node + ":" + std::to_string(ref.port);
}

}  // namespace

uint32_t MaskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = Crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Result<std::unique_ptr<EventWriter>> EventWriter::Open(const std::string& dir) {
  KILN_RETURN_IF_ERROR(MakeDirectories(dir));
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const std::string path = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<int64_t>(Now())) + "." + host + "." +
                           std::to_string(getpid()) + ".kiln";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file)
    return MakeError(ErrorCode::kInvalidArgument, "cannot create the event file '", path,
                     "': ", std::strerror(errno));
  std::unique_ptr<EventWriter> writer(new EventWriter(path, file));
  tensorflow::Event event;
  event.set_wall_time(Now());
  event.set_file_version("brain.Event:2");
  KILN_RETURN_IF_ERROR(writer->Write(event.SerializeAsString()));
  return writer;
}

EventWriter::~EventWriter() { std::fclose(file_); }

Status EventWriter::Write(const std::string& event) {
  const uint64_t length = event.size();
  unsigned char header[12];
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(length >> (8 * i));
  const uint32_t length_crc = MaskedCrc32c(header, 8),
                 data_crc = MaskedCrc32c(event.data(), event.size());
  unsigned char footer[4];
  for (int i = 0; i < 4; ++i) {
    header[8 + i] = static_cast<unsigned char>(length_crc >> (8 * i));
    footer[i] = static_cast<unsigned char>(data_crc >> (8 * i));
  }
  if (std::fwrite(header, 1, 12, file_) != 12 ||
      std::fwrite(event.data(), 1, event.size(), file_) != event.size() ||
      std::fwrite(footer, 1, 4, file_) != 4 || std::fflush(file_) != 0)
    return MakeError(ErrorCode::kInternal, "cannot write the event file '", path_,
                     "': ", std::strerror(errno));
  return OkStatus();
}

Status EventWriter::Scalar(const std::string& tag, int64_t step, double value) {
  tensorflow::Event event;
  event.set_wall_time(Now());
  event.set_step(step);
  tensorflow::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return Write(event.SerializeAsString());
}

Status EventWriter::Graph(const kiln::Graph& graph) {
  tensorflow::GraphDef def;
  for (const Node& node : graph.nodes()) {
    tensorflow::NodeDef* n = def.add_node();
    n->set_name(node.name);
    n->set_op(node.op);
    for (const TensorRef& in : node.inputs) n->add_input(InputName(in));
    for (const std::string& c : node.control_inputs) n->add_input("^" + c);
  }
  tensorflow::Event event;
  event.set_wall_time(Now());
  event.set_graph_def(def.SerializeAsString());
  return Write(event.SerializeAsString());
}

}  // namespace kiln::cli
