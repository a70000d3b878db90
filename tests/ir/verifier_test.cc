// The verifier's errors name the node, its op and where it was built, and say what was expected.
#include "ir/verifier.h"

#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "ir/ops/state.h"

using namespace kiln;

namespace {
Node MakeNode(std::string name, std::string op, std::vector<std::string> inputs = {}) {
  Node n;
  n.name = std::move(name);
  n.op = std::move(op);
  for (auto& in : inputs) n.inputs.push_back(*TensorRef::Parse(in));
  n.source = "models/example.cc:42";
  return n;
}
Node Feed(std::string name, DType t, Shape s) {
  Node n = MakeNode(std::move(name), "Placeholder");
  n.attrs.Set("dtype", t);
  n.attrs.Set("shape", std::move(s));
  return n;
}
std::string VerifyError(Graph g) {
  Status s = Verify(g);
  return s.ok() ? "" : s.error().message();
}
}  // namespace

TEST_CASE("verifier: accepts a good graph and fills output types", "[verifier]") {
  Graph g;
  REQUIRE(g.AddNode(Feed("x", f32, {-1, 4})).ok());
  REQUIRE(g.AddNode(MakeNode("r", "Relu", {"x"})).ok());
  g.mutable_inputs().push_back("x");
  g.mutable_outputs().push_back({"out", {"r", 0}});
  REQUIRE(Verify(g).ok());
  CHECK(g.FindNode("r")->output_types[0].ToString() == "f32[-1, 4]");
}

TEST_CASE("verifier: wrong arity, dtype, attributes", "[verifier]") {
  Graph g;
  REQUIRE(g.AddNode(Feed("x", f32, {3})).ok());
  REQUIRE(g.AddNode(Feed("i", i32, {3})).ok());
  Graph arity = g;
  REQUIRE(arity.AddNode(MakeNode("a", "Add", {"x"})).ok());
  CHECK(VerifyError(arity) ==
        "node 'a' (Add, built at models/example.cc:42): expects 2 input(s), got 1");
  Graph mixed = g;
  REQUIRE(mixed.AddNode(MakeNode("a", "Add", {"x", "i"})).ok());
  CHECK_THAT(VerifyError(mixed),
             Catch::Contains("input 1 ('b') has dtype i32 but input 0 has f32"));
  Graph missing = g;
  REQUIRE(missing.AddNode(MakeNode("c", "Cast", {"x"})).ok());
  CHECK_THAT(VerifyError(missing), Catch::Contains("missing required attribute 'to' (dtype)"));
  Graph unknown_attr = g;
  Node relu = MakeNode("r", "Relu", {"x"});
  relu.attrs.Set("alpha", 0.5);
  REQUIRE(unknown_attr.AddNode(relu).ok());
  CHECK_THAT(VerifyError(unknown_attr), Catch::Contains("unknown attribute 'alpha'"));
  Graph ill_typed = g;
  Node leaky = MakeNode("l", "LeakyRelu", {"x"});
  leaky.attrs.Set("alpha", "big");
  REQUIRE(ill_typed.AddNode(leaky).ok());
  CHECK_THAT(VerifyError(ill_typed),
             Catch::Contains("attribute 'alpha' is string, expected float"));
  // "No dtype" (DT_INVALID in a file) is refused except where the schema means "unset" by it.
  Graph no_dtype = g;
  Node cast = MakeNode("c", "Cast", {"x"});
  cast.attrs.Set("to", DType::kInvalid);
  REQUIRE(no_dtype.AddNode(cast).ok());
  CHECK_THAT(VerifyError(no_dtype), Catch::Contains("attribute 'to' holds no dtype (DT_INVALID)"));
}

TEST_CASE("verifier: dangling inputs, bad ports, cycles, shape mismatches", "[verifier]") {
  Graph g;
  REQUIRE(g.AddNode(Feed("x", f32, {3})).ok());
  Graph dangling = g;
  REQUIRE(dangling.AddNode(MakeNode("r", "Relu", {"ghost"})).ok());
  CHECK_THAT(VerifyError(dangling), Catch::Contains("input 'ghost' does not exist"));
  Graph port = g;
  REQUIRE(port.AddNode(MakeNode("r", "Relu", {"x:1"})).ok());
  CHECK_THAT(VerifyError(port), Catch::Contains("input 'x:1': node 'x' (Placeholder, built at "
                                                "models/example.cc:42) has only 1 output(s)"));
  Graph cycle = g;
  REQUIRE(cycle.AddNode(MakeNode("a", "Add", {"x", "b"})).ok());
  REQUIRE(cycle.AddNode(MakeNode("b", "Relu", {"a"})).ok());
  CHECK_THAT(VerifyError(cycle), Catch::Contains("the graph has a cycle: 'a' -> 'b' -> 'a'"));
  Graph control_cycle = g;
  Node n = MakeNode("n", "NoOp");
  n.control_inputs = {"n"};
  REQUIRE(control_cycle.AddNode(n).ok());
  CHECK_THAT(VerifyError(control_cycle), Catch::Contains("cycle"));
  Graph shapes = g;
  REQUIRE(shapes.AddNode(Feed("y", f32, {4})).ok());
  REQUIRE(shapes.AddNode(MakeNode("s", "Add", {"x", "y"})).ok());
  CHECK_THAT(VerifyError(shapes),
             Catch::Contains("node 's' (Add, built at models/example.cc:42): shapes "
                             "[3] and [4] do not broadcast"));
}

