"""Lets the tests here import their helpers: the expected-failure list beside them and
onnx_testing one folder up."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]
