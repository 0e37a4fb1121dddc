"""Fixtures for the MCP end-to-end tests: `toolhost serve` driven by the official
MCP Python SDK, over stdio and over streamable HTTP.

Every test gets its own plugins directory (copies of the built guests) and its
own server process(es); compiled code is shared through one cache directory per
test run, so only the first load of each plugin pays for compilation.

Environment:
- `TOOLHOST_BIN`: the `toolhost` binary [default: `$CARGO_TARGET_DIR/debug/toolhost`].
- `TOOLHOST_GUESTS`: the directory of built guest `.wasm` files
  [default: `$CARGO_TARGET_DIR/wasm-guests/wasm32-wasip2/guest`].
- `TOOLHOST_TEST_CACHE_DIR`: reuse this compile cache instead of a fresh one.

`cargo xtask mcp-test` sets the first two after building both.

Protocol revisions: the `protocol` fixture says which one `server.connect()`
speaks: `LEGACY` (2025-11-25: the `initialize` handshake, sessions) or `MODERN`
(2026-07-28: sessionless, found with `server/discover`; tool-list changes come
through `subscriptions/listen`, approvals as Multi Round-Trip Requests). The
shared scenarios run on both.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.client import Client as McpClient
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]

# Hang guards only (never timing assertions): the machine is small and shared,
# and a server's first start compiles its plugins.
STARTUP_S = 120.0
CALL_S = 30.0

#: What an MCP tool name may look like (the server maps every other character to `_`).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: The line `toolhost serve --http` prints on stderr once it listens.
SERVING = re.compile(r"toolhost: serving MCP at (http://\S+)")

#: The guests (file stems under `TOOLHOST_GUESTS`) that "every plugin" means.
ALL_PLUGINS = ("echo", "hostile", "text", "calc", "codec", "json")

#: The protocol revisions the server speaks.
LEGACY = "2025-11-25"
MODERN = "2026-07-28"

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


def _target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def toolhost_bin() -> Path:
    path = Path(os.environ.get("TOOLHOST_BIN") or _target_dir() / "debug" / "toolhost").resolve()
    if not path.is_file():
        raise RuntimeError(f"no toolhost binary at {path}; run `cargo xtask mcp-test` (or set TOOLHOST_BIN)")
    return path


@pytest.fixture(scope="session")
def guests_dir() -> Path:
    path = Path(
        os.environ.get("TOOLHOST_GUESTS") or _target_dir() / "wasm-guests" / "wasm32-wasip2" / "guest"
    ).resolve()
    missing = [name for name in ALL_PLUGINS if not (path / f"{name}.wasm").is_file()]
    if missing:
        raise RuntimeError(f"guests {missing} not built in {path}; run `cargo xtask mcp-test` (or set TOOLHOST_GUESTS)")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the whole run: plugins compile once, not once per test."""
    given = os.environ.get("TOOLHOST_TEST_CACHE_DIR")
    return Path(given).resolve() if given else tmp_path_factory.mktemp("compile-cache")


PluginsFactory = Callable[..., Path]


