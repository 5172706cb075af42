"""The C API of an ahead-of-time compiled model, compiled into its library (model.so) with the
kernels and the entry `main`, and declared in the exported `model.h` (tessel.graph.export).

    tessel_model* m = tessel_model_create("params.safetensors");  // NULL: weights linked
    tessel_model_run(m, inputs, outputs);  // arrays of pointers, by index
    tessel_model_destroy(m);

The handle owns the weights: `tessel_model_create` reads them from params.safetensors (or the
raw params.bin) and checks each one's dtype, shape and size (c_api_loader.py). Inputs and
outputs keep the model's names (ONNX's), looked up with `tessel_model_input_index`; their
shapes and dtypes are in `tessel_model_input_info`. The outputs are the model's results in
order, whatever main's parameters are: a result that is an input, a weight or a repeat of an
earlier result is copied after main runs. Every name reaches the C text as an escaped literal
(`c_string_literal`) with its byte length, so names holding quotes, newlines or NUL are safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tessel.graph.aot import AotModule
from tessel.graph.c_api_loader import API_DECLARATIONS, TENSOR_INFO_TYPE
from tessel.graph.memory_plan import MemoryPlan
from tessel.support.abi import FunctionSignature
from tessel.support.dtype import DataType
from tessel.support.names import c_comment, c_string_literal

ALIGNMENT = 64  # bytes: where each weight starts in the handle's storage

# safetensors' dtype names (safetensors.numpy), for the loader's check.
_SAFETENSORS_DTYPES = {
    "bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16",
    "int32": "I32", "uint32": "U32", "int64": "I64", "uint64": "U64",
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
}  # fmt: skip


@dataclass(frozen=True)
class ApiTensor:
    """One tensor of the API's tables."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * DataType.of(self.dtype).itemsize


@dataclass(frozen=True)
class ApiModel:
    """What the C API of one model needs: its tensors, how main takes them, where each
    output comes from (`("main", k)`: main's k-th output parameter writes it; `("input", k)`,
    `("weight", k)`, `("output", k)`: copied from that one), and why the API cannot run it
    (empty when it can)."""

    inputs: tuple[ApiTensor, ...]
    weights: tuple[ApiTensor, ...]
    outputs: tuple[ApiTensor, ...]
    main_args: tuple[str, ...]  # C expressions, in main's parameter order
    sources: tuple[tuple[str, int], ...]
    linked: bool
    unsupported: str = ""


def api_model(aot: AotModule, plan: MemoryPlan, outputs: Sequence[ApiTensor]) -> ApiModel:
    """The API description of an AOT model whose flattened results are `outputs`."""
    inputs = tuple(ApiTensor(p.name, p.shape, p.dtype) for p in aot.of_kind("input"))
    # main's weights are the plan's constants in order, so weight k is constant k.
    weights = tuple(ApiTensor(p.name, p.shape, p.dtype) for p in aot.of_kind("weight"))
    first: dict[int, int] = {}  # slot -> the first result it is
    sources = []
    for k, slot in enumerate(plan.outputs):
        sources.append(_source(plan, slot, first, aot.linked))
        first.setdefault(slot, k)
    main_args = [f"(void*)inputs[{p.index}]" for p in aot.of_kind("input")]
    if aot.weight_table:  # main takes the weights as one table: the handle's, in order
        main_args.append("model->weights")
    main_args += [f"outputs[{first[p.slot]}]" for p in aot.of_kind("output")]
    unsupported = ""
    if any(not p.place.is_host for p in aot.of_kind("weight")):
        unsupported = "the model reads weights on a second device, which the C API does not upload"
    if any(kind == "linked" for kind, _ in sources):
        unsupported = "a result of the model is a weight linked into model.so"
    return ApiModel(
        inputs, weights, tuple(outputs), tuple(main_args), tuple(sources), aot.linked, unsupported
    )


def _source(plan: MemoryPlan, slot: int, first: dict[int, int], linked: bool) -> tuple[str, int]:
    tensor = plan.tensors[slot]
    if slot in first:
        return ("output", first[slot])
    if tensor.kind == "output":
        return ("main", -1)
    if tensor.kind == "input":
        return ("input", plan.inputs.index(slot))
    return ("linked" if linked else "weight", tensor.index)


