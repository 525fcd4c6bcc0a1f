"""A view's subscription to the events of the document it shows."""

from __future__ import annotations

from typing import Callable


class DocumentSubscription:
    """Follows one document's events at a time: following another drops the old subscription."""

    def __init__(self, callback: Callable[[object], None]):
        self._callback = callback
        self._unsubscribe: Callable[[], None] | None = None

    def follow(self, doc) -> None:
        """Send ``doc``'s events (none when ``doc`` is None) to the callback, and no other document's."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if doc is not None:
            self._unsubscribe = doc.subscribe(self._callback)
