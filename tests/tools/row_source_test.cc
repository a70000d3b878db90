// kiln train's data sources (tools/lib/row_source.h): a folder of .npy shards read row by row
// across shard boundaries, CSV columns by index, range and header name with each dtype, the bad
// inputs each refused naming the file (and line and column), and kiln train on both.
#include "tools/lib/row_source.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ir/io/npy.h"
#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/serialize.h"
#include "tests/testing/eval.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

std::string Dir(const std::string& name) {
  const std::string path = testing::TempPath("rows") + "/" + name;
  std::filesystem::create_directories(path);
  return path;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Row r of the shards holds {r, r + 0.5}.
Tensor ShardRows(int64_t first, int64_t n) {
  std::vector<float> v;
  for (int64_t r = first; r < first + n; ++r) v.insert(v.end(), {float(r), float(r) + 0.5f});
  return Tensor::FromVector<float>({n, 2}, v);
}

std::shared_ptr<const cli::RowSource> Open(const std::string& spec) {
  Result<std::vector<cli::NamedRowSource>> s = cli::OpenRowSources({"x=" + spec}, "data");
  INFO((s.ok() ? std::string() : s.error().ToString()));
  REQUIRE(s.ok());
  return s->at(0).second;
}

std::string OpenError(const std::string& spec) {
  Result<std::vector<cli::NamedRowSource>> s = cli::OpenRowSources({"x=" + spec}, "data");
  REQUIRE_FALSE(s.ok());
  return s.error().message();
}

}  // namespace

TEST_CASE("row sources: .npy shards are read row by row across shards", "[cli][train]") {
  const std::string dir = Dir("shards");
  REQUIRE(WriteNpy(dir + "/part-00.npy", ShardRows(0, 3)).ok());
  REQUIRE(WriteNpy(dir + "/part-01.npy", ShardRows(3, 0)).ok());  // an empty shard is fine
  REQUIRE(WriteNpy(dir + "/part-02.npy", ShardRows(3, 5)).ok());
  WriteText(dir + "/README", "not a shard");
  auto shards = Open(dir);
  CHECK(shards->rows() == 8);
  CHECK(shards->dtype() == f32);
  CHECK(shards->row_shape() == Shape{2});
  const std::vector<int64_t> order = {7, 0, 3, 2, 5, 1, 6, 4};
  Result<Tensor> rows = shards->Rows(&order, 1, 6);
  REQUIRE(rows.ok());
  CHECK(rows->shape() == Shape{5, 2});
  CHECK(rows->ToDoubles() == std::vector<double>{0, 0.5, 3, 3.5, 2, 2.5, 5, 5.5, 1, 1.5});

  const std::string bad = Dir("bad_shards");
  REQUIRE(WriteNpy(bad + "/a.npy", ShardRows(0, 2)).ok());
  REQUIRE(WriteNpy(bad + "/b.npy", Tensor::FromVector<float>({2, 3}, std::vector<float>(6))).ok());
  CHECK_THAT(OpenError(bad), Catch::Contains("b.npy") && Catch::Contains("does not match"));
  const std::string scalar = Dir("scalar_shard");
  REQUIRE(WriteNpy(scalar + "/a.npy", Tensor::Scalar<float>(1)).ok());
  CHECK_THAT(OpenError(scalar), Catch::Contains("a scalar"));
  // A header that claims more rows than the file holds.
  const std::string lying = Dir("lying_shard");
  std::string bytes = SerializeNpy(ShardRows(0, 2));
  WriteText(lying + "/a.npy", bytes.substr(0, bytes.size() - 4));
  CHECK_THAT(OpenError(lying), Catch::Contains("more than the file holds"));
  CHECK_THAT(OpenError(Dir("empty_folder")), Catch::Contains("holds no .npy shards"));
}

