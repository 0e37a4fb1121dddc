"""Three replicas behind nginx, sharing Redis: what an agent platform relies on
when any replica may answer any request (MCP 2026-07-28)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types

from conftest import CALL_S, Cluster, approved_retry, connect, never_asked, ok, running_cluster, texts, wait_until
from services import page_unit, unit_paths

# The tasks client of the MCP tests (tests/mcp/tasks.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from tasks import TasksExtension, cancel, get, start, update, wait  # noqa: E402

pytestmark = pytest.mark.anyio

INVOCATION = "dev.toolhost/invocation"


async def test_calls_spread_over_every_replica(cluster: Cluster) -> None:
    async with connect(cluster.url, headers=cluster.headers) as (client, seen):
        for i in range(12):
            with anyio.fail_after(CALL_S):
                assert ok(await client.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}
    replicas = seen.of("tools/call")
    assert len(replicas) == 12 and None not in replicas, seen.answers
    assert set(replicas) == {r.name for r in cluster.replicas}, replicas


def redis_cli(cluster: Cluster, *args: str) -> str:
    argv = ["redis-cli", "-p", str(cluster.redis_port), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=CALL_S).stdout


def deletes(cluster: Cluster) -> int:
    """How many DEL commands Redis has run."""
    found = re.search(r"^cmdstat_del:calls=(\d+)", redis_cli(cluster, "INFO", "commandstats"), re.MULTILINE)
    return int(found.group(1)) if found else 0


async def test_a_calls_own_state_is_deleted_only_if_it_set_some(cluster: Cluster) -> None:
    """A call that is its own invocation (no name in `_meta`): at its end, a
    stateless one costs Redis nothing; the state of one that set some is deleted."""
    async with connect(cluster.url, headers=cluster.headers) as (client, _):
        with anyio.fail_after(CALL_S):
            for i in range(6):
                assert ok(await client.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}
            assert ok(await client.call_tool("remember", {"key": "k"})) == {"value": None}
    assert deletes(cluster) == 0
    async with connect(cluster.url, headers=cluster.headers) as (client, _):
        with anyio.fail_after(CALL_S):
            assert ok(await client.call_tool("remember", {"key": "k", "value": "v"})) == {"stored": "k"}
    wait_until("the call's own state deleted", lambda: deletes(cluster) == 1, CALL_S)
    assert redis_cli(cluster, "--scan", "--pattern", "*inv:*").strip() == ""


async def test_invocation_state_crosses_replicas(cluster: Cluster) -> None:
    """`temp:` state set by a call on one replica is read by the next calls, on the others."""
    meta = {INVOCATION: "cluster-run-1"}
    async with connect(cluster.url, headers=cluster.headers) as (client, seen):
        with anyio.fail_after(CALL_S):
            assert ok(await client.call_tool("remember", {"key": "k", "value": "v"}, meta=meta)) == {"stored": "k"}
            for _ in range(3):
                assert ok(await client.call_tool("remember", {"key": "k"}, meta=meta)) == {"value": "v"}
            # Another invocation sees nothing of it.
            other = {INVOCATION: "cluster-run-2"}
            assert ok(await client.call_tool("remember", {"key": "k"}, meta=other)) == {"value": None}
    replicas = seen.of("tools/call")
    assert len(set(replicas[:4])) == 3, f"the set and the reads did not cover every replica: {replicas}"


async def test_an_approval_asked_on_one_replica_runs_once_on_another(cluster: Cluster) -> None:
    """Asked through nginx on one replica, answered through nginx on another: it
    runs once; its replay is refused by every replica (asked directly)."""
    args = {"message": "approved across replicas"}

    async def retry(client: Any, state: str | None) -> types.CallToolResult:
        return await approved_retry(client, "echo", args, state)

    async with connect(cluster.url, never_asked, headers=cluster.headers) as (client, seen):
        # Round robin sends consecutive requests to different replicas; what else
        # reaches nginx meanwhile may line them up, so ask until they differ.
        for _ in range(5):
            with anyio.fail_after(CALL_S):
                asked = await client.session.call_tool("echo", args, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult), asked
            ran = await retry(client, asked.request_state)
            asked_on, ran_on = seen.of("tools/call")[-2:]
            if asked_on != ran_on:
                break
        assert asked_on != ran_on, seen.answers
        assert ok(ran)["message"] == args["message"], ran
    for replica in cluster.replicas:
        async with connect(replica.url, never_asked, headers=cluster.headers) as (direct, _seen):
            replay = await retry(direct, asked.request_state)
        assert replay.is_error and "already decided" in texts(replay), (replica.name, texts(replay))


async def test_a_replica_killed_under_load_loses_no_call(cluster: Cluster) -> None:
    """`kill -9` of a replica while calls run: nginx routes around it; each call
    either succeeds or fails with a clear error, and a retry of those succeeds."""
    total, workers = 60, 6
    outcomes: dict[int, str] = {}
    failures: dict[int, str] = {}
    killed = anyio.Event()
    victim = cluster.replicas[1]

    async def worker(client: Any, calls: list[int]) -> None:
        for i in calls:
            if i == total // 3 and not killed.is_set():
                victim.process.kill9()
                killed.set()
            try:
                with anyio.fail_after(CALL_S):
                    result = await client.call_tool("add", {"a": i, "b": 0})
                if result.is_error:
                    failures[i] = texts(result)
                else:
                    assert result.structured_content == {"result": i}, result
                    outcomes[i] = "ok"
            except Exception as error:  # a clear error: the transport said what failed
                failures[i] = f"{type(error).__name__}: {error}"

    # Calls that are still running on every replica when one dies: each ends
    # with an answer, never silence: the deadline's error on the replicas that
    # live, a transport error for those the dead one was running.
    sleeping: dict[int, str] = {}

    async def sleeper(client: Any, n: int) -> None:
        try:
            with anyio.fail_after(CALL_S):
                result = await client.call_tool("sleep_forever", {})
            assert result.is_error, result
            sleeping[n] = f"error result: {texts(result)}"
        except AssertionError:
            raise
        except Exception as error:
            sleeping[n] = f"{type(error).__name__}: {error}"

    async with connect(cluster.url, headers=cluster.headers) as (client, _seen):
        async with anyio.create_task_group() as tasks:
            for n in range(6):
                tasks.start_soon(sleeper, client, n)
            await running_on_replicas(cluster, 6)  # the sleepers reached their replicas
            for w in range(workers):
                tasks.start_soon(worker, client, list(range(w, total, workers)))
        assert killed.is_set()
        assert sorted(sleeping) == list(range(6)), sleeping
        cut = [why for why in sleeping.values() if not why.startswith("error result")]
        timed_out = [why for why in sleeping.values() if why.startswith("error result")]
        assert cut, f"no running call was cut by the kill: {sleeping}"
        assert all("time" in why for why in timed_out), timed_out
        print(f"calls running when the replica died: {sleeping}")
        for i, why in sorted(failures.items()):
            assert why.strip(), f"call {i} failed without saying why"
            with anyio.fail_after(CALL_S):
                retried = await client.call_tool("add", {"a": i, "b": 0})
            assert not retried.is_error and retried.structured_content == {"result": i}, (i, why, retried)
            outcomes[i] = "ok after a retry"
    assert sorted(outcomes) == list(range(total)), f"unaccounted calls: {set(range(total)) - set(outcomes)}"
    print(f"{len(failures)} of {total} calls failed when the replica died, all succeeded on retry: {failures}")


async def running_on_replicas(cluster: Cluster, calls: int) -> None:
    """Waits until the replicas, together, run at least `calls` tool calls
    (their `toolhost_tool_calls_in_flight` gauges)."""
    gauge = re.compile(r"^toolhost_tool_calls_in_flight (\d+)$", re.MULTILINE)
    running = 0
    async with httpx2.AsyncClient(timeout=5, headers=cluster.headers) as http:
        with anyio.fail_after(CALL_S):
            while True:
                running = 0
                for replica in cluster.replicas:
                    metrics = replica.url.rsplit("/mcp", 1)[0] + "/metrics"
                    try:
                        found = gauge.search((await http.get(metrics)).text)
                    except httpx2.HTTPError:
                        found = None
                    running += int(found.group(1)) if found else 0
                if running >= calls:
                    return
                await anyio.sleep(0.05)


async def test_a_plugin_dropped_in_the_shared_directory_reaches_every_replica(cluster: Cluster) -> None:
    """Listed by every replica (asked directly, not through nginx) within 30 s."""
    guests = os.environ["TOOLHOST_GUESTS"]
    started = time.monotonic()
    shutil.copyfile(f"{guests}/text.wasm", cluster.plugins / "text.wasm")
    took: dict[str, float] = {}
    answered: dict[str, Any] = {}
    for replica in cluster.replicas:
        async with connect(replica.url, headers=cluster.headers) as (client, _seen):
            with anyio.fail_after(30):
                while "word_count" not in {t.name for t in (await client.list_tools()).tools}:
                    await anyio.sleep(0.1)
            took[replica.name] = time.monotonic() - started
            # Listed is not enough: the new plugin runs there.
            with anyio.fail_after(CALL_S):
                result = await client.call_tool("word_count", {"text": "one two three"})
            answered[replica.name] = ok(result)["words"]
    assert answered == {r.name: 3 for r in cluster.replicas}, answered
    print(f"seconds until each replica listed the new plugin: {took}")


async def test_prometheus_scrapes_every_replica(cluster: Cluster) -> None:
    async with connect(cluster.url, headers=cluster.headers) as (client, _seen):
        for i in range(6):
            with anyio.fail_after(CALL_S):
                ok(await client.call_tool("add", {"a": i, "b": i}))
    api = f"http://127.0.0.1:{cluster.prometheus_port}/api/v1/query"

    async def query(expr: str) -> list[dict[str, Any]]:
        async with httpx2.AsyncClient(timeout=10) as http:
            try:
                answer = (await http.get(api, params={"query": expr})).json()
            except (httpx2.HTTPError, json.JSONDecodeError):
                return []
        return answer.get("data", {}).get("result", []) if answer.get("status") == "success" else []

    with anyio.fail_after(60):
        while True:
            up = await query('up{job="toolhost"} == 1')
            calls = await query('sum(toolhost_tool_calls_total{tool="add"})')
            if len(up) == 3 and calls and float(calls[0]["value"][1]) >= 6:
                break
            await anyio.sleep(0.5)


ACCEPT = {"action": "accept", "content": {"approve": True}}


async def test_a_task_started_on_one_replica_is_followed_on_the_others(cluster: Cluster) -> None:
    """A long-running call as a task (SEP-2663), each step on another replica: started
    on the first, its approval read on the second and answered on the third, its
    result read on the second; another one started on the first and cancelled on the
    third. `slow_job` needs approval here (`[confirm]`)."""
    one, two, three = (r.url for r in cluster.replicas)
    extension = [TasksExtension()]
    async with (
        connect(one, extensions=extension, headers=cluster.headers) as (first, _),
        connect(two, extensions=extension, headers=cluster.headers) as (second, _),
        connect(three, extensions=extension, headers=cluster.headers) as (third, _),
    ):
        meta = {INVOCATION: "cluster-task-1"}
        handle = await start(first.session, "slow_job", {"ms": 500, "key": "done"}, meta)
        asked = await wait(second.session, handle.task_id, until=("input_required",))
        assert "approval" in (asked.input_requests or {}), asked
        await update(third.session, handle.task_id, {"approval": ACCEPT})
        state = await wait(second.session, handle.task_id)
        assert state.status == "completed", state
        assert ok(state.call_result()) == {"slept_ms": 500}

        meta = {INVOCATION: "cluster-task-2"}
        handle = await start(first.session, "slow_job", {"ms": 3000, "key": "done"}, meta)
        await wait(third.session, handle.task_id, until=("input_required",))
        await update(second.session, handle.task_id, {"approval": ACCEPT})
        await wait(third.session, handle.task_id, until=("working",))
        await cancel(third.session, handle.task_id)
        assert (await wait(second.session, handle.task_id)).status == "cancelled"
        wait_until(
            "the owner dropping the call",
            lambda: "guest stopped" in cluster.replicas[0].process.text(),
            CALL_S,
        )
        await anyio.sleep(3.5)  # past the time the job needed: it never got to its end
        with anyio.fail_after(CALL_S):
            assert ok(await second.call_tool("remember", {"key": "done"}, meta=meta)) == {"value": None}


async def test_a_task_whose_replica_dies_is_reported_failed(cluster: Cluster) -> None:
    """`kill -9` of the replica running a task: a poll on another replica reports it
    failed (the call cannot move), and a cancel there changes nothing more."""
    one, two = cluster.replicas[0], cluster.replicas[1]
    extension = [TasksExtension()]
    async with connect(one.url, extensions=extension, headers=cluster.headers) as (first, _):
        handle = await start(first.session, "slow_job", {"ms": 15000})
    async with connect(two.url, extensions=extension, headers=cluster.headers) as (second, _):
        await wait(second.session, handle.task_id, until=("input_required",))
        await update(second.session, handle.task_id, {"approval": ACCEPT})
        await wait(second.session, handle.task_id, until=("working",))
        one.process.kill9()
        state = await wait(second.session, handle.task_id)
        assert state.status == "failed", state
        assert "stopped" in (state.status_message or ""), state
        assert (state.error or {}).get("code") == -32603, state
        await cancel(second.session, handle.task_id)
        assert (await get(second.session, handle.task_id)).status == "failed"


async def test_calls_sent_to_a_draining_replica_go_to_another(tmp_path: Path) -> None:
    """SIGTERM to a replica with a call still running, so it drains: the new calls
    nginx sends it on kept-alive connections are refused with 503 before they run,
    and the page's nginx block sends them to another replica. Every call succeeds,
    none is answered by the draining replica, and it says how many it refused."""
    with running_cluster(tmp_path, config="[serve]\ndrain_timeout_ms = 60000\n") as cluster:
        victim = cluster.replicas[0]
        async with connect(cluster.url, headers=cluster.headers) as (client, seen):
            # Round robin: nginx keeps a connection open to every replica.
            for i in range(9):
                assert ok(await client.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}
            assert {replica for _, replica in seen.answers} >= {r.name for r in cluster.replicas}, seen.answers
            async with connect(victim.url, headers=cluster.headers) as (direct, _direct_seen), anyio.create_task_group() as running:
                # `sleep_forever` keeps the victim draining (until its 3 s limit).
                running.start_soon(direct.call_tool, "sleep_forever", {})
                await running_on_replicas(cluster, 1)
                assert victim.process.popen is not None
                victim.process.popen.send_signal(signal.SIGTERM)
                wait_until("the victim draining", lambda: "draining: 1 call(s) running" in victim.process.text(), 10)
                before = len(seen.answers)
                for i in range(30):
                    with anyio.fail_after(CALL_S):
                        result = await client.call_tool("add", {"a": i, "b": 2})
                    assert ok(result) == {"result": i + 2}, (i, texts(result))
                during = [replica for _, replica in seen.answers[before:]]
                assert victim.name not in during, during
        drained = wait_until(
            "the victim's drain to end",
            lambda: re.search(r"(\d+) new call\(s\) refused meanwhile", victim.process.text()),
            30,
        )
        assert int(drained.group(1)) >= 1, victim.process.text()[-3000:]


def test_the_pages_systemd_unit_is_valid(tmp_path: Path) -> None:
    """docs/deploy.md's unit (whose `ExecStart` and environment start the
    cluster's replicas), with this machine's paths: `systemd-analyze verify`
    finds nothing to say."""
    etc = tmp_path / "etc"
    etc.mkdir()
    for name in ("toolhost.toml", "state-keys", "mcp-token"):
        (etc / name).touch()
    paths = unit_paths(tmp_path, tmp_path / "plugins", etc)
    unit = tmp_path / "toolhost@1.service"
    unit.write_text(page_unit(1, paths))
    verified = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True, text=True, timeout=CALL_S, env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"},
    )
    assert verified.returncode == 0 and not verified.stdout.strip() and not verified.stderr.strip(), verified


async def test_the_token_is_required_through_nginx_and_by_every_replica(cluster: Cluster) -> None:
    """The page's replicas want the token (`[serve] token_file`): without it,
    MCP and metrics are refused, through nginx and on every replica; with it,
    served (and Prometheus scrapes with it: test_prometheus_scrapes_every_replica)."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        for base in [cluster.url] + [r.url for r in cluster.replicas]:
            assert (await http.post(base, json=initialize)).status_code == 401, base
            metrics = base.rsplit("/mcp", 1)[0] + "/metrics"
            assert (await http.get(metrics)).status_code == 401, metrics
            assert (await http.get(metrics, headers=cluster.headers)).status_code == 200, metrics
    async with connect(cluster.url, headers=cluster.headers) as (client, _):
        with anyio.fail_after(CALL_S):
            assert "add" in {tool.name for tool in (await client.list_tools()).tools}


