#include "models/digits_data.h"

#include <zlib.h>

#include <cstring>
#include <sstream>
#include <vector>

namespace kiln::models {

Result<Digits> LoadDigits(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) return MakeError(ErrorCode::kNotFound, "cannot open digits data '", path, "'");
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, n);
  int err = 0;
  const char* message = gzerror(file, &err);
  std::string zerror = err < 0 ? message : "";
  gzclose(file);
  if (!zerror.empty()) return MakeError(ErrorCode::kDataLoss, "'", path, "': ", zerror);

  std::vector<float> pixels;
  std::vector<int64_t> labels;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<int64_t> values;
    std::istringstream fields(line);
    std::string field;
    while (std::getline(fields, field, ',')) {
      char* end = nullptr;
      long v = std::strtol(field.c_str(), &end, 10);
      if (field.empty() || *end != '\0')
        return MakeError(ErrorCode::kInvalidArgument, path, ":", line_no, ": '", field,
                         "' is not an integer");
      values.push_back(v);
    }
    if (values.size() != 65)
      return MakeError(ErrorCode::kInvalidArgument, path, ":", line_no,
                       ": expected 65 values (64 pixels, label), got ", values.size());
    for (int i = 0; i < 64; ++i) {
      if (values[i] < 0 || values[i] > 16)
        return MakeError(ErrorCode::kInvalidArgument, path, ":", line_no, ": pixel ", i, " is ",
                         values[i], ", expected 0..16");
      pixels.push_back(static_cast<float>(values[i]) / 16.0f);
    }
    if (values[64] < 0 || values[64] > 9)
      return MakeError(ErrorCode::kInvalidArgument, path, ":", line_no, ": label ", values[64],
                       " is not a digit");
    labels.push_back(values[64]);
  }
  int64_t count = static_cast<int64_t>(labels.size());
  if (count == 0) return MakeError(ErrorCode::kInvalidArgument, "'", path, "' holds no images");
  return Digits{Tensor::FromVector<float>({count, 1, 8, 8}, pixels),
                Tensor::FromVector<int64_t>({count}, labels)};
}

Digits SliceDigits(const Digits& d, int64_t begin, int64_t end) {
  int64_t n = end - begin;
  Tensor images(f32, {n, 1, 8, 8}), labels(i64, {n});
  std::memcpy(images.raw_data(), d.images.data<float>() + begin * 64, n * 64 * sizeof(float));
  std::memcpy(labels.raw_data(), d.labels.data<int64_t>() + begin, n * sizeof(int64_t));
  return {images, labels};
}

}  // namespace kiln::models
