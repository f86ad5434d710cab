"""`make lab`: a real Jupyter server, with the repository's configuration, serves the chapters as notebooks.

One JupyterLab server (``python -m jupyterlab``, what ``make lab`` runs) listens on
127.0.0.1 with a random port and a token, with the repository's configuration as
``make lab`` passes it (``JUPYTER_CONFIG_PATH=.jupyter``, ``JUPYTER_PATH=.jupyter``,
``jupytext.toml``) and none of the user's, on a copy of the book in a temporary
folder (saving writes the copy, never the repository). Through its REST API and
its kernel websocket, as JupyterLab does:

* a chapter opens as a notebook (Jupytext's contents manager), its parameters
  cell tagged ``parameters``, and a double click opens a ``.md`` with the
  "Jupytext Notebook" viewer;
* saving an unedited chapter (also after running it) leaves its ``.md``
  byte-identical, for every chapter;
* the centering chapter's cells that its explorer needs (all up to its sweep,
  then the explorer's) run on a kernel of the server at ``scale = "ci"``; its
  explorer redraws (a PNG comes back) when called with other values and when
  a slider is moved and "redraw" pressed, and impossible layers print the one
  line ``not available: ...`` instead of a traceback.
"""

import copy
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server", reason="jupyter_server is not installed (pip install -r requirements.txt)")

