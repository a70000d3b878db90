// The `kiln` command line: dispatches to one subcommand per file (tools/cmd_<name>.cc).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ir/onnx/import.h"
#include "runtime/plugins.h"
#include "tools/command.h"

namespace kiln::cli {

int RunRun(const Command&, const std::vector<std::string>&);
int RunInspect(const Command&, const std::vector<std::string>&);
int RunConvert(const Command&, const std::vector<std::string>&);
int RunDot(const Command&, const std::vector<std::string>&);
int RunHelp(const Command&, const std::vector<std::string>&);
int RunGrad(const Command&, const std::vector<std::string>&);
int RunGradcheck(const Command&, const std::vector<std::string>&);
int RunFreeze(const Command&, const std::vector<std::string>&);
int RunTrain(const Command&, const std::vector<std::string>&);
int RunImportOnnx(const Command&, const std::vector<std::string>&);
int RunExportOnnx(const Command&, const std::vector<std::string>&);
int RunBench(const Command&, const std::vector<std::string>&);
int RunCompile(const Command&, const std::vector<std::string>&);
int RunOpt(const Command&, const std::vector<std::string>&);
const char* OptUsage();  // lists the passes (tools/cmd_opt.cc)

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"run", "run a model on input files",
       "usage: kiln run MODEL [--input NAME=FILE]... [--fetch NAME]... [--out DIR] [--backend "
       "B]\n"
       "                [--threads N] [--precision P] [--tf32] [--check-numerics]\n"
       "                [--memory-limit SIZE] [--inference]\n\n"
       "Runs MODEL (.kgraph, .kgraph.txt, .onnx, or a module .kmod from kiln compile, which runs\n"
       "as kilnrt runs it). Inputs are .npy or ONNX TensorProto .pb files.\n"
       "Fetches default to the model's outputs; NAME may be an output name, \"node\" or "
       "\"node:port\".\n"
       "With --out, each fetched tensor is written to DIR/NAME.npy (characters other than "
       "letters,\n"
       "digits, '.', '_' and '-' become '_'); without it a summary of each is printed.\n"
       "Backends: cpu (compiled; the default in builds with the compiler), reference (the\n"
       "interpreter every compiled result is tested against), auto (the default: cpu if built),\n"
       "cuda (compiled for the first NVIDIA GPU; generated kernels and cuBLASLt calls run there,\n"
       "the steps the device has no code for yet on the host) and cuda-sim (the same plan on the\n"
       "simulated CUDA device).\n"
       "--threads 0 (the default) uses every core this process may use.\n"
       "--precision fp32|bf16|fp16 computes float32 math in 16 bits where the mixed-precision\n"
       "lists allow (kiln inspect --precision prints them and what they decide); graph outputs\n"
       "keep their dtypes. --precision-op OP=LIST moves an op to another list (always16, follow,\n"
       "keep32, neutral), --precision-node NODE=LIST decides for one node.\n"
       "--tf32 lets float32 matrix products use TF32 tensor cores on a CUDA device (inputs\n"
       "rounded to a 10-bit mantissa, float32 accumulation; as PyTorch's allow_tf32).\n"
       "--check-numerics fails at the first node whose float output has an inf or NaN, naming\n"
       "it, its op and where it was built.\n"
       "--memory-limit SIZE (e.g. 512M, 20G; K, M, G, T are powers of 1024) is the memory a run\n"
       "may use; by default what the process can get (the smaller of MemAvailable and the\n"
       "cgroup's limit). A compiled plan whose peak does not fit is refused before anything of\n"
       "it is allocated, naming the peak, the budget and its largest buffers; the reference\n"
       "backend stops at the node whose output would exceed it. Variables keep their values.\n"
       "--inference runs the model as it evaluates: every BatchNorm and Dropout in inference\n"
       "mode (running statistics, no dropping), the variables as they are.\n",
       RunRun},
      {"inspect", "ops, inputs, outputs, parameters and FLOPs of a model",
       "usage: kiln inspect MODEL [--fusion] [--memory] [--placement] [--backend B]\n"
       "                    [--cost h100|h200|a100]\n"
       "                    [--input NAME=SHAPE]... [--fetch NAME]...\n"
       "                    [--target NAME]... [--precision [--precision-op OP=LIST]...] [--tf32]\n"
       "                    [--memory-limit SIZE]\n"
       "                    [--train --loss NAME [--optimizer sgd] [--lr 0.01] | --inference]\n\n"
       "Prints the model's inputs and outputs with dtypes and shapes, its ops by count, the "
       "number\n"
       "and bytes of its parameters (Variables), constant bytes and an estimate of FLOPs.\n"
       "--fusion and --memory compile the plan for the fetches (default: the outputs) and targets\n"
       "without running it: --fusion explains every fusion decision and counts kernels, library\n"
       "calls and reference steps against one kernel per op, with the bytes they move; --memory\n"
       "prints the plan's peak (arena, constants, variables, outputs) beside the memory budget\n"
       "(--memory-limit, or what the process can get) and its largest buffers. Unknown input dims "
       "are 1 unless --input NAME=SHAPE\n"
       "(e.g. images=64x1x8x8) gives them. --precision prints the mixed-precision lists and what\n"
       "they decide for each node in bf16 (with --precision-op/--precision-node changes).\n"
       "--backend cuda (or cuda-sim) plans for the CUDA device; --placement then lists where\n"
       "each step runs (device or host) and every copy between them, says whether the device\n"
       "steps are captured as a CUDA graph (or what prevents it), and ends with\n"
       "`placement: D device nodes, H host nodes, C copies (B bytes)`; with --tf32, float32\n"
       "matrix products say (tf32), and convolutions (cudnn): cuDNN runs them where the GPU\n"
       "has it, else their generated kernels. KILN_CUDA_GRAPHS=0 turns CUDA graphs off,\n"
       "KILN_CUDNN=0 cuDNN.\n"
       "--cost CHIP estimates the CUDA plan's time on that GPU from each step's FLOPs and bytes\n"
       "against the chip's peaks (a roofline plus launch and copy overheads, calibrated on an\n"
       "H100; the assumptions are printed): a table per step, `estimated_ms: X` (and, for a\n"
       "plan replayed as a CUDA graph, `estimated_ms_without_graph: Y`), then fused against one\n"
       "kernel per op in fp32, tf32, bf16 and fp16. No GPU is needed.\n"
       "--train --loss NAME plans one training step instead (the loss's gradient and the\n"
       "optimizer's update, as kiln bench --train runs it) for --fusion, --memory,\n"
       "--placement and --cost; --inference describes the model as it evaluates (BatchNorm and\n"
       "Dropout in inference mode, as kiln run --inference).\n",
       RunInspect},
      {"convert", "convert a model between binary and text forms",
       "usage: kiln convert IN OUT\n\n"
       "Reads IN and writes OUT; the form follows each file's extension: .kgraph.txt is protobuf\n"
       "text format, anything else binary.\n",
       RunConvert},
      {"dot", "draw a model with Graphviz",
       "usage: kiln dot MODEL -o FILE.svg|FILE.dot\n\n"
       "Writes the graph in Graphviz form; .svg is rendered with Graphviz's `dot` command.\n",
       RunDot},
      {"grad", "write gradients computed by symbolic differentiation",
       "usage: kiln grad MODEL --of NAME --wrt NAME[,NAME]... [--input NAME=FILE]... --out DIR\n"
       "                 [--grad-of-sum] [--checkpoint CKPT] [--backend B] [--memory-limit "
       "SIZE]\n\n"
       "Writes d(NAME)/d(each --wrt) to DIR/grad_<NAME>.npy (same name rule as kiln run). --wrt "
       "may\n"
       "name a variable, a placeholder or any node output. --of must be a scalar unless "
       "--grad-of-sum.\n"
       "Variables start from their initializers, or from --checkpoint.\n",
       RunGrad},
      {"gradcheck", "compare symbolic gradients with float64 finite differences",
       "usage: kiln gradcheck MODEL --of NAME --wrt NAME[,NAME]... [--input NAME=FILE]...\n"
       "                      [--grad-of-sum] [--tolerance 1e-4] [--step 1e-6]\n\n"
       "Evaluates the model in float64 and prints, per --wrt tensor, the worst absolute and "
       "relative\n"
       "(to max(1, |numeric|)) difference between kiln's gradient and central differences. Exits "
       "1\n"
       "when one exceeds --tolerance.\n",
       RunGradcheck},
      {"train", "train a model on arrays with an optimizer",
       "usage: kiln train MODEL --loss NAME --data NAME=FILE... [--optimizer "
       "sgd|momentum|adam|adamw]\n"
       "                  [--lr 0.001] [--batch 32] [--epochs 1] [--checkpoint FILE] [--resume]\n"
       "                  [--seed 1] [--drop-last] [--val NAME=FILE]... [--accuracy "
       "LOGITS[=LABELS]]\n"
       "                  [--early-stop N] [--trace FILE.json] [--quiet] [--logdir DIR]\n"
       "                  [--prefetch N]\n"
       "                  [--backend B] [--threads N]\n"
       "                  [--precision P] [--clip-norm X] [--weight-decay X]\n"
       "                  [--lr-schedule constant|step|cosine|linear-warmup-cosine]\n"
       "                  [--warmup-steps N] [--lr-step-size N] [--lr-gamma G] [--total-steps N]\n"
       "                  [--check-numerics] [--memory-limit SIZE]\n\n"
       "Adds the optimizer's update to MODEL, slices every --data array along its first axis into\n"
       "shuffled mini-batches (seeded), runs one training step per batch, prints each epoch's "
       "mean\n"
       "loss and examples per second, and writes --checkpoint after every epoch (atomically).\n"
       "--resume starts from the checkpoint's variables. A model whose fed placeholders fix\n"
       "their batch (an ONNX export with batch 32) needs --batch to match and drops each\n"
       "epoch's last partial batch, saying so once; --drop-last does that for any model.\n"
       "--data FILE is an array (.npy, .pb), a folder of .npy shards (concatenated along\n"
       "their first axis, in name order) or FILE.csv[:COLUMNS][:DTYPE] (columns \"0-19\",\n"
       "\"3,5\" or header names; dtype f32, f64, i32, i64): shards and CSV files are read row\n"
       "by row as batches need them, so a data set larger than memory trains.\n"
       "--val (the same names as --data) evaluates a held-out set after every epoch with the\n"
       "model as it evaluates (BatchNorm and Dropout in inference) and prints its loss;\n"
       "--accuracy LOGITS adds top-1 accuracy against the labels (the integer --data array, or\n"
       "=LABELS); --early-stop N stops after N epochs without a better val loss, and\n"
       "--checkpoint then holds the best epoch's variables. --trace writes a Chrome trace of\n"
       "every plan step of every training step (as kiln bench --trace). On a terminal a progress\n"
       "line per epoch shows the examples done, the loss, examples per second and the time left;\n"
       "--quiet prints only one line at the end (the last epoch's, and the checkpoint written).\n"
       "--prefetch N slices up to N batches ahead on threads of their own while the steps run\n"
       "(default 0: each when its step starts; the threads compete with the step's for cores).\n"
       "--logdir DIR writes TensorBoard event files: the model's graph, train/step_loss per step,\n"
       "train/loss, lr, examples_per_sec, val/loss and val/accuracy per epoch (`tensorboard\n"
       "--logdir DIR` shows them).\n"
       "--clip-norm X scales all gradients to a global norm of at most X; --weight-decay X adds\n"
       "X * w to each gradient (sgd, momentum, adam; adamw decays the weights decoupled), as\n"
       "torch.optim does. --lr-schedule sets the learning rate from the step count, in the graph\n"
       "(so a checkpoint resumes it and a training module follows it): step (--lr times\n"
       "--lr-gamma every --lr-step-size steps), cosine (to 0 over --total-steps, default every\n"
       "step of every epoch) or linear-warmup-cosine (--warmup-steps rising linearly first).\n"
       "kiln bench, compile and inspect take the same flags with --train.\n"
       "With --precision bf16|fp16 the step\n"
       "computes in 16 bits where the lists allow and the variables stay float32 (kiln run\n"
       "--help has the precision flags).\n",
       RunTrain},
      {"freeze", "variables -> constants: the deployable inference graph",
       "usage: kiln freeze MODEL --checkpoint CKPT [--fetch NAME]... -o OUT\n\n"
       "Keeps only what the fetches (default: the model's outputs) need, replaces each variable "
       "by\n"
       "its checkpoint value, switches BatchNorm and Dropout to inference, and writes OUT.\n",
       RunFreeze},
      {"opt", "run graph passes (cse, dce, simplify, constant-fold) on a model", OptUsage(),
       RunOpt},
      {"import-onnx", "convert an ONNX model to a kiln graph",
       "usage: kiln import-onnx IN.onnx -o OUT.kgraph [--constants]\n\n"
       "Imports an ONNX model (opsets up to 17): graph inputs become placeholders, float\n"
       "initializers trainable variables holding their values (--constants: constants), nodes\n"
       "kiln ops. Every unsupported op type is listed in one error. External data is read only\n"
       "from the model's folder. Every command that takes a MODEL also accepts .onnx directly.\n",
       RunImportOnnx},
      {"export-onnx", "write an inference graph as an ONNX model",
       "usage: kiln export-onnx MODEL -o OUT.onnx [--checkpoint CKPT] [--fetch NAME]...\n\n"
       "Writes what the fetches (default: the outputs) need, as it evaluates (BatchNorm and\n"
       "Dropout in inference mode), as an ONNX model at opset 17: placeholders become graph\n"
       "inputs, constants and variables initializers (a variable's value from --checkpoint, or\n"
       "its initializer's without one). Ops with no ONNX counterpart (state updates, backward\n"
       "ops) are listed all at once.\n",
       RunExportOnnx},
      {"bench", "time runs (or training steps) of a model",
       "usage: kiln bench MODEL [--input NAME=FILE|NAME=SHAPE]... [--fetch NAME]...\n"
       "                  [--train --loss NAME [--optimizer sgd] [--lr 0.01] [kiln train's\n"
       "                  --clip-norm, --weight-decay and --lr-schedule flags]] [--iters 10]\n"
       "                  [--warmup 1] [--backend B] [--threads N] [--classes K] [--seed 1]\n"
       "                  [--precision P] [--check-numerics] [--memory-limit SIZE]\n"
       "                  [--trace FILE.json] [--profile] [--inference]\n\n"
       "Runs MODEL once (timed as compile_ms: on the cpu backend it compiles the plan), --warmup\n"
       "more times, then --iters timed times, and prints median_ms, min_ms and max_ms. Fetches\n"
       "default to the model's outputs. --train adds the optimizer's update (as kiln train does)\n"
       "and times whole training steps: forward, backward and update, fetching --loss.\n"
       "--input NAME=SHAPE (dims joined by 'x', e.g. x=64x3x32x32) feeds seeded random data of\n"
       "the input's dtype: floats standard normal, integers uniform in [0, K) with K from\n"
       "--classes or else from the graph (a SoftmaxCrossEntropy's class count for its labels, a\n"
       "Gather's rows for its indices, a OneHot's depth; 2 if nothing bounds them). Inputs not\n"
       "given are random of their own shape, which must then be fully known. On the cpu backend\n"
       "the plan's steps are counted: generated kernels, library calls, reference steps (ops\n"
       "not lowered yet, by op). --threads 0 (the default) uses every core this process may use.\n"
       "--trace FILE.json writes a Chrome trace (chrome://tracing, Perfetto) of a compiled plan:\n"
       "one complete event per step per run, with its nodes, bytes and FLOPs; --profile prints\n"
       "each step's time per run, slowest first (KILN_TRACE and KILN_PROFILE=steps do the same\n"
       "for any command). --inference times the model as it evaluates (BatchNorm and Dropout in\n"
       "inference mode, as kiln run --inference).\n",
       RunBench},
      {"compile", "compile a model ahead of time into a module (.kmod)",
       "usage: kiln compile MODEL -o OUT.kmod [--target cpu|cuda] [--fetch NAME]...\n"
       "                    [--input NAME=SHAPE]... [--checkpoint FILE | --no-variables]\n"
       "                    [--train --loss NAME [--optimizer sgd] [--lr 0.01] [kiln train's\n"
       "                    --clip-norm, --weight-decay and --lr-schedule flags]]\n"
       "                    [--header OUT.h [--class [NS::]NAME]] [--precision P] [--tf32]\n"
       "                    [--memory-limit SIZE] [--inference]\n\n"
       "Compiles MODEL (.kgraph, .kgraph.txt or .onnx) through the same pipeline as the cpu\n"
       "backend and writes one file holding the plan, its constants, the variables' values (their\n"
       "initializers, or --checkpoint's) and the kernels' machine code for this CPU, with a\n"
       "manifest (format version, target, CPU features needed, signature, build id) and a\n"
       "checksum. `kilnrt` (runtime only) and `kiln run` run it. Fetches default to the model's\n"
       "outputs. Every input the fetches need must have a known shape: give unknown dims with\n"
       "--input NAME=SHAPE (dims joined by 'x', e.g. images=64x1x8x8). With --train each run of "
       "the\n"
       "module is one training step: it returns the loss (first output) and updates the\n"
       "variables it keeps. --header also writes a typed C++ header: a class (--class; by\n"
       "default the module file's name in CamelCase) that loads the module with the runtime\n"
       "alone, with one buffer per input and output (images_data()) and its shape as constants\n"
       "(kImagesShape); names become identifiers as tools/lib/module_header.h says. The C API,\n"
       "for C and other languages, is runtime/c_api/kiln_c.h. --precision bf16|fp16 compiles the\n"
       "mixed-precision graph (as kiln run --precision runs it) and records it in the manifest.\n"
       "--target cuda compiles the CUDA plan (as kiln run --backend cuda runs it): PTX for sm_80\n"
       "and sm_90 (a newer GPU JIT-compiles it) and, for the simulated device, the kernels' host\n"
       "translations; kilnrt runs it with --backend cuda or cuda-sim. --tf32 lets its float32\n"
       "matrix products use TF32 (as kiln run --tf32). --no-variables leaves the variables'\n"
       "values out: each takes its (seeded) initializer's value when the module first reads it,\n"
       "as here, so a fresh training module ships without its weights' bytes.\n"
       "--memory-limit SIZE refuses a module whose plan would not fit that budget where it is\n"
       "deployed (kilnrt --memory-limit checks it again at load). --inference compiles the model\n"
       "as it evaluates (BatchNorm and Dropout in inference mode, as kiln run --inference): a\n"
       "training graph's inference module, its variables still variables.\n",
       RunCompile},
      {"help", "show help for kiln or one command", "usage: kiln help [COMMAND]\n", RunHelp},
  };
  return commands;
}

