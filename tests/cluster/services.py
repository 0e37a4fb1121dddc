"""The cluster's services, free of any MCP client (so the interop suite, whose
frameworks pin mcp 1.x, runs them too): redis-server, three `toolhost serve
--http` replicas sharing one plugins directory and one Redis, nginx in front of
them (round robin, no affinity: docs/deploy.md's block) and prometheus scraping
them, all on loopback ports in the test's temp dir.

`running_cluster(root, config=..., nginx_port=...)` starts them and stops them on
exit, also when the test fails; `config` adds to the replicas' configuration,
some of it naming nginx's URL (`[serve.auth] resource`: see test_cluster_auth.py).

Environment (set by the xtasks):
- `TOOLHOST_BIN`: the `toolhost` binary.
- `TOOLHOST_GUESTS`: the directory of built guest `.wasm` files.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

#: Hang guards only (never timing assertions): the machine is small and shared.
STARTUP_S = 120.0
CALL_S = 30.0

#: The response header naming the replica that answered.
REPLICA = "x-toolhost-replica"

#: What `toolhost serve --http` prints once it listens.
# The whole line: a log file read while it is written may hold part of it.
SERVING = re.compile(r"toolhost: serving MCP at (http://\S+)\n")

#: The key ring every replica shares (approval states sealed by one open on all).
KEYS = "cluster-1 " + "c1" * 20

CONFIG = """\
[state]
url = "redis://127.0.0.1:{redis}/0"

[confirm]
tools = ["echo", "slow_job"]

[limits]
timeout_ms = 20000

[plugin.hostile.limits]
timeout_ms = 3000                 # `sleep_forever` ends with a clear error
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, check: Any, timeout: float = STARTUP_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout} s")


@dataclass
class Process:
    """A service the test started: its log, and a stop that always happens."""

    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=self.env, cwd=self.cwd
            )
        return self

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(15)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)

    def kill9(self) -> None:
        assert self.popen is not None
        self.popen.kill()
        self.popen.wait(10)


@dataclass
class Replica:
    name: str
    process: Process
    url: str = ""

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])


