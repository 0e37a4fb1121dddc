"""The official MCP SDK's OAuth client as the tests drive it (tests/mcp and
tests/cluster): `oauth_client` is its `OAuthClientProvider`, with tokens kept in
memory (`MemoryStorage`) and `Browser` playing the user's browser against the
test authorization server (`authserver.py`), which approves at once."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

#: A hang guard for one request of the browser (never a timing assertion).
CALL_S = 30.0

#: Where the SDK client says the authorization server should send the user
#: back; nothing listens there: the test's "browser" reads the redirect itself.
REDIRECT_URI = "http://127.0.0.1:9/oauth/callback"


class MemoryStorage:
    """The SDK's `TokenStorage`, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Plays the user's browser for the SDK: `redirect` opens the authorization
    URL (the authorization server approves at once), reads the redirect back to
    `REDIRECT_URI` without following it, and `callback` hands its code, state
    and `iss` to the SDK."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._pending: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        self.visited.append(url)
        async with httpx2.AsyncClient(timeout=CALL_S, follow_redirects=False) as http:
            with anyio.fail_after(CALL_S):
                response = await http.get(url)
        assert response.status_code == 302, (response.status_code, response.text)
        location = urlparse(response.headers["location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI, location
        query = parse_qs(location.query)
        assert "error" not in query, query
        self._pending = AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self._pending = self._pending, None
        assert result is not None, "the SDK asked for the callback before any redirect"
        return result


def oauth_client(
    server_url: str, storage: MemoryStorage, browser: Browser, name: str = "toolhost e2e"
) -> OAuthClientProvider:
    """The official SDK's OAuth client for `server_url`, registering itself dynamically as `name`."""
    return OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )


#: One auth-param of a challenge: `name=token` or `name="quoted string"`.
_PARAM = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))\s*(?:,|$)')


def parse_challenge(value: str) -> dict[str, str]:
    """The auth-params of a single `Bearer` challenge (RFC 7235, RFC 6750 § 3)."""
    scheme, _, rest = value.strip().partition(" ")
    assert scheme.lower() == "bearer", f"not a Bearer challenge: {value!r}"
    params: dict[str, str] = {}
    rest, pos = rest.strip(), 0
    while pos < len(rest):
        match = _PARAM.match(rest, pos)
        assert match, f"malformed WWW-Authenticate at {rest[pos:]!r}: {value!r}"
        name = match.group(1).lower()
        assert name not in params, f"{name} twice in {value!r}"
        quoted = match.group(2)
        params[name] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else match.group(3)
        pos = match.end()
    return params
