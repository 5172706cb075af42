"""PrimFuncs (`@T.prim_func def ...`) and IRModules (`@I.ir_module class Module`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tessel.ir.expr import GlobalVar, SizeVar, Var
from tessel.ir.module import IRModule
from tessel.script.printer.block import is_true, print_block_buffers
from tessel.script.printer.buffer import buffer_arguments, is_inline_param_buffer
from tessel.script.printer.context import Context
from tessel.script.printer.free_vars import free_names, walk
from tessel.script.printer.literals import dtype_annotation, quote
from tessel.script.printer.stmt import StmtPrinter, relaunched_threads
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc

TIR_HEADER = "# from tessel.script import tir as T"
IR_HEADER = "# from tessel.script import ir as I"


def print_prim_func(ctx: Context, func: PrimFunc, name: str | None = None) -> None:
    """Emit `@T.prim_func def name(...):` and the body; `name` defaults to global_symbol."""
    symbol = func.attrs.get("global_symbol")
    printer = StmtPrinter(ctx)
    with ctx.names.scope():
        name = ctx.names.define(func, name or symbol or "main")
        attrs = {k: v for k, v in func.attrs.items() if not (k == "global_symbol" and v == name)}
        if ctx.is_highlighted(func):
            ctx.lines.highlight_next_line()
        ctx.lines.emit("@T.prim_func" if symbol is not None else "@T.prim_func(private=True)")
        inline = inline_params(func)
        params = ", ".join(param_text(printer, func, p, p in inline) for p in func.params)
        returns = f" -> {dtype_annotation(func.ret_type)}" if func.ret_type is not None else ""
        ctx.lines.emit(f"def {name}({params}){returns}:")
        with ctx.lines.indented():
            if attrs:
                ctx.lines.emit(f"T.func_attr({printer.value(attrs)})")
            print_declarations(printer, func, inline)
            print_function_body(printer, func.body)


def inline_params(func: PrimFunc) -> set[Var]:
    """The parameters printed as `A: T.Buffer(...)`: a buffer of default layout whose data no
    other parameter's buffer shares, behind an untyped handle the body never names (as TVM
    decides; the short form has nowhere to say `data=` or the handle's type)."""
    data_owners = Counter(id(b.data) for b in func.buffer_map.values())
    used = {id(node) for node in walk(func.body) if isinstance(node, Var)}
    return {
        param
        for param, buffer in func.buffer_map.items()
        if is_inline_param_buffer(buffer)
        and data_owners[id(buffer.data)] == 1
        and id(param) not in used
        and param.type_annotation is None
    }


def param_text(printer: StmtPrinter, func: PrimFunc, param: Var, inline: bool) -> str:
    """`A: T.Buffer((128,), "float32")`, `a: T.handle`, `p: T.handle("float32", "global")` or
    `n: T.int32`."""
    ctx = printer.ctx
    buffer = func.buffer_map.get(param)
    if buffer is not None and inline:
        arguments = buffer_arguments(printer.expr, buffer)
        return f"{ctx.marked(buffer, ctx.define_buffer(buffer))}: T.Buffer({arguments})"
    annotation = handle_type(param) if param.dtype.is_handle else dtype_annotation(param.dtype)
    if buffer is not None and param.name == buffer.name:
        # `a: T.handle` + `A = T.match_buffer(a, ...)` rather than `A_1 = T.match_buffer(A, ...)`
        lower = buffer.name.lower()
        hint = lower if lower != buffer.name else f"{buffer.name}_handle"
        return f"{ctx.names.define(param, hint)}: {annotation}"
    return f"{ctx.define_var(param)}: {annotation}"


def print_declarations(printer: StmtPrinter, func: PrimFunc, inline: set[Var]) -> None:
    """`n = T.int32()` for free variables, `T.match_buffer` for non-inline parameter buffers,
    `X = T.Buffer(...)` for buffers used without a declaration (those over memory the body
    allocates come right after their allocation: see `StmtPrinter.declare_views`)."""
    ctx, free = printer.ctx, free_names(func)
    for var in free.variables:
        ctx.lines.emit(f"{ctx.define_var(var)} = {var_declaration(var)}")
    for var, tag in relaunched_threads(func.body):
        ctx.lines.emit(f"{ctx.define_var(var)} = T.env_thread({quote(tag)})")
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None or param in inline:
            continue
        arguments = buffer_arguments(printer.expr, buffer)
        if ctx.names.is_defined(buffer.data):  # shares another buffer's data (`data=A.data`)
            arguments += f", data={printer.expr.text(buffer.data)}"
        name = ctx.marked(buffer, ctx.define_buffer(buffer))
        ctx.lines.emit(f"{name} = T.match_buffer({ctx.var(param)}, {arguments})")
    for buffer in free.buffers:
        printer.declare_view(buffer)
    for data, views in free.views.items():
        ctx.views.setdefault(data, []).extend(views)


def handle_type(var: Var) -> str:
    """`T.handle`, or `T.handle("float32", "global")` for a typed pointer."""
    pointer = var.type_annotation
    if pointer is None:
        return "T.handle"
    return f"T.handle({quote(str(pointer.element_type))}, {quote(pointer.storage_scope)})"


def var_declaration(var: Var) -> str:
    """`T.int32()`, `T.int64(is_size_var=True)`, `T.handle("float32", "global")`."""
    if var.type_annotation is not None:
        return handle_type(var)
    if isinstance(var, SizeVar):
        return f"T.{var.dtype}(is_size_var=True)"
    return f"T.{var.dtype}()"


def elidable_root(body: Any) -> Block | None:
    """The implicit root block the parser adds (nothing but buffers and a body with blocks)."""
    if not isinstance(body, BlockRealize) or body.iter_values or not is_true(body.predicate):
        return None
    block = body.block
    bare = not (block.iter_vars or block.reads or block.writes or block.match_buffers)
    if not bare or block.init is not None or block.annotations or block.name_hint != "root":
        return None
    has_blocks = any(isinstance(n, BlockRealize) for n in walk(block.body))
    return block if has_blocks or block.alloc_buffers else None


def print_function_body(printer: StmtPrinter, body: Any) -> None:
    """The body, with the implicit root block shown only as a comment."""
    root = elidable_root(body)
    if root is None:
        printer.nested(body)
        return
    if printer.ctx.is_highlighted(body, root):
        printer.ctx.lines.highlight_next_line()
    printer.emit('# with T.block("root"):')
    print_block_buffers(printer, root)
    printer.nested(root.body)


def print_module(ctx: Context, module: IRModule) -> None:
    """`@I.ir_module class Module:` with each function, separated by blank lines."""
    ctx.lines.emit("@I.ir_module")
    ctx.lines.emit("class Module:")
    with ctx.lines.indented():
        if not module.attrs and not module.items():
            ctx.lines.emit("pass")  # a class needs a body to be Python
        if module.attrs:
            ctx.lines.emit(f"I.module_attrs({StmtPrinter(ctx).value(module.attrs)})")
        for index, (global_var, func) in enumerate(module.items()):
            if index > 0 or module.attrs:
                ctx.lines.blank()
            print_module_function(ctx, global_var, func)


def print_module_function(ctx: Context, global_var: GlobalVar, func: Any) -> None:
    """One function of a module, named by its GlobalVar."""
    if isinstance(func, PrimFunc):
        print_prim_func(ctx, func, global_var.name_hint)
    else:
        ctx.lines.emit(f"# {global_var.name_hint}: unprintable {type(func).__name__}")
