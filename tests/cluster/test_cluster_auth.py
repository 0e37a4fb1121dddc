"""The cluster as an OAuth 2.1 resource server (`[serve.auth]`) with per-caller
access rules (`[[access]]`): three replicas behind nginx, sharing Redis and the
approval key ring, trusting one test authorization server (tests/mcp/authserver.py:
the official SDK's authorization-server routes, RS256 JWTs, a JWKS), which each
test starts on its own thread and stops after it.

The `resource` (the audience every token must name) is the URL clients reach,
nginx's, so nginx's port is chosen before the replicas start. Tokens for that
audience are good on every replica, also asked directly: the tests that need
"another replica" for certain talk to the replicas one by one (the header
`x-toolhost-replica` confirms which answered), the others go through nginx.

Principals (issuer + subject): `alice` may use every tool; `bob` (role `staff`)
only `echo`, `remember` and `slow_job` (his own rule) plus `add` and `who*` (the
`staff` rule). The SDK's OAuth client is authorized as `alice` (the authorization
server's subject). `echo` and `slow_job` need approval (`[confirm]` of the
cluster's config).

Timeouts are hang guards only, never timing assertions.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError, types

from conftest import CALL_S, Cluster, REPLICA, connect, connect_legacy, free_port, ok, running_cluster, texts

# The authorization server and the tasks client of the MCP tests (tests/mcp).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from authserver import AuthServer  # noqa: E402
from oauthclient import Browser, MemoryStorage, oauth_client, parse_challenge  # noqa: E402
from tasks import TasksExtension, cancel, get, start, update, wait  # noqa: E402

pytestmark = pytest.mark.anyio

INVOCATION = "dev.toolhost/invocation"
REQUIRED = "mcp:tools"
ACCEPT = {"action": "accept", "content": {"approve": True}}

#: What bob's two rules grant (his own and the `staff` role's).
BOB_GRANTED = ["echo", "remember", "slow_job", "add", "who*"]

#: Tools of the cluster's guests that bob's rules do not grant.
NOT_BOBS = [("ok", {}), ("flag", {"not": "an argument"}), ("fail", {})]


def auth_config(resource: str, issuer: str) -> str:
    """`[serve.auth]` for `resource` trusting `issuer` (its JWKS found through its
    metadata), and the access rules of alice, bob and the `staff` role."""
    return f"""\
[serve.auth]
resource = "{resource}"
scopes = ["{REQUIRED}"]
scopes_supported = ["mcp:tools", "tools:read"]
roles_claim = "groups"

[[serve.auth.issuers]]
issuer = "{issuer}"

[[access]]
name = "alice"
subjects = ["alice"]
issuers = ["{issuer}"]
allow = ["*"]

[[access]]
name = "bob"
subjects = ["bob"]
allow = ["echo", "remember", "slow_job"]

[[access]]
name = "staff"
roles = ["staff"]
allow = ["add", "who*"]
"""


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    """The authorization server (its own thread), stopped after the test, also on failure."""
    with AuthServer(subject="alice") as server:
        yield server


@pytest.fixture
def auth_cluster(tmp_path: Path, auth: AuthServer) -> Iterator[Cluster]:
    """The cluster, its replicas resource servers for nginx's URL trusting `auth`."""
    nginx_port = free_port()
    resource = f"http://127.0.0.1:{nginx_port}/mcp"
    with running_cluster(
        tmp_path, config=auth_config(resource, auth.issuer), nginx_port=nginx_port, token=False
    ) as cluster:
        assert cluster.url == resource
        print(f"--- toolhost.toml ---\n{(tmp_path / 'etc' / 'toolhost.toml').read_text()}")
        yield cluster


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def alice(auth: AuthServer, cluster: Cluster) -> dict[str, str]:
    return bearer(auth.token(cluster.url, sub="alice", groups=[]))


def bob(auth: AuthServer, cluster: Cluster) -> dict[str, str]:
    return bearer(auth.token(cluster.url, sub="bob", groups=["staff"]))


