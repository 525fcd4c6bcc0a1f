"""``fxstudio MODEL --test-geometry FILE``: where things are on screen, for tests that drive the
window with real input events (tests/e2e, xdotool on an X server).

The window writes FILE (JSON, atomically) whenever what it would say changes, checked every
``POLL_MS``, and at once on SIGUSR1 (its ``seq`` then grows even when nothing changed, so a test can
ask for a fresh snapshot). It holds global screen rectangles ``[x, y, w, h]`` of named widgets
(``widgets``: the canvas viewport, docks, toolbar buttons, menus, each Properties field by
argument key), of each card by node name and its input ports (``cards``), of the other top-level
windows (dialogs, open menus) and their named children or menu entries (``windows``; the text of
their named line edits and tables in ``texts``), of the dock tabs (``tab:Run``), the Run dock's state and the
screen point of each node in its per-node plot (``run``; ``run.layout``: its plots' view boxes,
tick labels and data area, the first-divergence label, each table's column widths and widest texts:
``run_layout.describe``), and what a user reads: title, edit
count, undo/redo enabled, status bar text and lint field, the lint and torch rows of Problems, each
card's shape text and torch's rejection, selection, focus, the canvas's zoom and what its minimap
draws (``view``). Nothing here changes the window;
input still has to go through the window system.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

from PySide6.QtCore import QObject, QPoint, QPointF, QRect, QRectF, QSizeF, QTimer
from PySide6.QtWidgets import (
    QAbstractButton, QApplication, QComboBox, QLineEdit, QListView, QListWidget, QMenu, QPlainTextEdit, QTabBar,
    QTableWidget, QTreeView, QWidget,
)

from fxstudio.qt import run_layout, stall_watch

POLL_MS = 150
CARD_LIMIT = 2000
"""Cards listed at most (the tests use small models; a 10k-node graph must stay usable)."""
ALL_CARDS_UP_TO = 300
"""Up to this many cards every card is listed; above it only those in view, and only the per-node
plot's points in its visible range: a snapshot of 2,000 cards took 50-100 ms of the GUI thread every
``POLL_MS``, which disturbed what ``tests/e2e/test_stalls.py`` measures. The reporter's work is
excluded from the stall watchdog's figures (``stall_watch.excluded``)."""
FORMAT = "fxstudio.test-geometry/1"


def _rect(widget: QWidget) -> list[int] | None:
    if widget is None or not widget.isVisible():
        return None
    top_left = widget.mapToGlobal(QPoint(0, 0))
    return [top_left.x(), top_left.y(), widget.width(), widget.height()]


def _global(widget: QWidget, rect: QRect) -> list[int]:
    top_left = widget.mapToGlobal(rect.topLeft())
    return [top_left.x(), top_left.y(), rect.width(), rect.height()]


def _field_name(key) -> str:
    if isinstance(key, tuple):
        return "field:" + ":".join(str(k) for k in key)
    return f"field:{key}"