TEST_CASE("row sources: CSV columns by index, range and name, in each dtype", "[cli][train]") {
  const std::string dir = Dir("csv");
  const std::string csv = dir + "/data.csv";
  WriteText(csv, "a, b ,label\n1,2,0\r\n3.5,-4,1\n\n+5,6e1,2\n");
  auto ab = Open(csv + ":a,b");
  CHECK(ab->rows() == 3);
  CHECK(ab->row_shape() == Shape{2});
  CHECK(ab->Rows(nullptr, 0, 3)->ToDoubles() == std::vector<double>{1, 2, 3.5, -4, 5, 60});
  auto label = Open(csv + ":label:i64");
  CHECK(label->dtype() == i64);
  CHECK(label->row_shape() == Shape{});
  const std::vector<int64_t> order = {2, 0, 1};
  CHECK(label->Rows(&order, 0, 3)->ToDoubles() == std::vector<double>{2, 0, 1});
  CHECK(Open(csv + ":0-1")->Rows(nullptr, 1, 2)->ToDoubles() == std::vector<double>{3.5, -4});
  CHECK(Open(csv + ":f64")->row_shape() == Shape{3});  // every column
  CHECK(Open(csv)->dtype() == f32);

  CHECK_THAT(OpenError(csv + ":c"), Catch::Contains("'c' is no column index, range or name"));
  CHECK_THAT(OpenError(csv + ":5"), Catch::Contains("past the 3 columns"));
  CHECK_THAT(OpenError(csv + ":0:u16"), Catch::Contains("not one of f32, f64, i32, i64"));
  const std::string bad = dir + "/bad.csv";
  WriteText(bad, "1,2\n3,x\n");
  Result<Tensor> rows = Open(bad)->Rows(nullptr, 0, 2);
  REQUIRE_FALSE(rows.ok());
  CHECK_THAT(rows.error().message(), Catch::Contains("line 2, column 1: 'x' is not a number"));
  Result<Tensor> fraction = Open(csv + ":a:i32")->Rows(nullptr, 0, 3);
  REQUIRE_FALSE(fraction.ok());
  CHECK_THAT(fraction.error().message(),
             Catch::Contains("line 3") && Catch::Contains("'3.5' is not a whole number"));
  WriteText(dir + "/empty.csv", "a,b\n\n");
  CHECK_THAT(OpenError(dir + "/empty.csv"), Catch::Contains("has no rows"));
  CHECK_THAT(OpenError(dir + "/missing.csv"), Catch::Contains("cannot open"));
}

TEST_CASE("kiln train reads .npy shards and CSV columns", "[cli][train]") {
  const std::string dir = Dir("train");
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 2});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value logits = nn::Dense(g.Scope("fc"), Relu(nn::Dense(g.Scope("h"), x, 8)), 2).Named("logits");
  g.Output("logits", logits);
  g.Output("loss", SoftmaxCrossEntropy(logits, labels));
  const std::string model = dir + "/model.kgraph";
  REQUIRE(SaveGraph(testing::BuildOrFail(g), model).ok());
  // 3 shards of 40 points each; the label says whether a point lies above the line y = x.
  std::string csv = "label\n";
  for (int s = 0; s < 3; ++s) {
    std::vector<float> v;
    for (int i = 0; i < 40; ++i) {
      const float a = std::sin(float(s * 40 + i) * 1.7f), b = std::cos(float(s * 40 + i) * 2.3f);
      v.insert(v.end(), {a, b});
      csv += b > a ? "1\n" : "0\n";
    }
    REQUIRE(
        WriteNpy(dir + "/part-" + std::to_string(s) + ".npy", Tensor::FromVector<float>({40, 2}, v))
            .ok());
  }
  WriteText(dir + "/labels.csv", csv);
  testing::CommandResult out = testing::RunCommand(
      KILN_BINARY, {"train", model, "--loss", "loss", "--data", "x=" + dir, "--data",
                    "labels=" + dir + "/labels.csv:label:i64", "--epochs", "20", "--batch", "16",
                    "--lr", "0.05", "--prefetch", "2", "--quiet"});
  INFO(out.err);
  REQUIRE(out.exit_code == 0);
  CHECK_THAT(out.out, Catch::Contains("epoch 20: mean loss"));
  const double last = std::stod(out.out.substr(out.out.find("mean loss") + 10));
  CHECK(last < 0.3);
  testing::CheckFails(
      testing::RunCommand(KILN_BINARY, {"train", model, "--loss", "loss", "--data", "x=" + dir,
                                        "--data", "labels=" + dir + "/labels.csv:nope:i64"}),
      "'nope' is no column index, range or name");
}
