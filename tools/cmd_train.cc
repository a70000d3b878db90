// kiln train: adds an optimizer to a model and trains it on arrays sliced into shuffled
// mini-batches; prints each epoch's mean loss and examples per second; checkpoints after every
// epoch (atomically, so an interrupted run leaves the last good checkpoint). A model whose fed
// inputs fix their batch dimension (an ONNX export with batch 32) trains on full batches of that
// size only: the last partial batch of each epoch is dropped, as --drop-last does for any model.
// With --val the model as it evaluates (tools/lib/validation.h) runs a held-out set after every
// epoch: its loss, with --accuracy LOGITS[=LABELS] its top-1 accuracy; --early-stop N stops after
// N epochs without a better val loss, and --checkpoint then holds the best epoch's variables.
// The optimizer's flags (schedules, clipping, weight decay) are tools/lib/training_graph.h's;
// --logdir writes TensorBoard event files (tools/lib/event_writer.h); --quiet prints one line.
// Batches are sliced ahead on threads of their own (tools/lib/batch_pipeline.h, --prefetch).
// Under mpirun with --distributed mpi (tools/lib/distributed_training.h) every rank trains its
// shard of each global batch of --batch examples; the epochs' losses are the global batches'.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "ir/random.h"
#include "passes/optim.h"
#include "runtime/session.h"
#include "tools/command.h"
#include "tools/lib/batch_pipeline.h"
#include "tools/lib/distributed_training.h"
#include "tools/lib/event_writer.h"
#include "tools/lib/session_flags.h"
#include "tools/lib/training_graph.h"
#include "tools/lib/validation.h"

namespace kiln::cli {
namespace {

// The batch the model's placeholders for `fed` fix (their first dim), or -1 when it is free.
// Placeholders that fix different batches are an error naming both.
Result<int64_t> FixedBatch(const Graph& graph, const std::vector<std::string>& fed) {
  int64_t fixed = -1;
  std::string by;
  for (const std::string& name : fed) {
    const Node* node = graph.FindNode(name);
    if (!node || node->op != "Placeholder" || node->output_types.empty()) continue;
    const Shape& shape = node->output_types[0].shape;
    if (shape.rank() == 0 || shape[0] < 0) continue;
    if (fixed >= 0 && shape[0] != fixed)
      return MakeError(ErrorCode::kInvalidArgument, "placeholder '", name, "' fixes a batch of ",
                       shape[0], ", placeholder '", by, "' one of ", fixed);
    fixed = shape[0];
    by = name;
  }
  return fixed;
}

Result<double> ParsePositive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v > 0))
    return MakeError(ErrorCode::kInvalidArgument, "--", flag, " must be a positive number, got '",
                     text, "'");
  return v;
}

// On a terminal, one line per epoch redrawn after every step: the bar, examples done, the last
// step's loss, examples per second and the time the epoch has left at that rate.
void Progress(int epoch, int64_t done, int64_t total, double loss, double seconds) {
  if (!isatty(2)) return;
  int width = 30, filled = total ? static_cast<int>(width * done / total) : width;
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const int64_t left =
      rate > 0 ? static_cast<int64_t>(static_cast<double>(total - done) / rate) : 0;
  std::fprintf(stderr,
               "\repoch %d [%.*s%*s] %lld/%lld loss %.4f, %.0f examples/s, ETA %lld:%02lld ", epoch,
               filled, "##############################", width - filled, "",
               static_cast<long long>(done), static_cast<long long>(total), loss, rate,
               static_cast<long long>(left / 60), static_cast<long long>(left % 60));
  if (done == total) std::fprintf(stderr, "\r%*s\r", 100, "");
}

}  // namespace

