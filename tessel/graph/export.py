"""Exporting an ahead-of-time compiled model for use without Python (`CompiledModel.export`).

The directory holds `model.so` (the library: kernels, the entry `main` and the model's C API,
tessel.graph.c_api), `model.h` (the C API declared, then the raw entry `main` and a table of
the tensors it takes), `params.safetensors` (the weights by name) and `params.bin` (the same
weights, raw and concatenated in table order; offsets in the header's table). A C program calls
`tessel_model_create("params.safetensors")`, then `tessel_model_run(model, inputs, outputs)`
with arrays of pointers indexed as the model's inputs and outputs (`tessel_model_input_index`
finds one by name). A model compiled with `Target(link_params=True)` carries its weights in
`model.so` (a binary blob, never C text): the directory then holds only `model.so` and
`model.h`, and `tessel_model_create(NULL)` makes its handle. Every name reaches the header as an
escaped string literal or comment (tessel.support.names), never as raw text.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from safetensors.numpy import save_file

from tessel.codegen.c_types import c_type
from tessel.graph.aot import AotModule, AotParam
from tessel.graph.c_api import TENSOR_INFO_TYPE
from tessel.runtime.exported import HEADER, LIBRARY, RAW_PARAMS, SAFETENSORS
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.support.names import c_identifier, c_string_literal, unique_name

if TYPE_CHECKING:
    from tessel.graph.executor import CompiledModel


def export_model(model: CompiledModel, directory: str | Path) -> Path:
    """Write the library, header and weights of an AOT-compiled `model` into `directory`."""
    if model.aot is None:
        raise UserError(
            'only a model compiled with executor="aot" can be exported',
            rule="export.executor",
            hint='compile it with executor="aot"',
        )
    devices = sorted({str(p.device) for p in model.plan.places()})
    if len(devices) > 1:
        raise UserError(
            f"the model runs on {devices}; export writes a host-only library, and uploading "
            "weights to a second device from C is not written yet",
            rule="export.devices",
            hint="export a model compiled without device annotations",
        )
    strings = [t.type_text for t in model.plan.tensors if t.dtype == "string"]
    if strings:
        raise UserError(
            f"the model holds string tensors ({strings[0]}, ...); the exported C API takes "
            "numeric arrays only, and its header does not describe string records",
            rule="export.strings",
            hint="run the model from Python (CompiledModel), which converts strings",
        )
    signature = model.library["main"].signature
    if signature.constants:
        raise UserError(
            "the model's kernels read module constants, which export does not write yet",
            rule="export.module-constants",
        )
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model.library.library_path, out / LIBRARY)
    if not model.aot.linked:
        _write_params(model, out)
    names = _argument_names(model)
    (out / HEADER).write_text(
        header_text(model.aot, signature.c_symbol, model.plan.peak_bytes, names)
    )
    return out


def _argument_names(model: CompiledModel) -> list[str]:
    """The names of the tensors main takes, for the header's table: an output is named after
    the first of the model's results it is (ONNX's output name)."""
    assert model.aot is not None
    first = {}
    for spec, slot in zip(model.outputs, model.plan.outputs, strict=True):
        first.setdefault(slot, spec.name)
    return [first.get(p.slot, p.name) if p.kind == "output" else p.name for p in model.aot.params]


def _write_params(model: CompiledModel, out: Path) -> None:
    """The weights by name (safetensors) and raw in main's weight-table order (params.bin)."""
    assert model.aot is not None
    weights = model.aot.of_kind("weight")
    arrays = [np.ascontiguousarray(model.weights[p.index]) for p in weights]
    save_file({p.name: a for p, a in zip(weights, arrays, strict=True)}, str(out / SAFETENSORS))
    with open(out / RAW_PARAMS, "wb") as raw:
        for array in arrays:
            raw.write(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())


def header_text(
    aot: AotModule, c_symbol: str, arena_bytes: int, names: Sequence[str] | None = None
) -> str:
    """The C header of an exported model whose library entry `main` is `c_symbol`; `names`
    names the rows of the tensor table (default: the tensors' names)."""
    params = aot.params
    max_ndim = max([len(p.shape) for p in params] + [1])
    lines = [
        _PREAMBLE.replace("@ARENA@", str(arena_bytes)),
        TENSOR_INFO_TYPE,
        _API_DECLARATIONS,
        f"#define TESSEL_MODEL_NUM_INPUTS {sum(p.kind == 'input' for p in params)}",
        f"#define TESSEL_MODEL_NUM_WEIGHTS {sum(p.kind == 'weight' for p in params)}",
        f"#define TESSEL_MODEL_NUM_OUTPUTS {sum(p.kind == 'output' for p in params)}",
        f"#define TESSEL_MODEL_NUM_TENSORS {len(params)}",
        f"#define TESSEL_MODEL_NUM_ARGS {len(aot.entry_names())}",
        f"#define TESSEL_MODEL_MAX_NDIM {max_ndim}",
        f"#define TESSEL_MODEL_ARENA_BYTES {arena_bytes}",
        "",
        _TABLE_TYPE,
        "static const tessel_model_tensor_t tessel_model_tensors[TESSEL_MODEL_NUM_TENSORS]"
        " __attribute__((unused)) = {",
        *_table_rows(params, max_ndim, names or [p.name for p in params]),
        "};",
        "",
        "/* The raw entry `main`, as compiled (TESSEL_MODEL_NUM_ARGS arguments): the inputs, the",
        "   weights as one array of pointers in the order of their rows in `tessel_model_tensors`",
        "   (none when the model has no weight parameters), then the outputs (non-const pointers,",
        "   parameter names sanitised). */",
        f"int32_t {c_symbol}({_entry_parameters(aot, c_symbol)});",
        "",
        "/* The message of the last failed call in this thread (as tessel_model_last_error). */",
        "const char* tessel_get_last_error(void);",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "#endif /* TESSEL_MODEL_H */",
        "",
    ]
    return "\n".join(lines)