async def test_a_resource_update_reaches_subscribers_on_every_replica(cluster: Cluster) -> None:
    """A call on one replica says a resource changed (`touch_resources`): a
    client listening for that resource on another replica hears it, whichever
    pair (before, only subscribers of the replica that ran the call did)."""
    guests = Path(os.environ["TOOLHOST_GUESTS"])
    shutil.copyfile(guests / "mcp_conformance.wasm", cluster.plugins / "mcp_conformance.wasm")
    watched = "test://watched-resource"
    replicas = cluster.replicas
    for listener, caller in zip(replicas, replicas[1:] + replicas[:1], strict=True):
        async with (
            connect(listener.url, headers=cluster.headers) as (listening, _),
            connect(caller.url, headers=cluster.headers) as (calling, _),
        ):
            with anyio.fail_after(CALL_S):
                for client in (listening, calling):
                    while "touch_resources" not in {tool.name for tool in (await client.list_tools()).tools}:
                        await anyio.sleep(0.1)
                async with listening.listen(resource_subscriptions=[watched]) as subscription:
                    assert list(subscription.honored.resource_subscriptions or []) == [watched], subscription.honored
                    touch = {"uris": ["test://static-text", watched]}
                    result = await calling.call_tool("touch_resources", touch)
                    assert not result.is_error, texts(result)
                    event = await subscription.__anext__()
            assert getattr(event, "uri", None) == watched, (listener.name, caller.name, event)
