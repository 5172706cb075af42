"""Image operators (TVM's tvm.topi.image)."""

from tessel.topi.image.grid_sample import grid_sample
from tessel.topi.image.resize import resize2d

__all__ = ["grid_sample", "resize2d"]
