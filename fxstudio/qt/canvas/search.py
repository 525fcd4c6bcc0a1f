"""Search on the canvas: which cards match a pattern, and the small find bar that drives it.

A pattern is a case-insensitive regular expression matched against each node's name, op kind
and target text (``relu``, ``call_module``, ``conv\\d``, ``torch\\.nn\\.functional``). Text that
is not a valid regular expression is searched literally, so typing ``(`` never fails.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from fxstudio.core.node_text import card_target_text
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.find_zoom import is_readable, show_readable
from fxstudio.qt.canvas.items import CardInfo


def compile_pattern(pattern: str) -> re.Pattern | None:
    """The compiled search pattern (literal text if it is not a valid regex); None for empty text."""
    if not pattern.strip():
        return None
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(pattern), re.IGNORECASE)


def matching(infos: list[CardInfo], pattern: str) -> list[str]:
    """Names of the cards (or folded weights' rows: anything with ``name``, ``op``, ``target``)
    whose name, op or target matches ``pattern``, in the given order."""
    rx = compile_pattern(pattern)
    if rx is None:
        return []
    return [i.name for i in infos if rx.search(i.name) or rx.search(i.op) or rx.search(i.target)]


class SearchBar(QFrame):
    """The find bar floating over the canvas: typing searches, Enter/F3 go to the next match,
    Shift+Enter/Shift+F3 to the previous one, Escape closes it."""

    pattern_changed = Signal(str)
    next_requested = Signal()
    previous_requested = Signal()
    closed = Signal()
    select_all_requested = Signal()   # "Select all matches" (the button, Alt+Enter)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("canvasSearchBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setStyleSheet("#canvasSearchBar { background: #ffffff; border: 1px solid #b4bfcc; border-radius: 5px; }")
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 3, 4, 3)
        row.setSpacing(4)
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find node: name, op or target (regex)")
        self.edit.setClearButtonEnabled(True)
        self.edit.setMinimumWidth(240)
        self.count = QLabel("", self)
        self.count.setMinimumWidth(56)
        prev_btn, next_btn, close_btn = QToolButton(self), QToolButton(self), QToolButton(self)
        prev_btn.setText("↑")
        prev_btn.setToolTip("Previous match (Shift+F3)")
        next_btn.setText("↓")
        next_btn.setToolTip("Next match (Enter, F3)")
        close_btn.setText("✕")
        close_btn.setToolTip("Close (Esc)")
        all_btn = QToolButton(self)
        all_btn.setObjectName("searchSelectAll")
        all_btn.setText("Select all")
        all_btn.setToolTip("Select all matches (Alt+Enter)")
        all_btn.clicked.connect(self.select_all_requested)
        for w in (self.edit, self.count, prev_btn, next_btn, all_btn, close_btn):
            row.addWidget(w)
        self.edit.textChanged.connect(self.pattern_changed)
        self.edit.returnPressed.connect(self.next_requested)
        prev_btn.clicked.connect(self.previous_requested)
        next_btn.clicked.connect(self.next_requested)
        close_btn.clicked.connect(self.close_bar)
        self.hide()

    def show_count(self, current: int, total: int) -> None:
        """Show ``current/total`` (1-based) next to the field; red when nothing matches."""
        if not self.edit.text():
            self.count.setText("")
        elif total == 0:
            self.count.setText("<span style='color:#d13c3c'>no match</span>")
        else:
            self.count.setText(f"{current}/{total}")

    def open_bar(self) -> None:
        """Show the bar and focus the field with its text selected."""
        self.show()
        self.raise_()
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()

    def close_bar(self) -> None:
        """Hide the bar and tell the canvas (it clears the highlights)."""
        self.hide()
        self.closed.emit()

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Escape closes; F3 / Shift+F3 and Shift+Enter cycle."""
        key, mods = event.key(), event.modifiers()
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        if key == Qt.Key.Key_Escape:
            self.close_bar()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and mods & Qt.KeyboardModifier.AltModifier:
            self.select_all_requested.emit()
        elif key == Qt.Key.Key_F3 or (key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and shift):
            (self.previous_requested if shift else self.next_requested).emit()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            event.accept()   # the field already went to the next match; do not pass it to the canvas
        else:
            super().keyPressEvent(event)


class CanvasSearch:
    """Search on the canvas (mixed into ``GraphCanvas``): highlight matches, cycle through them.

    Expects ``canvas_scene``, ``search_bar``, ``selection``, ``document``, ``repeats``, ``flush()``
    and ``centerOn()`` (and the zoom of ``CanvasNavigation``) on the class it is mixed into, and ``_matches``, ``_match_index``, ``_pattern`` set up by it."""

    def search(self, pattern: str) -> int:
        """Highlight the cards matching ``pattern`` (regex over name, op, target); go to the first.
        Returns the number of matches. Nodes folded away in repeated blocks match too, after the
        cards; typing never unfolds one: Enter / F3 goes to it (and unfolds its span)."""
        self.flush()
        self._pattern = pattern
        if self.search_bar.edit.text() != pattern:   # called from code: show it in the find bar
            self.search_bar.edit.blockSignals(True)
            self.search_bar.edit.setText(pattern)
            self.search_bar.edit.blockSignals(False)
        self._rematch()
        self._match_index = -1
        if self._matches and self._found(self._matches[0])[0] is not None:
            self.next_match(zoom=False)   # typing keeps the zoom: the matches stay marked on the overview
        else:
            self.search_bar.show_count(0, len(self._matches))
        return len(self._matches)

    def reset_search(self) -> None:
        """Forget the query and its matches and close the find bar (another model is shown)."""
        for name in self._matches:
            self._mark(name, 0)
        self._pattern, self._matches, self._match_index = "", [], -1
        self.search_bar.edit.blockSignals(True)
        self.search_bar.edit.clear()
        self.search_bar.edit.blockSignals(False)
        self.search_bar.show_count(0, 0)
        self.search_bar.hide()
        self._update_highlights()

    def _rematch(self) -> None:
        for name in self._matches:
            self._mark(name, 0)
        infos: list = []
        rows: dict = {}   # a folded weight's name -> (its host's name, its row): matched like a card
        for entry in self.canvas_scene.search_entries():   # every card, made or not
            if isinstance(entry, tuple):
                rows[entry[1].name] = entry
                infos.append(entry[1])
            else:
                infos.append(entry)
        self._match_rows = rows
        infos.extend(self._folded_away())
        self._matches = matching(infos, self._pattern)
        self._match_index = min(self._match_index, len(self._matches) - 1)
        for name in self._matches:
            self._mark(name, 1)
        self.search_bar.show_count(self._match_index + 1, len(self._matches))
        self._update_highlights()

    def _folded_away(self) -> list:
        """What to match of the nodes a repeated-block fold hides (``repeat_fold.py``): going to
        one selects it, which unfolds its span."""
        fold, doc = self.repeats.fold, self.document
        if fold is None or doc is None:
            return []
        return [SimpleNamespace(name=n.name, op=n.op, target=card_target_text(n, doc.edited)) for n in doc.edited.graph.nodes
                if n.op != "output" and fold.folded_block(doc.module_path_of(n)) is not None]

    def _found(self, name: str, make: bool = True):
        """(card, row) of a match: its own card and None, or the card showing it as ``row``; the
        card is made if it is not yet (``make``), else (None, row) for a card not made."""
        scene = self.canvas_scene
        get = scene.cards.get if make else scene.live_cards.get
        card = get(name)
        if card is not None or name in scene.cards:
            return card, None
        host, row = getattr(self, "_match_rows", {}).get(name, (None, None))
        return (get(host) if host is not None else None), row

    def _mark(self, name: str, level: int) -> None:
        """Mark a match on its card or row: 0 none, 1 a match, 2 the current match (a card not
        made yet gets its mark when it is: ``realize.decorate_card``)."""
        card, row = self._found(name, make=level == 2)
        if card is None:
            return
        if row is None:
            card.match = level
        elif level:
            card.row_marks[row.node_id] = "current" if level == 2 else "match"
        else:
            card.row_marks.pop(row.node_id, None)
        card.update()

    def _update_highlights(self) -> None:
        """Tell the overview which nodes to mark: matches, the current match, the selection."""
        marks = dict.fromkeys(self._matches, st.MATCH)
        cur = self.current_match()
        if cur is not None:
            marks[cur] = st.CURRENT_MATCH
        name_of = self.canvas_scene.by_id.name_of
        for nid in self.selection.ids():
            name = name_of(nid)
            if name is not None:
                marks[name] = st.SELECTED
        self.canvas_scene.overview.highlights = marks
        self.canvas_scene.overview.update()

    def matches(self) -> list[str]:
        """Names of the cards matching the current search, in graph order."""
        return list(self._matches)

    def current_match(self) -> str | None:
        """The match the view is on, or None."""
        return self._matches[self._match_index] if 0 <= self._match_index < len(self._matches) else None

    def next_match(self, step: int = 1, zoom: bool = True) -> str | None:
        """Go to (centre on and select) the next match; wraps around. Returns its name. With
        ``zoom`` (Enter, F3) a view too far out to read the card zooms in to it (``find_zoom.py``),
        and the first such step shows the current match (the one the count names) instead of the next."""
        if not self._matches:
            return None
        old = self.current_match()
        if zoom and step and old is not None and self._found(old)[0] is not None and not is_readable(self.zoom()):
            step = 0
        if old is not None:
            self._mark(old, 1)
        self._match_index = (self._match_index + step) % len(self._matches)
        name = self._matches[self._match_index]
        card, row = self._found(name)
        if card is None:   # folded away: selecting it unfolds its span, and the matches are redone
            node = self.document.find(name) if self.document is not None else None
            if node is not None:
                self.selection.set([self.document.id_of(node)])
            self._match_index = self._matches.index(name) if name in self._matches else 0
            card, row = self._found(name)
            if card is None:
                return None
        self._mark(name, 2)
        if zoom:
            show_readable(self, card.sceneBoundingRect())
        else:
            self.centerOn(card.sceneBoundingRect().center())
        self.selection.set([row.node_id if row is not None else card.info.node_id])
        self.search_bar.show_count(self._match_index + 1, len(self._matches))
        self._update_highlights()
        return name

    def select_all_matches(self) -> int:
        """Select every card matching the current search (the find bar's "Select all"); returns how many."""
        self.flush()
        ids = []
        scene = self.canvas_scene
        rows = getattr(self, "_match_rows", {})
        for name in self._matches:   # without making the cards of matches out of view
            if name in scene.cards:
                ids.append(scene.id_of(scene.node_table[name]))
            elif name in rows:
                ids.append(rows[name][1].node_id)
        if ids:
            self.selection.set(ids)
        return len(ids)

    def previous_match(self) -> str | None:
        """Go to the previous match."""
        return self.next_match(-1)

    def open_search(self) -> None:
        """Show the find bar (Ctrl+F)."""
        self._place_overlays()
        self.search_bar.open_bar()