void PrintOverview(FILE* out) {
  std::fprintf(out, "usage: kiln [--plugin LIB.so]... COMMAND [ARGS...]\n\ncommands:\n");
  for (const Command& c : Commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n--plugin LIB.so loads a shared library of user-defined ops first (as many as\n"
               "given; runtime/plugin_api.h says how to write one).\n"
               "Run 'kiln COMMAND --help' for the options of one command.\n");
}

int RunHelp(const Command& cmd, const std::vector<std::string>& args) {
  if (args.empty()) {
    PrintOverview(stdout);
    return 0;
  }
  for (const Command& c : Commands())
    if (args[0] == c.name) {
      std::printf("%s", c.usage);
      return 0;
    }
  return UsageError(cmd, "unknown command '" + args[0] + "'");
}

}  // namespace kiln::cli

int main(int argc, char** argv) {
  using namespace kiln::cli;
  if (argc < 2) {
    PrintOverview(stderr);
    return kExitUsage;
  }
  int first = 1;
  while (first + 1 < argc && std::string(argv[first]) == "--plugin") {
    if (kiln::Status s = kiln::LoadPlugin(argv[first + 1]); !s.ok()) {
      std::fprintf(stderr, "kiln: error: %s\n", s.error().message().c_str());
      return kExitFailure;
    }
    first += 2;
  }
  if (first >= argc || std::string(argv[first]) == "--plugin") {
    PrintOverview(stderr);
    return kExitUsage;
  }
  std::string name = argv[first];
  if (name == "--help" || name == "-h") name = "help";
  std::vector<std::string> args(argv + first + 1, argv + argc);
  kiln::RegisterOnnxFrontend();  // graphs saved from an ONNX import may hold Deferred nodes
  for (const Command& c : Commands())
    if (name == c.name) return c.run(c, args);
  std::fprintf(stderr, "kiln: unknown command '%s' (see 'kiln help')\n", name.c_str());
  return kExitUsage;
}
