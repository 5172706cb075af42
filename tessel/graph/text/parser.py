"""The graph text parser: Relay's text format (the subset of docs/architecture.md §8) to graph IR.

A module is `#[version = "0.0.5"]`, then `def @name(params) -> type { body }`s, then an
optional `#[metadata]` section. A body is a sequence of `let %x = e;` (a Let node), `%N = e;`
(a name for a shared subexpression: the DAG is rebuilt, no Let), `e;` (a Let of `%_`), and a
final expression. Every `{ }` or `( )` block is a scope for the names bound inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.text import metadata
from tessel.graph.text.cursor import KEYWORDS, Cursor, Scopes, describe, joined
from tessel.graph.text.lexer import Token, tokenize
from tessel.graph.text.literals import LiteralError, number_constant
from tessel.graph.text.parse_attrs import at_attribute, parse_attribute, parse_string
from tessel.graph.text.parse_types import parse_type
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.frozen_map import FrozenMap
from tessel.support.span import Span

SUPPORTED_VERSION = "0.0.5"


class Parser:
    """One parse of one text; `module()` or `expression()` is called once."""

    def __init__(
        self,
        source: str,
        file: str,
        init_meta_table: Mapping[str, Sequence[Any]] | None,
        init_module: IRModule | None,
    ) -> None:
        self.cur = Cursor(tokenize(source, file), source)
        self.scopes = Scopes()
        self.meta = self._meta_table(init_meta_table)
        self.meta_values: dict[tuple[str, int], Any] = {}
        self.functions: dict[GlobalVar, Any] = dict(init_module.functions) if init_module else {}
        self.globals = {gv.name_hint: gv for gv in self.functions}
        self.global_uses: dict[str, Token] = {}
        self.def_tokens: dict[str, Token] = {}
        self.free_vars_allowed = False
        self.device_token: Token | None = None  # the `virtual_device` of the function being read

    # -- the two entry points ---------------------------------------------------------------

    def module(self) -> IRModule:
        self._header()
        while self.cur.at_keyword("def"):
            self._definition()
        self._expect_end("a `def @name(...) { ... }`")
        for name, token in self.global_uses.items():
            if self.globals[name] not in self.functions:
                raise self.cur.error(token, f"unknown function `@{name}`", hint=self._known_defs())
        return IRModule(FrozenMap(self.functions))

    def expression(self) -> Expr:
        self._header()
        if self.cur.at_keyword("def"):
            raise self.cur.error(
                self.cur.peek(), "expected an expression, found a `def`", hint="use parse()"
            )
        self.free_vars_allowed = True
        expr = self._body()
        self._expect_end("the end of the expression")
        return expr

    def _expect_end(self, what: str) -> None:
        if self.cur.at("EOF") or self.cur.at("METADATA"):
            return
        if self.cur.at_keyword("type"):
            raise self.cur.error(self.cur.peek(), "type definitions (ADTs) are not supported")
        raise self.cur.error(self.cur.peek(), f"expected {what}, found {describe(self.cur.peek())}")

    def _known_defs(self) -> str:
        names = ", ".join(f"@{gv.name_hint}" for gv in self.functions) or "none"
        return f"the module defines: {names}"

    # -- module level -----------------------------------------------------------------------

    def _header(self) -> None:
        if not self.cur.accept("#["):
            return
        self.cur.expect_keyword("version", '`version` in the header `#[version = "0.0.5"]`')
        self.cur.expect("=", "`=` in the header")
        token = self.cur.expect("STRING", 'the version string "0.0.5"')
        if parse_string(self.cur, token) != SUPPORTED_VERSION:
            raise self.cur.error(
                token, f'unsupported version {token.text}; expected "{SUPPORTED_VERSION}"'
            )
        self.cur.expect("]", "`]` closing the header")

    def _definition(self) -> None:
        self.cur.next()  # `def`
        name_token = self.cur.expect("GLOBAL", "the function name `@name` after `def`")
        name = name_token.text[1:]
        if name in self.def_tokens:
            first = self.def_tokens[name].span.line
            raise self.cur.error(name_token, f"`@{name}` is defined twice (first at line {first})")
        self.def_tokens[name] = name_token
        func = self._function_rest(name_token, f"the body of `@{name}`")
        self.functions[self._global(name_token, use=False)] = func

    def _global(self, token: Token, use: bool = True) -> GlobalVar:
        name = token.text[1:]
        if name not in self.globals:
            self.globals[name] = GlobalVar(name, span=token.span)
        if use:
            self.global_uses.setdefault(name, token)
        return self.globals[name]

    # -- functions --------------------------------------------------------------------------

    def _function_rest(self, first: Token, what: str) -> Function:
        """`(params, attrs) -> ret { body }` after `fn` or `def @name`."""
        self.scopes.push()
        self.cur.expect("(", "`(` opening the parameter list")
        params, attrs = self._params()
        device = self._function_device(attrs)
        ret_type = parse_type(self.cur) if self.cur.accept("->") else None
        body = self._braced(what)
        self.scopes.pop()
        span = joined(first.span, self.cur.previous().span)
        return Function(
            tuple(params), body, ret_type, FrozenMap(attrs), virtual_device=device, span=span
        )

    def _function_device(self, attrs: dict[str, Any]) -> VirtualDevice | None:
        """The `virtual_device=` attribute, which Relay keeps as the function's own field."""
        if "virtual_device" not in attrs:
            return None
        device = attrs.pop("virtual_device")
        token, self.device_token = self.device_token, None
        if not isinstance(device, VirtualDevice):
            raise self.cur.error(
                token,
                f"a function's `virtual_device=` must be `meta[VirtualDevice][i]`, not {device!r}",
            )
        return device

    def _params(self) -> tuple[list[Var], dict[str, Any]]:
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        while not self.cur.accept(")"):
            if params or attrs:
                self.cur.expect(",", "`,` or `)` in the parameter list")
            if at_attribute(self.cur):
                if self.cur.at("IDENT", "virtual_device"):
                    self.device_token = self.cur.peek()
                parse_attribute(self.cur, attrs, self._meta_attr)
            elif self.cur.at("LOCAL") and not attrs:
                params.append(self._param())
            else:
                expected = (
                    "an attribute `name=value`" if attrs else "a parameter `%name` or an attribute"
                )
                raise self.cur.error(
                    self.cur.peek(), f"expected {expected}, found {describe(self.cur.peek())}"
                )
        return params, attrs

    def _param(self) -> Var:
        token = self.cur.next()
        if self.scopes.defined_here(token.text):
            raise self.cur.error(token, f"the parameter `{token.text}` appears twice")
        var = self._new_var(token)
        self.scopes.define(token.text, var)
        return var

    def _new_var(self, token: Token) -> Var:
        device = self._var_device(token) if self.cur.at("{") else None
        annotation = parse_type(self.cur) if self.cur.accept(":") else None
        return Var(token.text[1:], annotation, virtual_device=device, span=token.span)

    def _var_device(self, var: Token) -> VirtualDevice:
        """`{virtual_device=meta[VirtualDevice][i]}` after a variable's name."""
        # Relay's "fake attributes" of a variable: they hold its device and nothing else.
        opening = self.cur.next()
        what = f"`virtual_device=meta[VirtualDevice][i]` in the braces after `{var.text}`"
        key = self.cur.expect("IDENT", what)
        if key.text != "virtual_device":
            hint = "a variable's braces hold only its virtual device"
            raise self.cur.error(key, f"expected {what}, found {describe(key)}", hint)
        self.cur.expect("=", f"`=` after `virtual_device` (as in {what})")
        if not self.cur.at_keyword("meta"):
            found = self.cur.peek()
            raise self.cur.error(found, f"expected {what}, found {describe(found)}")
        value = self._meta_attr()
        self.cur.expect("}", f"`}}` closing the `{{` at line {opening.span.line}")
        return value

    def _braced(self, what: str) -> Expr:
        opening = self.cur.expect("{", f"`{{` opening {what}")
        self.scopes.push()
        body = self._body()
        self.scopes.pop()
        self.cur.expect("}", f"`}}` closing {what} (opened at line {opening.span.line})")
        return body

    # -- bodies: let, graph bindings, sequences ---------------------------------------------

    def _body(self) -> Expr:
        lets: list[tuple[Var, Expr, Span]] = []
        while True:
            start = self.cur.peek()
            if self.cur.at_keyword("let"):
                lets.append(self._let())
            elif self.cur.at_keyword("free_var"):
                self._free_var()
            elif self.cur.at("LOCAL") and self.cur.at("=", ahead=1):
                self._graph_binding()
            else:
                expr = self._expr()
                if not self.cur.accept(";"):
                    break
                lets.append((Var("_", span=start.span), expr, start.span))
        for var, value, span in reversed(lets):
            expr = Let(var, value, expr, span=span)
        return expr

    def _let(self) -> tuple[Var, Expr, Span]:
        first = self.cur.next()
        token = self.cur.expect("LOCAL", "a variable `%name` after `let`")
        var = self._new_var(token)
        self.cur.expect("=", f"`=` after `let {token.text}`")
        value = self._expr()
        self.cur.expect(";", f"`;` ending `let {token.text} = ...`")
        self.scopes.define(token.text, var)
        return var, value, first.span

    def _free_var(self) -> None:
        first = self.cur.next()
        if not self.free_vars_allowed or len(self.scopes.stack) > 1:
            raise self.cur.error(first, "`free_var` may only start a bare expression (parse_expr)")
        token = self.cur.expect("LOCAL", "a variable `%name` after `free_var`")
        self.scopes.define(token.text, self._new_var(token))
        self.cur.expect(";", f"`;` ending `free_var {token.text}`")

    def _graph_binding(self) -> None:
        token = self.cur.next()
        if not token.text[1:].isdigit():
            raise self.cur.error(
                token,
                f"`{token.text} = ...` names a value; only numbered names (`%0 = ...`) do that",
                hint=f"bind a variable with `let {token.text} = ...;`",
            )
        if self.scopes.defined_here(token.text):
            raise self.cur.error(token, f"`{token.text}` is already bound in this block")
        self.cur.next()  # `=`
        value = self._expr()
        self.cur.expect(";", f"`;` ending the binding of `{token.text}`")
        self.scopes.define(token.text, value)

    # -- expressions ------------------------------------------------------------------------

    def _expr(self) -> Expr:
        first = self.cur.peek()
        expr = self._primary()
        while self.cur.at("(") or self.cur.at("."):
            if self.cur.accept("("):
                args, attrs = self._call_arguments()
                span = joined(first.span, self.cur.previous().span)
                expr = Call(expr, tuple(args), FrozenMap(attrs), span=span)
            else:
                self.cur.next()
                index = self.cur.expect("NUMBER", "a field number after `.` (as in `%t.0`)")
                expr = TupleGetItem(expr, int(index.text), span=joined(first.span, index.span))
        if isinstance(expr, Op):
            raise self.cur.error(
                first, f"the operator `{expr.name}` must be called: `{expr.name}(...)`"
            )
        return expr

    def _call_arguments(self) -> tuple[list[Expr], dict[str, Any]]:
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        while not self.cur.accept(")"):
            if args or attrs:
                self.cur.expect(",", "`,` or `)` in the call")
            if at_attribute(self.cur):
                parse_attribute(self.cur, attrs, self._meta_attr)
            elif attrs:
                raise self.cur.error(
                    self.cur.peek(), "arguments come before the attributes `name=value`"
                )
            else:
                args.append(self._expr())
        return args, attrs

    def _primary(self) -> Any:
        token = self.cur.peek()
        kind = token.kind
        if kind == "LOCAL":
            return self._local(self.cur.next())
        if kind == "GLOBAL":
            return self._global(self.cur.next())
        if kind == "NUMBER":
            return self._number(self.cur.next())
        if kind == "(":
            return self._parenthesized()
        if kind == "IDENT":
            return self._word(token)
        raise self.cur.error(
            self.cur.missing_at(), f"expected an expression, found {describe(token)}"
        )

    def _local(self, token: Token) -> Expr:
        value = self.scopes.lookup(token.text)
        if value is not None:
            return value
        if token.text[1:].isdigit():
            message = (
                f"`{token.text}` is not bound: no `{token.text} = ...;` before this use in scope"
            )
        else:
            message = f"unknown variable `{token.text}`"
        raise self.cur.error(
            token, message, hint="variables are parameters, `let` bindings or free_vars"
        )

    def _number(self, token: Token) -> Constant:
        try:
            constant = number_constant(token.text)
        except LiteralError as err:
            raise self.cur.error(token, str(err)) from err
        return Constant(constant.data, span=token.span)

    def _word(self, token: Token) -> Any:
        word = token.text
        handlers = {"fn": self._fn, "if": self._if, "meta": self._meta_reference}
        if word in handlers:
            return handlers[word]()
        if word in ("True", "False"):
            self.cur.next()
            return Constant(word == "True", span=token.span)
        if word == "let":
            raise self.cur.error(
                token, "a `let` inside an expression needs parentheses: `(let %x = ...; %x)`"
            )
        if word in KEYWORDS:
            raise self.cur.error(token, f"expected an expression, found the keyword `{word}`")
        self.cur.next()
        return Op(word, span=token.span)

    def _parenthesized(self) -> Expr:
        opening = self.cur.next()
        if self.cur.accept(")"):
            return Tuple((), span=joined(opening.span, self.cur.previous().span))
        if self.cur.at_keyword("let") or (self.cur.at("LOCAL") and self.cur.at("=", ahead=1)):
            self.scopes.push()
            body = self._body()
            self.scopes.pop()
            self.cur.expect(")", f"`)` closing the `(` at line {opening.span.line}")
            return body
        first = self._expr()
        if self.cur.accept(")"):
            return first
        fields = [first]
        while self.cur.accept(",") and not self.cur.at(")"):
            fields.append(self._expr())
        self.cur.expect(")", f"`,` or `)` closing the tuple opened at line {opening.span.line}")
        return Tuple(tuple(fields), span=joined(opening.span, self.cur.previous().span))

    def _fn(self) -> Function:
        first = self.cur.next()
        return self._function_rest(first, "the function body")

    def _if(self) -> If:
        first = self.cur.next()
        self.cur.expect("(", "`(` and a condition after `if`")
        cond = self._expr()
        self.cur.expect(")", "`)` closing the condition of `if`")
        then = self._braced("the `if` branch")
        self.cur.expect_keyword("else", "`else`: an `if` needs both branches")
        otherwise = self._braced("the `else` branch")
        return If(cond, then, otherwise, span=joined(first.span, self.cur.previous().span))

    # -- the metadata table -----------------------------------------------------------------

    def _meta_table(self, init: Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
        table: dict[str, list[Any]] = {}
        if init is not None:
            try:
                table.update(metadata.read_table(init))
            except metadata.MetadataError as err:
                raise ValueError(f"init_meta_table: {err.message}") from err
        section = self.cur.tokens[-2] if len(self.cur.tokens) > 1 else None
        if section is not None and section.kind == "METADATA":
            table.update(self._read_section(section))
        return table

    def _read_section(self, section: Token) -> dict[str, list[Any]]:
        try:
            return metadata.parse_json(section.text)
        except metadata.MetadataError as err:
            raise self.cur.error(_metadata_span(section, err), err.message) from err

    def _meta_reference(self) -> Constant:
        """`meta[relay.Constant][i]` as an expression."""
        kind, value = self._meta_entry()
        if kind.text != metadata.CONSTANT_KIND:
            raise self.cur.error(
                kind,
                f"`meta[{kind.text}][...]` is not an expression: a VirtualDevice is the value of "
                "an attribute such as `virtual_device=`",
            )
        return value

    def _meta_attr(self) -> VirtualDevice:
        """`meta[VirtualDevice][i]` as an attribute value."""
        kind, value = self._meta_entry()
        if kind.text != metadata.DEVICE_KIND:
            raise self.cur.error(
                kind,
                f"`meta[{kind.text}][...]` is not an attribute value; only "
                f"`meta[{metadata.DEVICE_KIND}][i]` is",
            )
        return value

    def _meta_entry(self) -> tuple[Token, Any]:
        """`meta[kind][i]`: the kind's token and the entry."""
        first = self.cur.next()
        self.cur.expect("[", "`[` after `meta` (as in `meta[relay.Constant][0]`)")
        kind = self.cur.expect("IDENT", "a metadata kind such as `relay.Constant`")
        self.cur.expect("]", "`]` after the metadata kind")
        self.cur.expect("[", "`[` and an index (as in `meta[relay.Constant][0]`)")
        index_token = self.cur.expect("NUMBER", "the index of the metadata entry")
        last = self.cur.expect("]", "`]` after the metadata index")
        span = joined(first.span, last.span)
        if kind.text not in metadata.KINDS:
            raise self.cur.error(
                kind,
                f"metadata kind `{kind.text}` is not supported; only "
                f"{' and '.join(metadata.KINDS)}",
            )
        return kind, self._meta_value(kind.text, index_token, span)

    def _meta_value(self, kind: str, index_token: Token, span: Span) -> Any:
        if kind not in self.meta:
            raise self.cur.error(
                span,
                f"`meta[{kind}][...]` used, but there is no metadata",
                hint="print with show_meta_data=True, or pass parse(..., init_meta_table=...)",
            )
        entries, text = self.meta[kind], index_token.text
        index = int(text) if text.isdigit() else -1
        if not 0 <= index < len(entries):
            raise self.cur.error(
                index_token,
                f"no entry {index_token.text} in meta[{kind}]: it has {len(entries)} entries",
            )
        if (kind, index) not in self.meta_values:  # one Constant per entry: sharing survives
            self.meta_values[kind, index] = entries[index]
        return self.meta_values[kind, index]


def _metadata_span(section: Token, err: metadata.MetadataError) -> Span:
    marker = section.span
    if err.line is None:
        return marker
    line = marker.line + err.line - 1
    column = (marker.end_column + (err.column or 1) - 1) if err.line == 1 else (err.column or 1)
    return Span(marker.file, line, column, line, column + 1)
