"""Graphs (Relay text) of the multi-anchor fusion tests: chains of anchors FuseOps may fuse."""

MLP = """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(add(%0, 1f));
  %2 = nn.dense(%1, %w);
  %3 = nn.relu(%2);
  nn.dense(%3, %w)
}"""


CONV_CHAIN = """
def @main(%x: Tensor[(1, 8, 12, 12), float32], %w1: Tensor[(8, 8, 3, 3), float32],
          %w2: Tensor[(8, 8, 3, 3), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]));
  nn.relu(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]))
}"""


INVERTED_RESIDUAL = """
def @main(%x: Tensor[(1, 8, 10, 10), float32], %expand: Tensor[(32, 8, 1, 1), float32],
          %depthwise: Tensor[(32, 1, 3, 3), float32], %project: Tensor[(8, 32, 1, 1), float32]) {
  %0 = clip(nn.conv2d(%x, %expand), a_min=0f, a_max=6f);
  %1 = clip(nn.conv2d(%0, %depthwise, padding=[1, 1, 1, 1], groups=32), a_min=0f, a_max=6f);
  %2 = nn.conv2d(%1, %project);
  add(%2, %x)
}"""


ATTENTION = """
def @main(%q: Tensor[(12, 128, 32), float32], %k: Tensor[(12, 128, 32), float32],
          %v: Tensor[(12, 128, 32), float32], %mask: Tensor[(1, 1, 128), float32]) {
  %0 = nn.batch_matmul(%q, %k, transpose_b=True);
  %1 = add(multiply(%0, 0.17f), %mask);
  %2 = nn.softmax(%1);
  nn.batch_matmul(%2, %v, transpose_b=False)
}"""


# As the ONNX importer writes MiniLM's attention: the scores viewed as [1, heads, rows, rows]
# for the mask and softmax, and back.
ATTENTION_VIEWS = """
def @main(%q: Tensor[(4, 128, 16), float32], %k: Tensor[(4, 16, 128), float32],
          %v: Tensor[(4, 128, 16), float32], %mask: Tensor[(1, 1, 1, 128), float32]) {
  %0 = reshape(nn.batch_matmul(%q, %k, transpose_b=False), newshape=[1, 4, 128, 128]);
  %1 = nn.softmax(add(multiply(%0, 0.25f), %mask));
  nn.batch_matmul(reshape(%1, newshape=[4, 128, 128]), %v, transpose_b=False)
}"""


BIG_MLP = """
def @main(%x: Tensor[(128, 384), float32], %w1: Tensor[(1536, 384), float32],
          %w2: Tensor[(384, 1536), float32]) {
  nn.dense(nn.relu(nn.dense(%x, %w1)), %w2)
}"""
