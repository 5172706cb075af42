"""What the AlterOpLayout tests share: AVX-512's blocks as a target, and a typed module of one
`@main` from its parameters and body in the text format."""

from tessel.graph import InferType, parse
from tessel.ir.target import Target

AVX512 = Target(kind="c", vector_bytes=64, vector_registers=32)


def main_module(params: str, body: str):
    """The typed module `def @main(params) { body }`."""
    return InferType()(parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n'))