int RunTrain(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("loss")
      .Repeated("data")
      .Option("batch")
      .Option("epochs")
      .Option("checkpoint")
      .Option("seed")
      .Switch("resume")
      .Switch("drop-last")
      .Repeated("val")
      .Option("accuracy")
      .Option("early-stop")
      .Option("trace")
      .Switch("quiet")
      .Option("logdir")
      .Option("prefetch")
      .Positional(1, 1);
  DeclareSessionFlags(flags);
  DeclareOptimizerFlags(flags);
  DeclareDistributedFlags(flags);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  // A Chrome trace of every step of every training step (runtime/cpu/step_profile.h).
  if (flags.Has("trace")) setenv("KILN_TRACE", flags.Get("trace").c_str(), 1);
  Result<SessionOptions> options = SessionOptionsFromFlags(flags);
  if (!options.ok()) return UsageError(cmd, options.error().message());
  if (!flags.Has("loss") || !flags.Has("data"))
    return UsageError(cmd, "needs --loss NAME and --data NAME=FILE");
  Result<Distributed> distributed = DistributedFromFlags(flags, options->backend);
  if (!distributed.ok()) {
    if (distributed.error().code() == ErrorCode::kInvalidArgument)
      return UsageError(cmd, distributed.error().message());
    return Fail(cmd, distributed.error());
  }
  Communicator* const comm = distributed->comm.get();
  options->distributed = distributed->comm;
  // A rank that fails ends the others' too (each would otherwise wait for it until the timeout).
  struct EndOthersOnFailure {
    Communicator* comm;
    bool done = false;
    ~EndOthersOnFailure() {
      if (comm && !done) {
        std::fflush(stdout);
        comm->Abort(1);
      }
    }
  } end_others{comm};
  const int ranks = comm ? comm->size() : 1;
  // Rank 0 alone prints, logs and writes checkpoints.
  const bool lead = !comm || comm->rank() == 0;
  // --quiet: no progress, one line at the end (the last epoch's, and where the checkpoint went).
  const bool quiet = flags.On("quiet") || !lead;
  // Batches sliced ahead on threads of their own while the steps run (0, the default: none; a
  // slicing thread competes with the step's own threads for the cores, so it pays only where
  // making a batch costs about as much as a step).
  Result<int64_t> prefetch_count = ParseCount("prefetch", flags.Get("prefetch", "0"), 0);
  if (!prefetch_count.ok()) return UsageError(cmd, prefetch_count.error().message());
  const int prefetch = static_cast<int>(std::min<int64_t>(*prefetch_count, 64));
  Result<double> batch = ParsePositive("batch", flags.Get("batch", "32"));
  Result<double> epochs = ParsePositive("epochs", flags.Get("epochs", "1"));
  for (const Result<double>* r : {&batch, &epochs})
    if (!r->ok()) return UsageError(cmd, r->error().message());
  if (flags.On("resume") && !flags.Has("checkpoint"))
    return UsageError(cmd, "--resume needs --checkpoint");
  if ((flags.Has("accuracy") || flags.Has("early-stop")) && !flags.Has("val"))
    return UsageError(cmd, "--accuracy and --early-stop need --val NAME=FILE");
  int64_t patience = 0;
  if (flags.Has("early-stop")) {
    Result<double> n = ParsePositive("early-stop", flags.Get("early-stop"));
    if (!n.ok()) return UsageError(cmd, n.error().message());
    patience = static_cast<int64_t>(*n);
  }

  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<std::vector<NamedRowSource>> data = OpenRowSources(flags.GetAll("data"), "data");
  if (!data.ok()) return Fail(cmd, data.error());
  int64_t examples = -1;
  for (const auto& [name, source] : *data) {
    if (examples >= 0 && source->rows() != examples)
      return Fail(cmd, MakeError(ErrorCode::kInvalidArgument, "--data '", name, "' has ",
                                 source->rows(), " examples, the others ", examples));
    examples = source->rows();
  }

  const Graph model = *graph;  // the validation evaluates the model without the optimizer
  int64_t batch_size = static_cast<int64_t>(*batch);  // the global batch
  if (batch_size % ranks != 0)
    return UsageError(cmd, "--batch " + std::to_string(batch_size) + " does not divide among " +
                               std::to_string(ranks) + " ranks");
  const int64_t rank_batch = batch_size / ranks;  // each rank's shard of a full batch
  std::vector<std::string> fed;
  for (const auto& [name, source] : *data) fed.push_back(name);
  Result<int64_t> fixed = FixedBatch(model, fed);
  if (!fixed.ok()) return Fail(cmd, fixed.error());
  if (*fixed >= 0 && *fixed != rank_batch)
    return UsageError(cmd, "the model fixes a batch of " + std::to_string(*fixed) +
                               " examples (its placeholders' first dim); --batch is " +
                               std::to_string(batch_size) +
                               (ranks > 1 ? ", " + std::to_string(rank_batch) + " per rank" : ""));
  // Full batches only where the model fixes its batch, or --drop-last asks; and a last batch too
  // small to give every rank an example.
  const bool drop_last =
      flags.On("drop-last") || *fixed >= 0 || (ranks > 1 && examples % batch_size < ranks);
  const int64_t trained = drop_last ? examples - examples % batch_size : examples;
  if (trained == 0)
    return Fail(cmd, MakeError(ErrorCode::kInvalidArgument, "the data has ", examples,
                               " examples, fewer than one batch of ", batch_size));
  // The schedules' length, unless --total-steps says otherwise: every step of every epoch.
  const int64_t steps_per_epoch = (trained + batch_size - 1) / batch_size;
  Result<optim::Optimizer> optimizer =
      OptimizerFromFlags(flags, "adam", 0.001, steps_per_epoch * static_cast<int64_t>(*epochs));
  if (!optimizer.ok()) return UsageError(cmd, optimizer.error().message());
  if (comm)  // the validation's model (above) keeps its own BatchNorms
    if (Status s = MakeDataParallel(distributed->data_parallel, *graph, *optimizer); !s.ok())
      return Fail(cmd, s.error());
  Result<TrainingGraph> training = AddOptimizer(std::move(*graph), flags.Get("loss"), *optimizer);
  if (!training.ok()) return Fail(cmd, training.error());
  const std::string loss = training->loss, update = training->update,
                    learning_rate = training->learning_rate;
  if (comm)  // the same model, data and schedule on every rank, or a clear refusal
    if (Status s = CheckRanksAgree(*comm, {{"model", GraphFingerprint(training->graph)},
                                           {"--batch", std::to_string(batch_size)},
                                           {"number of examples", std::to_string(examples)},
                                           {"--epochs", flags.Get("epochs", "1")},
                                           {"--seed", flags.Get("seed", "1")},
                                           {"--resume", flags.On("resume") ? "on" : "off"}});
        !s.ok())
      return Fail(cmd, s.error());
  const std::set<std::string> local_state = LocalStateVariables(training->graph);
  Session session(std::move(training->graph), *options);
  std::string checkpoint = flags.Get("checkpoint");
  if (flags.On("resume")) {
    // Rank 0 reads the checkpoint; the others learn whether it could, and get its variables.
    Status restored = lead ? session.RestoreCheckpoint(checkpoint) : OkStatus();
    if (comm) {
      uint8_t ok = restored.ok();
      if (Status s = comm->Broadcast(&ok, 1, 0); !s.ok()) return Fail(cmd, s.error());
      if (!ok && !lead)
        return Fail(cmd, MakeError(ErrorCode::kFailedPrecondition, "rank 0 could not restore ",
                                   checkpoint));
    }
    if (!restored.ok()) return Fail(cmd, restored.error());
    if (!quiet) std::printf("resumed from %s\n", checkpoint.c_str());
  }
  if (Status s = session.BroadcastVariables(); !s.ok()) return Fail(cmd, s.error());
  if (comm && !quiet)
    std::printf("data-parallel over %d ranks (%s): %lld examples per rank of each batch of %lld\n",
                ranks, distributed->on_device ? "mpi, gradients by nccl" : comm->kind().c_str(),
                static_cast<long long>(rank_batch), static_cast<long long>(batch_size));
  if (trained < examples && !quiet)
    std::printf("each epoch drops its last %lld examples (a partial batch): %s\n",
                static_cast<long long>(examples - trained),
                flags.On("drop-last") ? "--drop-last"
                : *fixed >= 0         ? "the model fixes a batch of that size"
                                      : "fewer than one per rank");
  std::unique_ptr<Validation> validation;
  if (flags.Has("val") && lead) {
    Result<std::vector<NamedRowSource>> val_sources = OpenRowSources(flags.GetAll("val"), "val");
    if (!val_sources.ok()) return Fail(cmd, val_sources.error());
    Result<std::vector<std::pair<std::string, Tensor>>> val = ReadAllRows(*val_sources);
    if (!val.ok()) return Fail(cmd, val.error().WithContext("--val"));
    std::vector<std::string> names;
    for (const auto& [name, t] : *val) names.push_back(name);
    if (names != fed)
      return UsageError(cmd, "--val must name the same arrays as --data, in the same order");
    ValidationOptions v;
    v.loss = flags.Get("loss");
    v.batch = batch_size;
    v.full_batches_only = drop_last;
    if (flags.Has("accuracy")) {
      const std::string spec = flags.Get("accuracy");
      const size_t eq = spec.find('=');
      v.logits = spec.substr(0, eq);
      Result<std::string> labels =
          LabelsForAccuracy(*val, eq == std::string::npos ? "" : spec.substr(eq + 1));
      if (!labels.ok()) return UsageError(cmd, labels.error().message());
      v.labels = *labels;
    }
    Result<std::unique_ptr<Validation>> made =
        Validation::Create(model, *options, std::move(*val), std::move(v));
    if (!made.ok()) return Fail(cmd, made.error());
    validation = std::move(*made);
  }
  // TensorBoard: the model's graph, then scalars (tools/lib/event_writer.h).
  std::unique_ptr<EventWriter> events;
  if (flags.Has("logdir") && lead) {
    Result<std::unique_ptr<EventWriter>> opened = EventWriter::Open(flags.Get("logdir"));
    if (!opened.ok()) return Fail(cmd, opened.error());
    events = std::move(*opened);
    if (Status s = events->Graph(model); !s.ok()) return Fail(cmd, s.error());
  }
  auto log = [&](const char* tag, int64_t step, double value) -> Status {
    return events ? events->Scalar(tag, step, value) : OkStatus();
  };
  // The training steps taken so far (a resumed run goes on from its checkpoint's count).
  int64_t global_step = 0;
  if (const Tensor* t = session.variables().Find(optim::kGlobalStepName))
    global_step = static_cast<int64_t>(t->GetDouble(0));
  double best_val = INFINITY;
  int64_t epochs_without_better = 0;
  std::string epoch_line;  // the last epoch's summary
  uint64_t seed = static_cast<uint64_t>(std::strtoull(flags.Get("seed", "1").c_str(), nullptr, 10));
  std::vector<int64_t> order(examples);
  for (int epoch = 1; epoch <= static_cast<int>(*epochs); ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = examples - 1; i > 0; --i)  // Fisher-Yates with kiln's counter-based RNG
      std::swap(order[i], order[RandomBits(seed, epoch, i) % static_cast<uint64_t>(i + 1)]);
    if (events) {  // the rate this epoch starts with (the schedule moves it every step)
      Result<std::vector<Tensor>> lr = session.Run({}, {learning_rate});
      if (!lr.ok()) return Fail(cmd, lr.error().WithContext("the learning rate"));
      if (Status s = log("lr", epoch, (*lr)[0].GetDouble(0)); !s.ok()) return Fail(cmd, s.error());
    }
    auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    // This rank's rows: all of them, or its shard of each global batch.
    const std::vector<int64_t> rows =
        comm ? ShardOfEpoch(order, trained, batch_size, comm->rank(), ranks) : order;
    BatchPipeline batches(*data, rows, comm ? static_cast<int64_t>(rows.size()) : trained,
                          rank_batch, prefetch);
    int64_t end = 0;  // the examples done, over all ranks
    int64_t steps = 0;
    const Communicator::Traffic traffic_before = comm ? comm->traffic() : Communicator::Traffic{};
    while (true) {
      Result<std::optional<Batch>> made = batches.Next();
      if (!made.ok()) return Fail(cmd, made.error().WithContext("epoch " + std::to_string(epoch)));
      if (!*made) break;
      std::optional<Batch>& next = *made;
      const int64_t global_rows = std::min(batch_size, trained - end);
      end += global_rows;
      ++steps;
      if (comm) comm->set_share(static_cast<double>(next->rows) / static_cast<double>(global_rows));
      Result<std::vector<Tensor>> out = session.Run(next->feeds, {loss}, {update});
      if (!out.ok()) return Fail(cmd, out.error().WithContext("epoch " + std::to_string(epoch)));
      // The global batch's mean loss: the ranks' means weighted by their shares.
      double value = (*out)[0].GetDouble(0) * static_cast<double>(next->rows);
      if (comm)
        if (Status s = comm->AllReduceSum(&value, 1, DType::kF64); !s.ok())
          return Fail(cmd, s.error().WithContext("epoch " + std::to_string(epoch)));
      value /= static_cast<double>(global_rows);
      if (!std::isfinite(value))
        return Fail(cmd, MakeError(ErrorCode::kInvalidArgument, "epoch ", epoch,
                                   ": the loss became ", value, "; try a smaller --lr"));
      loss_sum += value * static_cast<double>(global_rows);
      if (Status s = log("train/step_loss", ++global_step, value); !s.ok())
        return Fail(cmd, s.error());
      if (!quiet)
        Progress(epoch, end, trained, value,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char text[160];
    std::snprintf(text, sizeof text, "epoch %d: mean loss %.5f, %.0f examples/s", epoch,
                  loss_sum / static_cast<double>(trained), static_cast<double>(trained) / seconds);
    epoch_line = text;
    if (comm && steps > 0) {  // what the gradients' all-reduces cost this epoch, on rank 0
      const Communicator::Traffic& now = comm->traffic();
      const double per_step = 1.0 / static_cast<double>(steps);
      const double waited = (now.waited - traffic_before.waited) * 1e3 * per_step;
      const double travelled = (now.travelled - traffic_before.travelled) * 1e3 * per_step;
      const double mb = static_cast<double>(now.bytes - traffic_before.bytes) / 1e6 * per_step;
      if (distributed->on_device)  // in the stream's order: the host neither waits nor times it
        std::snprintf(text, sizeof text, "; all-reduce %.2f MB a step on the device", mb);
      else
        std::snprintf(text, sizeof text,
                      "; all-reduce %.2f MB a step, %.2f ms in flight (%.2f GB/s), %.2f ms waited",
                      mb, travelled, travelled > 0 ? mb / travelled : 0.0, waited);
      epoch_line += text;
    }
    for (Status s : {log("train/loss", epoch, loss_sum / static_cast<double>(trained)),
                     log("examples_per_sec", epoch, static_cast<double>(trained) / seconds)})
      if (!s.ok()) return Fail(cmd, s.error());
    bool better = true;  // without --val every epoch is kept
    if (validation) {    // rank 0 alone
      Result<ValidationResult> v = validation->Evaluate(session.variables());
      if (!v.ok())
        return Fail(cmd, v.error().WithContext("validation after epoch " + std::to_string(epoch)));
      std::snprintf(text, sizeof text, "; val loss %.5f", v->loss);
      epoch_line += text;
      if (v->accuracy) {
        std::snprintf(text, sizeof text, ", val accuracy %.4f", *v->accuracy);
        epoch_line += text;
      }
      if (Status s = log("val/loss", epoch, v->loss); !s.ok()) return Fail(cmd, s.error());
      if (v->accuracy)
        if (Status s = log("val/accuracy", epoch, *v->accuracy); !s.ok())
          return Fail(cmd, s.error());
      better = v->loss < best_val;
      if (better) best_val = v->loss;
      epochs_without_better = better ? 0 : epochs_without_better + 1;
    }
    if (comm) {  // the replicas must still agree bit for bit, once they share rank 0's statistics
      if (!local_state.empty())
        if (Status s = session.BroadcastVariables(0, local_state); !s.ok())
          return Fail(cmd, s.error());
      if (Status s = session.variables().MaterializeAll(); !s.ok()) return Fail(cmd, s.error());
      if (Status s = CheckRanksAgree(*comm, {{"variables after epoch " + std::to_string(epoch),
                                              VariablesDigest(session.variables().values())}});
          !s.ok())
        return Fail(cmd, s.error());
    }
    if (comm) {  // rank 0's validation decides for every rank
      uint8_t decided[2] = {better, epochs_without_better >= patience && patience > 0};
      if (Status s = comm->Broadcast(decided, sizeof decided, 0); !s.ok())
        return Fail(cmd, s.error());
      better = decided[0];
      if (decided[1]) epochs_without_better = patience;
    }
    if (!quiet) {
      std::printf("%s\n", epoch_line.c_str());
      std::fflush(stdout);
    }
    if (!checkpoint.empty() && (better || patience == 0) && lead)
      if (Status s = session.SaveCheckpoint(checkpoint); !s.ok()) return Fail(cmd, s.error());
    if (patience > 0 && epochs_without_better >= patience) {
      std::snprintf(text, sizeof text,
                    "early stop: %lld epoch%s without a better val loss (best %.5f)",
                    static_cast<long long>(patience), patience == 1 ? "" : "s", best_val);
      if (quiet)
        epoch_line += std::string("; ") + text;
      else
        std::printf("%s\n", text);
      break;
    }
  }
  if (lead && quiet)
    std::printf("%s%s%s\n", epoch_line.c_str(), checkpoint.empty() ? "" : "; wrote ",
                checkpoint.c_str());
  else if (lead && !checkpoint.empty())
    std::printf("wrote %s\n", checkpoint.c_str());
  end_others.done = true;
  return 0;
}

}  // namespace kiln::cli
