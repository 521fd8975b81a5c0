"""Bounded network waits (issue 15.6): a Hub that answers the reachability probe and then stalls
costs at most the deadline before the stand-in is used with a one-line notice."""

import http.server
import os
import subprocess
import sys
import threading
import time

import pytest

CHILD = r"""
import time
from attnflow.data import sources
from attnflow.data.tasks import SPECS
t = time.monotonic()
res = sources.resolve(SPECS["squad"], "auto")
print(f"STANDIN={res.standin} SECONDS={time.monotonic() - t:.1f}")
print(res.line)
try:
    sources.resolve(SPECS["squad"], "hub")
except sources.DataSourceError as e:
    print("HUBERROR", e)
"""


class _Stalling(http.server.BaseHTTPRequestHandler):
    requests: list = []

    def do_HEAD(self):  # the probe is answered at once, the rest stalls
        self.requests.append(("HEAD", self.path))
        if self.path != "/api/status":
            time.sleep(60)
            return
        self.send_response(200)
        self.end_headers()

    def do_GET(self):  # everything else: no answer for a minute
        self.requests.append(("GET", self.path))
        time.sleep(60)

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def stalling_hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stalling)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Stalling.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_hub_that_answers_then_stalls_falls_back_within_the_deadline(stalling_hub, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env.update(
        HF_ENDPOINT=stalling_hub,
        ATTNFLOW_HUB_DEADLINE="4",
        HF_HOME=str(tmp_path / "hf"),
        HF_HUB_ETAG_TIMEOUT="30",
        HF_HUB_DOWNLOAD_TIMEOUT="30",
    )
    t = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    wall = time.monotonic() - t
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("STANDIN=True"), out.stdout
    assert float(lines[0].split("SECONDS=")[1]) < 4 + 20  # the deadline (+ importing datasets), not the minute
    assert lines[1].count("\n") == 0 and "offline stand-in" in lines[1]
    assert "did not finish within 4 s" in lines[1]
    assert lines[2].startswith("HUBERROR") and "did not finish within 4 s" in lines[2]
    assert ("HEAD", "/api/status") in _Stalling.requests and len(_Stalling.requests) > 1
    assert wall < 60
