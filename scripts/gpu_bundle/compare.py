#!/usr/bin/env python3
"""Compares two .npy files of float32/float64/int64 values without numpy.

usage: compare.py ACTUAL.npy EXPECTED.npy [--rtol 1e-3] [--atol 1e-4] [--of-largest 1]
Exit 0 when they have the same shape and every element is within atol + rtol * |expected|
(NaN equals NaN, an infinity only itself; integers exactly), else 1 with one line saying where they differ. With
--of-largest 1, rtol is of the largest |expected| of the tensor instead of each element's: the
check for bf16 results, where an element that is the small difference of large terms carries the
rounding error of those terms (8 bits of mantissa each), not of itself.
"""
import array
import ast
import math
import sys

CODES = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i", "|b1": "b", "|u1": "B"}


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(path + ": not a .npy file")
    major = data[6]
    header_len = int.from_bytes(data[8:10] if major == 1 else data[8:12], "little")
    start = (10 if major == 1 else 12) + header_len
    header = ast.literal_eval(data[(10 if major == 1 else 12):start].decode("latin1"))
    if header["fortran_order"] or header["descr"] not in CODES:
        raise ValueError(path + ": unsupported layout " + str(header))
    values = array.array(CODES[header["descr"]])
    values.frombytes(data[start:])
    return tuple(header["shape"]), values


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    opts = dict(zip(argv[3::2], argv[4::2]))
    rtol, atol = float(opts.get("--rtol", "1e-3")), float(opts.get("--atol", "1e-4"))
    of_largest = opts.get("--of-largest", "0") == "1"
    (ashape, a), (eshape, e) = read_npy(argv[1]), read_npy(argv[2])
    if ashape != eshape:
        print("shape %s, expected %s" % (ashape, eshape))
        return 1
    largest = max((abs(y) for y in e if not isinstance(y, float) or math.isfinite(y)), default=0)
    worst, where = 0.0, -1
    for i, (x, y) in enumerate(zip(a, e)):
        if isinstance(y, float):
            if (math.isnan(y) and math.isnan(x)) or (math.isinf(y) and x == y):
                continue
            if not math.isfinite(y):  # an infinity or NaN expected: only the same will do
                excess = math.inf
                if excess > worst:
                    worst, where = excess, i
                continue
            scale = largest if of_largest else abs(y)
            excess = abs(x - y) - (atol + rtol * scale) if not math.isnan(x) else math.inf
        else:
            excess = math.inf if x != y else 0.0
        if excess > worst:
            worst, where = excess, i
    if where >= 0:
        print("element %d: %r, expected %r (rtol %g%s, atol %g)" % (
            where, a[where], e[where], rtol, " of %g" % largest if of_largest else "", atol))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
