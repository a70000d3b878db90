#include "runtime/executable_proto.h"

#include <cctype>

#include "ir/serialize.h"

namespace kiln {
namespace {

// A library routine's name <-> its StepProto::Routine value (the value's name in lower case).
std::string RoutineName(proto::StepProto::Routine routine) {
  std::string name = proto::StepProto::Routine_Name(routine);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool RoutineFromName(const std::string& name, proto::StepProto::Routine* routine) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return proto::StepProto::Routine_Parse(upper, routine) &&
         *routine != proto::StepProto::ROUTINE_UNSPECIFIED && RoutineName(*routine) == name;
}

// A library step's routine name from its proto: the typed value (format 5 on) or the name
// earlier formats wrote; either must be a routine this runtime knows.
Result<std::string> LibraryRoutine(const proto::StepProto& sp, size_t index) {
  if (sp.routine() != proto::StepProto::ROUTINE_UNSPECIFIED) {
    if (!proto::StepProto::Routine_IsValid(sp.routine()))
      return MakeError(ErrorCode::kInvalidArgument, "executable step ", index,
                       ": unknown library routine number ", static_cast<int>(sp.routine()),
                       " (a newer kiln's? recompile the module)");
    return RoutineName(sp.routine());
  }
  proto::StepProto::Routine routine;
  if (!RoutineFromName(sp.callee(), &routine))
    return MakeError(ErrorCode::kInvalidArgument, "executable step ", index,
                     ": unknown library routine '", sp.callee(), "'");
  return sp.callee();
}

}  // namespace

static_assert(static_cast<int>(BufferDesc::Kind::kFeed) == proto::BufferProto::FEED &&
              static_cast<int>(BufferDesc::Kind::kConstant) == proto::BufferProto::CONSTANT &&
              static_cast<int>(BufferDesc::Kind::kVariable) == proto::BufferProto::VARIABLE);
static_assert(static_cast<int>(Step::Kind::kReference) == proto::StepProto::REFERENCE &&
              static_cast<int>(Step::Kind::kLibrary) == proto::StepProto::LIBRARY);

proto::ExecutableProto ExecutableToProto(const Executable& exe) {
  proto::ExecutableProto p;
  p.set_arena_bytes(exe.arena_bytes);
  for (const BufferDesc& b : exe.buffers) {
    proto::BufferProto* bp = p.add_buffers();
    bp->set_kind(static_cast<proto::BufferProto::Kind>(b.kind));
    bp->set_dtype(DTypeToProto(b.type.dtype));
    *bp->mutable_shape() = ShapeToProto(b.type.shape);
    bp->set_offset(b.offset);
    bp->set_index(b.index);
    bp->set_tensor(b.tensor);
    bp->set_op(b.op);
    bp->set_layout(b.layout);
  }
  for (const Tensor& t : exe.constants) *p.add_constants() = TensorToProto(t);
  for (const TensorRef& f : exe.feeds) p.add_feeds(f.ToString());
  for (int f : exe.fetches) p.add_fetches(f);
  for (const Step& s : exe.steps) {
    proto::StepProto* sp = p.add_steps();
    sp->set_kind(static_cast<proto::StepProto::Kind>(s.kind));
    proto::StepProto::Routine routine;
    if (s.kind == Step::Kind::kLibrary && RoutineFromName(s.callee, &routine))
      sp->set_routine(routine);
    else  // not a library step, or a routine no reader knows (refused when read)
      sp->set_callee(s.callee);
    for (int id : s.inputs) sp->add_inputs(id);
    for (int id : s.outputs) sp->add_outputs(id);
    for (const auto& [name, value] : s.attrs.items())
      (*sp->mutable_attrs())[name] = AttrToProto(value);
    sp->set_rows(s.rows);
    *sp->mutable_node() = NodeToProto(s.node);
    sp->set_on_device(s.on_device);
    sp->set_invariant(s.invariant);
  }
  for (const DeviceKernel& k : exe.device_kernels) {
    proto::DeviceKernelProto* kp = p.add_device_kernels();
    kp->set_name(k.name);
    for (const KernelLaunch& l : k.launches) {
      proto::KernelLaunchProto* lp = kp->add_launches();
      lp->set_function(l.function);
      for (int d = 0; d < 3; ++d) {
        lp->add_grid(l.grid[d]);
        lp->add_block(l.block[d]);
      }
      for (const KernelLaunch::Arg& a : l.args) {
        proto::KernelLaunchProto::Arg* ap = lp->add_args();
        ap->set_operand(a.operand);
        for (int64_t d : a.dims) ap->add_dims(d);
        ap->set_value(a.value);
      }
    }
  }
  return p;
}

Result<Executable> ExecutableFromProto(const proto::ExecutableProto& p) {
  Executable exe;
  exe.arena_bytes = p.arena_bytes();
  if (exe.arena_bytes < 0)
    return MakeError(ErrorCode::kInvalidArgument, "executable: negative arena size");
  for (int i = 0; i < p.buffers_size(); ++i) {
    const proto::BufferProto& bp = p.buffers(i);
    auto error = [&](const Error& e) {
      return e.WithContext("executable buffer %" + std::to_string(i));
    };
    if (!proto::BufferProto::Kind_IsValid(bp.kind()))
      return MakeError(ErrorCode::kInvalidArgument, "executable buffer %", i, ": unknown kind ",
                       static_cast<int>(bp.kind()));
    BufferDesc b;
    b.kind = static_cast<BufferDesc::Kind>(bp.kind());
    Result<DType> dtype = DTypeFromProto(bp.dtype());
    if (!dtype.ok()) return error(dtype.error());
    if (IsContainer(*dtype))  // containers live on the host: no compiled plan holds one
      return MakeError(ErrorCode::kInvalidArgument, "executable buffer %", i, ": dtype ",
                       DTypeName(*dtype), " is not a tensor dtype");
    Result<Shape> shape = ShapeFromProto(bp.shape());
    if (!shape.ok()) return error(shape.error());
    b.type = TensorType{*dtype, *shape};
    b.offset = bp.offset();
    b.index = bp.index();
    b.tensor = bp.tensor();
    b.op = bp.op();
    b.layout = bp.layout();
    exe.buffers.push_back(std::move(b));
  }
  for (const proto::TensorProto& tp : p.constants()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp));
    exe.constants.push_back(std::move(t));
  }
  for (const std::string& f : p.feeds()) {
    KILN_ASSIGN_OR_RETURN(TensorRef ref, TensorRef::Parse(f));
    exe.feeds.push_back(std::move(ref));
  }
  exe.fetches.assign(p.fetches().begin(), p.fetches().end());
  for (const proto::StepProto& sp : p.steps()) {
    if (!proto::StepProto::Kind_IsValid(sp.kind()))
      return MakeError(ErrorCode::kInvalidArgument, "executable step '", sp.callee(),
                       "': unknown kind ", static_cast<int>(sp.kind()));
    Step s;
    s.kind = static_cast<Step::Kind>(sp.kind());
    if (s.kind == Step::Kind::kLibrary) {
      KILN_ASSIGN_OR_RETURN(s.callee, LibraryRoutine(sp, exe.steps.size()));
    } else {
      s.callee = sp.callee();
    }
    s.inputs.assign(sp.inputs().begin(), sp.inputs().end());
    s.outputs.assign(sp.outputs().begin(), sp.outputs().end());
    for (const auto& [name, value] : sp.attrs()) {
      KILN_ASSIGN_OR_RETURN(AttrValue v, AttrFromProto(value));
      s.attrs.Set(name, std::move(v));
    }
    s.rows = sp.rows();
    KILN_ASSIGN_OR_RETURN(s.node, NodeFromProto(sp.node()));
    s.on_device = sp.on_device();
    s.invariant = sp.invariant();
    exe.steps.push_back(std::move(s));
  }
  for (const proto::DeviceKernelProto& kp : p.device_kernels()) {
    DeviceKernel k;
    k.name = kp.name();
    for (const proto::KernelLaunchProto& lp : kp.launches()) {
      if (lp.grid_size() != 3 || lp.block_size() != 3)
        return MakeError(ErrorCode::kInvalidArgument, "executable device kernel '", k.name,
                         "': a launch needs 3 grid and 3 block sizes");
      KernelLaunch l;
      l.function = lp.function();
      for (int d = 0; d < 3; ++d) {
        l.grid[d] = lp.grid(d);
        l.block[d] = lp.block(d);
      }
      for (const proto::KernelLaunchProto::Arg& ap : lp.args()) {
        if (ap.operand() < -1 || ap.dims_size() > 8)
          return MakeError(ErrorCode::kInvalidArgument, "executable device kernel '", k.name,
                           "': a launch argument is malformed");
        for (int64_t d : ap.dims())
          if (d < 0 || d > (int64_t{1} << 40))
            return MakeError(ErrorCode::kInvalidArgument, "executable device kernel '", k.name,
                             "': a launch argument has dimension ", d);
        l.args.push_back({ap.operand(), {ap.dims().begin(), ap.dims().end()}, ap.value()});
      }
      k.launches.push_back(std::move(l));
    }
    exe.device_kernels.push_back(std::move(k));
  }
  return exe;
}

}  // namespace kiln
