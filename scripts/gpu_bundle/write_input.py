#!/usr/bin/env python3
"""Writes a float32 .npy of standard-normal values of shape SHAPE (N, or NxM) with numpy (fast; the
bundle falls back to write_npy.py, pure Python, where numpy is missing).
usage: write_input.py OUT.npy SHAPE"""
import sys

import numpy as np

shape = tuple(int(d) for d in sys.argv[2].split("x"))
np.save(sys.argv[1], np.random.default_rng(1).standard_normal(shape, np.float32))
