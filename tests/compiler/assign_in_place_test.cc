// The cpu backend's "assign" step updates a variable in place only where nobody can tell
// (runtime/cpu/state_steps.cc): reads ordered after the update still see the old value, as on
// the reference executor, and a tensor someone holds from the store keeps its values.
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"

namespace kiln {
namespace {

TEST_CASE("assign in place never changes a value someone else can read", "[cpu][state]") {
  for (const char* backend : {"reference", "cpu"}) {
    INFO(backend);
    GraphBuilder g;
    Value v = Variable(g, "v", f32, Shape{4}, Initializer::Constant(1.0));
    Value update = AssignAdd(v, g.Constant(Tensor::FromVector<float>(Shape{4}, {1, 2, 3, 4})));
    // Runs after the update (control input) but reads the Variable node's output: the old value.
    Value after = g.AddOp("Identity", {v}, {}, SourceLocation::current(), "after", {update})[0];
    Graph graph = [&] {
      g.Output("twice_old", Mul(after, g.Constant(Tensor::Scalar<float>(2))));
      g.Output("new", update);
      Result<Graph> built = g.Build();
      INFO((built.ok() ? "" : built.error().ToString()));
      REQUIRE(built.ok());
      return *built;
    }();
    Session session(graph, SessionOptions{.backend = backend});
    Result<std::vector<Tensor>> first = session.Run({}, {"twice_old", "new"});
    INFO((first.ok() ? "" : first.error().ToString()));
    REQUIRE(first.ok());
    CHECK((*first)[0].ToDoubles() == std::vector<double>{2, 2, 2, 2});
    CHECK((*first)[1].ToDoubles() == std::vector<double>{2, 3, 4, 5});
    // A copy of the stored tensor, held outside the session, keeps its values across updates.
    Tensor held = *session.variables().Find("v");
    REQUIRE(session.Run({}, {"new"}).ok());
    CHECK(held.ToDoubles() == std::vector<double>{2, 3, 4, 5});
    CHECK(session.variables().Find("v")->ToDoubles() == std::vector<double>{3, 5, 7, 9});
    // Without outside holders the update runs in place on the cpu backend: the same storage.
    held = Tensor();
    const void* storage = session.variables().Find("v")->raw_data();
    REQUIRE(session.Run({}, {"new"}).ok());
    CHECK(session.variables().Find("v")->ToDoubles() == std::vector<double>{4, 7, 10, 13});
    if (std::string(backend) == "cpu") CHECK(session.variables().Find("v")->raw_data() == storage);
  }
}

}  // namespace
}  // namespace kiln
