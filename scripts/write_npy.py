#!/usr/bin/python3
"""Writes a seeded random .npy file without numpy (for scripts that feed kiln a tensor).

usage: write_npy.py OUT.npy f32|i64 DIMS [--max K] [--seed S]
  DIMS like 2x3x224x224; f32 values are standard normal, i64 values uniform in [0, K) (K=2).
"""
import array
import random
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    out, dtype, dims = argv[1], argv[2], [int(d) for d in argv[3].split("x")]
    opts = dict(zip(argv[4::2], argv[5::2]))
    random.seed(int(opts.get("--seed", "1")))
    count = 1
    for d in dims:
        count *= d
    shape = "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
    if dtype == "f32":
        descr, data = "<f4", array.array("f", (random.gauss(0, 1) for _ in range(count)))
    elif dtype == "i64":
        top = int(opts.get("--max", "2"))
        descr, data = "<i8", array.array("q", (random.randrange(top) for _ in range(count)))
    else:
        sys.exit("dtype must be f32 or i64")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(data.tobytes())


if __name__ == "__main__":
    main(sys.argv)
