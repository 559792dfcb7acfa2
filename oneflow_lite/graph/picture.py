"""Pictures of a graph: ``graph.to_dot()`` (Graphviz DOT text) and ``graph.render(path)`` (SVG, PNG, PDF, ...).

Each op is a node (inputs and outputs ellipses, variables cylinders, variable updates hexagons) with its
output shapes beside it; each edge is labelled with the meta of the blob it carries; the ops of a module
are drawn inside a box (a cluster) labelled with the module's path and class, nested as the modules are.
"""

from __future__ import annotations

import os

from oneflow_lite.graph.ir import JobIR, is_free_eager_name

_SHAPES = {"input": "ellipse", "output": "ellipse", "variable": "cylinder", "assign": "hexagon", "user": "box"}
_RECOMPUTED = "Sys-Checkpointing-Fake-Fw-Op_"


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def meta_text(m) -> str:
    return f"{m.dtype.name}[{', '.join(map(str, m.shape))}]"


def module_of(node) -> str:
    """The module path an op was captured in ("" outside modules)."""
    name = node.name.removeprefix(_RECOMPUTED)
    if node.kind in ("input", "output"):
        return ""
    if node.kind == "variable":
        if is_free_eager_name(name):
            return name.rsplit("-", 2)[0] if name.count("-") >= 2 else ""
        return name.rsplit(".", 1)[0] if "." in name else ""
    if node.kind == "assign":
        return ""
    parts = name.rsplit("-", 2)
    return parts[0] if len(parts) == 3 else ""


def _cluster_lines(path: str, members: dict, children: dict, classes: dict, depth: int) -> list:
    pad = "  " * depth
    lines = []
    if path:
        label = f"{path} ({classes[path]})" if path in classes else path
        lines += [f"{pad}subgraph {quote('cluster_' + path)} {{", f"{pad}  label={quote(label)};",
                  f'{pad}  style="rounded"; color="gray50";']
        pad += "  "
    lines += [pad + line for line in members.get(path, [])]
    for child in children.get(path, ()):
        lines += _cluster_lines(child, members, children, classes, depth + 1 if path else depth)
    if path:
        lines.append("  " * depth + "}")
    return lines


def to_dot(name: str, ir: JobIR, classes: dict | None = None) -> str:
    """The DOT text of ``ir`` (``classes``: module path -> class name, for the clusters' labels)."""
    classes = classes or {}
    members, children = {}, {}
    for n in ir.nodes:
        label = quote(n.name)[:-1] + "\\n" + quote(n.op_type)[1:]
        lines = [f"{quote(n.name)} [label={label}, shape={_SHAPES[n.kind]}];"]
        if n.outputs:
            shapes = ", ".join(meta_text(ir.metas[lbn]) for lbn in n.outputs)
            lines.append(f"{quote(n.name)} [xlabel={quote(shapes)}];")
        path = module_of(n)
        members.setdefault(path, []).extend(lines)
        while path:  # register the path and its ancestors
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            children.setdefault(parent, {})[path] = None  # a dict: capture order
            path = parent
    lines = [f"digraph {quote(name)} {{", "  rankdir=TB;", '  node [fontname="monospace"];', "  forcelabels=true;"]
    lines += _cluster_lines("", members, children, classes, 1)
    producers = ir.producers()
    for n in ir.nodes:
        for lbn in n.inputs:
            src = producers[lbn]
            lines.append(f"  {quote(src.name)} -> {quote(n.name)} [label={quote(meta_text(ir.metas[lbn]))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_INSTALL = ("graph.render() draws with the 'graphviz' Python package and Graphviz's 'dot' program: pip install "
            "graphviz, and install Graphviz (apt-get install graphviz, brew install graphviz, or graphviz.org); "
            "graph.to_dot() gives the DOT text without them")


def render(dot: str, path, fmt: str | None = None) -> str:
    """Write the picture of ``dot`` to ``path`` in ``fmt`` (default: the path's suffix, else SVG); the path."""
    try:
        import graphviz
    except ImportError:
        raise RuntimeError(f"{_INSTALL} (the graphviz package is not installed)") from None
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1]
    fmt = fmt or suffix.lstrip(".") or "svg"
    if not suffix:
        path = f"{path}.{fmt}"
    try:
        data = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(f"{_INSTALL} (the 'dot' program was not found)") from None
    with open(path, "wb") as f:
        f.write(data)
    return path
