"""The edit an analysis pass makes: node metadata, not the graph.

A pass that leaves the graph as it was but writes node metadata (``ShapeProp``'s ``tensor_meta``
and ``type``, custom keys) or an Interpreter pass whose per-node dicts hold what it measured (a
profiler's ``runtimes_sec``) is installed as one undoable ``SetNodeMeta`` on the edited graph's own
nodes: the values the pass wrote (not fxstudio's shape keys, which the shape refresh owns) and, under
``node.meta["fxs_analysis"][pass label]``, a short text summary of each (``passes.summary``), which the
Properties panel shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.fx

from fxstudio.core.edits.primitives import Primitive
from fxstudio.core.edits.state import ID_KEY, Changes, EditState
from fxstudio.core.passes import ANALYSIS_KEY, OWN_KEYS, counts_text, summary, written_keys

_ABSENT = object()


@dataclass
class SetNodeMeta(Primitive):
    """Set ``node.meta`` keys of nodes by id (``entries``: id, new values, old values or absent);
    revert puts back what was there. ``counts``: how many nodes got each analysis key."""

    entries: tuple[tuple[int, dict, dict], ...]
    counts: dict[str, int]

    def _set(self, state: EditState, changes: Changes, which: int) -> None:
        for entry in self.entries:
            node = state.by_id.get(entry[0])
            if node is None:
                continue
            for key, value in entry[which].items():
                if value is _ABSENT:
                    node.meta.pop(key, None)
                else:
                    node.meta[key] = value
            changes.change(entry[0])

    def apply(self, state: EditState, changes: Changes) -> None:
        """Set the new values (the nodes are reported changed)."""
        self._set(state, changes, 1)

    def revert(self, state: EditState, changes: Changes) -> None:
        """Put back what the nodes held before."""
        self._set(state, changes, 2)

    def summary(self) -> str:
        """``analysis: tensor_meta, type on 12 nodes``."""
        return f"analysis: {counts_text(self.counts)}"


def _computed(new: torch.fx.Node, old: torch.fx.Node | None,
              analysis: dict[str, dict[torch.fx.Node, Any]]) -> dict[str, Any]:
    """What the pass computed for ``new`` (whose twin before the pass is ``old``): the keys it wrote
    and its Interpreter's values for it."""
    found = {key: new.meta[key] for key in written_keys(old.meta if old is not None else {}, new.meta)}
    for name, values in analysis.items():
        if new in values:
            found[name] = values[new]
    return found


def _texts(meta: dict, label: str, computed: dict[str, Any]) -> dict:
    """``meta``'s analyses with this pass's summaries under ``label`` (a new dict: undo keeps the old)."""
    analyses = dict(meta.get(ANALYSIS_KEY) or {})
    analyses[label] = {key: summary(value) for key, value in computed.items()}
    return analyses


def analysis_edit(matched: dict[torch.fx.Node, torch.fx.Node], label: str,
                  analysis: dict[str, dict[torch.fx.Node, Any]]) -> SetNodeMeta | None:
    """The ``SetNodeMeta`` of a pass that left the graph as it was (``matched``: each node of its
    result -> the edited graph's node it is), or None when it computed nothing."""
    entries, counts = [], {}
    for new, old in matched.items():
        computed = _computed(new, old, analysis)
        if not computed:
            continue
        values = {key: value for key, value in computed.items() if key in new.meta and key not in OWN_KEYS}
        values[ANALYSIS_KEY] = _texts(old.meta, label, computed)
        before = {key: old.meta.get(key, _ABSENT) for key in values}
        entries.append((old.meta[ID_KEY], values, before))
        for key in computed:
            counts[key] = counts.get(key, 0) + 1
    if not entries:
        return None
    return SetNodeMeta(tuple(entries), counts)


def attach_analysis(nodes: list[torch.fx.Node], label: str, analysis: dict[str, dict[torch.fx.Node, Any]]) -> None:
    """Give the nodes of a pass's result (installed by a swap, so undo drops them) the summaries of
    an Interpreter's per-node values under ``label``."""
    if not analysis:
        return
    for node in nodes:
        computed = {name: values[node] for name, values in analysis.items() if node in values}
        if computed:
            node.meta[ANALYSIS_KEY] = _texts(node.meta, label, computed)
