"""Mutants of a reference solution: labelled negatives for verifier benchmarking.

Classic mutation operators on the AST — a comparison flipped, an arithmetic operator swapped,
an integer constant moved by one, ``and``/``or`` exchanged, a slice bound dropped. A verifier
that passes a mutant has either met an *equivalent* mutant (same behaviour, rare) or has
hidden tests too weak to tell the difference: both worth knowing, so the benchmark lists
every surviving mutant by name.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

_CMP_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BIN_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
}


@dataclass(frozen=True)
class Mutant:
    name: str  # "cmp@3:Lt->LtE"
    source: str


Site = tuple[str, Callable[[ast.AST], None]]


def _swap_compare(node: ast.AST, *, index: int, new: type) -> None:
    node.ops[index] = new()  # type: ignore[attr-defined]


def _set_op(node: ast.AST, *, new: type) -> None:
    node.op = new()  # type: ignore[attr-defined]


def _increment_constant(node: ast.AST) -> None:
    node.value += 1  # type: ignore[attr-defined]


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, Callable[[ast.AST], None]]]:
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _CMP_SWAPS:
                    new = _CMP_SWAPS[type(op)]
                    yield (
                        node,
                        f"cmp@{line}:{type(op).__name__}->{new.__name__}",
                        partial(_swap_compare, index=i, new=new),
                    )
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAPS:
            new = _BIN_SWAPS[type(node.op)]
            yield (
                node,
                f"op@{line}:{type(node.op).__name__}->{new.__name__}",
                partial(_set_op, new=new),
            )
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield (
                node,
                f"const@{line}:{node.value}->{node.value + 1}",
                _increment_constant,
            )
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield (
                node,
                f"bool@{line}:{type(node.op).__name__}->{new.__name__}",
                partial(_set_op, new=new),
            )
        elif isinstance(node, ast.Slice) and node.upper is not None:
            yield node, f"slice@{line}:drop-upper", lambda n: setattr(n, "upper", None)


def mutants(source: str, limit: int = 3) -> list[Mutant]:
    """Up to ``limit`` mutants, spread evenly over the mutation sites; deterministic."""
    tree = ast.parse(source)
    sites = list(_sites(tree))
    if not sites:
        return []
    step = max(1, len(sites) // limit)
    chosen = sites[::step][:limit]
    out = []
    for index, (_node, name, _apply) in enumerate(chosen):
        mutated = copy.deepcopy(tree)
        node, _, apply = list(_sites(mutated))[sites.index(chosen[index])]
        apply(node)
        text = ast.unparse(ast.fix_missing_locations(mutated)) + "\n"
        if text != ast.unparse(tree) + "\n":
            out.append(Mutant(name, text))
    return out
