"""What a view computes over a large graph, computed in a worker instead (issue #28).

At 200,000 nodes the Code dock's generation takes 5-6 s and the change list's diff against the
original 5 s. The loading worker leaves both out for a graph over ``FOLD_ABOVE`` nodes
(``views_ahead.prepare``), so the graph is drawn without waiting for them; each view then computes
its own with an ``Aside``, shows that it is doing so, and takes the result only while the document
is still in the state it was computed for.
"""

from __future__ import annotations

from typing import Any, Callable


def large_graph(graph) -> bool:
    """Whether views compute over ``graph`` in a worker (more than ``FOLD_ABOVE`` nodes)."""
    from fxstudio.core.layout import FOLD_ABOVE

    return len(graph.nodes) > FOLD_ABOVE


class Aside:
    """One worker computation at a time for a view (``parent``); a newer one replaces it."""

    def __init__(self, parent, name: str):
        self.parent = parent
        self.name = name
        self.task = None

    @property
    def busy(self) -> bool:
        """A computation is running."""
        return self.task is not None

    def start(self, doc, work: Callable[[], Any], deliver: Callable[[Any, bool], None]) -> None:
        """Run ``work()`` in a worker; then, on the GUI thread, ``deliver(result, current)`` where
        ``current`` says whether ``doc``'s edited graph is still the one it ran on (an edit came
        meanwhile: False). A failure (the graph changed under the worker) delivers ``(None, False)``.
        Nothing is delivered once it is cancelled or replaced."""
        from fxstudio.qt.workers import BackgroundTask

        self.cancel()
        graph, serial = doc.edited.graph, doc.serial
        task = BackgroundTask(lambda ctx: work(), name=self.name, parent=self.parent)

        def finished(result, failed: bool) -> None:
            if task is not self.task:
                return
            self.task = None
            current = not failed and doc.edited.graph is graph and doc.serial == serial
            deliver(result, current)

        task.succeeded.connect(lambda result: finished(result, False))
        task.failed.connect(lambda exc, tb: finished(None, True))
        self.task = task
        task.start()

    def cancel(self) -> None:
        """Drop a running computation (another document, or a newer state of the graph)."""
        if self.task is not None:
            self.task.cancel()
            self.task = None