from bookrun.batch import is_chapter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("*.md") if is_chapter(p))
LIVE_CHAPTER = "centering.md"
START_TIMEOUT = 90  # seconds for the server to answer /api/status
CELL_TIMEOUT = 600  # seconds for one cell (the first explorer redraw compiles a new shape)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `jupyter lab` subprocess and a small client for its REST API."""

    def __init__(self, root: Path, home: Path):
        self.root = root
        self.port = _free_port()
        self.token = uuid.uuid4().hex
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "server.log"
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)  # the kernel's inline backend sends figures as image/png
        env.update(
            JUPYTER_CONFIG_PATH=str(ROOT / ".jupyter"),  # the repository's config, as `make lab`
            JUPYTER_PATH=str(ROOT / ".jupyter"),  # and its kernelspec
            JUPYTER_CONFIG_DIR=str(home / "config"),  # no ~/.jupyter
            JUPYTER_DATA_DIR=str(home / "data"),  # no user kernelspecs
            JUPYTER_RUNTIME_DIR=str(home / "runtime"),
            IPYTHONDIR=str(home / "ipython"),  # no user startup files in the kernel
        )
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env["JUPYTER_WIDGETS_ECHO"] = "1"  # the kernel echoes slider values (ipywidgets 8's default)
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # containers and CI runners
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.request("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.25)
        raise TimeoutError(f"jupyter lab did not answer /api/status within {START_TIMEOUT} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def request(self, method: str, path: str, body=None, **query):
        url = self.url + urllib.parse.quote(path) + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                text = resp.read()
        except urllib.error.HTTPError as err:
            raise AssertionError(f"{method} {path}: HTTP {err.code} {err.read()[:2000]!r}") from None
        return json.loads(text) if text else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for name in ("book", "jupytext.toml", "_config.yml", "_toc.yml"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
        elif src.exists():
            shutil.copy2(src, root / name)
    srv = Server(root, tmp_path_factory.mktemp("jupyter-home"))
    yield srv
    srv.stop()


def _open(server, name: str) -> dict:
    """GET a chapter as JupyterLab's notebook viewer does."""
    model = server.request("GET", f"/api/contents/book/{name}", type="notebook", content=1)
    assert model["type"] == "notebook" and model["format"] == "json", model["type"]
    return model


def _save(server, name: str, nb: dict) -> None:
    """PUT a notebook model back as JupyterLab's save does."""
    server.request("PUT", f"/api/contents/book/{name}", {"type": "notebook", "format": "json", "content": nb})


# --- the chapters as notebooks ------------------------------------------------------


def test_chapters_are_found():
    assert LIVE_CHAPTER in CHAPTERS and len(CHAPTERS) >= 5, CHAPTERS


def test_chapter_opens_as_notebook(server):
    nb = _open(server, LIVE_CHAPTER)["content"]
    assert nb["nbformat"] == 4
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"]["jupytext"]["text_representation"]["format_name"] == "myst"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 5 and any(c["cell_type"] == "markdown" for c in nb["cells"])
    params = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(params) == 1, "one cell tagged 'parameters'"
    assert re.search(r'^scale = "default"$', params[0]["source"], re.M), params[0]["source"]
    assert any("explore = bookrun.explore.explorer(" in c["source"] for c in code)


def test_markdown_opens_with_the_notebook_viewer(server):
    """A double click on a .md uses Jupytext's notebook viewer (.jupyter/labconfig)."""
    plugin = server.request("GET", "/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    viewers = plugin["schema"]["properties"]["defaultViewers"]["default"]
    assert viewers.get("markdown") == "Jupytext Notebook", viewers


def _as_after_a_run(nb: dict, spec: dict) -> dict:
    """What JupyterLab changes in a notebook that was run and looked at, no cell edited.

    ``spec`` is the server's kernelspec: JupyterLab copies it into the notebook's
    ``kernelspec``, as ``{name, display_name, language}``, when the kernel starts
    (``NotebookPanel._updateSpec``). Headings collapsed and inputs or outputs hidden
    are cell metadata, outputs and execution counts come with a run.
    """
    nb = copy.deepcopy(nb)
    kernel = {"name": "python3", "display_name": spec["display_name"], "language": spec["language"]}
    nb["metadata"]["kernelspec"] = kernel
    nb["metadata"]["language_info"] = {"name": "python", "version": sys.version.split()[0], "mimetype": "text/x-python"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for i, cell in enumerate(nb["cells"]):
        cell["metadata"].update(collapsed=False, scrolled=True, trusted=True)
        cell["metadata"]["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
        if cell["cell_type"] == "markdown" and cell["source"].lstrip().startswith("#"):
            cell["metadata"]["jp-MarkdownHeadingCollapsed"] = True
        if cell["cell_type"] == "code":
            cell["execution_count"] = i + 1
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00.000Z"}
            figure = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
            cell["outputs"] = [
                {"output_type": "stream", "name": "stdout", "text": "printed\n"},
                {"output_type": "display_data", "data": figure, "metadata": {}},
            ]
    return nb


@pytest.mark.parametrize("name", CHAPTERS)
def test_saving_unedited_chapter_keeps_the_md(server, name):
    """JupyterLab's open and save, unedited and after a run, rewrite the .md byte for byte."""
    path = server.root / "book" / name
    before = path.read_bytes()
    assert before == (ROOT / "book" / name).read_bytes()
    nb = _open(server, name)["content"]
    _save(server, name, nb)
    assert path.read_bytes() == before, f"saving the unedited {name} changed it"
    assert (server.root / "_notebooks" / name).with_suffix(".ipynb").is_file(), "paired notebook (jupytext.toml)"
    spec = server.request("GET", "/api/kernelspecs")["kernelspecs"]["python3"]["spec"]
    assert spec["display_name"] == nb["metadata"]["kernelspec"]["display_name"], "see .jupyter/kernels/python3"
    _save(server, name, _as_after_a_run(nb, spec))
    assert path.read_bytes() == before, f"saving {name} after running it changed it"
    reopened = _open(server, name)["content"]  # the paired .ipynb, now newer, does not block reopening
    assert [c["source"] for c in reopened["cells"]] == [c["source"] for c in nb["cells"]]


# --- the chapter live on a kernel -----------------------------------------------------


class KernelChannel:
    """The kernel's websocket (`/api/kernels/<id>/channels`), as JupyterLab talks to it.

    Keeps the state of every widget the kernel opened or updated (``widgets``).
    """

    def __init__(self, server, kernel_id: str):
        import websocket  # websocket-client, a dependency of jupyter_server

        self.session = uuid.uuid4().hex
        url = f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {server.token}"], timeout=60)
        self._timeout = websocket.WebSocketTimeoutException
        self.widgets: dict[str, dict] = {}

    def close(self):
        self.ws.close()

    def send(self, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": "test",
            "session": self.session,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "version": "5.3",
        }
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "buffers": []}
        self.ws.send(json.dumps({**msg, "channel": "shell"}))
        return msg_id

    def collect(self, msg_id: str, want_reply: bool, timeout: float = CELL_TIMEOUT) -> tuple[list, dict | None]:
        """The iopub messages caused by request ``msg_id`` until the kernel is idle (and its reply)."""
        out, reply, idle = [], None, False
        deadline = time.monotonic() + timeout
        while not idle or (want_reply and reply is None):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from the kernel within {timeout} s; so far: {_summary(out)}")
            self.ws.settimeout(left)
            try:
                msg = json.loads(self.ws.recv())
            except self._timeout:
                continue
            self._track_widgets(msg)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if msg["channel"] == "shell" and kind.endswith("_reply"):
                reply = msg["content"]
            elif msg["channel"] == "iopub":
                if kind == "status":
                    idle = msg["content"]["execution_state"] == "idle"
                else:
                    out.append(msg)
        return out, reply

    def execute(self, code: str) -> list:
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
        msg_id = self.send("execute_request", {**content, "stop_on_error": True})
        out, reply = self.collect(msg_id, want_reply=True)
        errors = [m["content"] for m in out if m["header"]["msg_type"] == "error"]
        assert reply["status"] == "ok" and not errors, f"{code[:300]}\n{_tracebacks(errors or [reply])}"
        return out

    def comm(self, comm_id: str, data: dict) -> list:
        """A widget message from the "frontend"; the kernel's output in answer."""
        return self.collect(self.send("comm_msg", {"comm_id": comm_id, "data": data}), want_reply=False)[0]

    def _track_widgets(self, msg):
        kind = msg["header"]["msg_type"]
        if kind == "comm_open" and msg["content"].get("target_name") == "jupyter.widget":
            self.widgets[msg["content"]["comm_id"]] = dict(msg["content"]["data"].get("state", {}))
        elif kind == "comm_msg" and msg["content"]["comm_id"] in self.widgets:
            data = msg["content"]["data"]
            if data.get("method") in ("update", "echo_update"):
                self.widgets[msg["content"]["comm_id"]].update(data.get("state", {}))


def _summary(out: list) -> list:
    return [m["header"]["msg_type"] for m in out]


def _tracebacks(contents: list) -> str:
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    return "\n".join(ansi.sub("", "\n".join(c.get("traceback", []))) or str(c) for c in contents)


def _pngs(out: list) -> list:
    shown = [m for m in out if m["header"]["msg_type"] in ("display_data", "execute_result")]
    return [m for m in shown if "image/png" in m["content"]["data"]]


def _stdout(out: list) -> str:
    return "".join(m["content"]["text"] for m in out if m["header"]["msg_type"] == "stream")


def _assert_not_available(out: list, what: str):
    """The explorer's answer to an impossible layer: one line, no figure, no traceback."""
    assert not [m for m in out if m["header"]["msg_type"] == "error"]
    assert not _pngs(out), "no figure for an impossible layer"
    text = _stdout(out)
    assert re.fullmatch(r"not available: [^\n]+\n", text), repr(text)
    assert what in text, text


@pytest.fixture
def live(server):
    """The live chapter's notebook (from the server) and a kernel session on it."""
    nb = _open(server, LIVE_CHAPTER)["content"]
    session = server.request(
        "POST",
        "/api/sessions",
        {"path": f"book/{LIVE_CHAPTER}", "type": "notebook", "name": LIVE_CHAPTER, "kernel": {"name": "python3"}},
    )
    channel = None
    try:
        channel = KernelChannel(server, session["kernel"]["id"])
        yield nb, channel
    finally:
        if channel is not None:
            channel.close()
        server.request("DELETE", f"/api/sessions/{session['id']}")  # shuts the kernel down


def _explorer_cells(nb) -> list[dict]:
    """The chapter's code cells that its explorer needs: every cell up to its sweep (imports, parameters,
    layers, keys, the measurement, the sweep, whose seed 0 is the explorer's default state), then the
    explorer's. The cells between, the chapter's checks and figures, are executed by the chapter tests
    (nbval) in the same run; here they would only repeat them."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    sweep = [i for i, c in enumerate(code) if "sweep = gelib.sweeps.run(" in c["source"]]
    explorer = [i for i, c in enumerate(code) if "explore = bookrun.explore.explorer(" in c["source"]]
    assert sweep and explorer and sweep[0] < explorer[0], "the chapter has no sweep followed by an explorer cell"
    return code[: sweep[0] + 1] + code[explorer[0] :]


def test_explorer_redraws_on_a_server_kernel(live):
    nb, kernel = live
    explorer_out = None
    for cell in _explorer_cells(nb):
        out = kernel.execute(cell["source"])
        if "parameters" in cell["metadata"].get("tags", []):
            kernel.execute('scale = "ci"')  # injected after the parameters cell, as the batch and CI do
        if "explore = bookrun.explore.explorer(" in cell["source"]:
            explorer_out = out
    assert explorer_out is not None, "the chapter has no explorer cell"
    assert _pngs(explorer_out), "the explorer draws its default state"
    view = "application/vnd.jupyter.widget-view+json"
    views = [m["content"]["data"][view]["model_id"] for m in explorer_out if view in m["content"].get("data", {})]
    assert len(views) == 1, "the explorer displays its sliders"

    # Called with another value of a slider: a new figure.
    out = kernel.execute("explore(beta=2.0)")
    assert _pngs(out), f"explore(beta=2.0) drew nothing: {_summary(out)} {_stdout(out)!r}"

    # The sliders, as the browser moves them: set beta, press "redraw".
    children = [c.removeprefix("IPY_MODEL_") for c in kernel.widgets[views[0]]["children"]]
    by_description = {kernel.widgets[c].get("description"): c for c in children if c in kernel.widgets}
    assert {"beta", "h", "d_k", "redraw"} <= set(by_description), by_description
    out = kernel.comm(by_description["beta"], {"method": "update", "state": {"value": 2.5}, "buffer_paths": []})
    assert not [m for m in out if m["header"]["msg_type"] == "error"], _tracebacks([m["content"] for m in out])
    assert kernel.widgets[by_description["beta"]]["value"] == 2.5
    out = kernel.comm(by_description["redraw"], {"method": "custom", "content": {"event": "click"}})
    assert not [m for m in out if m["header"]["msg_type"] == "error"], _tracebacks([m["content"] for m in out])
    assert _pngs(out), f"redraw after moving the beta slider drew nothing: {_summary(out)} {_stdout(out)!r}"

    # Impossible layers: the chapter's one-line message, no traceback.
    _assert_not_available(kernel.execute("explore(h=0)"), "h must be positive")
    _assert_not_available(kernel.execute("explore(beta=-1.0)"), "beta must be positive")
    _assert_not_available(kernel.execute("explore(d_k=3.5)"), "d_k must be an integer")
