"""The run pane's inputs editor: the model's example inputs, seeded random tensors from editable
shapes, or a ``.pt`` file of tensors."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QSpinBox, QStackedWidget, QWidget,
)

from fxstudio.core.errors import FxStudioError, RunError
from fxstudio.core.compare import load_inputs_file, parse_input_spec, random_inputs, specs_from_inputs

SOURCES = ["Example inputs", "Random inputs", "Inputs file (.pt)"]


class InputsEditor(QWidget):
    """Chooses where a run's inputs come from; ``inputs(doc)`` builds them (``RunError`` if it cannot)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.source = QComboBox()
        self.source.addItems(SOURCES)
        self.source.setToolTip("Where the run's inputs come from")
        self.example_label = QLineEdit()
        self.example_label.setReadOnly(True)
        self.example_label.setFrame(False)
        self.specs = QLineEdit()
        self.specs.setPlaceholderText("1,3,32,32:float32; 2,16:int64[0,100)")
        self.specs.setToolTip("One shape per input, separated by ';'. Integers take a [low,high) range.")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setPrefix("seed ")
        self.path = QLineEdit()
        self.path.setPlaceholderText("tensors saved with torch.save (loaded weights_only)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)

        random_page = QWidget()
        rl = QHBoxLayout(random_page)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.specs, 1)
        rl.addWidget(self.seed)
        file_page = QWidget()
        fl = QHBoxLayout(file_page)
        fl.setContentsMargins(0, 0, 0, 0)
        fl.addWidget(self.path, 1)
        fl.addWidget(browse)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.example_label)
        self.pages.addWidget(random_page)
        self.pages.addWidget(file_page)
        self.source.currentIndexChanged.connect(self.pages.setCurrentIndex)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.source)
        layout.addWidget(self.pages, 1)

    def set_example_inputs(self, inputs: tuple | None) -> None:
        """Describe the example inputs, and prefill the random shapes from them."""
        inputs = tuple(inputs or ())
        parts = []
        for value in inputs:
            shape = getattr(value, "shape", None)
            parts.append("×".join(map(str, shape)) + f" {str(value.dtype).removeprefix('torch.')}"
                         if shape is not None else type(value).__name__)
        self.example_label.setText("; ".join(parts) if parts else "(the model has none: use random inputs or a file)")
        try:
            self.specs.setText("; ".join(s.text() for s in specs_from_inputs(inputs)))
        except FxStudioError:
            self.specs.setText("")

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Inputs file", "", "PyTorch tensors (*.pt *.pth);;All files (*)")
        if path:
            self.path.setText(path)

    def describe(self) -> str:
        """A short text of the current choice, for the report header."""
        index = self.source.currentIndex()
        if index == 0:
            return "example inputs"
        if index == 1:
            return f"random inputs ({self.specs.text().strip()}, seed {self.seed.value()})"
        return f"inputs from {self.path.text().strip()}"

    def seed_value(self) -> int:
        """The seed torch is reseeded with before each run (0 unless random inputs are chosen)."""
        return self.seed.value() if self.source.currentIndex() == 1 else 0

    def inputs(self, doc) -> tuple:
        """Build the inputs for ``doc`` from the current choice (raises ``RunError``)."""
        index = self.source.currentIndex()
        if index == 0:
            inputs = tuple(doc.loaded.example_inputs or ())
            placeholders = [n for n in doc.original.graph.nodes if n.op == "placeholder"]
            if not inputs and placeholders:
                raise RunError("The model has no example inputs: choose random inputs (give shapes) or a .pt file.")
            return inputs
        if index == 1:
            texts = [t for t in self.specs.text().split(";") if t.strip()]
            if not texts:
                raise RunError("Give one shape per input for random inputs, e.g. 1,3,32,32.")
            return random_inputs([parse_input_spec(t) for t in texts], self.seed.value())
        path = self.path.text().strip()
        if not path:
            raise RunError("Choose a .pt file of input tensors.")
        names = [n.name for n in doc.original.graph.nodes if n.op == "placeholder"]
        return load_inputs_file(path, names)
