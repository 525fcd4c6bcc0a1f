"""Cycles and topological order for rewires: find the path a rewire would close, or move the
fewest nodes so that a new input is defined before the node that uses it.
"""

from __future__ import annotations

import torch.fx

from fxstudio.core.edits.primitives import MoveNode, Transaction
from fxstudio.core.errors import EditRefused


def cycle_path(user: torch.fx.Node, new_input: torch.fx.Node) -> list[torch.fx.Node] | None:
    """If ``new_input`` depends on ``user``, the dependency path ``[user, ..., new_input]``, else None.

    Only nodes after ``user`` in the list can depend on it, so the search stays in that window.
    """
    if new_input is user:
        return [user]
    if new_input < user:
        return None
    parent: dict[torch.fx.Node, torch.fx.Node | None] = {new_input: None}
    stack = [new_input]
    while stack:
        node = stack.pop()
        for inp in node.all_input_nodes:
            if inp is user:
                path = [user, node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path
            if inp not in parent and user < inp:
                parent[inp] = node
                stack.append(inp)
    return None


def cycle_message(user: torch.fx.Node, new_input: torch.fx.Node, path: list[torch.fx.Node]) -> str:
    """The refusal for a rewire that would close ``path`` into a cycle."""
    if len(path) == 1:
        return f"Using %{user.name} as an input of itself would create a cycle: {user.name} → {user.name}."
    chain = " → ".join(n.name for n in path)
    return (f"Using %{new_input.name} as an input of %{user.name} would create a cycle: {chain} → {user.name} "
            f"(%{new_input.name} depends on %{user.name}).")


def _reach(start: torch.fx.Node, step, inside) -> list[torch.fx.Node]:
    """``start`` and every node reachable from it through ``step`` (a node's inputs or users) while
    ``inside`` holds, in graph order."""
    seen = {start}
    stack = [start]
    while stack:
        for other in step(stack.pop()):
            if other not in seen and inside(other):
                seen.add(other)
                stack.append(other)
    return sorted(seen)


def ensure_before(tx: Transaction, new_input: torch.fx.Node, user: torch.fx.Node) -> int:
    """Make ``new_input`` come before ``user``, moving the smaller of two valid node sets.

    Either ``new_input`` and its ancestors that follow ``user`` move up to just before ``user``,
    or ``user`` and its descendants that precede ``new_input`` move down to just after it.
    Raises ``EditRefused`` naming the cycle when ``new_input`` depends on ``user``. Returns the
    number of nodes moved.
    """
    if new_input < user:
        return 0
    path = cycle_path(user, new_input)
    if path is not None:
        raise EditRefused(cycle_message(user, new_input, path))
    up = _reach(new_input, lambda n: n.all_input_nodes, lambda n: user < n)  # its ancestors after user
    down = _reach(user, lambda n: n.users, lambda n: n < new_input)  # user's descendants before it
    fixed = ("placeholder", "output")
    up_ok = not any(n.op in fixed for n in up)
    down_ok = not any(n.op in fixed for n in down)
    if not (up_ok or down_ok):
        raise EditRefused(f"Cannot order %{new_input.name} before %{user.name} without moving an input or the output.")
    state = tx.state
    if up_ok and (len(up) <= len(down) or not down_ok):
        for node in up:  # ascending: each lands just before user, keeping their relative order
            new_prev = state.prev_id(user)
            if new_prev != node.meta["fxs_id"]:
                tx.do(MoveNode(node.meta["fxs_id"], state.prev_id(node), new_prev))
        return len(up)
    anchor = new_input
    for node in down:
        tx.do(MoveNode(node.meta["fxs_id"], state.prev_id(node), anchor.meta["fxs_id"]))
        anchor = node
    return len(down)
