"""Neural-network operators (TVM's tvm.topi.nn)."""

from tessel.topi.nn.activation import (
    gelu,
    hard_sigmoid,
    hard_swish,
    leaky_relu,
    prelu,
    relu,
    relu6,
    silu,
)
from tessel.topi.nn.batch_matmul import batch_matmul
from tessel.topi.nn.batch_norm import batch_norm
from tessel.topi.nn.conv2d import (
    conv2d,
    conv2d_nchw,
    conv2d_nhwc,
    depthwise_conv2d_nchw,
    group_conv2d_nchw,
)
from tessel.topi.nn.conv2d_nchwc import (
    conv2d_NCHWc,
    depthwise_conv2d_NCHWc,
    group_conv2d_NCHWc,
)
from tessel.topi.nn.conv2d_transpose import conv2d_transpose_nchw, group_conv2d_transpose_nchw
from tessel.topi.nn.conv_nd import conv_nd, conv_transpose_nd
from tessel.topi.nn.dense import dense, matmul
from tessel.topi.nn.flatten import flatten
from tessel.topi.nn.l2_normalize import l2_normalize
from tessel.topi.nn.layer_norm import layer_norm
from tessel.topi.nn.pad import mirror_pad, pad
from tessel.topi.nn.pooling import adaptive_pool, global_pool, pool2d
from tessel.topi.nn.softmax import log_softmax, softmax
from tessel.topi.nn.utils import get_pad_tuple

__all__ = [
    "adaptive_pool", "batch_matmul", "batch_norm", "conv2d", "conv2d_nchw", "conv2d_NCHWc",
    "conv2d_nhwc", "conv2d_transpose_nchw", "conv_nd", "conv_transpose_nd", "dense",
    "depthwise_conv2d_nchw", "depthwise_conv2d_NCHWc", "flatten", "gelu", "get_pad_tuple",
    "global_pool", "group_conv2d_nchw", "group_conv2d_NCHWc", "group_conv2d_transpose_nchw",
    "hard_sigmoid", "hard_swish", "l2_normalize", "layer_norm", "leaky_relu", "log_softmax",
    "matmul", "mirror_pad", "pad", "pool2d", "prelu", "relu", "relu6", "silu", "softmax",
]  # fmt: skip
