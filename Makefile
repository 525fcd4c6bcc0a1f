# The two commands of the README: `make run` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench screenshot bundle clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned to the local CPU build, so nothing can pull a multi-GB CUDA build.
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/fxstudio $(MODEL)

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/lint-imports
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider -n 2

bench: $(STAMP)
	# Graphviz dot is the layout benchmark's reference.
	command -v dot >/dev/null || apt-get install -y -q graphviz
	$(PY) -m bench $(BENCH_ARGS)

screenshot: $(STAMP)
	$(VENV)/bin/fxstudio resources/examples/residual_cnn.py --screenshot docs/img/window.png \
		--replay docs/img/window_edits.json --select gelu

# The desktop bundle dist/fxstudio/ (PyInstaller one-folder; ~1.1 GB, a few minutes), then its smoke
# test. PyInstaller is pinned here only: neither the app nor `make test` needs it.
bundle: $(STAMP)
	$(PY) -m pip install -q pyinstaller==6.22.3 pyinstaller-hooks-contrib==2026.9
	$(PY) -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller packaging/fxstudio.spec
	packaging/smoke_test.sh dist/fxstudio/fxstudio

clean:
	rm -rf $(VENV) build *.egg-info
