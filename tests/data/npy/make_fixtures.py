#!/usr/bin/python3
"""Regenerates the numpy-written .npy fixtures of tests/ir/npy_test.cc.

Run from anywhere: /usr/bin/python3 tests/data/npy/make_fixtures.py
Each file is small; the values are chosen so that the test can state them by hand.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, array):
    np.save(os.path.join(HERE, name), array, allow_pickle=False)


# f32 [2, 3]: 0.5, 1.5, ..., 5.5 (row-major).
save("f4_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) + np.float32(0.5))
# f64 [2, 3] in Fortran order: row-major values 1..6, stored column by column.
save("f8_fortran_2x3.npy", np.asfortranarray(np.arange(1, 7, dtype="<f8").reshape(2, 3)))
# Big-endian i32 [3]: -1, 2, 300000.
save("i4_big_endian.npy", np.array([-1, 2, 300000], dtype=">i4"))
# bool [4]: True, False, False, True.
save("bool_4.npy", np.array([True, False, False, True]))
# f16 [2, 2]: 1, -2, 0.5, 65504 (the largest half).
save("f2_2x2.npy", np.array([[1, -2], [0.5, 65504]], dtype="<f2"))
# A scalar i64: -7.
save("i8_scalar.npy", np.array(-7, dtype="<i8"))
