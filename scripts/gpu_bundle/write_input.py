#!/usr/bin/env python3
"""Writes a float32 .npy of N standard-normal values with numpy (fast; the bundle falls back to
write_npy.py, pure Python, where numpy is missing). usage: write_input.py OUT.npy N"""
import sys

import numpy as np

np.save(sys.argv[1], np.random.default_rng(1).standard_normal(int(sys.argv[2]), np.float32))