@dataclass
class Cluster:
    root: Path
    plugins: Path
    redis_port: int
    replicas: list[Replica]
    nginx_port: int
    prometheus_port: int
    processes: list[Process] = field(default_factory=list)
    #: The bearer token every replica wants (`[serve] token_file`), if any.
    token: str | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint behind nginx."""
        return f"http://127.0.0.1:{self.nginx_port}/mcp"

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends with every request: the token, if there is one."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def logs(self) -> str:
        return logs(self.processes)


def logs(processes: list[Process]) -> str:
    return "\n".join(f"--- {p.name} ({p.log}) ---\n{p.text()[-20000:]}" for p in processes)


def start_redis(root: Path, processes: list[Process]) -> int:
    port = free_port()
    data = root / "redis"
    data.mkdir()
    redis = Process(
        "redis-server",
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(data)],
        root / "redis.log",
    ).start()
    processes.append(redis)

    def pong() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    wait_until("redis-server answering PING", pong, 30)
    return port


#: The paths docs/deploy.md's unit names, and what the cluster has there.
UNIT_PATHS = ("/usr/local/bin/toolhost", "/etc/toolhost", "/srv/toolhost/plugins", "/var/cache/toolhost")


def unit_paths(root: Path, plugins: Path, etc: Path) -> dict[str, str]:
    """The cluster's paths for the unit's: `etc` holds what the page puts in
    `/etc/toolhost` (the configuration, the keys, the token)."""
    return dict(zip(UNIT_PATHS, (os.environ["TOOLHOST_BIN"], str(etc), str(plugins), str(root / "cache")), strict=True))


def page_unit(n: int, paths: dict[str, str]) -> str:
    """docs/deploy.md's systemd unit for replica `n`, its paths the cluster's."""
    unit = page_block("ini").replace("%i", str(n))
    for page, here in paths.items():
        assert page in unit, f"{page} is not in the unit"
        unit = unit.replace(page, here)
    return unit


def unit_command(unit: str, n: int, credentials: Path) -> tuple[list[str], dict[str, str]]:
    """What a unit runs: its `ExecStart` (listening on a free port, not the
    page's) and its `Environment`, with its `LoadCredential`s copied into
    `credentials` (read-only, as systemd does) and `%d` naming it."""
    argv: list[str] = []
    env: dict[str, str] = {}
    credentials.mkdir(parents=True, exist_ok=True)
    for line in unit.splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = shlex.split(value.replace("%d", str(credentials)))
        elif key == "Environment":
            name, _, setting = value.partition("=")
            env[name] = setting
        elif key == "LoadCredential":
            name, _, source = value.partition(":")
            copy = credentials / name
            shutil.copyfile(source, copy)
            copy.chmod(0o400)
    page_listen = f"127.0.0.1:838{n}"
    assert page_listen in argv, f"the unit's ExecStart does not listen on {page_listen}: {argv}"
    return [("127.0.0.1:0" if arg == page_listen else arg) for arg in argv], env


def write_etc(root: Path, redis_port: int, config: str, token: bool) -> tuple[Path, str]:
    """What the page puts in /etc/toolhost, in `root/etc`: the configuration
    (`CONFIG` and `config`, which may only add tables), the key ring every
    replica shares (approval states sealed by one open on all) and the token
    (Prometheus reads it too). Returns the directory and the token."""
    etc = root / "etc"
    etc.mkdir()
    (etc / "state-keys").write_text(KEYS + "\n")
    secret = secrets.token_hex(32)
    (etc / "mcp-token").write_text(secret + "\n")
    for secret_file in ("state-keys", "mcp-token"):
        (etc / secret_file).chmod(0o600)
    # As the page's: nginx is every connection's peer.
    serve = 'state_key_file = "state-keys"\nmax_connections_per_peer = 256\n' + (
        'token_file = "mcp-token"\n' if token else ""
    )
    config = config.replace("[serve]\n", "[serve]\n" + serve, 1) if "[serve]\n" in config else (
        f"{config}\n[serve]\n{serve}"
    )
    (etc / "toolhost.toml").write_text(CONFIG.format(redis=redis_port) + "\n" + config)
    return etc, secret


def _start_replica(
    n: int, root: Path, plugins: Path, etc: Path, processes: list[Process], extra: dict[str, str]
) -> Replica:
    unit = page_unit(n, unit_paths(root, plugins, etc))
    argv, unit_env = unit_command(unit, n, root / f"credentials-{n}")
    name = unit_env["TOOLHOST_REPLICA"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHOST_")} | unit_env | extra
    env |= {"TOOLHOST_LOG": extra.get("TOOLHOST_LOG", "info")}
    process = Process(name, argv, root / f"{name}.log", env=env, cwd=root).start()
    processes.append(process)
    replica = Replica(name, process)

    def serving() -> str | None:
        if not process.alive():
            raise AssertionError(f"{name} exited:\n{process.text()}")
        found = SERVING.search(process.text())
        return found.group(1) if found else None

    replica.url = wait_until(f"{name} serving", serving)
    return replica


def wait_ready(replica: Replica) -> None:
    def ready() -> bool:
        try:
            return httpx2.get(f"http://127.0.0.1:{replica.port}/readyz", timeout=5).status_code == 200
        except httpx2.HTTPError:
            return False

    wait_until(f"{replica.name} ready", ready)


ROOT = Path(__file__).resolve().parents[2]
#: The page whose nginx and Prometheus configuration the cluster runs.
DEPLOY = ROOT / "docs" / "deploy.md"
#: The replica addresses and the listen address the page uses.
PAGE_REPLICAS = ["127.0.0.1:8381", "127.0.0.1:8382", "127.0.0.1:8383"]
PAGE_LISTEN = "127.0.0.1:8080"


def page_block(lang: str) -> str:
    """The one fenced block of `lang` in docs/deploy.md."""
    blocks = re.findall(rf"^```{lang}\n(.*?)^```", DEPLOY.read_text(), re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"{DEPLOY} should hold one {lang} block, not {len(blocks)}"
    return blocks[0]


def with_ports(text: str, replicas: list[Replica], listen: str | None = None) -> str:
    for page, replica in zip(PAGE_REPLICAS, replicas, strict=True):
        assert page in text, f"{page} is not in the block"
        text = text.replace(page, f"127.0.0.1:{replica.port}")
    if listen is not None:
        assert PAGE_LISTEN in text, f"{PAGE_LISTEN} is not in the block"
        text = text.replace(PAGE_LISTEN, listen)
    return text


#: What runs nginx unprivileged in a temp dir, around the page's `http` content.
NGINX = """\
worker_processes 1;
daemon off;
user root;
pid {root}/nginx.pid;
error_log {root}/nginx-error.log info;
events {{ worker_connections 1024; }}
http {{
    access_log {root}/nginx-access.log;
    client_body_temp_path {root}/nginx-tmp/body;
    proxy_temp_path {root}/nginx-tmp/proxy;
    fastcgi_temp_path {root}/nginx-tmp/fastcgi;
    uwsgi_temp_path {root}/nginx-tmp/uwsgi;
    scgi_temp_path {root}/nginx-tmp/scgi;
{page}
}}
"""

#: The scrape interval of the test (the page leaves Prometheus's default).
PROMETHEUS = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
"""


@contextmanager
def running_cluster(
    root: Path,
    *,
    config: str = "",
    nginx_port: int | None = None,
    env: dict[str, str] | None = None,
    token: bool = True,
) -> Iterator[Cluster]:
    """Starts the cluster in `root` and stops it on exit, also on failure (then
    printing every service's log, which pytest shows for a failing test).

    `config`: TOML appended to the replicas' `CONFIG` (after its tables, so it
    may only add tables). `nginx_port`: the port nginx listens on, for a config
    that must name the URL clients reach (`[serve.auth] resource`) before the
    replicas start [default: a free one chosen after they are ready]. `env`:
    more of the replicas' environment (`OTEL_*`, say). `token`: whether the
    replicas want a bearer token (`Cluster.headers`), as the page's do; not
    with a config of `[serve.auth]` (OAuth).
    """
    guests = Path(os.environ["TOOLHOST_GUESTS"])
    plugins = root / "plugins"
    plugins.mkdir()
    shutil.copyfile(guests / "echo.wasm", plugins / "echo.wasm")
    shutil.copyfile(guests / "hostile.wasm", plugins / "hostile.wasm")
    processes: list[Process] = []
    try:
        redis_port = start_redis(root, processes)
        etc, secret = write_etc(root, redis_port, config, token)
        # The first replica compiles the plugins into the shared cache alone.
        extra = env or {}
        replicas = [_start_replica(1, root, plugins, etc, processes, extra)]
        wait_ready(replicas[0])
        replicas += [_start_replica(n, root, plugins, etc, processes, extra) for n in (2, 3)]
        for replica in replicas:
            wait_ready(replica)

        if nginx_port is None:
            nginx_port = free_port()
        (root / "nginx-tmp").mkdir()
        page = with_ports(page_block("nginx"), replicas, f"127.0.0.1:{nginx_port}")
        nginx_conf = root / "nginx.conf"
        nginx_conf.write_text(NGINX.format(root=root, page=page))
        nginx = Process("nginx", ["nginx", "-c", str(nginx_conf), "-p", str(root)], root / "nginx.log")
        processes.append(nginx.start())

        def proxied() -> bool:
            if not nginx.alive():
                error_log = root / "nginx-error.log"
                errors = error_log.read_text(errors="replace") if error_log.exists() else ""
                raise AssertionError(f"nginx exited (port {nginx_port} taken?):\n{nginx.text()}\n{errors}")
            try:
                return httpx2.get(f"http://127.0.0.1:{nginx_port}/readyz", timeout=5).status_code == 200
            except httpx2.HTTPError:
                return False

        wait_until("nginx proxying to the replicas", proxied, 30)

        prometheus_port = free_port()
        prometheus_conf = root / "prometheus.yml"
        scrape = with_ports(page_block("yaml"), replicas)
        assert "/etc/toolhost/mcp-token" in scrape, "the scrape does not send the token"
        prometheus_conf.write_text(PROMETHEUS + scrape.replace("/etc/toolhost/mcp-token", str(etc / "mcp-token")))
        prometheus = Process(
            "prometheus",
            ["prometheus", f"--config.file={prometheus_conf}", f"--storage.tsdb.path={root / 'prometheus'}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            root / "prometheus.log",
        )
        processes.append(prometheus.start())
        yield Cluster(
            root, plugins, redis_port, replicas, nginx_port, prometheus_port, processes, secret if token else None
        )
    finally:
        for process in reversed(processes):
            process.stop()
        # Shown by pytest for a failing test only.
        print(logs(processes))