async def never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; approvals here are answered by hand."""
    raise AssertionError(f"the SDK's driver asked: {params}")


async def listed(client: Any) -> list[str]:
    with anyio.fail_after(CALL_S):
        return sorted(t.name for t in (await client.list_tools()).tools)


async def remember(client: Any, meta: dict[str, str], key: str, value: str | None = None) -> Any:
    args = {"key": key} if value is None else {"key": key, "value": value}
    with anyio.fail_after(CALL_S):
        return ok(await client.call_tool("remember", args, meta=meta))


# --- the challenge and the SDK's OAuth client (as tests/mcp/test_auth.py) ------------------

# --- 1. the SDK's OAuth client through nginx -----------------------------------------------

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
BASE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_the_sdk_oauth_client_authorizes_through_nginx_and_one_token_serves_every_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """Without a token, every replica (through nginx and asked directly) answers
    401 with the challenge naming the metadata at nginx's origin (the resource's),
    and serves the same RFC 9728 document there, naming nginx's URL and the
    issuer. The official SDK's `OAuthClientProvider`, told only nginx's URL,
    reads that metadata from whichever replica nginx picks, registers, is
    authorized for `resource` = nginx's URL, lists the tools and calls one nine
    times: the calls are answered by more than one replica, all with the one
    token the authorization server issued."""
    cluster = auth_cluster
    origin = f"http://127.0.0.1:{cluster.nginx_port}"
    metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
    replica_origins = [replica.url.rsplit("/mcp", 1)[0] for replica in cluster.replicas]

    challenged: list[str | None] = []
    documents: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        for url in [cluster.url] * 3 + [replica.url for replica in cluster.replicas]:
            with anyio.fail_after(CALL_S):
                response = await http.post(url, json=LIST, headers=BASE)
            assert response.status_code == 401, (url, response.status_code, response.headers, response.text)
            values = response.headers.get_list("www-authenticate")
            assert len(values) == 1, (url, values)
            params = parse_challenge(values[0])
            assert params.get("resource_metadata") == metadata_url, (url, params)
            assert params.get("scope") == REQUIRED and "error" not in params, (url, params)
            challenged.append(response.headers.get(REPLICA))
        for url in [metadata_url] * 3 + [f"{o}/.well-known/oauth-protected-resource/mcp" for o in replica_origins]:
            with anyio.fail_after(CALL_S):
                response = await http.get(url)
            assert response.status_code == 200, (url, response.status_code, response.text)
            documents[f"{url} ({response.headers.get(REPLICA)})"] = response.json()
    for where, document in documents.items():
        assert document.get("resource") == cluster.url, (where, document)
        assert document.get("authorization_servers") == [auth.issuer], (where, document)
    assert len({str(sorted(d.items())) for d in documents.values()}) == 1, documents
    print(f"replicas that challenged: {challenged}; metadata served by: {list(documents)}")

    storage, browser = MemoryStorage(), Browser()
    provider = oauth_client(cluster.url, storage, browser)
    async with connect(cluster.url, auth=provider) as (client, seen):
        tools = await listed(client)
        assert {"echo", "add", "remember", "sleep_forever"} <= set(tools), tools
        for i in range(9):
            with anyio.fail_after(CALL_S):
                assert ok(await client.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}

    # What the SDK found: the metadata, from a replica, at nginx's origin.
    context = provider.context
    assert context.protected_resource_metadata is not None
    assert str(context.protected_resource_metadata.resource) == cluster.url
    assert context.auth_server_url == auth.issuer
    fetched = [e for e in seen.exchanges if e.method == "GET" and e.url.startswith(f"{origin}/.well-known/")]
    assert any(e.status == 200 and e.replica for e in fetched), seen.exchanges

    # One registration, one authorization for nginx's URL, one token.
    assert len(auth.registrations) == 1 and len(browser.visited) == 1, (auth.registrations, browser.visited)
    assert [a.resource for a in auth.authorizations] == [cluster.url], auth.authorizations
    assert len(auth.issued) == 1, auth.issued
    issued = auth.issued[0]
    assert issued.claims["aud"] == cluster.url and issued.claims["sub"] == "alice", issued.claims
    assert storage.tokens is not None and storage.tokens.access_token == issued.token

    # Every MCP request either carried no token (the first, challenged) or that one.
    mcp = [e for e in seen.exchanges if e.url == cluster.url]
    assert all(e.authorization in (None, f"Bearer {issued.token}") for e in mcp), mcp
    assert all(e.status == 401 for e in mcp if e.authorization is None), mcp
    calls = [e for e in mcp if e.rpc == "tools/call"]
    assert len(calls) == 9, mcp
    assert all(e.status == 200 and e.authorization == f"Bearer {issued.token}" for e in calls), calls
    replicas = [e.replica for e in calls]
    assert None not in replicas and len(set(replicas)) > 1, replicas
    print(f"the one token's calls were answered by: {replicas}")


# --- 2. two principals across the replicas --------------------------------------------------


async def test_each_principal_lists_and_calls_only_its_tools_on_every_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """`[[access]]`: alice (every tool) and bob (his rule's tools and the `staff`
    role's globs) get different `tools/list`s, the same on every replica and
    through nginx; bob's calls of the tools he is not granted are refused as
    forbidden (-32602, `data.reason` "forbidden", before their arguments are
    read) on every replica, while a tool only his role grants runs; a name no
    tool has is the unknown-tool error, naming none of the tools bob may not use."""
    cluster = auth_cluster
    async with connect(cluster.url, headers=alice(auth, cluster)) as (client, _seen):
        everything = await listed(client)
    assert {"echo", "add", "remember", "slow_job", "whoami", "flag", "fail", "ok", "sleep_forever"} <= set(
        everything
    ), everything
    bobs = sorted(name for name in everything if any(fnmatchcase(name, glob) for glob in BOB_GRANTED))
    assert bobs == ["add", "echo", "remember", "slow_job", "whoami"], bobs

    async with connect(cluster.url, headers=bob(auth, cluster)) as (client, _seen):
        assert await listed(client) == bobs
    for replica in cluster.replicas:
        async with connect(replica.url, headers=alice(auth, cluster)) as (client, seen):
            assert await listed(client) == everything, replica.name
        async with connect(replica.url, headers=bob(auth, cluster)) as (client, seen):
            assert await listed(client) == bobs, replica.name
            with anyio.fail_after(CALL_S):
                assert ok(await client.call_tool("add", {"a": 2, "b": 3})) == {"result": 5}
            for tool, args in NOT_BOBS:
                with anyio.fail_after(CALL_S), pytest.raises(MCPError) as refused:
                    await client.session.call_tool(tool, args)
                error = refused.value.error
                assert error.code == -32602, (replica.name, tool, error)
                assert isinstance(error.data, dict) and error.data.get("reason") == "forbidden", (replica.name, error)
                assert tool in error.message and "bob" in error.message, (replica.name, error.message)
            with anyio.fail_after(CALL_S), pytest.raises(MCPError) as unknown:
                await client.session.call_tool("no_such_tool", {})
            error = unknown.value.error
            assert (error.data or {}).get("reason") != "forbidden", (replica.name, error)
            named = set(re.findall(r"[A-Za-z0-9_-]+", error.message))
            assert set(bobs) <= named, (replica.name, error.message)
            assert not named & {"sleep_forever", "busy_wait", "flag", "countdown"}, (replica.name, error.message)
            print(f"{replica.name}: bob's forbidden call: {refused.value.error.message!r}; "
                  f"his unknown tool: {error.message!r}")
        assert set(seen.of("tools/call")) == {replica.name}, seen.answers


async def test_a_named_invocation_is_each_principals_own_on_every_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """Alice and bob naming the same invocation (`_meta` `dev.toolhost/invocation`)
    get separate scratch state: what alice sets on replica-1 bob reads on none of
    the replicas, while alice reads it on the other two; what bob then sets under
    the same name on replica-2 changes nothing for alice, and bob reads his own."""
    cluster = auth_cluster
    one, two, three = cluster.replicas
    meta = {INVOCATION: "shared-run-name"}
    async with connect(one.url, headers=alice(auth, cluster)) as (client, seen):
        assert await remember(client, meta, "k", "alice's") == {"stored": "k"}
        assert seen.of("tools/call") == [one.name], seen.answers
    for replica in cluster.replicas:
        async with connect(replica.url, headers=bob(auth, cluster)) as (client, seen):
            assert await remember(client, meta, "k") == {"value": None}, replica.name
            assert seen.of("tools/call") == [replica.name], seen.answers
    async with connect(two.url, headers=bob(auth, cluster)) as (client, _seen):
        assert await remember(client, meta, "k", "bob's") == {"stored": "k"}
    for replica in (two, three):
        async with connect(replica.url, headers=alice(auth, cluster)) as (client, seen):
            assert await remember(client, meta, "k") == {"value": "alice's"}, replica.name
            assert seen.of("tools/call") == [replica.name], seen.answers
    async with connect(three.url, headers=bob(auth, cluster)) as (client, _seen):
        assert await remember(client, meta, "k") == {"value": "bob's"}
    # Through nginx, whichever replicas answer, each keeps seeing its own.
    async with (
        connect(cluster.url, headers=alice(auth, cluster)) as (as_alice, _a),
        connect(cluster.url, headers=bob(auth, cluster)) as (as_bob, _b),
    ):
        for _ in range(3):
            assert await remember(as_alice, meta, "k") == {"value": "alice's"}
            assert await remember(as_bob, meta, "k") == {"value": "bob's"}


async def test_an_approval_asked_of_one_principal_is_refused_to_another_on_another_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """An approval (MCP 2026-07-28, `echo` is in `[confirm]`) asked of alice on
    replica-1: bob retrying with its `requestState` and an approving answer, on
    replica-2, on replica-3 and through nginx, gets a tool error saying it was
    asked of another caller, and nothing runs; alice's own retry on replica-3
    then runs it, once (her replay is already decided)."""
    cluster = auth_cluster
    one, two, three = cluster.replicas
    args = {"message": "alice approves"}
    approve = {"approval": types.ElicitResult(action="accept", content={"approve": True})}

    async def retry(url: str, who: dict[str, str], state: str | None) -> tuple[types.CallToolResult, list[str | None]]:
        async with connect(url, never_asked, headers=who) as (client, seen):
            with anyio.fail_after(CALL_S):
                result = await client.session.call_tool(
                    "echo", args, input_responses=approve, request_state=state, allow_input_required=True
                )
        assert isinstance(result, types.CallToolResult), result
        return result, seen.of("tools/call")

    async with connect(one.url, never_asked, headers=alice(auth, cluster)) as (client, seen):
        with anyio.fail_after(CALL_S):
            asked = await client.session.call_tool("echo", args, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult), asked
        assert "approval" in (asked.input_requests or {}), asked
        assert asked.request_state, asked
        assert seen.of("tools/call") == [one.name], seen.answers

    for url, expected in ((two.url, [two.name]), (three.url, [three.name]), (cluster.url, None)):
        refused, replicas = await retry(url, bob(auth, cluster), asked.request_state)
        assert refused.is_error and "another caller" in texts(refused), (url, replicas, refused)
        assert expected is None or replicas == expected, (expected, replicas)
        print(f"bob's replay on {replicas}: {texts(refused)!r}")

    ran, replicas = await retry(three.url, alice(auth, cluster), asked.request_state)
    assert replicas == [three.name], replicas
    assert ok(ran)["message"] == args["message"], ran
    replay, _ = await retry(two.url, alice(auth, cluster), asked.request_state)
    assert replay.is_error and "already decided" in texts(replay), texts(replay)


async def test_a_task_of_one_principal_is_unknown_to_another_on_every_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """A task (SEP-2663) alice starts on replica-1 (`slow_job`, which asks for
    approval first) is an unknown task to bob on the other replicas and through
    nginx: he can neither poll, answer nor cancel it; alice, on replica-3, finds
    it still waiting for her approval, answers it on replica-2 and reads its
    result there; bob still cannot see it once it has ended."""
    cluster = auth_cluster
    one, two, three = (replica.url for replica in cluster.replicas)
    extension = [TasksExtension()]
    meta = {INVOCATION: "alice-task"}
    async with (
        connect(one, extensions=extension, headers=alice(auth, cluster)) as (alice_1, _),
        connect(two, extensions=extension, headers=alice(auth, cluster)) as (alice_2, _),
        connect(three, extensions=extension, headers=alice(auth, cluster)) as (alice_3, _),
        connect(two, extensions=extension, headers=bob(auth, cluster)) as (bob_2, _),
        connect(three, extensions=extension, headers=bob(auth, cluster)) as (bob_3, _),
        connect(cluster.url, extensions=extension, headers=bob(auth, cluster)) as (bob_nginx, _),
    ):
        handle = await start(alice_1.session, "slow_job", {"ms": 500, "key": "done"}, meta)
        task = handle.task_id

        async def refused_to_bob(*, finished: bool = False) -> None:
            for session in (bob_2.session, bob_3.session, bob_nginx.session):
                requests = [get(session, task), cancel(session, task)]
                if not finished:
                    requests.insert(1, update(session, task, {"approval": ACCEPT}))
                for request in requests:
                    with anyio.fail_after(CALL_S), pytest.raises(MCPError) as unknown:
                        await request
                    assert "unknown task" in unknown.value.error.message, unknown.value

        await refused_to_bob()
        asked = await wait(alice_3.session, task, until=("input_required",))
        assert asked.status == "input_required", asked  # bob's answer and cancel did nothing
        assert "approval" in (asked.input_requests or {}), asked
        await update(alice_2.session, task, {"approval": ACCEPT})
        state = await wait(alice_2.session, task)
        assert state.status == "completed", state
        assert ok(state.call_result()) == {"slept_ms": 500}
        await refused_to_bob(finished=True)


async def test_a_2025_session_of_one_principal_is_refused_to_another_on_every_replica(
    auth: AuthServer, auth_cluster: Cluster
) -> None:
    """alice's 2025-11-25 session, opened through nginx: every replica serves
    her with its ID (taking it up from Redis), and none serves bob with it
    (404, as for no session); his `DELETE` of it ends nothing."""
    cluster = auth_cluster
    async with connect_legacy(cluster.url, headers=alice(auth, cluster)) as (session, seen):
        with anyio.fail_after(CALL_S):
            assert ok(await session.call_tool("add", {"a": 1, "b": 1})) == {"result": 2}
        [session_id] = set(seen.sessions)

        def request(who: dict[str, str]) -> dict[str, Any]:
            headers = {
                **who,
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-11-25",
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
            }
            return {"headers": headers, "json": {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}}

        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for replica in cluster.replicas:
                answer = await http.post(replica.url, **request(bob(auth, cluster)))
                assert answer.status_code == 404, (replica.name, answer.status_code, answer.text)
                assert "add" not in answer.text
                ended = await http.delete(replica.url, headers=request(bob(auth, cluster))["headers"])
                assert ended.status_code == 404, (replica.name, ended.status_code, ended.text)
                answer = await http.post(replica.url, **request(alice(auth, cluster)))
                assert answer.status_code == 200, (replica.name, answer.status_code, answer.text)
                assert '"add"' in answer.text and answer.headers.get(REPLICA) == replica.name
        with anyio.fail_after(CALL_S):
            assert ok(await session.call_tool("add", {"a": 2, "b": 2})) == {"result": 4}
