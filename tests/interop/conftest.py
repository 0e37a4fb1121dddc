"""Shared set-up of the interop tests: the example plugins in one directory, and
their tools as a real MCP client lists them from `toolhost serve` (stdio); the
component toolsets (any component's exported functions as tools, issue 34),
listed the same way, one component at a time.

Environment (`cargo xtask interop-test` sets all three):
- `TOOLHOST_BIN`: the `toolhost` binary [default: `$CARGO_TARGET_DIR/debug/toolhost`].
- `TOOLHOST_GUESTS`: the built Rust guests
  [default: `$CARGO_TARGET_DIR/wasm-guests/wasm32-wasip2/guest`].
- `TOOLHOST_POLYGLOT`: the built guests in other languages
  [default: `$CARGO_TARGET_DIR/polyglot`].

The plugins directory and a home directory (whose `.cache/toolhost` is the
compile cache, shared by the listing and the framework snippets) are created
once per run and removed at its end. Set `TOOLHOST_TEST_CACHE_DIR` to keep the
compiled plugins across runs instead.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]

#: The example plugins: every directory under `plugins/`.
EXAMPLES = ROOT / "plugins"

#: A hang guard (never a timing assertion): the first listing compiles every plugin.
LIST_S = 300.0


def _target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


def _env_path(name: str, default: Path) -> Path:
    return Path(os.environ.get(name) or default).resolve()


@functools.cache
def toolhost_bin() -> Path:
    path = _env_path("TOOLHOST_BIN", _target_dir() / "debug" / "toolhost")
    if not path.is_file():
        raise RuntimeError(f"no toolhost binary at {path}; run `cargo xtask interop-test` (or set TOOLHOST_BIN)")
    return path


@functools.cache
def scratch() -> Path:
    """This run's scratch directory: `plugins/` and `home/`."""
    path = Path(tempfile.mkdtemp(prefix="toolhost-interop-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def guests_dir() -> Path:
    """The built Rust guests, examples and test plugins."""
    return _env_path("TOOLHOST_GUESTS", _target_dir() / "wasm-guests" / "wasm32-wasip2" / "guest")


def polyglot_dir() -> Path:
    """The built guests in other languages, examples and test plugins."""
    return _env_path("TOOLHOST_POLYGLOT", _target_dir() / "polyglot")


@functools.cache
def plugins_dir() -> Path:
    """A directory holding every example plugin (`plugins/*`): the Rust ones
    (with a `Cargo.toml`) from `TOOLHOST_GUESTS`, the others from `TOOLHOST_POLYGLOT`."""
    guests = guests_dir()
    polyglot = polyglot_dir()
    sources = [
        guests / f"{d.name.replace('-', '_')}.wasm" if (d / "Cargo.toml").is_file() else polyglot / f"{d.name}.wasm"
        for d in sorted(EXAMPLES.iterdir())
        if d.is_dir()
    ]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise RuntimeError(f"example plugins not built: {', '.join(missing)}; run `cargo xtask interop-test`")
    dest = scratch() / "plugins"
    dest.mkdir()
    for source in sources:
        shutil.copy(source, dest / source.name)
    return dest


@functools.cache
def home() -> Path:
    """The `HOME` the snippets run with, so toolhost's default cache is this run's."""
    path = scratch() / "home"
    path.mkdir()
    reuse = os.environ.get("TOOLHOST_TEST_CACHE_DIR")
    if reuse:
        (path / ".cache").mkdir()
        Path(reuse).mkdir(parents=True, exist_ok=True)
        (path / ".cache" / "toolhost").symlink_to(Path(reuse).resolve())
    return path


def cache_dir() -> Path:
    return home() / ".cache" / "toolhost"


def _listing(plugins: Path) -> tuple[types.Tool, ...]:
    """The tools of a plugins directory, as `tools/list` on `toolhost serve` answers it."""

    async def listing() -> tuple[types.Tool, ...]:
        params = StdioServerParameters(
            command=str(toolhost_bin()),
            args=["--plugins", str(plugins), "--cache-dir", str(cache_dir()), "serve"],
        )
        with anyio.fail_after(LIST_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return tuple((await session.list_tools()).tools)

    return anyio.run(listing)


@functools.cache
def example_tools() -> tuple[types.Tool, ...]:
    """Every example tool, as `tools/list` on `toolhost serve` answers it."""
    return _listing(plugins_dir())


#: The component toolsets (issue 34): components of a WIT of their own, built
#: without any toolhost SDK (`tests/plugins/NAME`), by where their build puts
#: them: the Rust one in `TOOLHOST_GUESTS`, the others in `TOOLHOST_POLYGLOT`.
COMPONENTS = {"any-component": "guests", "any-component-js": "polyglot", "any-component-py": "polyglot"}


def component_files() -> dict[str, Path]:
    """Each component toolset's built file; one not built is an error, not a skip."""
    files = {
        name: guests_dir() / f"{name.replace('-', '_')}.wasm" if home == "guests" else polyglot_dir() / f"{name}.wasm"
        for name, home in COMPONENTS.items()
    }
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        raise RuntimeError(f"component toolsets not built: {', '.join(missing)}; run `cargo xtask interop-test`")
    return files


@functools.cache
def component_tools() -> dict[str, tuple[types.Tool, ...]]:
    """Each component toolset's tools, as `tools/list` on a `toolhost serve` of
    that component alone answers it (so every tool is known by its component,
    and a component that fails to load lists nothing)."""
    tools = {}
    for name, file in component_files().items():
        plugins = scratch() / "components" / name
        plugins.mkdir(parents=True)
        shutil.copy(file, plugins / file.name)
        tools[name] = _listing(plugins)
    return tools


#: A snippet: its `<!-- interop: NAME -->` mark, then a ```python fence.
SNIPPET = re.compile(r"^<!-- interop: (\S+) -->\n```python\n(.*?)^```", re.M | re.S)

#: A hang guard only: the first snippet may compile every plugin.
SNIPPET_S = 300


def snippets(page: Path) -> dict[str, str]:
    """A docs page's marked Python snippets, by name."""
    return dict(SNIPPET.findall(page.read_text()))


def run_snippet(code: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], str]:
    """Runs a snippet as a reader would (`python -c`, in the scratch directory, with
    `snippet_env()` and `env` on top); gives what it did and a report of it."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=scratch(),
        env={**snippet_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=SNIPPET_S,
    )
    report = f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-4000:]}"
    return done, report


def snippet_env() -> dict[str, str]:
    """The environment a docs snippet runs in."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    return {
        **env,
        "HOME": str(home()),
        "TOOLHOST_BIN": str(toolhost_bin()),
        "TOOLHOST_PLUGINS": str(plugins_dir()),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
