# The two commands of the README: `make run` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-torch2 bench screenshot screenshots bundle clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned to the local CPU build, so nothing can pull a multi-GB CUDA build.
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# fxstudio's own failures (no display, a model that does not open) exit 2 after a message that says
# what to do: make adds no "*** Error 2" under it.
run: $(STAMP)
	@$(PY) -m compileall -q -j 0 fxstudio >/dev/null
	@$(VENV)/bin/fxstudio $(MODEL) || [ $$? -eq 2 ]

# tests/e2e drive the real window on Xvfb with xdotool (one X server per pytest worker); without
# those tools they are skipped, and this says so.
E2E_TOOLS := Xvfb xdotool openbox

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/lint-imports
	@missing=""; for t in $(E2E_TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "make test: SKIPPING the end-to-end tests (tests/e2e): missing$$missing" \
			"(apt-get install xvfb xdotool openbox imagemagick; .ci/run does)"; \
	else echo "make test: end-to-end tests (tests/e2e) run on Xvfb + openbox, input through xdotool"; fi
	@# Byte-code for every module, written even where PYTHONDONTWRITEBYTECODE is set: each of the
	@# hundreds of fresh processes the tests start would compile fxstudio's sources again (~0.9 s).
	$(PY) -m compileall -q -j 0 fxstudio tests bench >/dev/null
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist worksteal --durations=20

# The core and CLI tests on a second torch release (pyproject.toml says why this one), in its own venv,
# so a torch upgrade cannot silently switch off a fast path. No CPU build of it is served here: pip
# installs the CUDA build (~4 GB, ~2 min), which runs on the CPU. CI runs it after `make test`.
TORCH2 ?= 2.14.1
VENV2 := .venv-torch2
STAMP2 := $(VENV2)/.installed-$(TORCH2)

$(STAMP2): pyproject.toml
	test -x $(VENV2)/bin/python || $(PYTHON) -m venv $(VENV2)
	$(VENV2)/bin/python -m pip install -q --upgrade pip
	$(VENV2)/bin/python -m pip install -q torch==$(TORCH2)
	$(VENV2)/bin/python -m pip install -q -e '.[test]'
	$(VENV2)/bin/python -c "import torch; assert torch.__version__.startswith('$(TORCH2)'), torch.__version__"
	touch $(STAMP2)

test-torch2: $(STAMP2)
	$(VENV2)/bin/python -m compileall -q -j 0 fxstudio tests bench >/dev/null
	QT_QPA_PLATFORM=offscreen $(VENV2)/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal tests/core tests/cli

bench: $(STAMP)
	# Graphviz dot is the layout benchmark's reference.
	command -v dot >/dev/null || apt-get install -y -q graphviz
	$(PY) -m bench $(BENCH_ARGS)

screenshot: $(STAMP)
	$(VENV)/bin/fxstudio resources/examples/residual_cnn.py --screenshot docs/img/window.png \
		--replay docs/img/window_edits.json --select gelu

# docs/img/compare/: fxstudio, Netron and Model Explorer on the same three .pt2 files at 1600x1000
# (issue #26; bench/screenshots_compare.py). Netron and Model Explorer live in their own venv, pinned,
# with torch's CPU build installed first; headless Chromium draws their pages (a CJK font for the
# 〈 〉 of Netron's tensor shapes). Not part of `make test`; a few minutes.
ANCHORS := .venv-anchors
ANCHORS_STAMP := $(ANCHORS)/.installed-netron-9.3.3-me-0.1.34

$(ANCHORS_STAMP):
	test -x $(ANCHORS)/bin/python || $(PYTHON) -m venv $(ANCHORS)
	$(ANCHORS)/bin/python -m pip install -q --upgrade pip
	$(ANCHORS)/bin/python -c "import torch" 2>/dev/null || $(ANCHORS)/bin/python -m pip install -q torch==2.13.0
	$(ANCHORS)/bin/python -m pip install -q netron==9.3.3 ai-edge-model-explorer==0.1.34
	touch $(ANCHORS_STAMP)

screenshots: $(STAMP) $(ANCHORS_STAMP)
	@need=""; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need="$$need chromium"; \
	fc-list ':charset=3008' | grep -q . || need="$$need fonts-wqy-microhei"; \
	command -v convert >/dev/null || need="$$need imagemagick"; \
	if [ -n "$$need" ]; then echo "make screenshots: apt-get install$$need"; \
		apt-get update -q && apt-get install -y -q $$need; fi
	$(PY) -m bench.screenshots_compare $(SCREENSHOTS_ARGS)

# The desktop bundle dist/fxstudio/ (PyInstaller one-folder; ~1.1 GB, a few minutes), then its smoke
# test. PyInstaller is pinned here only: neither the app nor `make test` needs it.
bundle: $(STAMP)
	$(PY) -m pip install -q pyinstaller==6.22.3 pyinstaller-hooks-contrib==2026.9
	$(PY) -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller packaging/fxstudio.spec
	packaging/smoke_test.sh dist/fxstudio/fxstudio

clean:
	rm -rf $(VENV) build *.egg-info
