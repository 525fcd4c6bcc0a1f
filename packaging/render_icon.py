"""Draw ``resources/icon.png`` (256x256) from ``resources/icon.svg`` with QtSvg, offscreen.

Run after editing the SVG: ``QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icon.py``.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = 256


def render(svg: Path, png: Path, size: int = SIZE) -> None:
    """Render ``svg`` into a transparent ``size`` x ``size`` PNG at ``png``."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])  # noqa: F841 - fonts/painter need it
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    if not image.save(str(png), "PNG"):
        raise SystemExit(f"could not write {png}")


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    render(ROOT / "resources" / "icon.svg", ROOT / "resources" / "icon.png")
    print(f"wrote {ROOT / 'resources' / 'icon.png'}")
