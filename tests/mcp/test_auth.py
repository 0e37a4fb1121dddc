"""`toolhost serve --http` as an OAuth 2.1 resource server (`[serve.auth]`),
against a real authorization server (`authserver.py`: the official SDK's
authorization-server routes, RS256 JWTs, a JWKS that can misbehave).

What is checked:

- the official SDK client (`OAuthClientProvider`) finds everything by itself
  from toolhost's 401 (protected resource metadata, RFC 9728; the authorization
  server; registration; authorization code + PKCE for the RFC 8707 `resource`
  toolhost names) and then lists and calls tools, on both protocol revisions;
- refusals: no token, and tokens that are expired, for another audience or
  issuer, badly signed, of an unknown key, unsigned (`alg: none`) or HMAC-signed
  with the public key, each 401 with the RFC 6750 challenge naming the metadata;
  a token without the required scope is 403 `insufficient_scope`;
- the issuer's JWKS in trouble (down, slow, huge, not JSON): cached keys keep
  working, unknown ones are refused, nothing hangs; a JWKS down from the start
  refuses everything and the server stays up;
- the metadata documents and `/healthz` answer without a token.

Some tests go beyond that list, each saying so: the other JWT rules (`aud` and
`exp` required, `nbf`, exact issuer, the key's algorithm, no `jku`, no query
token), key rotation and recovery (an unknown kid makes toolhost fetch the JWKS
again, at most every `jwks_refresh_min_secs`: these set it to 1 s and retry for
up to 30 s), an oversized or endless JWKS answer not used, and made-up kids not
hammering the issuer.

Each test starts its own authorization server and toolhost. Since the
`resource` (the audience tokens must name) contains toolhost's port, the port
is chosen before toolhost starts (`launch_oauth`). Timeouts are hang guards
only, never timing assertions.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import ProtectedResourceMetadata

from authserver import OMIT, AuthServer, SigningKey
from conftest import (
    CALL_S,
    LEGACY,
    MODERN,
    SERVING,
    STARTUP_S,
    Client,
    HttpServer,
    PluginsFactory,
    _modern,
    _session,
    server_env,
)
from oauthclient import Browser, MemoryStorage, oauth_client, parse_challenge
from scenarios import ok

pytestmark = pytest.mark.anyio

#: The scopes every request needs, and those advertised.
REQUIRED = ["mcp:tools"]
SUPPORTED = ["mcp:tools", "tools:read"]
LEEWAY_S = 60

#: For the tests that wait for toolhost to fetch an issuer's keys again: one
#: second between fetches at least, two per fetch (defaults: 10 s and 5 s).
QUICK_REFETCH = {"jwks_refresh_min_secs": 1, "fetch_timeout_ms": 2000}

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
BASE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# --- the server -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _PortTaken(Exception):
    """The port chosen for toolhost was taken before it could bind it."""


class OAuthServer(HttpServer):
    """`toolhost serve --http 127.0.0.1:PORT` on a port chosen before it starts
    (its `[serve.auth] resource` names it)."""

    def __init__(self, *args: Any, http_port: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.http_port = http_port

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def resource(self) -> str:
        """The canonical URI of the MCP endpoint: the audience its tokens name."""
        return f"{self.origin}/mcp"

    @property
    def metadata_url(self) -> str:
        """Where RFC 9728 § 3.1 puts the protected resource metadata of `resource`."""
        return f"{self.origin}/.well-known/oauth-protected-resource/mcp"

    async def start(self) -> None:
        log = self.workdir / f"stderr-http-{self.http_port}.log"
        self.logs.append(log)
        with open(log, "w") as errlog, open(self.workdir / f"stdout-http-{self.http_port}.log", "w") as out:
            self.process = subprocess.Popen(
                [str(self.binary), *self.argv, "serve", "--http", f"127.0.0.1:{self.http_port}"],
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
                    assert self.url == self.resource, (self.url, self.resource)
                    return
                if self.process.poll() is not None:
                    if "in use" in self.stderr().lower():
                        raise _PortTaken(self.stderr())
                    raise AssertionError(
                        f"toolhost serve --http exited with {self.process.returncode}:\n{self.stderr()}"
                    )
                await anyio.sleep(0.05)


def toml(value: Any) -> str:
    """A TOML value for a string, number, boolean or list of strings (JSON's
    spelling of those is TOML's)."""
    return json.dumps(value)


def auth_config(
    resource: str,
    issuers: Sequence[tuple[str, str | None]],
    *,
    scopes: Sequence[str] | None = REQUIRED,
    scopes_supported: Sequence[str] | None = SUPPORTED,
    roles_claim: str | None = "groups",
    leeway_secs: int | None = LEEWAY_S,
    jwks_cache_secs: int | None = 300,
    jwks_refresh_min_secs: int | None = None,
    fetch_timeout_ms: int | None = None,
) -> str:
    """The `[serve.auth]` section trusting `issuers` (issuer, JWKS URI or None
    to have it discovered); None leaves a key out (toolhost's defaults: at
    least 10 s between two fetches of an issuer's keys, 5 s per fetch)."""
    lines = ["[serve.auth]", f"resource = {toml(resource)}"]
    for key, value in [
        ("scopes", scopes),
        ("scopes_supported", scopes_supported),
        ("roles_claim", roles_claim),
        ("leeway_secs", leeway_secs),
        ("jwks_cache_secs", jwks_cache_secs),
        ("jwks_refresh_min_secs", jwks_refresh_min_secs),
        ("fetch_timeout_ms", fetch_timeout_ms),
    ]:
        if value is not None:
            lines.append(f"{key} = {toml(value if isinstance(value, (str, int)) else list(value))}")
    for issuer, jwks_uri in issuers:
        lines += ["", "[[serve.auth.issuers]]", f"issuer = {toml(issuer)}"]
        if jwks_uri is not None:
            lines.append(f"jwks_uri = {toml(jwks_uri)}")
    return "\n".join(lines) + "\n"


LaunchOAuth = Callable[..., Any]
DEFAULT: Any = object()


@pytest.fixture
def launch_oauth(toolhost_bin: Path, tmp_path: Path, cache_dir: Path, protocol: str) -> LaunchOAuth:
    """`launch_oauth(plugins, auth, *more, jwks_uri=..., **auth_config options)`:
    starts toolhost with `[serve.auth]` trusting `auth` (its JWKS at `jwks_uri`:
    default `auth.jwks_uri`; None: discovered from its metadata) and the
    authorization servers `more` (at their `jwks_uri`)."""
    counter = iter(range(1_000_000))

    @asynccontextmanager
    async def launch(
        plugins: Path,
        auth: AuthServer,
        *more: AuthServer,
        jwks_uri: Any = DEFAULT,
        env: dict[str, str] | None = None,
        **options: Any,
    ) -> AsyncIterator[OAuthServer]:
        workdir = tmp_path / f"oauth-server-{next(counter)}"
        workdir.mkdir()
        config_file = workdir / "toolhost.toml"
        argv = ["--plugins", str(plugins), "--config", str(config_file)]
        server: OAuthServer | None = None
        try:
            for _attempt in range(3):
                port = free_port()
                config_file.write_text(
                    auth_config(
                        f"http://127.0.0.1:{port}/mcp",
                        [
                            (auth.issuer, auth.jwks_uri if jwks_uri is DEFAULT else jwks_uri),
                            *[(other.issuer, other.jwks_uri) for other in more],
                        ],
                        **options,
                    )
                )
                server = OAuthServer(
                    toolhost_bin, plugins, workdir, argv, server_env(cache_dir, env or {}), protocol, http_port=port
                )
                try:
                    await server.start()
                    break
                except _PortTaken:
                    continue
            else:
                raise AssertionError(f"no free port for toolhost in 3 attempts:\n{server and server.stderr()}")
            yield server
        finally:
            if server is not None and hasattr(server, "process"):
                server.stop()
            log = server.stderr() if server is not None else ""
            print(f"--- toolhost.toml ---\n{config_file.read_text() if config_file.exists() else ''}")
            print(f"--- http server stderr ({' '.join(argv)}) ---\n{log}")

    return launch


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    """A running authorization server (stopped after the test, also on failure)."""
    with AuthServer(groups=["staff", "tools-admins"]) as server:
        yield server


# --- raw HTTP -------------------------------------------------------------------------

@dataclass
class Answer:
    status: int
    headers: httpx2.Headers
    body: str

    @property
    def challenge(self) -> dict[str, str]:
        values = self.headers.get_list("www-authenticate")
        assert len(values) == 1, f"expected one WWW-Authenticate header, got {values!r} (status {self.status})"
        return parse_challenge(values[0])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def post(server: OAuthServer, token: str | None = None, *, headers: dict[str, str] | None = None) -> Answer:
    """POSTs an `initialize` to the MCP endpoint (with `token` as the bearer
    token); for a 200 reads up to the result, then ends the session it opened."""
    sent = BASE | (bearer(token) if token is not None else {}) | (headers or {})
    body = ""
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        with anyio.fail_after(CALL_S):
            async with http.stream("POST", server.url, json=INITIALIZE, headers=sent) as response:
                if response.status_code == 200:
                    async for text in response.aiter_text():
                        body += text
                        if "protocolVersion" in body:
                            break
                else:
                    body = (await response.aread()).decode(errors="replace")
                answer = Answer(response.status_code, response.headers, body)
            if session := answer.headers.get("mcp-session-id"):
                auth = {k: v for k, v in sent.items() if k.lower() == "authorization"}
                await http.delete(server.url, headers={"mcp-session-id": session} | auth)
    return answer


async def get(url: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        with anyio.fail_after(CALL_S):
            return await http.get(url, headers=headers)


def assert_challenged(server: OAuthServer, answer: Answer, *, error: str | None = "invalid_token") -> None:
    """A 401 whose challenge names the metadata and the required scope; with
    `error` (a bad token) also that RFC 6750 error and a description, without it
    (no token at all) no error code (RFC 6750 § 3.1)."""
    assert answer.status == 401, (answer.status, answer.body)
    params = answer.challenge
    assert params.get("resource_metadata") == server.metadata_url, params
    assert params.get("scope") == " ".join(REQUIRED), params
    if error is None:
        assert "error" not in params, params
    else:
        assert params.get("error") == error, params
        assert params.get("error_description"), params


def assert_forbidden(server: OAuthServer, answer: Answer) -> None:
    """A 403 `insufficient_scope` naming the scope needed and the metadata."""
    assert answer.status == 403, (answer.status, answer.body)
    params = answer.challenge
    assert params.get("error") == "insufficient_scope", params
    assert params.get("scope") == " ".join(REQUIRED), params
    assert params.get("resource_metadata") == server.metadata_url, params


def assert_accepted(answer: Answer) -> None:
    assert answer.status == 200 and "protocolVersion" in answer.body, (answer.status, answer.headers, answer.body)


# --- MCP clients ----------------------------------------------------------------------


@asynccontextmanager
async def connect(
    url: str, protocol: str, *, auth: httpx2.Auth | None = None, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """An initialized MCP session (as conftest's `HttpServer.connect`) whose
    HTTP client has `auth` (an httpx2 auth flow) or extra `headers`."""
    label = f"http session to {url} ({protocol})"
    async with create_mcp_http_client(headers=headers, auth=auth) as http:
        if protocol == MODERN:
            async with _modern(label, streamable_http_client(url, http_client=http), None) as client:
                yield client
            return
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with _session(label, read, write, None) as client:
                yield client


async def serves(server: OAuthServer, token: str, message: str = "still here") -> None:
    """`token` gets through: a raw initialize, then a session of each protocol
    revision lists the tools and calls `echo`."""
    assert_accepted(await post(server, token))
    for protocol in (LEGACY, MODERN):
        async with connect(server.url, protocol, headers=bearer(token)) as client:
            assert "echo" in await client.tools()
            assert ok(await client.call("echo", {"message": message}))["message"] == message


async def test_a_session_is_its_openers_alone(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """Another caller who learns a 2025-11-25 session's ID can neither call in it
    (its direct calls included) nor end it; its opener can do both."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        alice = bearer(auth.token(server.resource, sub="alice"))
        bob = bearer(auth.token(server.resource, sub="bob"))
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            with anyio.fail_after(CALL_S):
                response = await http.post(server.url, json=INITIALIZE, headers=BASE | alice)
                assert response.status_code == 200, response.text
                session = BASE | {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert (await http.post(server.url, json=initialized, headers=session | alice)).status_code == 202
                theirs = await http.post(server.url, json=call, headers=session | bob)
                assert "another caller" in theirs.text and '"hi"' not in theirs.text, theirs.text
                ended = await http.delete(server.url, headers=session | bob)
                assert ended.status_code == 404, (ended.status_code, ended.text)
                mine = await http.post(server.url, json=call, headers=session | alice)
                assert '"message":"hi"' in mine.text, mine.text
                ended = await http.delete(server.url, headers=session | alice)
                assert ended.status_code in (200, 204), (ended.status_code, ended.text)
        assert "refused to end an MCP session another caller opened" in server.stderr(), server.stderr()


# --- a. the SDK's OAuth client, end to end ----------------------------------------------


@pytest.mark.parametrize("protocol", [LEGACY, MODERN])
async def test_the_sdk_client_authorizes_itself_and_calls_tools(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer, protocol: str
) -> None:
    """The official SDK's `OAuthClientProvider`, told nothing but toolhost's URL,
    gets from the 401 to a working session: it reads toolhost's protected
    resource metadata, finds the authorization server there, registers, is
    authorized for `resource` = toolhost's URL with the challenged scope, gets a
    token, and lists and calls tools. One registration and one token serve two
    sessions; the token never shows in toolhost's log."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        storage, browser = MemoryStorage(), Browser()
        provider = oauth_client(server.url, storage, browser)
        async with connect(server.url, protocol, auth=provider) as client:
            assert "echo" in await client.tools()
            assert ok(await client.call("echo", {"message": "hello"}))["message"] == "hello"

        # What the SDK found out, from toolhost's challenge and metadata.
        context = provider.context
        assert context.protected_resource_metadata is not None
        assert str(context.protected_resource_metadata.resource) == server.resource
        assert context.auth_server_url == auth.issuer
        assert context.oauth_metadata is not None and str(context.oauth_metadata.issuer) == auth.issuer

        # What the authorization server saw: one client, one authorization for
        # toolhost's resource and the challenged scope, one token.
        assert len(auth.registrations) == 1, auth.registrations
        assert [a.resource for a in auth.authorizations] == [server.resource], auth.authorizations
        assert [a.params.scopes for a in auth.authorizations] == [REQUIRED], auth.authorizations
        assert len(browser.visited) == 1, browser.visited
        assert len(auth.issued) == 1, auth.issued
        issued = auth.issued[0]
        assert storage.tokens is not None and storage.tokens.access_token == issued.token
        claims = issued.claims
        assert claims["iss"] == auth.issuer and claims["aud"] == server.resource, claims
        assert claims["scope"] == "mcp:tools" and claims["groups"] == ["staff", "tools-admins"], claims
        assert claims["client_id"] == auth.registrations[0].client_id, claims

        # The stored token serves a second session: nothing new is issued.
        async with connect(server.url, protocol, auth=provider) as client:
            assert ok(await client.call("echo", {"message": "again"}))["message"] == "again"
        assert len(auth.issued) == 1 and len(auth.registrations) == 1, (auth.issued, auth.registrations)

        assert_not_logged(server, [issued.token, issued.refresh_token or ""])


# --- b. refusals ------------------------------------------------------------------------


async def test_requests_without_a_token_are_challenged(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """Without a token every method of the MCP endpoint is 401, and the
    challenge names the protected resource metadata and the required scope
    (no error code: RFC 6750 § 3.1); a Basic credential counts as none."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        assert_challenged(server, await post(server), error=None)
        answer = await post(server, headers={"Authorization": "Basic dXNlcjpwYXNz"})
        assert answer.status == 401, answer
        assert answer.challenge.get("resource_metadata") == server.metadata_url, answer.challenge
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for method in ["GET", "DELETE"]:
                with anyio.fail_after(CALL_S):
                    response = await http.request(method, server.url, headers={"Accept": "text/event-stream"})
                assert_challenged(server, Answer(response.status_code, response.headers, response.text), error=None)
        # The challenge's metadata URL is where the metadata is.
        response = await get(server.metadata_url)
        assert response.status_code == 200 and response.json()["resource"] == server.resource, response.text


def bad_tokens(auth: AuthServer, server: OAuthServer) -> dict[str, str]:
    """Tokens the contract refuses with 401 `invalid_token`, by what is wrong with them."""
    resource = server.resource
    now = int(time.time())

    def claims(**overrides: Any) -> dict[str, Any]:
        return auth.claims(resource, **overrides)

    stranger = SigningKey.generate(auth.key.kid)  # another key under the trusted kid
    unknown = SigningKey.generate("nobody-knows-this-kid")
    header, payload, signature = auth.token(resource).split(".")
    forged = auth.token(resource, sub="admin", scope="mcp:tools tools:read").split(".")[1]
    return {
        "expired an hour ago": auth.mint(claims(exp=now - 3600, iat=now - 7200, nbf=now - 7200)),
        "expired just beyond the leeway": auth.mint(claims(exp=now - LEEWAY_S - 30)),
        "for another audience": auth.token("https://elsewhere.example/mcp"),
        "for another path of this server": auth.token(f"{server.origin}/other"),
        "for a list of other audiences": auth.token(resource, aud=["https://elsewhere.example/mcp", server.origin]),
        "from another issuer": auth.token(resource, iss="http://127.0.0.1:1"),
        "signed by another key under the trusted kid": auth.mint(claims(), key=stranger),
        "signed by a key of an unknown kid": auth.mint(claims(), key=unknown),
        "alg none": auth.mint(claims(), alg="none"),
        "alg none with a real signature": auth.mint(claims(), alg="none") + signature,
        "HS256 keyed with the public key (PEM)": auth.mint(claims(), alg="HS256", key=auth.key.public_pem()),
        "HS256 keyed with the public key (DER)": auth.mint(claims(), alg="HS256", key=auth.key.public_der()),
        "a forged payload under a real signature": f"{header}.{forged}.{signature}",
        "two segments": f"{header}.{payload}",
        "not a JWT": "not-a-jwt",
    }


def _mismatches(check: Callable[[Answer], None], answers: dict[str, Answer]) -> dict[str, str]:
    """The cases whose answer fails `check`, with what came back."""
    wrong = {}
    for case, answer in answers.items():
        try:
            check(answer)
        except AssertionError:
            challenge = answer.headers.get("www-authenticate")
            wrong[case] = f"HTTP {answer.status}, WWW-Authenticate: {challenge!r}, body: {answer.body[:120]!r}"
    return wrong


def assert_not_logged(server: OAuthServer, tokens: Sequence[str]) -> None:
    """No token (nor its signature) is in toolhost's stderr."""
    log = server.stderr()
    for token in tokens:
        secret = [token, *token.split(".")[2:3]]
        assert not any(s in log for s in secret if len(s) > 20), f"toolhost logged a bearer token: {token[:24]}…"


async def test_bad_tokens_are_refused(launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer) -> None:
    """Every token the contract calls invalid (expired beyond the leeway, another
    audience or issuer, a bad signature, an unknown kid, `alg: none`, HS256 keyed
    with the RSA public key, a forged payload, not a JWT) is 401 with the
    `invalid_token` challenge; a good token still works afterwards, over both
    protocol revisions, and no token is logged."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        good = auth.token(server.resource)
        assert_accepted(await post(server, good))  # the issuer's keys are fetched and cached now
        tokens = bad_tokens(auth, server)
        answers = {case: await post(server, token) for case, token in tokens.items()}
        wrong = _mismatches(lambda answer: assert_challenged(server, answer), answers)
        assert not wrong, "not refused as invalid_token:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())
        await serves(server, good)
        assert_not_logged(server, [good, *tokens.values()])


async def test_a_token_without_the_required_scope_is_forbidden(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """A valid token lacking `mcp:tools` (another scope, a longer name starting
    with it, another case, an empty or no `scope` claim) is 403
    `insufficient_scope` naming the scope needed; one holding it among others
    gets through."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        resource = server.resource
        tokens = {
            "another scope": auth.token(resource, scope="tools:read"),
            "a longer scope starting with the needed one": auth.token(resource, scope="mcp:toolsx"),
            "the needed scope in upper case": auth.token(resource, scope="MCP:TOOLS"),
            "an empty scope": auth.token(resource, scope=""),
            "no scope claim": auth.token(resource, scope=OMIT),
        }
        answers = {case: await post(server, token) for case, token in tokens.items()}
        wrong = _mismatches(lambda answer: assert_forbidden(server, answer), answers)
        assert not wrong, "not refused as insufficient_scope:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())
        await serves(server, auth.token(resource, scope="tools:read mcp:tools"))


async def test_tokens_within_the_rules_are_accepted(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """What is right is accepted: expiry and `nbf` within `leeway_secs`, an
    audience list naming this server, more scopes than needed, and no roles
    claim (no roles)."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        resource, now = server.resource, int(time.time())
        tokens = {
            "expired within the leeway": auth.token(resource, exp=now - 10),
            "valid within the leeway from now": auth.token(resource, nbf=now + 10),
            "an audience list naming this server": auth.token(resource, aud=["https://elsewhere.example", resource]),
            "more scopes than needed": auth.token(resource, scope="tools:read mcp:tools offline_access"),
            "no roles claim": auth.token(resource, groups=OMIT),
        }
        answers = {case: await post(server, token) for case, token in tokens.items()}
        wrong = _mismatches(assert_accepted, answers)
        assert not wrong, "refused:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())
        await serves(server, tokens["an audience list naming this server"])


async def test_tokens_failing_the_other_jwt_rules_are_refused(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """Beyond the contract's list, what RFC 7519, 9068 and 8725 ask of JWT access
    tokens: an `aud` and an `exp` are required, `nbf` is honoured, the issuer is
    compared as a string (a trailing slash is another issuer), the algorithm is
    the one the key is published for (RS384 under an RS256 key is refused), a
    `jku` header is not followed, and the token is read from the header only
    (not `?access_token=`)."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        resource, now = server.resource, int(time.time())
        attacker = SigningKey.generate("attacker")
        tokens = {
            "no audience": auth.token(resource, aud=OMIT),
            "no expiry": auth.token(resource, exp=OMIT),
            "not valid for another hour": auth.token(resource, nbf=now + 3600),
            "the issuer with a trailing slash": auth.token(resource, iss=auth.issuer + "/"),
            "RS384 under a key published for RS256": auth.mint(auth.claims(resource), alg="RS384"),
            "a jku naming the signer's keys": auth.mint(
                auth.claims(resource), key=attacker, headers={"jku": f"http://127.0.0.1:{free_port()}/jwks"}
            ),
        }
        answers = {case: await post(server, token) for case, token in tokens.items()}
        wrong = _mismatches(lambda answer: assert_challenged(server, answer), answers)
        assert not wrong, "not refused as invalid_token:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())

        good = auth.token(resource)
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            with anyio.fail_after(CALL_S):
                response = await http.post(server.url, params={"access_token": good}, json=INITIALIZE, headers=BASE)
        assert response.status_code == 401, (response.status_code, response.text)
        await serves(server, good)


async def test_each_trusted_issuer_is_checked_with_its_own_keys(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """With two `[[serve.auth.issuers]]`, both are advertised and the tokens of
    each are accepted; but a key is good only for its own issuer: a token
    claiming the first issuer signed by the second (under its own kid, or the
    first's) is refused, and so is one from an issuer not trusted at all."""
    with AuthServer() as second, AuthServer() as untrusted:
        async with launch_oauth(make_plugins("echo"), auth, second) as server:
            document = (await get(server.metadata_url)).json()
            assert document.get("authorization_servers") == [auth.issuer, second.issuer], document
            await serves(server, auth.token(server.resource), "first issuer")
            await serves(server, second.token(server.resource), "second issuer")
            claims = auth.claims(server.resource)  # iss: the first issuer
            tokens = {
                "the first issuer, signed by the second's key": second.mint(claims),
                "the first issuer, signed by the second's key under the first's kid": second.mint(
                    claims, kid=auth.key.kid
                ),
                "an untrusted issuer": untrusted.token(server.resource),
                "an untrusted issuer, signed by a trusted key": auth.mint(untrusted.claims(server.resource)),
            }
            answers = {case: await post(server, token) for case, token in tokens.items()}
            wrong = _mismatches(lambda answer: assert_challenged(server, answer), answers)
            assert not wrong, "not refused as invalid_token:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())
            assert untrusted.jwks_fetches == 0 and untrusted.metadata_fetches == 0, "toolhost asked an untrusted issuer"


# --- c. the issuer's JWKS in trouble ----------------------------------------------------


@pytest.mark.parametrize("mode", ["down", "slow", "huge", "garbage"])
async def test_cached_keys_outlive_jwks_trouble(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer, mode: str
) -> None:
    """Once the issuer's keys are cached, its JWKS failing (500, an answer that
    never comes, one of 8 MiB, one that is not JSON) changes nothing for tokens
    of a cached key; tokens of a key toolhost has not seen (one published during
    the trouble, in the oversized answer too, and one never published) are 401,
    without hanging, and good tokens are answered while those are pending."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        assert_accepted(await post(server, auth.token(server.resource)))  # the keys are cached now
        auth.jwks_mode = mode  # type: ignore[assignment]
        published = auth.add_key(sign_with=False)
        never = SigningKey.generate("nobody-knows-this-kid")
        answers: dict[str, Answer] = {}

        async def attempt(case: str, key: SigningKey) -> None:
            answers[case] = await post(server, auth.mint(auth.claims(server.resource), key=key))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attempt, "a key published during the trouble", published)
            tasks.start_soon(attempt, "a key never published", never)
            # While toolhost may be waiting on the JWKS for those two:
            await serves(server, auth.token(server.resource), "while the JWKS is in trouble")
        wrong = _mismatches(lambda answer: assert_challenged(server, answer), answers)
        assert not wrong, f"JWKS {mode}: not refused:\n" + "\n".join(f"- {c}: {w}" for c, w in wrong.items())

        await serves(server, auth.token(server.resource), "after")
        assert (await get(f"{server.origin}/healthz")).status_code == 200
        assert server.process.poll() is None


@pytest.mark.parametrize("trouble", ["500", "connection refused", "not JSON"])
async def test_a_jwks_unreachable_from_the_start_refuses_tokens(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer, trouble: str
) -> None:
    """A fresh server whose issuer's JWKS cannot be had (500, nobody listening,
    not JSON) cannot verify a token: a good one is refused (503 or 401, never
    let through), repeatedly, and the server stays up, its probes and metadata
    answering."""
    jwks_uri: Any = DEFAULT
    if trouble == "500":
        auth.jwks_mode = "down"
    elif trouble == "not JSON":
        auth.jwks_mode = "garbage"
    else:
        jwks_uri = f"http://127.0.0.1:{free_port()}/jwks"
    async with launch_oauth(make_plugins("echo"), auth, jwks_uri=jwks_uri) as server:
        for _ in range(3):
            answer = await post(server, auth.token(server.resource))
            assert answer.status in (401, 503), (answer.status, answer.body)
            if answer.status == 401:
                assert_challenged(server, answer)
        assert (await get(f"{server.origin}/healthz")).status_code == 200
        assert (await get(server.metadata_url)).status_code == 200
        assert server.process.poll() is None


async def test_keys_are_fetched_once_and_cached(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """With `jwks_cache_secs = 300`, tokens of a known key cost no JWKS fetch
    after the first."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        assert_accepted(await post(server, auth.token(server.resource)))
        fetched = auth.jwks_fetches
        assert fetched >= 1, "toolhost accepted a token without fetching the issuer's keys"
        for _ in range(5):
            assert_accepted(await post(server, auth.token(server.resource)))
        assert auth.jwks_fetches == fetched, (fetched, auth.jwks_fetches)


async def test_the_jwks_is_found_through_the_issuer_metadata(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory
) -> None:
    """Without `jwks_uri`, toolhost reads the issuer's RFC 8414 metadata for it
    (here at a path nobody would guess) and accepts its tokens."""
    with AuthServer(jwks_path="/keys/published.json") as auth:
        async with launch_oauth(make_plugins("echo"), auth, jwks_uri=None) as server:
            await serves(server, auth.token(server.resource))
            assert auth.metadata_fetches >= 1 and auth.jwks_fetches >= 1, (auth.metadata_fetches, auth.jwks_fetches)


async def until_accepted(server: OAuthServer, token: str) -> None:
    """Retries `token` until it is accepted (each refusal a proper one)."""
    with anyio.fail_after(CALL_S):
        while (answer := await post(server, token)).status != 200:
            assert answer.status in (401, 503), (answer.status, answer.body)
            await anyio.sleep(0.25)
    assert_accepted(answer)


async def test_a_rotated_key_is_picked_up(launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer) -> None:
    """Beyond the contract's list: when the issuer rotates to a new key, a token
    of the new kid makes toolhost fetch the JWKS again (at most every
    `jwks_refresh_min_secs`, here 1: this retries for up to 30 s) and is
    accepted; the old key, still published, still works."""
    async with launch_oauth(make_plugins("echo"), auth, **QUICK_REFETCH) as server:
        old = auth.token(server.resource)
        assert_accepted(await post(server, old))
        auth.add_key()
        await until_accepted(server, auth.token(server.resource))
        assert_accepted(await post(server, old))


async def test_the_server_recovers_when_the_jwks_comes_back(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """Beyond the contract's list: a JWKS down at first is not given up on; once
    it answers, good tokens are accepted (retried for up to 30 s, with
    `jwks_refresh_min_secs = 1`)."""
    auth.jwks_mode = "down"
    async with launch_oauth(make_plugins("echo"), auth, **QUICK_REFETCH) as server:
        token = auth.token(server.resource)
        assert (await post(server, token)).status in (401, 503)
        auth.jwks_mode = "normal"
        await until_accepted(server, token)
        await serves(server, token)


@pytest.mark.parametrize("mode", ["huge", "slow"])
async def test_an_oversized_or_endless_jwks_answer_is_not_used(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer, mode: str
) -> None:
    """Beyond the contract's list (it needs the refetch of an unknown kid, as
    rotation does): the issuer publishes a new key in an answer of 8 MiB, or in
    one that never comes. Tokens of that key are refused, also by the request
    that made toolhost fetch the JWKS again and by the next ones (so the
    oversized document was not used, and the fetch gave up: `fetch_timeout_ms`
    is 2000 here); once the JWKS answers normally, the key is accepted."""
    async with launch_oauth(make_plugins("echo"), auth, **QUICK_REFETCH) as server:
        assert_accepted(await post(server, auth.token(server.resource)))
        auth.jwks_mode = mode  # type: ignore[assignment]
        trouble_began = auth.jwks_fetches
        key = auth.add_key(sign_with=False)
        token = auth.mint(auth.claims(server.resource), key=key)
        with anyio.fail_after(CALL_S):
            while auth.jwks_fetches == trouble_began:
                assert_challenged(server, await post(server, token))
                await anyio.sleep(0.25)
        # (An answer still being read when the loop ended is judged by the next requests.)
        for _ in range(3 if mode == "huge" else 1):
            assert_challenged(server, await post(server, token))
        await serves(server, auth.token(server.resource), "the cached key still works")
        auth.jwks_mode = "normal"
        await until_accepted(server, token)


async def test_unknown_kids_do_not_hammer_the_issuer(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """Beyond the contract's list: anyone can make tokens with made-up kids; 20
    of them make toolhost fetch the issuer's JWKS again a few times at most,
    not once each (default `jwks_refresh_min_secs`: 10)."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        assert_accepted(await post(server, auth.token(server.resource)))
        fetched = auth.jwks_fetches
        stranger = SigningKey.generate()
        for i in range(20):
            token = auth.mint(auth.claims(server.resource), key=stranger.private, kid=f"made-up-{i}")
            assert_challenged(server, await post(server, token))
        assert auth.jwks_fetches - fetched <= 3, f"{auth.jwks_fetches - fetched} JWKS fetches for 20 unknown kids"


# --- d. the metadata and the probes -----------------------------------------------------


async def test_protected_resource_metadata_and_probes_need_no_token(
    launch_oauth: LaunchOAuth, make_plugins: PluginsFactory, auth: AuthServer
) -> None:
    """RFC 9728 metadata, without a token, at the path form of the well-known
    URI and at the bare one: this server's resource URI, the issuer exactly as
    configured (no slash added: the SDK compares it with the issuer's own
    metadata as a string), the advertised scopes, header bearer tokens only;
    the SDK's model reads it. `scopes_supported` defaults to `scopes`.
    `/healthz` needs no token either."""
    async with launch_oauth(make_plugins("echo"), auth) as server:
        expected = {
            "resource": server.resource,
            "authorization_servers": [auth.issuer],
            "scopes_supported": SUPPORTED,
            "bearer_methods_supported": ["header"],
        }
        for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]:
            response = await get(f"{server.origin}{path}")
            assert response.status_code == 200, (path, response.status_code, response.text)
            assert response.headers["content-type"].startswith("application/json"), response.headers
            document = response.json()
            assert {key: document.get(key) for key in expected} == expected, (path, document)
            parsed = ProtectedResourceMetadata.model_validate(document)
            assert str(parsed.resource) == server.resource and str(parsed.authorization_servers[0]) == auth.issuer
        response = await get(f"{server.origin}/healthz")
        assert (response.status_code, response.text) == (200, "alive\n")

    async with launch_oauth(make_plugins("echo"), auth, scopes_supported=None) as server:
        document = (await get(server.metadata_url)).json()
        assert document.get("scopes_supported") == REQUIRED, document