TEST_CASE("verifier: graph inputs, outputs and state ops", "[verifier]") {
  Graph g;
  REQUIRE(g.AddNode(Feed("x", f32, {3})).ok());
  REQUIRE(g.AddNode(MakeNode("r", "Relu", {"x"})).ok());
  Graph not_placeholder = g;
  not_placeholder.mutable_inputs().push_back("r");
  CHECK_THAT(VerifyError(not_placeholder),
             Catch::Contains("is listed as a graph input but is not a Placeholder"));
  Graph bad_output = g;
  bad_output.mutable_outputs().push_back({"y", {"r", 3}});
  CHECK_THAT(VerifyError(bad_output), Catch::Contains("graph output 'y': node 'r' (Relu, built at "
                                                      "models/example.cc:42): has no output 3"));
  Graph assign = g;
  REQUIRE(assign.AddNode(MakeNode("a", "Assign", {"r", "x"})).ok());
  CHECK_THAT(VerifyError(assign), Catch::Contains("input 0 must be a Variable"));
}

TEST_CASE("verifier: names and strings a file could not hold are refused", "[verifier]") {
  // kiln's files keep these in protobuf string fields, which must be UTF-8: a graph holding other
  // bytes would be saved, then refused by every reader.
  Graph g;
  REQUIRE(g.AddNode(Feed("x", f32, {3})).ok());
  Graph bad_name = g;
  REQUIRE(bad_name.AddNode(MakeNode("r\xff", "Relu", {"x"})).ok());
  CHECK_THAT(VerifyError(bad_name), Catch::Contains("its name is not valid UTF-8 (byte 1 of 2)"));
  Graph bad_attr = g;
  Node pad = MakeNode("p", "Pad", {"x"});
  pad.attrs.Set("pads", std::vector<int64_t>{1, 1});
  pad.attrs.Set("mode", std::string("constant\xc0\x80"));
  REQUIRE(bad_attr.AddNode(std::move(pad)).ok());
  CHECK_THAT(VerifyError(bad_attr),
             Catch::Contains("node 'p' (Pad, built at models/example.cc:42): attribute 'mode' is "
                             "not valid UTF-8 (byte 8 of 10)"));
  Graph bad_output = g;
  bad_output.mutable_outputs().push_back({"y\xed\xa0\x80", {"x", 0}});
  CHECK_THAT(VerifyError(bad_output), Catch::Contains("is not valid UTF-8 (byte 1)"));
  GraphBuilder b;
  b.Output("y", Relu(b.Placeholder("caf\xc3\xa9", f32, {2})));  // valid: U+00E9
  CHECK(b.Build().ok());
}

TEST_CASE("builder: errors carry the C++ source line and all are reported", "[verifier]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value y = g.Placeholder("y", f32, {4});
  int line = __LINE__ + 1;
  Value bad = x + y;
  Value worse = Relu(bad);  // invalid input: no second error
  Value ints = g.Placeholder("i", i32, {2});
  Value bad2 = Exp(ints);
  CHECK_FALSE(bad.valid());
  CHECK_FALSE(worse.valid());
  CHECK_FALSE(bad2.valid());
  Result<Graph> built = g.Build();
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(built.error().message(), Catch::Contains("2 error(s)"));
  CHECK_THAT(
      built.error().message(),
      Catch::Contains("(Add, built at tests/ir/verifier_test.cc:" + std::to_string(line) + ")"));
  CHECK_THAT(built.error().message(), Catch::Contains("(Exp, built at tests/ir/verifier_test.cc:"));
}

TEST_CASE("builder: scopes, unique names, Named, Group", "[verifier]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2});
  Value a, b, c;
  {
    auto scope = g.Scope("block").Enter();
    a = Relu(x);
    b = Relu(x);
  }
  c = Relu(x).Named("final");
  CHECK(a.node_name() == "block/Relu");
  CHECK(b.node_name() == "block/Relu_1");
  CHECK(c.node_name() == "final");
  Relu(x).Named("final");
  CHECK(g.Build().error().message().find("the name is taken") != std::string::npos);
  GraphBuilder g2;
  Value v = Variable(g2, "v", f32, {2});
  Value group = Group({Assign(v, Exp(v)), AssignAdd(v, v)}, "step");
  CHECK(group.node_name() == "step");
  Result<Graph> built = g2.Build();
  REQUIRE(built.ok());
  CHECK(built->FindNode("step")->control_inputs.size() == 2);
  CHECK(built->FindNode("step")->output_types.empty());
}
