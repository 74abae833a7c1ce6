"""The continuations of a query's candidates as a prefix tree, cut into rows of one forward pass each.

Candidate names share long token prefixes ("carcinoma of ...", "chronic ..."): in a prefix tree
of their continuation tokens (the tokens after the cached prompt context) each shared token is
one node. A node's log-probability comes from the logits of its parent (the first token's from
the context's last position), so only nodes with children need a forward pass: the last token
of every continuation is a leaf and costs nothing but a look-up in its parent's logits.

The nodes with children are laid out in depth-first order and cut into rows of at most
`row_length` nodes. A node's ancestors precede it in that order, so every ancestor of a row's
node is either in the row before it or an ancestor of the row's first node: a row is that first
node's ancestors (repeated, not scored again) followed by its own nodes. In the forward pass a
row's node attends to the context and to its ancestors in the row only (`ancestor_mask`), at
position context length + depth, which gives each node exactly the keys and values it would have
in its own candidate's sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class PrefixTree:
    tokens: list[int]  # node -> token id
    parents: list[int]  # node -> parent node; -1 for a first token (predicted by the context)
    depths: list[int]  # node -> 0 for a first token
    children: list[list[int]]  # node -> child nodes, in order of insertion
    paths: list[list[int]]  # continuation -> its nodes, first token first

    @property
    def firsts(self) -> list[int]:
        """The nodes of first tokens (their log-probabilities come from the context's last position)."""
        return [node for node, parent in enumerate(self.parents) if parent == -1]

    @property
    def inner(self) -> list[int]:
        """The nodes with children (the ones a forward pass runs), depth first."""
        order, stack = [], self.firsts[::-1]
        while stack:
            node = stack.pop()
            if self.children[node]:
                order.append(node)
                stack.extend(reversed(self.children[node]))
        return order


@dataclass
class Row:
    nodes: list[int]  # the ancestors of the first own node, then the own nodes (depth first)
    own_from: int  # nodes[own_from:] are this row's own: their logits are read here

    def local_parents(self, tree: PrefixTree) -> list[int]:
        """Each node's parent as a position in this row (-1: the context)."""
        where = {node: i for i, node in enumerate(self.nodes)}
        return [where[tree.parents[node]] if tree.parents[node] != -1 else -1 for node in self.nodes]


def build_tree(continuations: Sequence[Sequence[int]]) -> PrefixTree:
    """The prefix tree of non-empty token sequences; equal sequences share all their nodes."""
    tree = PrefixTree([], [], [], [], [])
    child_of: dict[tuple[int, int], int] = {}  # (parent, token) -> node
    for tokens in continuations:
        parent, path = -1, []
        for depth, token in enumerate(tokens):
            node = child_of.get((parent, token))
            if node is None:
                node = child_of[(parent, token)] = len(tree.tokens)
                tree.tokens.append(token)
                tree.parents.append(parent)
                tree.depths.append(depth)
                tree.children.append([])
                if parent != -1:
                    tree.children[parent].append(node)
            path.append(node)
            parent = node
        tree.paths.append(path)
    return tree


def cut_rows(tree: PrefixTree, row_length: int) -> list[Row]:
    """The inner nodes in rows of at most `row_length` nodes (more when one path is deeper)."""
    order = tree.inner
    length = max([row_length] + [tree.depths[node] + 2 for node in order])  # room for a path and one own node
    rows, start = [], 0
    while start < len(order):
        ancestors = []
        node = tree.parents[order[start]]
        while node != -1:
            ancestors.append(node)
            node = tree.parents[node]
        own = order[start : start + length - len(ancestors)]
        rows.append(Row(ancestors[::-1] + own, len(ancestors)))
        start += len(own)
    return rows


def ancestor_mask(local_parents: Sequence[int], width: int) -> np.ndarray:
    """[width, width] booleans: position i may attend to j (j is i or an ancestor of i in the row).

    Positions past the row's nodes (padding) attend to themselves only."""
    allowed = np.eye(width, dtype=bool)
    for i, parent in enumerate(local_parents):
        if parent != -1:
            allowed[i] |= allowed[parent]  # parents come first, so their rows are complete
    return allowed