@pytest.fixture
def make_plugins(tmp_path: Path, guests_dir: Path) -> PluginsFactory:
    """`make_plugins("echo", "calc", renamed={"echo.x": "echo"})`: a fresh plugins
    directory holding copies of those guests (`renamed` maps a new file stem to a guest)."""
    counter = iter(range(1_000_000))

    def make(*names: str, renamed: Mapping[str, str] | None = None) -> Path:
        directory = tmp_path / f"plugins-{next(counter)}"
        directory.mkdir()
        files = {name: name for name in names} | dict(renamed or {})
        for dest, guest in files.items():
            shutil.copyfile(guests_dir / f"{guest}.wasm", directory / f"{dest}.wasm")
        return directory

    return make


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A `redis-server` of this test alone (on a free loopback port, persisting
    nothing), for servers that share a state store: its URL. Stopped after."""
    for _ in range(10):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(tmp_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_S
        while server.poll() is None and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                time.sleep(0.05)
        if server.poll() is None:
            try:
                yield f"redis://127.0.0.1:{port}/0"
            finally:
                server.terminate()
                server.wait(10)
            return
    raise RuntimeError("redis-server could not bind a free loopback port in 10 tries")


@pytest.fixture
def describe(toolhost_bin: Path, cache_dir: Path, tmp_path: Path) -> Callable[[Path, str], dict[str, Any]]:
    """`describe(plugins, tool)`: the tool's declaration as `toolhost describe` prints it
    (the ground truth the MCP listing is compared with)."""

    def run(plugins: Path, tool: str) -> dict[str, Any]:
        out = subprocess.run(
            [str(toolhost_bin), "--plugins", str(plugins), "describe", tool],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=server_env(cache_dir, {"TOOLHOST_LOG": "warn"}),
            timeout=STARTUP_S,
            check=True,
        )
        return json.loads(out.stdout)

    return run


def put_plugin(guests_dir: Path, plugins: Path, guest: str, as_name: str | None = None) -> None:
    """Adds or replaces a plugin file atomically: a hidden temp file, then a rename."""
    dest = plugins / f"{as_name or guest}.wasm"
    temp = plugins / f".{dest.name}.tmp"
    shutil.copyfile(guests_dir / f"{guest}.wasm", temp)
    os.replace(temp, dest)


def server_env(cache: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: none of the caller's `TOOLHOST_*` settings leak in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHOST_")}
    env["TOOLHOST_CACHE_DIR"] = str(cache)
    env["TOOLHOST_LOG"] = "info"
    env.update(extra)
    return env


# --- clients -------------------------------------------------------------------------


class Client:
    """A connected, initialized MCP client session plus what the server sent it."""

    def __init__(self, label: str, protocol: str = LEGACY) -> None:
        self.label = label
        self.protocol = protocol
        self.session: ClientSession
        #: The handshake's result (2025-11-25 only).
        self.init: types.InitializeResult | None = None
        #: The SDK's high-level client (2026-07-28 only): it answers input-required
        #: results (approvals) through the elicitation callback and retries.
        self.mcp: McpClient | None = None
        self.list_changed = 0
        self.notifications: list[Any] = []
        self.errors: list[Exception] = []

    async def on_message(self, message: Any) -> None:
        # Exceptions are what the transport could not parse or deliver (e.g. a non
        # JSON-RPC line on the server's stdout): every session asserts there were none.
        if isinstance(message, Exception):
            self.errors.append(message)
            return
        self.notifications.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed += 1

    @property
    def capabilities(self) -> types.ServerCapabilities:
        capabilities = self.session.server_capabilities
        assert capabilities is not None, f"{self.label}: no server capabilities"
        return capabilities

    @property
    def server_info(self) -> types.Implementation:
        info = self.session.server_info
        assert info is not None, f"{self.label}: no server info"
        return info

    async def call(self, name: str, args: dict[str, Any] | None = None, **kwargs: Any) -> types.CallToolResult:
        with anyio.fail_after(CALL_S):
            if self.mcp is not None:
                return await self.mcp.call_tool(name, args or {}, **kwargs)
            return await self.session.call_tool(name, args or {}, **kwargs)

    async def tools(self) -> dict[str, types.Tool]:
        with anyio.fail_after(CALL_S):
            listed = await self.session.list_tools()
        names = [t.name for t in listed.tools]
        assert len(names) == len(set(names)), f"duplicate tool names: {names}"
        return {t.name: t for t in listed.tools}

    async def wait_list_changed(self, seen: int) -> int:
        """Waits until more than `seen` list_changed notifications arrived; returns the count."""
        with anyio.fail_after(CALL_S):
            while self.list_changed <= seen:
                await anyio.sleep(0.05)
        return self.list_changed


async def _listen(client: Client, listening: anyio.Event) -> None:
    """Counts the tool-list changes of a 2026-07-28 `subscriptions/listen` stream."""
    assert client.mcp is not None
    async with client.mcp.listen(tools_list_changed=True) as subscription:
        listening.set()
        async for _event in subscription:
            client.list_changed += 1


@asynccontextmanager
async def _modern(
    label: str, transport: Any, elicitation: Elicit | None, extensions: Sequence[Any] = ()
) -> AsyncIterator[Client]:
    """A 2026-07-28 client: `server/discover`, then sessionless requests, listening
    for tool-list changes all along. `extensions` are `ClientExtension`s it declares."""
    client = Client(label, MODERN)
    # No response cache: every request must reach the server.
    mcp = McpClient(
        transport,
        mode="auto",
        elicitation_callback=elicitation,
        message_handler=client.on_message,
        cache=None,
        extensions=list(extensions) or None,
    )
    # (No deadline around entering it: a cancel scope must not wrap the
    # client's own task group. The server answers `server/discover` at once.)
    async with mcp:
        client.mcp = mcp
        client.session = mcp.session
        assert client.session.protocol_version == MODERN, client.session.protocol_version
        async with anyio.create_task_group() as tasks:
            listening = anyio.Event()
            tasks.start_soon(_listen, client, listening)
            with anyio.fail_after(CALL_S):
                await listening.wait()
            yield client
            tasks.cancel_scope.cancel()
    assert not client.errors, f"{label}: transport errors: {client.errors!r}"


@asynccontextmanager
async def _session(label: str, read: Any, write: Any, elicitation: Elicit | None) -> AsyncIterator[Client]:
    client = Client(label)
    async with ClientSession(
        read, write, message_handler=client.on_message, elicitation_callback=elicitation
    ) as session:
        client.session = session
        with anyio.fail_after(STARTUP_S):
            client.init = await session.initialize()
        yield client
    assert not client.errors, f"{label}: transport errors: {client.errors!r}"


# --- servers -------------------------------------------------------------------------


class Server:
    """One configured `toolhost serve`; `connect()` opens an initialized session."""

    transport: str

    def __init__(
        self, binary: Path, plugins: Path, workdir: Path, argv: list[str], env: dict[str, str], protocol: str = LEGACY
    ) -> None:
        self.protocol = protocol
        self.binary = binary
        self.plugins = plugins
        self.workdir = workdir
        self.argv = argv
        self.env = env
        self.logs: list[Path] = []

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by this server's live processes
        (found in /proc by their `--plugins DIR` argument; each test's DIR is its own)."""
        needle = f"\0--plugins\0{self.plugins}\0"
        tick = os.sysconf("SC_CLK_TCK")
        total, found = 0.0, False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                if needle not in cmdline or "\0serve\0" not in cmdline:
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            found = True
        assert found, f"no live server process for {self.plugins}"
        return total

    def stderr(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    async def wait_for_log(self, predicate: Callable[[str], bool], what: str) -> str:
        """Waits for a stderr line matching `predicate`; returns it."""
        with anyio.move_on_after(CALL_S):
            while True:
                for line in self.stderr().splitlines():
                    if predicate(line):
                        return line
                await anyio.sleep(0.1)
        raise AssertionError(f"no {what} in the server's stderr within {CALL_S} s:\n{self.stderr()}")

    def connect(self, elicitation: Elicit | None = None, *, extensions: Sequence[Any] = ()) -> Any:
        raise NotImplementedError


class StdioServer(Server):
    """Over stdio every session is its own server process (same options)."""

    transport = "stdio"

    @asynccontextmanager
    async def connect(
        self, elicitation: Elicit | None = None, *, extensions: Sequence[Any] = ()
    ) -> AsyncIterator[Client]:
        log = self.workdir / f"stderr-stdio-{len(self.logs)}.log"
        self.logs.append(log)
        params = StdioServerParameters(
            command=str(self.binary), args=[*self.argv, "serve"], env=self.env, cwd=self.workdir
        )
        label = f"stdio session {len(self.logs)} ({self.protocol})"
        with open(log, "w") as errlog:
            if self.protocol == MODERN:
                async with _modern(label, stdio_client(params, errlog=errlog), elicitation, extensions) as client:
                    yield client
                return
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with _session(label, read, write, elicitation) as client:
                    yield client


class HttpServer(Server):
    """One `toolhost serve --http 127.0.0.1:0` process; sessions share it."""

    transport = "http"
    url: str

    async def start(self) -> None:
        log = self.workdir / "stderr-http.log"
        self.logs.append(log)
        with open(log, "w") as errlog, open(self.workdir / "stdout-http.log", "w") as out:
            self.process = subprocess.Popen(
                [str(self.binary), *self.argv, "serve", "--http", "127.0.0.1:0"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=errlog,
                cwd=self.workdir,
                env=self.env,
            )
        with anyio.fail_after(STARTUP_S):
            while True:
                if found := SERVING.search(self.stderr()):
                    self.url = found.group(1)
                    return
                if self.process.poll() is not None:
                    raise AssertionError(
                        f"toolhost serve --http exited with {self.process.returncode}:\n{self.stderr()}"
                    )
                await anyio.sleep(0.05)

    def stop(self) -> None:
        """Ctrl-C (the server's graceful stop), then a kill if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    @asynccontextmanager
    async def connect(
        self,
        elicitation: Elicit | None = None,
        headers: dict[str, str] | None = None,
        *,
        extensions: Sequence[Any] = (),
    ) -> AsyncIterator[Client]:
        label = f"http session to {self.url} ({self.protocol})"
        async with create_mcp_http_client(headers=headers) as http:
            if self.protocol == MODERN:
                transport = streamable_http_client(self.url, http_client=http)
                async with _modern(label, transport, elicitation, extensions) as client:
                    yield client
                return
            async with streamable_http_client(self.url, http_client=http) as (read, write):
                async with _session(label, read, write, elicitation) as client:
                    yield client


Launch = Callable[..., Any]


def _launcher(cls: type[Server], binary: Path, tmp_path: Path, cache: Path, protocol: str) -> Launch:
    counter = iter(range(1_000_000))

    @asynccontextmanager
    async def launch(
        plugins: Path,
        *,
        config: str | None = None,
        flags: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Server]:
        """Starts `toolhost --plugins PLUGINS [--config toolhost.toml] FLAGS serve`."""
        workdir = tmp_path / f"server-{next(counter)}"
        workdir.mkdir()
        argv = ["--plugins", str(plugins)]
        if config is not None:
            (workdir / "toolhost.toml").write_text(config)
            argv += ["--config", str(workdir / "toolhost.toml")]
        argv += list(flags)
        server = cls(binary, plugins, workdir, argv, server_env(cache, env or {}), protocol)
        try:
            if isinstance(server, HttpServer):
                await server.start()
            yield server
        finally:
            if isinstance(server, HttpServer) and hasattr(server, "process"):
                server.stop()
            # Shown by pytest for a failing test only.
            print(f"--- {cls.transport} server stderr ({' '.join(argv)}) ---\n{server.stderr()}")

    return launch


@pytest.fixture
def protocol() -> str:
    """The revision `server.connect()` speaks; test modules parametrize it."""
    return LEGACY


@pytest.fixture
def launch_stdio(toolhost_bin: Path, tmp_path: Path, cache_dir: Path, protocol: str) -> Launch:
    return _launcher(StdioServer, toolhost_bin, tmp_path, cache_dir, protocol)


@pytest.fixture
def launch_http(toolhost_bin: Path, tmp_path: Path, cache_dir: Path, protocol: str) -> Launch:
    return _launcher(HttpServer, toolhost_bin, tmp_path, cache_dir, protocol)