def _entry_parameters(aot: AotModule, c_symbol: str) -> str:
    """main's C parameters: a typed pointer per input and output, `void**` for the weights."""
    taken = {c_symbol}
    types = {p.name: f"{c_type(DataType.of(p.dtype))}*" for p in aot.params}
    types[aot.weight_table] = "void**"  # the table's name is no tensor's (tessel.graph.aot)
    entry = [f"{types[n]} {unique_name(c_identifier(n), taken)}" for n in aot.entry_names()]
    return ", ".join(entry) or "void"


def _table_rows(params: tuple[AotParam, ...], max_ndim: int, names: Sequence[str]) -> list[str]:
    rows, offset = [], 0
    for p, name in zip(params, names, strict=True):
        nbytes = int(np.prod(p.shape, dtype=np.int64)) * DataType.of(p.dtype).itemsize
        shape = ", ".join(str(n) for n in (*p.shape, *[0] * (max_ndim - len(p.shape))))
        file_offset = offset if p.kind == "weight" else -1
        offset += nbytes if p.kind == "weight" else 0
        length = len(name.encode("utf-8", "surrogatepass"))
        rows.append(
            f"  {{{c_string_literal(name)}, {c_string_literal(p.kind)}, "
            f"{c_string_literal(p.dtype)}, {len(p.shape)}, {{{shape}}}, {nbytes}, "
            f"{file_offset}, {length}}},"
        )
    return rows


_PREAMBLE = """\
/* model.h: a Tessel model compiled ahead of time (CompiledModel.export). Generated; do not edit.

   The C API (in model.so):

     tessel_model* model = tessel_model_create("<dir>/params.safetensors");  (NULL: link_params)
     if (model == NULL) fprintf(stderr, "%s\\n", tessel_model_last_error());
     const void* inputs[] = {x};            // tessel_model_num_inputs() pointers, by index
     void* outputs[] = {y};                 // tessel_model_num_outputs() pointers, by index
     int status = tessel_model_run(model, inputs, outputs);   // 0, or see last_error
     tessel_model_destroy(model);

   Each input and output points to a dense, C-contiguous (row-major) array of the dtype, shape
   and size its tessel_model_input_info / tessel_model_output_info gives; the outputs are
   written, must not overlap each other or the inputs, and are the model's results in order.
   tessel_model_input_index("name") finds an input by its (ONNX) name, -1 if none.
   tessel_model_create reads the weights from params.safetensors (or the raw params.bin, for a
   path ending in ".bin"), checks each weight's dtype, shape and size, and returns NULL with
   the reason in tessel_model_last_error() when anything is wrong; the handle owns them until
   tessel_model_destroy. Each run allocates its intermediate arena (@ARENA@ bytes) from the
   workspace allocator (aligned_alloc, unless the host sets tessel_set_workspace_allocator) and
   frees it on return, so runs from several threads at once, on one handle, are safe.

   Below the API: the raw entry `main` of the library, taking each input and output as a
   pointer and the weights as one array of pointers, and a table of those tensors (weights at
   `params_offset` of params.bin).

   Build: cc -O2 program.c -I<dir> <dir>/model.so -Wl,-rpath,<dir>
   (model.so was compiled with -march=native: run it on a machine of the same kind). */
#ifndef TESSEL_MODEL_H
#define TESSEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
"""

_API_DECLARATIONS = """\
/* The model; it owns its weights. */
typedef struct tessel_model tessel_model;

tessel_model* tessel_model_create(const char* params_path);
void tessel_model_destroy(tessel_model* model);
int tessel_model_run(tessel_model* model, const void* const inputs[], void* const outputs[]);
const char* tessel_model_last_error(void);

int tessel_model_num_inputs(void);
int tessel_model_num_outputs(void);
int tessel_model_num_weights(void);
int tessel_model_input_index(const char* name);   /* -1: no input has that name */
int tessel_model_output_index(const char* name);  /* -1: no output has that name */
const tessel_model_tensor_info* tessel_model_input_info(int index);   /* NULL: out of range */
const tessel_model_tensor_info* tessel_model_output_info(int index);
const tessel_model_tensor_info* tessel_model_weight_info(int index);
"""

_TABLE_TYPE = """\
/* One tensor the raw entry takes (an input, a weight or an output). */
typedef struct {
  const char* name;          /* escaped in this file; cut at a NUL byte (see name_length) */
  const char* kind;          /* "input", "weight" or "output" */
  const char* dtype;         /* "float32", "int64", ... */
  int32_t ndim;
  int64_t shape[TESSEL_MODEL_MAX_NDIM];  /* the first `ndim` entries */
  int64_t nbytes;
  int64_t params_offset;     /* byte offset in params.bin; -1 unless a weight */
  int64_t name_length;       /* bytes of the UTF-8 name */
} tessel_model_tensor_t;
"""


__all__ = ["HEADER", "LIBRARY", "RAW_PARAMS", "SAFETENSORS", "export_model", "header_text"]