def c_api_source(model: ApiModel, entry: FunctionSignature) -> str:
    """The C text of the API of `model`, whose compiled entry is `entry` (appended to the
    module's C, after the prelude and main)."""
    if entry.size_args or entry.constants:
        model = replace(model, unsupported="the model's kernels read module constants")
    weights = model.weights
    offsets, total = [], 0
    for w in weights:
        offsets.append(total)
        total += -(-w.nbytes // ALIGNMENT) * ALIGNMENT
    parts = [
        "\n/* ---- The model's C API (tessel/graph/c_api.py) ---- */",
        TENSOR_INFO_TYPE,
        API_DECLARATIONS,
        f"#define TESSEL_API_NUM_INPUTS {len(model.inputs)}",
        f"#define TESSEL_API_NUM_WEIGHTS {len(weights)}",
        f"#define TESSEL_API_NUM_OUTPUTS {len(model.outputs)}",
        *_table("tessel_api_inputs", model.inputs),
        *_table("tessel_api_weights", weights),
        *_table("tessel_api_outputs", model.outputs),
        _array(
            "static const char* const tessel_api_weight_st_dtypes",
            [c_string_literal(_SAFETENSORS_DTYPES.get(w.dtype, w.dtype)) for w in weights],
        ),
        _array("static const size_t tessel_api_weight_offsets", [str(o) for o in offsets]),
        "static const tessel_api_weight_table tessel_api_weight_table_of_model = {",
        "  TESSEL_API_NUM_WEIGHTS, tessel_api_weights, tessel_api_weight_st_dtypes,",
        f"  tessel_api_weight_offsets, {total}}};",
        f"static const int tessel_api_linked = {int(model.linked)};",
        f"static const char tessel_api_unsupported[] = {c_string_literal(model.unsupported)};",
        _ENTRY_POINTS,
        _run_function(model, entry.c_symbol),
    ]
    return "\n".join(parts)


def _array(declaration: str, items: list[str]) -> str:
    """A C array of `items` and one more zero (C has no empty arrays)."""
    return f"{declaration}[{len(items) + 1}] = {{{', '.join([*items, '0'])}}};"


def _table(symbol: str, tensors: Sequence[ApiTensor]) -> list[str]:
    lines, rows = [], []
    for k, t in enumerate(tensors):
        lines.append(_array(f"static const int64_t {symbol}_shape_{k}", [str(n) for n in t.shape]))
        name = t.name.encode("utf-8", "surrogatepass")
        rows.append(
            f"  {{{c_string_literal(t.name)}, {len(name)}, {c_string_literal(t.dtype)}, "
            f"{len(t.shape)}, {symbol}_shape_{k}, {t.nbytes}}},"
        )
    return [
        *lines,
        f"static const tessel_model_tensor_info {symbol}[] = {{",
        *rows,
        "  {0, 0, 0, 0, 0, 0},",
        "};",
    ]


def _run_function(model: ApiModel, c_symbol: str) -> str:
    """`tessel_model_run`: check the pointers, call main, copy the results it does not write."""
    call = f"{c_symbol}({', '.join(model.main_args)})"
    if model.unsupported:  # tessel_model_create refuses, so no handle reaches this
        call = '(tessel_api_error("this model has no C API: %s", tessel_api_unsupported), -1)'
    copies = []
    for k, (kind, index) in enumerate(model.sources):
        if kind in ("input", "output", "weight"):
            source = f"model->weights[{index}]" if kind == "weight" else f"{kind}s[{index}]"
            nbytes = model.outputs[k].nbytes
            note = c_comment(f"{model.outputs[k].name} is {kind} {index}")
            copies.append(f"  memcpy(outputs[{k}], {source}, {nbytes});  /* {note} */")
    return "\n".join(
        [
            "TESSEL_EXPORT int tessel_model_run(tessel_model* model, const void* const inputs[],",
            "                                   void* const outputs[]) {",
            "  if (!tessel_api_check(model, inputs, outputs)) return -1;",
            f"  int32_t status = {call};",
            "  if (status != 0) return status;",
            *copies,
            "  return 0;",
            "}",
            "",
        ]
    )


_ENTRY_POINTS = r"""
typedef struct tessel_model tessel_model;
struct tessel_model {
  unsigned char* storage;                     /* the weights, each 64-byte aligned */
  void* weights[TESSEL_API_NUM_WEIGHTS + 1];  /* where each one starts: main's weight table */
};

TESSEL_EXPORT const char* tessel_model_last_error(void) { return tessel_error_message; }
TESSEL_EXPORT int tessel_model_num_inputs(void) { return TESSEL_API_NUM_INPUTS; }
TESSEL_EXPORT int tessel_model_num_outputs(void) { return TESSEL_API_NUM_OUTPUTS; }
TESSEL_EXPORT int tessel_model_num_weights(void) { return TESSEL_API_NUM_WEIGHTS; }

TESSEL_EXPORT const tessel_model_tensor_info* tessel_model_input_info(int index) {
  return index >= 0 && index < TESSEL_API_NUM_INPUTS ? &tessel_api_inputs[index] : NULL;
}
TESSEL_EXPORT const tessel_model_tensor_info* tessel_model_output_info(int index) {
  return index >= 0 && index < TESSEL_API_NUM_OUTPUTS ? &tessel_api_outputs[index] : NULL;
}
TESSEL_EXPORT const tessel_model_tensor_info* tessel_model_weight_info(int index) {
  return index >= 0 && index < TESSEL_API_NUM_WEIGHTS ? &tessel_api_weights[index] : NULL;
}
TESSEL_EXPORT int tessel_model_input_index(const char* name) {
  return tessel_api_find(tessel_api_inputs, TESSEL_API_NUM_INPUTS, name);
}
TESSEL_EXPORT int tessel_model_output_index(const char* name) {
  return tessel_api_find(tessel_api_outputs, TESSEL_API_NUM_OUTPUTS, name);
}

TESSEL_EXPORT tessel_model* tessel_model_create(const char* params_path) {
  if (tessel_api_unsupported[0] != 0) {
    tessel_api_error("this model has no C API: %s", tessel_api_unsupported);
    return NULL;
  }
  if (tessel_api_linked && params_path != NULL) {
    tessel_api_error("the weights are linked into model.so: pass NULL, not a params file");
    return NULL;
  }
  if (!tessel_api_linked && TESSEL_API_NUM_WEIGHTS > 0 && params_path == NULL) {
    tessel_api_error("the model needs its weights: pass the path of params.safetensors");
    return NULL;
  }
  tessel_model* model = calloc(1, sizeof(tessel_model));
  if (model == NULL) {
    tessel_api_error("out of memory");
    return NULL;
  }
  if (params_path == NULL) return model;
  model->storage = tessel_api_load_weights(params_path, &tessel_api_weight_table_of_model);
  if (model->storage == NULL) {
    free(model);
    return NULL;
  }
  for (int w = 0; w < TESSEL_API_NUM_WEIGHTS; ++w)
    model->weights[w] = model->storage + tessel_api_weight_offsets[w];
  return model;
}

TESSEL_EXPORT void tessel_model_destroy(tessel_model* model) {
  if (model == NULL) return;
  free(model->storage);
  free(model);
}

static int tessel_api_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

/* Every pointer given; no output overlapping another array (main's are `restrict`). */
static int tessel_api_check(const tessel_model* model, const void* const inputs[],
                            void* const outputs[]) {
  if (model == NULL || (TESSEL_API_NUM_INPUTS > 0 && inputs == NULL) ||
      (TESSEL_API_NUM_OUTPUTS > 0 && outputs == NULL)) {
    tessel_api_error("tessel_model_run: the model, inputs or outputs is NULL");
    return 0;
  }
  for (int i = 0; i < TESSEL_API_NUM_INPUTS; ++i) {
    if (inputs[i] == NULL && tessel_api_inputs[i].nbytes > 0) {
      tessel_api_error("input %d (`%.200s`) is NULL", i, tessel_api_inputs[i].name);
      return 0;
    }
  }
  for (int o = 0; o < TESSEL_API_NUM_OUTPUTS; ++o) {
    size_t size = tessel_api_outputs[o].nbytes;
    if (outputs[o] == NULL && size > 0) {
      tessel_api_error("output %d (`%.200s`) is NULL", o, tessel_api_outputs[o].name);
      return 0;
    }
    int clash = 0;
    for (int i = 0; i < TESSEL_API_NUM_INPUTS; ++i)
      clash |= tessel_api_overlap(outputs[o], size, inputs[i], tessel_api_inputs[i].nbytes);
    for (int p = 0; p < o; ++p)
      clash |= tessel_api_overlap(outputs[o], size, outputs[p], tessel_api_outputs[p].nbytes);
    if (clash) {
      tessel_api_error("output %d (`%.200s`) overlaps another array", o,
                       tessel_api_outputs[o].name);
      return 0;
    }
  }
  return 1;
}
"""

__all__ = ["TENSOR_INFO_TYPE", "ApiModel", "ApiTensor", "api_model", "c_api_source"]
