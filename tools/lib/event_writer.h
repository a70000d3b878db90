// TensorBoard event files, written by kiln's own writer: `kiln train --logdir DIR` writes
// DIR/events.out.tfevents.<seconds>.<host>.<pid>.kiln, which TensorBoard (and its
// EventAccumulator) reads: a sequence of records, each a little-endian uint64 length, the masked
// CRC32C of those 8 bytes, the payload (a serialized tensorflow.Event, proto/tensorboard.proto)
// and the payload's masked CRC32C. The first event names the file version; then scalars
// (Summary values with a tag and a float) and the graph (a tensorflow.GraphDef of the kiln graph's
// nodes, ops and inputs, for TensorBoard's graph view). Every write is flushed, so a crashed run
// keeps what it logged.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace kiln::cli {

class EventWriter {
 public:
  // Creates DIR (and its parents) and the event file; writes the file-version event.
  static Result<std::unique_ptr<EventWriter>> Open(const std::string& dir);
  ~EventWriter();

  Status Scalar(const std::string& tag, int64_t step, double value);
  Status Graph(const kiln::Graph& graph);
  const std::string& path() const { return path_; }

 private:
  EventWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  Status Write(const std::string& event);

  std::string path_;
  std::FILE* file_;
};

// A record's checksum: CRC32C rotated right by 15 bits plus 0xa282ead8, as TFRecord files mask it.
uint32_t MaskedCrc32c(const void* data, size_t size);

}  // namespace kiln::cli
