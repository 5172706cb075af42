"""Image operators (TVM's tvm.topi.image)."""

from tessel.topi.image.grid_sample import grid_sample
from tessel.topi.image.resize import resize2d
from tessel.topi.image.roi_align import roi_align

__all__ = ["grid_sample", "resize2d", "roi_align"]
