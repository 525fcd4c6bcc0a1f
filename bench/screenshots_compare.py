"""Side-by-side screenshots (issue #26): fxstudio, Netron and Model Explorer on the same three files.

``make screenshots`` (which first sets up ``.venv-anchors`` with Netron and Model Explorer, and
Chromium) runs ``python -m bench.screenshots_compare``; ``--models cnn,gpt2`` and
``--tools fxstudio,netron`` limit the set, ``--files DIR`` keeps the built files there for the next
run. Three exported programs (``.pt2``) are built first, in a subprocess of ``.venv``: the
ResNet-style CNN and GPT-2 small (random weights) of ``bench.bench_open.build_archives``, and the
3,000-node MLP of issue #25 (``bench.floor``'s model: 500 blocks of Linear, GELU, Linear, ``* 1.0``,
residual LayerNorm; 3,000 operations and 3,000 weights once exported). Each file is then drawn at
1600×1000 by

* **fxstudio**: ``fxstudio FILE --screenshot OUT --size 1600x1000`` (the first-run window, offscreen);
* **Netron** 9.3.3: its server (``.venv-anchors/bin/netron FILE``) in headless Chromium, the cookie
  notice answered beforehand as for a returning user (``bench_open.netron_page_load`` does the same);
* **Model Explorer** 0.1.34: its server (``model-explorer FILE --no_open_in_browser``) in headless
  Chromium (WebGL on SwiftShader).

Each image is what the tool shows first, without a click. The PNGs go to ``docs/img/compare/``
as ``{cnn,gpt2,mlp3k}_{fxstudio,netron,model_explorer}.png`` (reduced to 256 colours by ImageMagick
where it is installed); a tool that cannot draw a file leaves no image and its reason is printed in
the summary table (and goes in the README's table by hand).
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img" / "compare"
ANCHORS = ROOT / ".venv-anchors" / "bin"
WIDTH, HEIGHT = 1600, 1000
MODELS = ("cnn", "gpt2", "mlp3k")
TOOLS = ("fxstudio", "netron", "model_explorer")
# Flags on top of bench_open._Chromium's (headless, no sandbox, no GPU, 1600x1000): nothing reaches
# out, and WebGL (Model Explorer) draws on SwiftShader.
CHROMIUM_FLAGS = ("--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps", "--hide-scrollbars", "--force-device-scale-factor=1",
                  "--use-angle=swiftshader", "--enable-unsafe-swiftshader")


# ----------------------------------------------------------------------------- files


def build_files(folder: Path) -> None:
    """Export cnn.pt2, gpt2.pt2 (``bench_open.build_archives``) and mlp3k.pt2 into ``folder``."""
    import torch

    from bench.bench_open import build_archives
    from bench.floor import MODEL_SOURCE

    build_archives(folder, quick=False)
    (folder / "mlp.pt2").unlink(missing_ok=True)  # bench_open's 10k-node MLP: not in this set
    if not (folder / "gpt2.pt2").exists():
        raise RuntimeError("gpt2.pt2 was not built: transformers is not importable in this venv")
    namespace: dict = {"__name__": "deep_mlp"}
    exec(compile(MODEL_SOURCE, "deep_mlp.py", "exec"), namespace)  # noqa: S102 - the repository's own model
    torch.manual_seed(0)
    ep = torch.export.export(namespace["Deep"]().eval(), namespace["example_inputs"]())
    torch.export.save(ep, folder / "mlp3k.pt2")
    ops = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    print(f"built mlp3k.pt2: {len(ep.graph.nodes)} nodes ({ops} operations)", flush=True)


# ----------------------------------------------------------------------------- fxstudio


def shoot_fxstudio(path: Path, out: Path, timeout: float = 300) -> None:
    """``fxstudio FILE --screenshot OUT --size 1600x1000`` in a fresh state and config (first run)."""
    with tempfile.TemporaryDirectory(prefix="fxs-compare-") as tmp:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": f"{tmp}/state",
               "FXSTUDIO_CONFIG_DIR": f"{tmp}/config"}
        done = subprocess.run([str(ROOT / ".venv" / "bin" / "fxstudio"), str(path), "--screenshot", str(out),
                               "--size", f"{WIDTH}x{HEIGHT}"], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout)
    if done.returncode or not out.exists():
        raise RuntimeError(_last_line(done.stderr) or f"fxstudio exited {done.returncode}")


# ----------------------------------------------------------------------------- browsers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


class _Server:
    """A tool's web server in ``.venv-anchors``, as a subprocess whose output is kept in a file."""

    def __init__(self, argv: list[str], port: int, timeout: float = 300):
        self.log = tempfile.NamedTemporaryFile(prefix="fxs-compare-server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.url = f"http://127.0.0.1:{port}/"
        start = time.time()
        while True:  # the page answers once the server is up (Model Explorer converts the file first)
            if self.proc.poll() is not None:
                raise RuntimeError(f"{Path(argv[0]).name} exited {self.proc.returncode}: {self.output_tail()}")
            try:
                with urllib.request.urlopen(self.url, timeout=5):
                    break
            except OSError:
                if time.time() - start > timeout:
                    raise RuntimeError(f"{Path(argv[0]).name} did not serve within {timeout:.0f} s") from None
                time.sleep(0.2)

    def output_tail(self) -> str:
        """The server's last output line (its error, when it failed)."""
        return _last_line(Path(self.log.name).read_text(errors="replace"))

    def close(self) -> None:
        """Stop the server and drop its log."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


class _Browser:
    """``bench_open._Chromium`` started through a wrapper that adds ``CHROMIUM_FLAGS``, its viewport
    pinned to 1600×1000 CSS pixels at scale 1."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="fxs-compare-chrome-")
        names = ("chromium", "chromium-browser", "google-chrome")
        exe = next((shutil.which(n) for n in names if shutil.which(n)), None)
        if exe is None:
            raise RuntimeError("no Chromium (apt-get install chromium)")
        self.wrapper = Path(self.folder) / "chromium"
        self.wrapper.write_text(f'#!/bin/sh\nexec {exe} {" ".join(CHROMIUM_FLAGS)} "$@"\n')
        self.wrapper.chmod(0o755)

    def __enter__(self):
        from bench.bench_open import _Chromium

        self.chromium = _Chromium(str(self.wrapper)).__enter__()
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
        return self

    def call(self, method: str, **params) -> dict:
        """One Chrome DevTools command on the page."""
        return self.chromium.call(method, **params)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page."""
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True).get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float, what: str) -> None:
        """Poll ``expression`` until it is truthy; RuntimeError saying ``what`` did not happen."""
        start = time.time()
        while not self.evaluate(expression):
            if time.time() - start > timeout:
                raise RuntimeError(f"{what} within {timeout:.0f} s")
            time.sleep(0.1)

    def settle(self, seconds: float = 1.0, timeout: float = 30) -> None:
        """Wait until two screenshots ``seconds`` apart are equal (animations and lazy drawing done)."""
        start, last = time.time(), None
        while time.time() - start < timeout:
            shot = self.call("Page.captureScreenshot", format="png")["data"]
            if shot == last:
                return
            last = shot
            time.sleep(seconds)

    def save(self, out: Path) -> None:
        """The viewport (1600×1000) as a PNG."""
        data = self.call("Page.captureScreenshot", format="png",
                         clip={"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT, "scale": 1})["data"]
        out.write_bytes(base64.b64decode(data))

    def __exit__(self, *exc):
        self.chromium.__exit__(*exc)
        shutil.rmtree(self.folder, ignore_errors=True)


def shoot_netron(path: Path, out: Path, timeout: float = 300) -> None:
    """Netron's first screen of ``path``: its server, the page, the graph's SVG drawn and settled."""
    port = _free_port()
    server = _Server([str(ANCHORS / "netron"), str(path), "--port", str(port), "--host", "127.0.0.1"], port)
    try:
        with _Browser() as browser:
            # Netron's cookie notice, answered as a returning user has (bench_open does the same).
            browser.call("Network.enable")
            browser.call("Network.setCookie", name="consent", value=str(int(time.time() * 1000)), url=server.url)
            browser.call("Page.navigate", url=server.url)
            error = "(document.getElementById('message-text') || {}).innerText"  # an error is an alert
            drawn = "document.querySelectorAll('#canvas .node, #canvas g.node').length"
            _wait_drawn(browser, drawn, f"document.body.classList.contains('alert') && {error}", timeout,
                        "Netron", lambda: "")
            browser.settle()
            browser.save(out)
    finally:
        server.close()


def _wait_drawn(browser, drawn_js: str, failed_js: str, timeout: float, who: str, detail) -> None:
    """Poll the page until ``drawn_js`` is true; ``RuntimeError`` with the page's error message
    (``failed_js``) or after ``timeout`` s. ``detail()``: text added to either error."""
    start = time.time()
    while not browser.evaluate(drawn_js):
        message = browser.evaluate(failed_js)
        if message:
            raise RuntimeError(f"{who}: {str(message).strip()}{detail()}")
        if time.time() - start > timeout:
            raise RuntimeError(f"{who} drew no graph within {timeout:.0f} s{detail()}")
        time.sleep(0.15)


def shoot_model_explorer(path: Path, out: Path, timeout: float = 300) -> None:
    """Model Explorer's first screen of ``path``: its server converts the file, the page draws it (WebGL)."""
    port = _free_port()
    server = _Server([str(ANCHORS / "model-explorer"), str(path), "--no_open_in_browser", "--host", "127.0.0.1",
                      "--port", str(port)], port)
    try:
        url = _model_explorer_url(server)
        with _Browser() as browser:
            browser.call("Page.navigate", url=url)
            # The info panel lists the graph's node count once the converted graph is loaded and laid out.
            ready = ("document.body.innerText.includes('op node count')"
                     " && !!document.querySelector('webgl-renderer canvas')")
            failed = ("Array.from(document.querySelectorAll("
                      "'.error-message, .error, mat-error, .mat-mdc-snack-bar-label'))"
                      ".map(e => e.innerText).join(' ').trim()")
            _wait_drawn(browser, ready, failed, timeout, "Model Explorer", lambda: f" ({server.output_tail()})")
            browser.settle()
            browser.save(out)
    finally:
        server.close()


def _model_explorer_url(server: _Server) -> str:
    """The address with the model's config (``?data=…``) that the server prints on start."""
    start = time.time()
    while time.time() - start < 30:
        for line in Path(server.log.name).read_text(errors="replace").splitlines():
            if line.startswith("http://"):
                return line.strip()
        time.sleep(0.2)
    raise RuntimeError(f"model-explorer printed no address ({server.output_tail()})")


SHOOTERS = {"fxstudio": shoot_fxstudio, "netron": shoot_netron, "model_explorer": shoot_model_explorer}


# ----------------------------------------------------------------------------- images


def shrink(png: Path) -> None:
    """Strip metadata and reduce to 256 colours (ImageMagick ``convert``), where that is smaller."""
    convert = shutil.which("convert")
    if convert is None:
        return
    small = png.with_suffix(".small.png")
    done = subprocess.run([convert, str(png), "-strip", "-dither", "None", "-colors", "256", f"PNG8:{small}"],
                          capture_output=True)
    if done.returncode == 0 and small.exists() and small.stat().st_size < png.stat().st_size:
        small.replace(png)
    small.unlink(missing_ok=True)


def image_size(png: Path) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    header = png.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")


# ----------------------------------------------------------------------------- main


def _option(argv: list[str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if name not in argv:
        return default
    chosen = tuple(argv[argv.index(name) + 1].split(","))
    unknown = [c for c in chosen if c not in default]
    if unknown:
        raise SystemExit(f"{name}: unknown {', '.join(unknown)} (choose from {', '.join(default)})")
    return chosen


def main(argv: list[str]) -> int:
    """Build the files, draw each with each tool, write the PNGs and print a summary table."""
    if argv[:1] == ["--build"]:
        build_files(Path(argv[1]))
        return 0
    models, tools = _option(argv, "--models", MODELS), _option(argv, "--tools", TOOLS)
    missing = [str(ANCHORS / n) for n, tool in (("netron", "netron"), ("model-explorer", "model_explorer"))
               if tool in tools and not (ANCHORS / n).exists()]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make screenshots` (it sets up .venv-anchors)")
    OUT.mkdir(parents=True, exist_ok=True)
    keep = "--files" in argv  # --files DIR: build there once, reuse on the next run
    folder = Path(argv[argv.index("--files") + 1]) if keep else Path(tempfile.mkdtemp(prefix="fxs-compare-files-"))
    results: dict[tuple[str, str], str] = {}
    try:
        if not all((folder / f"{m}.pt2").exists() for m in MODELS):
            folder.mkdir(parents=True, exist_ok=True)
            start = time.time()
            subprocess.run([sys.executable, "-m", "bench.screenshots_compare", "--build", str(folder)], cwd=ROOT,
                           check=True)
            print(f"files built in {time.time() - start:.0f} s", flush=True)
        for model in models:
            for tool in tools:
                out = OUT / f"{model}_{tool}.png"
                out.unlink(missing_ok=True)  # a tool that fails now leaves no old image behind
                start = time.time()
                try:
                    SHOOTERS[tool](folder / f"{model}.pt2", out)
                except Exception as exc:  # noqa: BLE001 - any reason a tool cannot draw the file is reported
                    out.unlink(missing_ok=True)
                    results[model, tool] = f"not drawn: {exc}"
                else:
                    size = image_size(out)
                    if size != (WIDTH, HEIGHT):
                        results[model, tool] = f"wrong size {size[0]}x{size[1]}"
                    else:
                        shrink(out)
                        results[model, tool] = f"{time.time() - start:.1f} s, {out.stat().st_size // 1024} KB"
                print(f"{model} / {tool}: {results[model, tool]}", flush=True)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n| file | {' | '.join(tools)} |\n|---|{'---|' * len(tools)}")
    for model in models:
        print(f"| {model} | {' | '.join(results[model, tool] for tool in tools)} |")
    return 1 if any(r.startswith(("not drawn", "wrong")) for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
