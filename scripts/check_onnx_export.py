"""Checks kiln's ONNX export against ONNX's checker and ONNX Runtime (a test-only environment).

For each MODEL (a .kgraph or an .onnx file): `kiln export-onnx MODEL -o OUT.onnx`, then
onnx.checker (full check, with shape inference), then the same inputs through `kiln run MODEL
--inference` and through ONNX Runtime on OUT.onnx; every output must agree to rtol 1e-4 (atol
1e-5 times the output's largest magnitude). The inputs are the .npy files beside the model where
they exist (the fixtures of tests/data/onnx), an ONNX node test's own data set, else seeded random
values: unknown dims 2, integer inputs (labels, indices) from [0, 2). Prints one line per model; exit 1 on any failure.

usage: check_onnx_export.py KILN WORKDIR MODEL...
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort

ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
}


def suite_inputs(fixture_dir):
    """An ONNX node test's first data set (test_data_set_0/input_N.pb), by tensor name."""
    found = {}
    data_set = os.path.join(fixture_dir, "test_data_set_0")
    if os.path.isdir(data_set):
        for file in sorted(os.listdir(data_set)):
            if file.startswith("input_") and file.endswith(".pb"):
                tensor = onnx.TensorProto()
                with open(os.path.join(data_set, file), "rb") as f:
                    tensor.ParseFromString(f.read())
                found[tensor.name] = onnx.numpy_helper.to_array(tensor)
    return found


def random_inputs(model, rng, fixture_dir):
    """The fixture's own inputs where they sit beside the model (the .npy files of tests/data/onnx,
    where a fed shape must be a valid one; an ONNX node test's data set), else seeded random
    values."""
    inputs = {}
    from_suite = suite_inputs(fixture_dir)
    for value in model.graph.input:
        given = os.path.join(fixture_dir, value.name + ".npy")
        if os.path.exists(given):
            inputs[value.name] = np.load(given)
            continue
        if value.name in from_suite:
            inputs[value.name] = from_suite[value.name]
            continue
        t = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
        dtype = ONNX_TO_NUMPY[t.elem_type]
        if np.issubdtype(dtype, np.floating):
            inputs[value.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            inputs[value.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            inputs[value.name] = rng.integers(0, 2, shape).astype(dtype)
    return inputs


def check(kiln, workdir, model_path):
    name = os.path.splitext(os.path.basename(model_path))[0]
    if name == "model":  # tests/data/onnx/NAME/model.onnx
        name = "onnx-" + os.path.basename(os.path.dirname(os.path.abspath(model_path)))
    out_dir = os.path.join(workdir, name)
    os.makedirs(out_dir, exist_ok=True)
    exported = os.path.join(out_dir, "exported.onnx")
    subprocess.run([kiln, "export-onnx", model_path, "-o", exported], check=True,
                   stdout=subprocess.DEVNULL)
    model = onnx.load(exported)
    onnx.checker.check_model(model, full_check=True)

    inputs = random_inputs(model, np.random.default_rng(7), os.path.dirname(model_path))
    args = [kiln, "run", model_path, "--inference", "--out", os.path.join(out_dir, "kiln")]
    for input_name, value in inputs.items():
        path = os.path.join(out_dir, input_name.replace("/", "_") + ".npy")
        np.save(path, value)
        args += ["--input", f"{input_name}={path}"]
    outputs = [o.name for o in model.graph.output]
    for o in outputs:
        args += ["--fetch", o]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)

    session = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    ort_outputs = session.run(outputs, inputs)
    worst = 0.0
    for o, got in zip(outputs, ort_outputs):
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in o)
        want = np.load(os.path.join(out_dir, "kiln", safe + ".npy"))
        if want.shape != got.shape:
            raise AssertionError(f"output {o}: kiln {want.shape}, ONNX Runtime {got.shape}")
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5 * max(scale, 1.0)):
            raise AssertionError(f"output {o}: max |diff| {np.max(np.abs(got - want))}")
        if want.size:
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - want))))
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"{name}: ok ({len(model.graph.node)} ONNX nodes, outputs {outputs}, "
          f"max |diff| {worst:.3g}; ops {' '.join(ops)})")


def main():
    kiln, workdir, *models = sys.argv[1:]
    failed = 0
    for m in models:
        try:
            check(kiln, workdir, m)
        except Exception as e:  # report every model, then fail
            failed += 1
            print(f"{m}: FAILED: {e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
