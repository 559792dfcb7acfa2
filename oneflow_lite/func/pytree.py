"""Pytrees for ``flow.func``: nested tuples, lists and dicts (and named tuples) whose leaves are anything
else. ``tree_flatten`` gives the leaves in order and a spec that ``tree_unflatten`` rebuilds the tree from;
``broadcast_prefix`` spreads a prefix tree (``in_dims=0`` for a whole argument) over a tree's leaves."""

from __future__ import annotations


class TreeSpec:
    """The structure of a pytree: ``kind`` ("leaf", "tuple", "list", "dict" or "namedtuple"), the node's
    type and keys, and the children's specs."""

    __slots__ = ("children", "keys", "kind", "node_type", "num_leaves")

    def __init__(self, kind, node_type=None, keys=(), children=()):
        self.kind = kind
        self.node_type = node_type
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind == other.kind and self.node_type is other.node_type
                and self.keys == other.keys and self.children == other.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children)) if self.kind == "dict" \
            else ", ".join(repr(c) for c in self.children)
        return {"tuple": f"({inner})", "list": f"[{inner}]", "dict": f"{{{inner}}}"}.get(
            self.kind, f"{getattr(self.node_type, '__name__', 'node')}({inner})")


def _node(tree):
    """(kind, keys, children) of a container node, or None for a leaf."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return "namedtuple", tuple(tree._fields), list(tree)
    if type(tree) is tuple:
        return "tuple", (), list(tree)
    if type(tree) is list:
        return "list", (), list(tree)
    if type(tree) is dict:
        return "dict", tuple(tree), list(tree.values())
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """``(leaves, spec)`` of ``tree``."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves) -> TreeSpec:
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return TreeSpec("leaf")
    kind, keys, children = node
    return TreeSpec(kind, type(tree), keys, tuple(_flatten(c, leaves) for c in children))


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of structure ``spec`` holding ``leaves``."""
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    if spec.kind == "leaf":
        return next(it)
    children = [_unflatten(it, c) for c in spec.children]
    if spec.kind == "dict":
        return dict(zip(spec.keys, children))
    if spec.kind == "namedtuple":
        return spec.node_type(*children)
    return spec.node_type(children)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def leaf_paths(spec: TreeSpec, prefix: str = "") -> list[str]:
    """The access path of each leaf (``[1]['w']``), in leaf order."""
    if spec.kind == "leaf":
        return [prefix]
    paths = []
    for i, child in enumerate(spec.children):
        key = f"[{spec.keys[i]!r}]" if spec.kind == "dict" else f".{spec.keys[i]}" if spec.kind == "namedtuple" \
            else f"[{i}]"
        paths.extend(leaf_paths(child, prefix + key))
    return paths


def broadcast_prefix(prefix, spec: TreeSpec, what: str) -> list:
    """``prefix`` spread over the leaves of ``spec``: a leaf of ``prefix`` (an int or None) stands for the
    whole subtree at its place; a ValueError naming ``what`` when ``prefix`` is not a prefix of the tree."""
    out = []
    _broadcast(prefix, spec, what, out)
    return out


def _broadcast(prefix, spec, what, out):
    node = _node(prefix)
    if node is None:
        out.extend([prefix] * spec.num_leaves)
        return
    kind, keys, children = node
    if spec.kind == "leaf" or kind != spec.kind or len(children) != len(spec.children) or (
            kind == "dict" and set(keys) != set(spec.keys)):
        raise ValueError(f"{what} is not compatible with the structure of the inputs: it has structure "
                         f"{_flatten(prefix, [])!r} but the inputs have structure {spec!r}")
    if kind == "dict":
        children = [prefix[k] for k in spec.keys]
    for child, child_spec in zip(children, spec.children):
        _broadcast(child, child_spec, what, out)
