"""Normalization (SPEC 2.4): from a syntax tree to a ``Constraint`` in DNF.

1. NOT is pushed down to the atoms (De Morgan); a negated interval becomes its
   complement (one or two intervals), other negations are errors.
2. The number of disjuncts the DNF will have is counted on the way, without
   expanding anything (atom 1, complement 1 or 2, AND a product, OR a sum, capped),
   so that an oversized constraint fails before any expansion.
3. The DNF is expanded, same-attribute intervals in a disjunct are intersected,
   empty disjuncts dropped, duplicates removed (first occurrence kept).
"""

from __future__ import annotations

from .errors import Loc, error
from .intervals import complement, intersect
from .model import Attribute, Constraint, Disjunct, Interval, Predicate
from .syntax import And, Atom, Node, Not, Or, describe_negation

MAX_DISJUNCTS = 64
_CAP = MAX_DISJUNCTS + 1


def normalize(root: Node, root_loc: Loc) -> Constraint:
    """The normalized constraint of a syntax tree; ``root_loc`` locates whole-constraint errors."""
    kind = type(root)
    if kind is Atom:
        # The commonest constraint of all (x = 123): nothing to push, expand or merge.
        return Constraint((Disjunct(((root.attr, root.pred),)),))  # type: ignore[union-attr]  # kind is type(root): mypy does not narrow through it
    if kind is And and all(type(c) is Atom for c in root.children):  # type: ignore[union-attr]  # as above
        disjunct = _merge(root.children)  # type: ignore[union-attr,arg-type]  # as above
        if disjunct is None:
            raise _unsatisfiable(root_loc)
        return Constraint((disjunct,))
    nnf, _ = _push_not(root, False)
    disjuncts: list[Disjunct] = []
    seen: set[Disjunct] = set()
    for conjunction in _expand(nnf):
        disjunct = _merge(conjunction)
        if disjunct is not None and disjunct not in seen:
            seen.add(disjunct)
            disjuncts.append(disjunct)
    if not disjuncts:
        raise _unsatisfiable(root_loc)
    return Constraint(tuple(disjuncts))


def _unsatisfiable(loc: Loc) -> Exception:
    return error(
        "unsatisfiable",
        "no value can satisfy this constraint: every alternative contradicts itself "
        "(for example lot < 10 AND lot > 20)",
        loc,
    )


def _push_not(node: Node, negated: bool) -> tuple[Node, int]:
    """The negation normal form of ``node`` (negated if asked) and its disjunct count."""
    kind = type(node)
    if kind is Atom:
        if not negated:
            return node, 1
        atom: Atom = node  # type: ignore[assignment]  # kind is type(node), as above
        if type(atom.pred) is not Interval:
            raise error("cannot_negate", describe_negation(atom), atom.loc)
        parts = [
            Atom(atom.attr, part, atom.loc, "") for part in complement(atom.attr.type, atom.pred)
        ]
        if len(parts) == 1:
            return parts[0], 1
        return Or(parts, atom.loc), len(parts)  # type: ignore[arg-type]  # list is invariant; atoms are Nodes
    if kind is Not:
        return _push_not(node.child, not negated)  # type: ignore[union-attr]  # as above
    is_and = (kind is And) != negated
    children: list[Node] = []
    count = 1 if is_and else 0
    for child in node.children:  # type: ignore[union-attr]  # kind is And or Or here
        pushed, n = _push_not(child, negated)
        children.append(pushed)
        count = min(count * n if is_and else count + n, _CAP)
        if count > MAX_DISJUNCTS:
            raise error(
                "too_many_disjuncts",
                f"this constraint would have more than {MAX_DISJUNCTS} alternatives once "
                "written as ORs of ANDs (an AND of ORs multiplies their alternatives, "
                "and != counts as two): split it into several offers or bids",
                child.loc,
            )
    return (And(children, node.loc) if is_and else Or(children, node.loc)), count


def _expand(node: Node) -> list[list[Atom]]:
    """The conjunctions of the DNF of a tree in negation normal form."""
    kind = type(node)
    if kind is Atom:
        return [[node]]  # type: ignore[list-item]  # as above
    if kind is Or:
        out: list[list[Atom]] = []
        for child in node.children:  # type: ignore[union-attr]  # as above
            out.extend(_expand(child))
        return out
    acc: list[list[Atom]] = [[]]
    for child in node.children:  # type: ignore[union-attr]  # kind is And here
        parts = _expand(child)
        acc = [a + p for a in acc for p in parts]
    return acc


def _merge(atoms: list[Atom]) -> Disjunct | None:
    """One disjunct from a conjunction of atoms; ``None`` when its intervals do not meet."""
    preds: dict[Attribute, Predicate] = {}
    empty = False
    for atom in atoms:
        attr = atom.attr
        previous = preds.get(attr)
        if previous is None:
            preds[attr] = atom.pred
            continue
        if not attr.type.ordered:
            raise error(
                "duplicate_attribute",
                f"{attr.name} already has a condition in this alternative; a {attr.type.value} "
                "attribute takes one condition per alternative (use OR for alternatives)",
                atom.loc,
            )
        if not empty:
            merged = intersect(previous, atom.pred)  # type: ignore[arg-type]  # two atoms on one ordered attribute
            if merged is None:
                empty = True
            else:
                preds[attr] = merged
    if empty:
        return None
    return Disjunct(tuple(preds.items()))
