"""A config kept to be copied many times, copied by unpickling its bytes: a fraction of a deep copy's cost.

Hydra hands every composition its own copy of each config it loads (it edits and moves what it is given), and a
sweep composes every job: normbench's files and Hydra's packaged ones are parsed once per process and copied
from there (configuration/config.py ``parsed_once``, studies/validation.py), and Hydra's ConfigStore deep-copies
each node it returns (its schema, ``hydra/config``). OmegaConf's deep copy walks the tree in Python node by node;
``pickle.loads`` of the tree's bytes, taken once when it is kept, builds the same tree 6-8x faster (3.2-3.4 ms
against 0.4-0.5 ms for ``hydra/config`` and normbench's schema on the 2-core build machine). The bytes are made
here, from a config in memory, and read back here alone: never written, never read from anywhere else.

A copy is the deep copy's tree: the same keys in the same order, values, node types and metadata (reference and
object types, flags; tests/configuration/test_templates.py, and composed smoke jobs node for node). A config that
does not pickle (a node holding an object of a class defined in a function), holds a mutable value (a deep copy
shares it) or whose Template cannot be unpickled any more (a class gone from its module) is deep-copied. What a
Template cannot see: a kept config changed in place after it was kept (each is private to its cache; Hydra's
ConfigStore hands out copies), and a class of the tree rebound in its module (a copy is built from the class found
by its name then).
"""

from __future__ import annotations

import copy
import enum
import pathlib
import pickle

# the values a deep copy shares (OmegaConf copies a value node's value by reference) and a pickle copies: equal
# either way only where immutable
_IMMUTABLE = (str, int, float, bool, bytes, type(None), enum.Enum, pathlib.PurePath)


def _as_deep_copied(node) -> list | None:
    """The (child, its parent, its container) of each child of ``node`` whose parent is not the container holding it
    (HydraConfig's copy of the hydra node points to the job's config): a deep copy re-parents every child to its
    container's copy, a pickle would keep the pointer (and copy the config it points to). None where a value is not
    immutable (a deep copy shares a value node's value, a pickle copies it) or ``node`` is no OmegaConf container."""
    from omegaconf import Container

    if not isinstance(node, Container):
        return None
    moved, stack = [], [node]
    while stack:
        container = stack.pop()
        for child in _children(container.__dict__["_content"]):
            if child.__dict__["_parent"] is not container:
                moved.append((child, child.__dict__["_parent"], container))
            if "_content" in child.__dict__:
                stack.append(child)  # a container, or a Union-typed value holding its value node
            elif not isinstance(child.__dict__.get("_val"), _IMMUTABLE):
                return None
    return moved


def _children(content) -> list:
    """The nodes a container's content holds (a dict's values, a list's items, a Union-typed value's one node); none
    where it is None, missing or an interpolation (a string)."""
    from omegaconf import Node

    if isinstance(content, dict):
        return list(content.values())
    if isinstance(content, list):
        return content
    return [content] if isinstance(content, Node) else []


def _pickled(node) -> bytes | None:
    """``node``'s bytes as its deep copy would be: no parent above it, each child's parent its container (put back
    after); None where that cannot be (_as_deep_copied) or pickle refuses it (a local class, a lock)."""
    moved = _as_deep_copied(node)
    if moved is None:
        return None
    parent = node.__dict__["_parent"]
    try:
        node.__dict__["_parent"] = None
        for child, _, container in moved:
            child.__dict__["_parent"] = container
        return pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - anything pickle refuses: deep copies instead
        return None
    finally:
        node.__dict__["_parent"] = parent
        for child, before, _ in moved:
            child.__dict__["_parent"] = before


def same_tree(a, b) -> bool:
    """Whether two OmegaConf trees are each other's copies: node for node the same type, metadata (reference and object
    types, key and element types, flags, resolver cache), keys in the same order and equal values; each child's parent
    the container holding it. Parents above the roots are not compared."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y) or x.__dict__["_metadata"] != y.__dict__["_metadata"]:
            return False
        if "_content" not in x.__dict__:
            u, v = x.__dict__.get("_val"), y.__dict__.get("_val")
            if type(u) is not type(v) or not (u == v or (u != u and v != v)):  # nan is its own copy
                return False
            continue
        cx, cy = x.__dict__["_content"], y.__dict__["_content"]  # a container's, or a Union-typed value's node
        if type(cx) is not type(cy) or (isinstance(cx, dict) and list(cx) != list(cy)):
            return False
        kids_x, kids_y = _children(cx), _children(cy)
        if len(kids_x) != len(kids_y) or (not kids_x and cx != cy):
            return False
        for u, v in zip(kids_x, kids_y):
            if u.__dict__["_parent"] is not x or v.__dict__["_parent"] is not y:
                return False
            stack.append((u, v))
    return True


class Template:
    """``config`` kept as it is now; ``copy()`` returns a new tree equal to ``copy.deepcopy(config)`` then."""

    __slots__ = ("config", "_bytes")

    def __init__(self, config):
        self.config = config
        data = _pickled(config) if getattr(config, "_get_parent", lambda: None)() is None else None
        # kept only where its copy is the deep copy's tree, checked once here (same_tree)
        self._bytes = data if data is not None and same_tree(pickle.loads(data), copy.deepcopy(config)) else None  # noqa: S301

    def copy(self):
        if self._bytes is not None:
            try:
                return pickle.loads(self._bytes)  # noqa: S301 - bytes made above from a config in memory, nothing read
            except Exception:  # noqa: BLE001 - a class of the tree no longer where it was (removed from its module)
                self._bytes = None
        return copy.deepcopy(self.config)


class KeptResult:
    """A Hydra ConfigResult kept to be handed out many times (a config source's parse, kept per process): ``fresh()``
    is a new result, its config copied from the kept one's Template, its header a new dict."""

    __slots__ = ("result", "template")

    def __init__(self, result):
        self.result = result
        self.template = Template(result.config)

    def fresh(self):
        kept = self.result
        return type(kept)(config=self.template.copy(), path=kept.path, provider=kept.provider,
                          header=dict(kept.header), is_schema_source=kept.is_schema_source)


def copied(node):
    """``copy.deepcopy(node)`` of an OmegaConf tree in a job's config, by pickling, 2-3x faster: the copy keeps
    ``node``'s parent, as the deep copy does (a node whose parent is a config's root reads its interpolations
    there). A tree that does not pickle is deep-copied."""
    data = _pickled(node)
    if data is None:
        return copy.deepcopy(node)
    result = pickle.loads(data)  # noqa: S301 - bytes made just above from a config in memory
    result.__dict__["_parent"] = node.__dict__["_parent"]
    return result
