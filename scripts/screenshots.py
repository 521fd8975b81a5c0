"""Screenshots of built book pages as a reader sees them: desktop (1280 px), phone (390 px) and desktop
in dark mode, with Debian's headless Chromium.

    .venv/bin/python scripts/screenshots.py [--site _build/html] [--out screenshots]
        [--height 2400] book/claims.html book/errata.html ...

The site is served on localhost (as the browser tests serve it); a phone is a 390 px iframe, since
Chromium's headless windows are at least 500 px wide; dark mode is the reader's switch of the
pydata-sphinx-theme (``data-theme="dark"`` on the page). Writes ``<page>-<view>.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

VIEWS = {"1280": (1280, False), "390": (390, False), "1280-dark": (1280, True)}
FRAME = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{{margin:0;background:#888}}</style></head>'
    '<body><iframe src="/{page}{hash}" style="width:{width}px;height:{height}px;border:0;background:#fff">'
    "</iframe></body></html>"
)
DARK = (  # after the theme's own script has set the mode from the (empty) saved preference
    "<script>window.addEventListener('load', function () { if (location.hash === '#dark') {"
    "document.documentElement.dataset.mode = 'dark'; document.documentElement.dataset.theme = 'dark';}});</script>"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/__frame/"):  # /__frame/<width>/<height>/<page>[#dark]
            width, height, page = self.path[len("/__frame/") :].split("/", 2)
            page, _, dark = page.partition("%23")
            body = FRAME.format(page=page, hash="#dark" if dark else "", width=int(width), height=int(height))
            return self._send(body.encode("utf-8"))
        path = Path(self.translate_path(self.path))
        if path.suffix == ".html" and path.is_file():  # the dark switch, as the reader's toggle sets it
            text = path.read_text(encoding="utf-8").replace("<head>", "<head>" + DARK, 1)
            return self._send(text.encode("utf-8"))
        return super().do_GET()

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def shoot(exe: str, base: str, page: str, view: str, height: int, out: Path) -> Path:
    width, dark = VIEWS[view]
    window = max(width, 500)
    url = f"{base}__frame/{width}/{height}/{page}" + ("%23dark" if dark else "")
    dest = out / f"{Path(page).stem}-{view}.png"
    with tempfile.TemporaryDirectory(prefix="attnflow-shot-") as profile:
        subprocess.run(
            [
                exe,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--window-size={window},{height}",
                "--virtual-time-budget=20000",
                f"--screenshot={dest}",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
    if width < window:  # the phone's frame only
        from PIL import Image

        with Image.open(dest) as im:
            im.crop((0, 0, width, height)).save(dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="+", help="page paths under the site, e.g. book/claims.html")
    ap.add_argument("--site", default="_build/html")
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--height", type=int, default=2400)
    ap.add_argument("--views", default=",".join(VIEWS), help=f"comma-separated, of {', '.join(VIEWS)}")
    args = ap.parse_args(argv)
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("screenshots: headless Chromium not found (apt-get install -y chromium)", file=sys.stderr)
        return 2
    site = Path(args.site).resolve()
    if not (site / "index.html").is_file():
        print(f"screenshots: {site} has no index.html (run `make book` first)", file=sys.stderr)
        return 2
    views = [v for v in args.views.split(",") if v]
    unknown = [v for v in views if v not in VIEWS]
    if unknown:
        print(f"screenshots: unknown view(s) {unknown}; allowed: {', '.join(VIEWS)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for page in args.pages:
            for view in views:
                print(shoot(exe, base, page, view, args.height, out))
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
