"""Unification of graph types: IncompleteTypes are the unknowns, bound as constraints meet."""

from __future__ import annotations

from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type
from tessel.graph.type_util import type_equal


class TypeMismatchError(Exception):
    """Two types that cannot be made equal (the caller turns it into a UserError)."""

    def __init__(self, lhs: Type, rhs: Type) -> None:
        super().__init__("type mismatch")
        self.lhs, self.rhs = lhs, rhs


def _parts(a: Type, b: Type) -> list[tuple[Type, Type]]:
    """The pairs of component types that must be equal for two known types to be;
    TypeMismatchError if their shapes differ (a tensor against a tuple, tuples of different
    lengths)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if not type_equal(a, b):  # symbolic dimensions: equal when proved (tessel.arith.dims)
            raise TypeMismatchError(a, b)
        return []
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        if len(a.fields) != len(b.fields):
            raise TypeMismatchError(a, b)
        return list(zip(a.fields, b.fields, strict=True))
    if isinstance(a, FuncType) and isinstance(b, FuncType):
        if len(a.arg_types) != len(b.arg_types):
            raise TypeMismatchError(a, b)
        return [*zip(a.arg_types, b.arg_types, strict=True), (a.ret_type, b.ret_type)]
    raise TypeMismatchError(a, b)


class TypeSolver:
    """A union-find over IncompleteTypes: `unify` binds unknowns, `resolve` follows bindings."""

    def __init__(self) -> None:
        self.bound: dict[IncompleteType, Type] = {}

    def fresh(self) -> IncompleteType:
        return IncompleteType()

    def resolve(self, ty: Type) -> Type:
        """`ty` with bound unknowns at its top followed (not inside it)."""
        while isinstance(ty, IncompleteType) and ty in self.bound:
            ty = self.bound[ty]
        return ty

    def zonk(self, ty: Type) -> Type:
        """`ty` with every bound unknown inside it replaced by its binding."""
        ty = self.resolve(ty)
        if isinstance(ty, TupleType):
            fields = tuple(self.zonk(f) for f in ty.fields)
            return (
                ty
                if all(a is b for a, b in zip(fields, ty.fields, strict=True))
                else TupleType(fields)
            )
        if isinstance(ty, FuncType):
            args = tuple(self.zonk(a) for a in ty.arg_types)
            ret = self.zonk(ty.ret_type)
            unchanged = ret is ty.ret_type and all(
                a is b for a, b in zip(args, ty.arg_types, strict=True)
            )
            return ty if unchanged else FuncType(args, ret)
        return ty

    def unify(self, lhs: Type, rhs: Type) -> None:
        """Make `lhs` and `rhs` equal by binding unknowns; TypeMismatchError if they cannot be."""
        a, b = self.resolve(lhs), self.resolve(rhs)
        if a is b:
            return
        if isinstance(a, IncompleteType):
            self._bind(a, b, lhs, rhs)
        elif isinstance(b, IncompleteType):
            self._bind(b, a, lhs, rhs)
        else:
            for x, y in _parts(a, b):
                self.unify(x, y)

    def _bind(self, unknown: IncompleteType, ty: Type, lhs: Type, rhs: Type) -> None:
        if self.occurs(unknown, ty):  # e.g. fn (%f) { %f(%f) }: an infinite type
            raise TypeMismatchError(lhs, rhs)
        self.bound[unknown] = ty

    def occurs(self, unknown: IncompleteType, ty: Type) -> bool:
        """Whether `unknown` appears in `ty` (binding it there would make an infinite type)."""
        pending = [ty]
        while pending:  # a worklist: deeply nested types never reach the recursion limit
            ty = self.resolve(pending.pop())
            if ty is unknown:
                return True
            if isinstance(ty, TupleType):
                pending.extend(ty.fields)
            elif isinstance(ty, FuncType):
                pending.extend((*ty.arg_types, ty.ret_type))
        return False
