"""docs/deploy.md's container, as the page says: its `Containerfile` built and
its `docker run` run, then the replica inside it called through MCP with the
token and stopped (drained, exit 0).

This machine has no Docker engine, so the page's commands run with podman
(docker's command line; only the program's name changes), kept whole in the
test's temp dir (`CONTAINERS_CONF`, `CONTAINERS_STORAGE_CONF`): vfs storage,
runc, cgroupfs, and this sandbox's own limits on open files and processes. Nothing can be pulled
from Docker Hub here either, so the page's base image is made from Debian's
own packages: `debootstrap --variant=minbase` of the release the page's `FROM`
names, imported under that name.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from conftest import CALL_S, STARTUP_S, Process, connect, ok, texts, wait_until
from services import DEPLOY, SERVING, logs, page_block, start_redis, write_etc

pytestmark = pytest.mark.anyio

#: Where the page's base image comes from here (the machine's apt source).
DEBIAN_MIRROR = os.environ.get("TOOLHOST_DEBIAN_MIRROR", "http://deb.debian.org/debian")

#: The mark of the page's container commands (docs-test leaves them to us).
MARK = "<!-- docs-test: skip built and run by the cluster suite (test_cluster_container.py)"

CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""

STORAGE_CONF = """\
[storage]
driver = "vfs"
graphroot = "{root}/storage"
runroot = "{root}/run"
"""


def page_commands() -> list[list[str]]:
    """The page's container commands, one argv each (continuation lines joined)."""
    text = DEPLOY.read_text()
    start = text.index(MARK)
    block = re.search(r"^```sh\n(.*?)^```", text[start:], re.MULTILINE | re.DOTALL)
    assert block is not None, "no sh block after the container mark"
    return [shlex.split(line) for line in block.group(1).replace("\\\n", " ").splitlines() if line.strip()]


@dataclass
class Podman:
    """podman, its state in a temp dir."""

    env: dict[str, str]

    def run(self, argv: list[str], cwd: Path | None = None, timeout: float = STARTUP_S) -> str:
        assert argv[0] == "docker", f"the page's command is not docker's: {argv}"
        done = subprocess.run(
            ["podman", *argv[1:]], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def logs(self, name: str) -> str:
        """What the container printed, both streams."""
        done = subprocess.run(
            ["podman", "logs", name], env=self.env, capture_output=True, text=True, timeout=CALL_S
        )
        return done.stdout + done.stderr


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    """podman with the page's base image, made from Debian's packages."""
    root = tmp_path_factory.mktemp("podman")
    # podman's defaults are above this sandbox's limits, which it may not
    # raise (and it refuses a process limit above pid_max).
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], pid_max)
    (root / "containers.conf").write_text(CONTAINERS_CONF.format(nofile=nofile, nproc=nproc))
    (root / "storage.conf").write_text(STORAGE_CONF.format(root=root))
    env = os.environ | {
        "CONTAINERS_CONF": str(root / "containers.conf"),
        "CONTAINERS_STORAGE_CONF": str(root / "storage.conf"),
    }
    base = re.search(r"^FROM (\S+)$", page_block("dockerfile"), re.MULTILINE)
    assert base is not None, "the Containerfile names no base image"
    found = re.fullmatch(r"debian:(\w+)-slim", base.group(1))
    assert found is not None, f"the base image is not a Debian slim one: {base.group(1)}"
    rootfs = root / "rootfs"
    subprocess.run(
        ["debootstrap", "--variant=minbase", found.group(1), str(rootfs), DEBIAN_MIRROR],
        check=True, capture_output=True, timeout=600,
    )
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(
        ["podman", "import", "-", f"docker.io/library/{base.group(1)}"],
        stdin=tar.stdout, env=env, check=True, capture_output=True, timeout=STARTUP_S,
    )
    assert tar.wait() == 0
    shutil.rmtree(rootfs)
    try:
        yield Podman(env)
    finally:
        subprocess.run(["podman", "rm", "--all", "--force"], env=env, capture_output=True, timeout=STARTUP_S)
        subprocess.run(["podman", "system", "reset", "--force"], env=env, capture_output=True, timeout=STARTUP_S)


async def test_the_pages_container_serves_and_drains(tmp_path: Path, podman: Podman) -> None:
    """The page's image built as it says, a replica run from it with the page's
    flags (host network, read-only, no capabilities, /etc/toolhost and the
    plugins mounted read-only, a volume for the compiled plugins): it reads its
    root-owned configuration, keys and token, answers MCP calls with the token
    only, and `docker stop` drains it to exit 0 with the compiled plugins left
    in the volume."""
    guests = Path(os.environ["TOOLHOST_GUESTS"])
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copyfile(guests / "echo.wasm", plugins / "echo.wasm")
    context = tmp_path / "context"
    context.mkdir()
    (context / "Containerfile").write_text(page_block("dockerfile"))
    processes: list[Process] = []
    try:
        redis_port = start_redis(tmp_path, processes)
        etc, token = write_etc(tmp_path, redis_port, "", token=True)
        commands = page_commands()
        assert [argv[:2] for argv in commands] == [
            ["cargo", "install"], ["docker", "build"], ["docker", "run"], ["docker", "stop"]
        ], commands
        install, build, run, stop = commands
        # The README's install (docs-test runs it), into the page's `--root`.
        assert install == ["cargo", "install", "--locked", "--path", "host", "--root", "dist"], install
        (context / "dist" / "bin").mkdir(parents=True)
        shutil.copy2(os.environ["TOOLHOST_BIN"], context / "dist" / "bin" / "toolhost")
        podman.run(build, cwd=context, timeout=600)

        page_listen = "127.0.0.1:8381"
        assert run[-1] == page_listen, run
        mounts = {"/etc/toolhost:": f"{etc}:", "/srv/toolhost/plugins:": f"{plugins}:"}
        argv = []
        for arg in run[:-1] + ["127.0.0.1:0"]:
            for page, here in mounts.items():
                if arg.startswith(page):
                    arg = here + arg[len(page):]
            argv.append(arg)
        assert all(any(here in arg for arg in argv) for here in mounts.values()), argv
        name = argv[argv.index("--name") + 1]
        podman.run(argv)

        def serving() -> str | None:
            found = SERVING.search(podman.logs(name))
            if found is None:
                state = podman.run(["docker", "inspect", "--format", "{{.State.Status}}", name]).strip()
                assert state == "running", podman.logs(name)
            return found.group(1) if found else None

        url = wait_until(f"{name} serving", serving)
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(url, headers=headers) as (client, seen):
            with anyio.fail_after(CALL_S):
                assert "echo" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("add", {"a": 2, "b": 40})
        assert ok(result) == {"result": 42}, texts(result)
        assert {replica for _, replica in seen.answers} == {"replica-1"}, seen.answers
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401, refused

        podman.run(stop, timeout=60)
        state = podman.run(["docker", "inspect", "--format", "{{.State.ExitCode}}", name]).strip()
        assert state == "0", podman.logs(name)
        volume = next(arg.split(":")[0] for arg in argv if arg.endswith(":/var/cache/toolhost"))
        mountpoint = Path(podman.run(["docker", "volume", "inspect", "--format", "{{.Mountpoint}}", volume]).strip())
        assert any(path.is_file() for path in mountpoint.rglob("*")), f"nothing compiled in {mountpoint}"
    finally:
        for process in reversed(processes):
            process.stop()
        print(logs(processes))