class GeometryReporter(QObject):
    """Writes the window's on-screen geometry and state to ``path`` (see the module docstring)."""

    def __init__(self, window, path: str | os.PathLike):
        super().__init__(window)
        self.window = window
        self.path = Path(path)
        self.seq = 0
        self._last: str | None = None
        self._force = False
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.write_if_changed)
        self._timer.start()
        if hasattr(signal, "SIGUSR1"):
            # Python runs the handler between Qt events; the poll timer guarantees there are some.
            signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "_force", True))

    def write_if_changed(self) -> None:
        """Write the snapshot when it differs from the last one written (or SIGUSR1 asked)."""
        with stall_watch.excluded():  # the harness's work is not a stall of the app
            self._write_if_changed()

    def _write_if_changed(self) -> None:
        try:
            state = self.snapshot()
        except RuntimeError:  # a widget deleted under us mid-rebuild: the next poll catches up
            return
        text = json.dumps(state, sort_keys=True)
        if text == self._last and not self._force:
            return
        self._force = False
        self._last = text
        self.seq += 1
        state["seq"] = self.seq
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)

    # ------------------------------------------------------------------ what is written

    def snapshot(self) -> dict:
        """The geometry and state as a JSON-ready dict (without ``seq``)."""
        w = self.window
        doc = w.document
        focus = QApplication.focusWidget()
        current = w.selection.current()
        node = doc.node(current) if doc is not None and current is not None else None
        return {
            "format": FORMAT,
            "title": w.windowTitle(),
            "window": _rect(w),
            "active": w.isActiveWindow(),
            "model": w.spec or (doc.loaded.display_name if doc is not None else None),  # in memory: <memory>::Net
            "edits": doc.history_index if doc is not None else None,
            "read_only": bool(doc.read_only) if doc is not None else None,  # a .pt2's structure while it loads
            "history": list(doc.history[: doc.history_index]) if doc is not None else [],
            "status_edits": w.status_edits.text(),
            "status_message": w.statusBar().currentMessage(),
            "status_lint": w.status_lint.text(),
            "problems": self._problems(),
            "undo_enabled": w.actions["undo"].isEnabled(),
            "redo_enabled": w.actions["redo"].isEnabled(),
            "selected": node.name if node is not None else None,
            "script_path": str(w.script_path) if w.script_path else None,
            "export": _export_state(w.last_export),
            "focus": self._describe(focus),
            "widgets": self._widgets(),
            "cards": self._cards(),
            "folded": self._folded(),
            "view": self._view(),
            "windows": self._other_windows(),
            "run": self._run(),
        }

    def _describe(self, widget: QWidget | None) -> dict | None:
        if widget is None:
            return None
        out = {"class": type(widget).__name__, "name": widget.objectName()}
        panel = self.window.properties
        for key, field in panel.fields.items():
            if widget is field or (isinstance(field, QComboBox) and widget is field.lineEdit()):
                out["field"] = _field_name(key)
                out["text"] = field.currentText()
                out["state"] = field.property("fxsState") or ""
        if isinstance(widget, QLineEdit):
            out["text"] = widget.text()
        return out

    def _widgets(self) -> dict:
        w = self.window
        out: dict[str, list[int] | None] = {"canvas": _rect(w.canvas.viewport())}
        for key, dock in w.docks.items():
            out[f"dock:{key}"] = _rect(dock)
        for key, action in w.actions.items():
            button = w.toolbar.widgetForAction(action)
            if button is not None and button.isVisible():
                out[f"toolbar:{key}"] = _rect(button)
        bar = w.menuBar()
        for action in bar.actions():
            if action.menu() is not None:
                out["menu:" + action.text().replace("&", "")] = _global(bar, bar.actionGeometry(action))
        panel = w.properties
        for key, field in panel.fields.items():
            out[_field_name(key)] = _rect(field)
            out[_field_name(key) + ":state"] = field.property("fxsState") or ""
        for key, button in panel.remove_buttons.items():
            out[f"remove:{key}"] = _rect(button)
        out["name_field"] = _rect(panel.name_field)
        out["target_field"] = _rect(panel.target_field)
        if panel.add_keyword is not None:
            row = panel.add_keyword
            out["add_keyword:name"] = _rect(row.name)
            out["add_keyword:value"] = _rect(row.value)
            out["add_keyword:add"] = _rect(row.add_button)
        for name, link in panel.links.items():
            out[f"link:{name}"] = _rect(link)
        for bar in w.findChildren(QTabBar):  # the tabs of tabified docks ("tab:Run")
            if bar.parent() is w and bar.isVisible():
                for i in range(bar.count()):
                    out["tab:" + bar.tabText(i).replace("&", "")] = _global(bar, bar.tabRect(i))
        out["run:run"] = _rect(w.run_pane.run_button)
        return {k: v for k, v in out.items() if v is not None}

    def _folded(self) -> dict:
        """The collapsed modules' cards in view: path → the global centre of its toggle, and
        whether that is on screen."""
        canvas = self.window.canvas
        scene = getattr(canvas, "canvas_scene", None)
        if scene is None or self.window.document is None or scene.layout is None:
            return {}
        viewport = canvas.viewport()
        visible = viewport.rect()
        out = {}
        for path in scene.index.folded_in(canvas.mapToScene(visible).boundingRect())[:CARD_LIMIT]:
            at = canvas.mapFromScene(scene.group_cards[path].toggle_rect().center())
            g = viewport.mapToGlobal(at)
            out[path] = {"toggle": [g.x(), g.y()], "visible": visible.contains(at)}
        return out

    def _cards(self) -> dict:
        canvas = self.window.canvas
        scene = getattr(canvas, "canvas_scene", None)
        if scene is None or self.window.document is None:
            return {}
        viewport = canvas.viewport()
        visible = viewport.rect()

        def point(p: QPointF) -> list[int]:
            g = viewport.mapToGlobal(canvas.mapFromScene(p))
            return [g.x(), g.y()]

        out = {}
        if len(scene.cards) > ALL_CARDS_UP_TO:  # the scene's index finds the cards in view (made as asked)
            names = scene.index.cards_in(canvas.mapToScene(visible).boundingRect())
        else:
            names = list(scene.cards)
        cards = [(name, scene.cards[name]) for name in names]
        for name, card in cards[:CARD_LIMIT]:
            w, h = card.size()  # the card's body, without the halo its bounding rect leaves for painting
            body = QRectF(card.pos(), QSizeF(w, h))
            box = canvas.mapFromScene(body).boundingRect()
            out[name] = {
                "rect": _global(viewport, box),
                "center": point(body.center()),
                "visible": visible.contains(box.center()),
                "error": card.info.error,  # "torch rejects this node: ..." on a red card, else ""
                "change": card.diff_kind if canvas.changes_shown() else "",  # "changed"/"added" outline
                "rows": [r.label for r in card.info.rows],  # folded weights, as the card lists them
                "shape": card.info.shape,
                "ports": [{"key": p.key if isinstance(p.key, int) else str(p.key), "src": p.src,
                           "at": point(card.port_pos(i))} for i, p in enumerate(card.info.ports)],
            }
        return out

    def _view(self) -> dict:
        """The canvas's zoom (``scale``: 1.0 = 100 %) and its minimap (``minimap``: None while
        hidden, else its ``rect`` and, as drawn in it, ``graph_rect``, ``view_rect`` and a tall
        graph's whole-height ``track``, all global)."""
        canvas = self.window.canvas
        mm = canvas.minimap
        minimap = None
        if mm.isVisible():
            drawn = mm.report()
            minimap = {k: (_global(mm, QRect(*v)) if k in ("graph_rect", "view_rect", "track") and v else v)
                       for k, v in drawn.items()}
            minimap["rect"] = _rect(mm)
        legend = canvas.legend
        changes = legend.changes_label.text() if legend.isVisible() and legend.changes_label.isVisible() else ""
        return {"scale": canvas.zoom(), "minimap": minimap, "legend_changes": re.sub(r"<[^>]*>|&nbsp;", " ", changes)}

    def _problems(self) -> list[dict]:
        """The lint and torch rows of the Problems dock, with each row's screen rectangle while shown."""
        tree = self.window.problems.tree
        out = []
        for i in range(tree.topLevelItemCount()):
            item = tree.topLevelItem(i)
            if item.text(1) in ("lint", "torch"):
                rect = tree.visualItemRect(item)
                out.append({"source": item.text(1), "message": item.text(2), "node": item.text(3),
                            "rect": _global(tree.viewport(), rect) if tree.isVisible() and rect.isValid() else None})
        return out

    def _other_windows(self) -> list[dict]:
        out = []
        for top in QApplication.topLevelWidgets():
            if top is self.window or not top.isVisible() or not top.isWindow():
                continue
            children, texts = {}, {}
            for child in top.findChildren(QWidget):
                if not child.isVisible():
                    continue
                label = child.objectName()
                if not label and isinstance(child, QAbstractButton) and child.text():
                    label = "button:" + child.text().replace("&", "")
                if not label and isinstance(child, (QLineEdit, QListView, QListWidget, QTreeView)):
                    label = f"{type(child).__name__}:{len(children)}"
                if label and not label.startswith("qt_"):
                    children[label] = _rect(child)
                    if child.objectName() and isinstance(child, (QLineEdit, QPlainTextEdit)):
                        texts[child.objectName()] = child.text() if isinstance(child, QLineEdit) else child.toPlainText()
                    if child.objectName() and isinstance(child, QTableWidget):  # its rows, cell by cell
                        texts[child.objectName()] = [
                            [child.item(r, c).text() if child.item(r, c) is not None else ""
                             for c in range(child.columnCount())] for r in range(child.rowCount())]
            if isinstance(top, QMenu):  # an open menu: its entries ("item:data branch")
                for action in top.actions():
                    if action.isVisible() and not action.isSeparator():
                        children["item:" + action.text().replace("&", "")] = _global(top, top.actionGeometry(action))
            out.append({"title": top.windowTitle(), "class": type(top).__name__, "rect": _rect(top),
                        "modal": top.isModal(), "active": top.isActiveWindow(), "widgets": children,
                        "texts": texts})
        return out

    def _run(self) -> dict:
        """The Run dock: busy, its status line, the first divergence, and where each node's point
        of the per-node plot is on screen (``points``: node name → ``[x, y]``, while the plot shows)."""
        pane = self.window.run_pane
        report = pane.report
        first = report.first_divergence if report is not None else None
        points = {}
        plots = pane.plots
        if report is not None and plots.isVisible() and plots.report is report and plots.node_plot.scene() is not None:
            area = plots.viewport().rect()
            # Mapping 2,000 points every poll kept the GUI thread busy while a worker ran (the
            # export of test_stalls): the same plot in the same place has the same points.
            view_range = plots.node_plot.getViewBox().viewRange()
            key = (id(report), tuple(map(tuple, view_range)), area.width(), area.height(), pane.size().toTuple(),
                   plots.viewport().mapToGlobal(QPoint(0, 0)).toTuple(), pane.mapToGlobal(QPoint(0, 0)).toTuple())
            cached = getattr(self, "_points", None)
            if cached is not None and cached[0] == key:
                return {"busy": pane.running, "status": pane.status.text(), "report": True, "stale": pane.stale,
                        "first_divergence": first.name if first is not None else None, "points": cached[1],
                        "layout": cached[2]}
            rows = report.nodes
            if len(rows) > ALL_CARDS_UP_TO:  # the points in the plot's visible range
                (x0, x1), _ = plots.node_plot.getViewBox().viewRange()
                rows = [r for r in rows if x0 <= r.index <= x1]
            for row in rows[:CARD_LIMIT]:
                at = plots.point_position(row.node_id) if row.node_id is not None else None
                if at is None:
                    continue
                local = plots.mapFromScene(QPointF(*at))
                if area.contains(local):
                    g = plots.viewport().mapToGlobal(local)
                    points[row.name] = [g.x(), g.y()]
            self._points = (key, points, run_layout.describe(pane))
            return {"busy": pane.running, "status": pane.status.text(), "report": True, "stale": pane.stale,
                    "first_divergence": first.name if first is not None else None, "points": points,
                    "layout": self._points[2]}
        return {"busy": pane.running, "status": pane.status.text(), "report": report is not None,
                "stale": pane.stale, "first_divergence": first.name if first is not None else None,
                "points": points, "layout": run_layout.describe(pane) if report is not None else {}}


def _export_state(result) -> dict | None:
    if result is None:
        return None
    if isinstance(result, BaseException):
        return {"ok": False, "error": str(result).splitlines()[0] if str(result) else type(result).__name__}
    path = getattr(result, "path", None) or getattr(result, "py_path", None)
    return {"ok": True, "path": str(path) if path is not None else None,
            "verified": bool(getattr(result, "verified", False))}


def install(window, path: str | os.PathLike) -> GeometryReporter:
    """Start reporting ``window``'s geometry to ``path`` (``--test-geometry``)."""
    reporter = GeometryReporter(window, path)
    window.test_geometry = reporter
    return reporter
