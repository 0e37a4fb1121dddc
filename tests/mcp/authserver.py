"""A real OAuth 2.1 authorization server for the MCP end-to-end tests, built from
the official MCP SDK's authorization-server pieces (`create_auth_routes` and an
`OAuthAuthorizationServerProvider`), served by uvicorn on a free loopback port.

What it does:

- dynamic client registration (RFC 7591) at `/register`;
- the authorization code grant with PKCE at `/authorize`, approving every
  request at once: it redirects straight back to the client's `redirect_uri`
  with a code, the client's `state` and `iss` (RFC 9207);
- the token endpoint at `/token` (authorization codes and refresh tokens);
- access tokens that are real JWTs (RFC 9068): RS256, signed with an RSA key
  made at startup, header `kid` set (and `typ: at+jwt`); claims `iss` (exactly the metadata's
  `issuer`), `sub`, `aud` (the RFC 8707 `resource` the client asked for),
  `exp`, `iat`, `nbf`, `jti`, `scope` (space-separated), `client_id`, `groups`;
- its public keys as a JWKS at `/jwks` (`jwks_path`; each key with `kid`,
  `alg: RS256`, `use: sig`), named
  by `jwks_uri` in its metadata (RFC 8414) at
  `/.well-known/oauth-authorization-server` (the SDK's metadata has no
  `jwks_uri`; this server serves the SDK's document plus that member).

The issuer is `http://127.0.0.1:PORT`, with no trailing slash: the SDK's
client compares the metadata's `issuer` with the protected resource's
`authorization_servers` entry as plain strings, and a pydantic `AnyHttpUrl`
made without `url_preserve_empty_path` would render it as `.../` (which is what
`create_auth_routes` would advertise if handed one).

For the tests: `mint()` signs any claims (with this server's key, another key,
HS256 or `alg: none`), `add_key()`/`remove_key()` rotate the JWKS, `jwks_mode`
makes the JWKS endpoint misbehave (`slow`, `huge`, `down`, `garbage`), and
`registrations`, `authorizations`, `issued`, `jwks_fetches` and
`metadata_fetches` record what the server saw.

It runs on its own thread (its own event loop), so a test blocked in a system
call or busy in its own loop never stalls it::

    with AuthServer(groups=["staff"]) as auth:
        token = auth.token("http://127.0.0.1:8383/mcp")
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes, cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["AuthServer", "Authorization", "Issued", "JwksMode", "SigningKey", "OMIT"]

#: The JWKS endpoint's behaviours (`AuthServer.jwks_mode`):
#: `normal` answers the key set; `slow` waits `jwks_delay_s` first (or until the
#: mode changes or the server stops); `huge` answers the key set padded to
#: `huge_bytes` (valid JSON, so a client without a size cap would use it);
#: `down` answers 500; `garbage` answers 200 with a body that is not JSON.
JwksMode = Literal["normal", "slow", "huge", "down", "garbage"]

#: `mint(kid=OMIT)`: a token header without `kid`.
OMIT: Any = object()

#: Issuer URLs are rendered as given (no `/` appended to an empty path), as the
#: SDK's metadata models do.
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))

STARTUP_S = 30.0


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class SigningKey:
    """An RSA key pair with its key ID."""

    kid: str
    private: rsa.RSAPrivateKey

    @classmethod
    def generate(cls, kid: str | None = None) -> SigningKey:
        return cls(kid or f"k-{secrets.token_hex(4)}", rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwk(self) -> dict[str, Any]:
        """The public key as a JWK (RFC 7517): `kty`, `n`, `e`, `kid`, `alg`, `use`."""
        jwk = dict(RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True))
        jwk.update(kid=self.kid, alg="RS256", use="sig")
        return jwk

    def public_pem(self) -> bytes:
        """The public key as PEM (SubjectPublicKeyInfo): what a key-confusion attack
        uses as an HMAC secret."""
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def public_der(self) -> bytes:
        """The public key as DER (SubjectPublicKeyInfo)."""
        return self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@dataclass(frozen=True)
class Authorization:
    """One request the authorize endpoint approved."""

    client_id: str
    params: AuthorizationParams

    @property
    def resource(self) -> str | None:
        """The RFC 8707 `resource` the client named."""
        return self.params.resource


@dataclass(frozen=True)
class Issued:
    """One access token the token endpoint issued: the JWT and its claims."""

    token: str
    claims: dict[str, Any]
    refresh_token: str | None


@dataclass
class _Grant:
    """What a refresh token stands for."""

    client_id: str
    scopes: list[str]
    resource: str | None
    subject: str


class _Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """The provider behind the SDK's handlers: in-memory clients, codes and
    refresh tokens; access tokens are JWTs signed by the server's current key."""

    def __init__(self, server: AuthServer) -> None:
        self.server = server
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, _Grant] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        self.server.registrations.append(client_info)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Approves at once: back to the client's redirect URI with a code."""
        self.server.authorizations.append(Authorization(client.client_id, params))
        if params.resource is None and self.server.require_resource:
            raise AuthorizeError("invalid_target", "this server issues tokens for a named resource only (RFC 8707)")
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.server.subject,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.server.issuer)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        # Single use (RFC 6749 § 4.1.2).
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        grant = _Grant(
            client.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject or self.server.subject,
        )
        return self._tokens(grant)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        grant = self.refresh_tokens.get(refresh_token)
        if grant is None:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=grant.client_id,
            scopes=grant.scopes,
            resource=grant.resource,
            subject=grant.subject,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        grant = self.refresh_tokens.pop(refresh_token.token, None)  # rotated
        if grant is None:
            raise TokenError("invalid_grant", "refresh token already used")
        return self._tokens(_Grant(grant.client_id, scopes, grant.resource, grant.subject))

    async def load_access_token(self, token: str) -> AccessToken | None:
        issued = next((i for i in self.server.issued if i.token == token), None)
        if issued is None or issued.claims["exp"] < time.time():
            return None
        claims = issued.claims
        return AccessToken(
            token=token,
            client_id=claims["client_id"],
            scopes=claims["scope"].split(),
            expires_at=claims["exp"],
            resource=claims.get("aud"),
            subject=claims["sub"],
            claims=claims,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh_tokens.pop(token.token, None)

    def _tokens(self, grant: _Grant) -> OAuthToken:
        claims = self.server.claims(
            grant.resource, scope=" ".join(grant.scopes), client_id=grant.client_id, sub=grant.subject
        )
        if grant.resource is None:
            del claims["aud"]
        token = self.server.mint(claims)
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens[refresh] = grant
        self.server.issued.append(Issued(token, claims, refresh))
        return OAuthToken(
            access_token=token,
            token_type="Bearer",
            expires_in=self.server.token_lifetime_s,
            scope=" ".join(grant.scopes) or None,
            refresh_token=refresh,
        )


class AuthServer:
    """The test authorization server; a context manager that starts it on a free
    loopback port (its own thread) and stops it on exit, also on failure.

    Args:
        groups: the `groups` claim of the tokens it issues (settable later).
        subject: their `sub`.
        scopes_supported: advertised, and the only scopes clients may register
            (None: any).
        token_lifetime_s: how long its tokens are valid.
        require_resource: refuse authorization requests without an RFC 8707
            `resource` (every access token then has an `aud`).
        jwks_path: where the JWKS is served (and what `jwks_uri` names).
    """

    def __init__(
        self,
        *,
        groups: Sequence[str] = (),
        subject: str = "user-1",
        scopes_supported: Sequence[str] | None = ("mcp:tools", "tools:read"),
        token_lifetime_s: int = 3600,
        require_resource: bool = True,
        jwks_path: str = "/jwks",
    ) -> None:
        self.groups = list(groups)
        self.subject = subject
        self.scopes_supported = None if scopes_supported is None else list(scopes_supported)
        self.token_lifetime_s = token_lifetime_s
        self.require_resource = require_resource
        self.jwks_path = jwks_path

        #: The key `mint()` and the token endpoint sign with; published in the JWKS.
        self.key = SigningKey.generate()
        self._published: list[SigningKey] = [self.key]

        #: How the JWKS endpoint behaves (see `JwksMode`).
        self.jwks_mode: JwksMode = "normal"
        #: How long `slow` waits before answering (it also ends when the mode
        #: changes or the server stops).
        self.jwks_delay_s = 3600.0
        #: The size of a `huge` answer.
        self.huge_bytes = 8 * 1024 * 1024

        # What the server saw (appended to on the server's thread).
        self.registrations: list[OAuthClientInformationFull] = []
        self.authorizations: list[Authorization] = []
        self.issued: list[Issued] = []
        self.jwks_fetches = 0
        self.metadata_fetches = 0

        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.port = 0
        self.issuer = ""

    # --- URLs ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The issuer URL (`http://127.0.0.1:PORT`)."""
        return self.issuer

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}{self.jwks_path}"

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    # --- tokens -------------------------------------------------------------------

    def claims(self, audience: str | None, *, scope: str = "mcp:tools", **overrides: Any) -> dict[str, Any]:
        """A claim set this server would issue for `audience`, valid from now for
        `token_lifetime_s`; `overrides` replace or add claims (`OMIT`, also as
        `scope`, removes one)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": self.subject,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.token_lifetime_s,
            "jti": uuid.uuid4().hex,
            "scope": scope,
            "client_id": "test-client",
            "groups": list(self.groups),
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not OMIT}

    def token(self, audience: str, *, scope: str = "mcp:tools", **overrides: Any) -> str:
        """A good token for `audience` (as `claims()`), signed with the current key."""
        return self.mint(self.claims(audience, scope=scope, **overrides))

    def mint(
        self,
        claims: Mapping[str, Any],
        *,
        kid: str | None = None,
        key: SigningKey | rsa.RSAPrivateKey | bytes | None = None,
        alg: str = "RS256",
        headers: Mapping[str, Any] | None = None,
    ) -> str:
        """Signs `claims` as a JWT (compact serialization).

        `key`: a `SigningKey` or RSA private key (default: this server's current
        key), or for `alg="HS256"`/`HS384`/`HS512` the HMAC secret bytes
        (signed by hand, so a public key's bytes are allowed: key-confusion
        tests). `alg="none"` makes an unsigned token (empty signature).
        `kid`: the header's `kid` [default: the signing key's, or the current
        key's]; `OMIT` leaves it out. `headers`: more header fields.
        """
        if kid is None:
            kid = key.kid if isinstance(key, SigningKey) else self.key.kid
        header: dict[str, Any] = {"alg": alg, "typ": "at+jwt"}
        if kid is not OMIT:
            header["kid"] = kid
        header.update(headers or {})
        if alg == "none" or alg.startswith("HS"):
            signing_input = (
                b64url(json.dumps(header, separators=(",", ":")).encode())
                + "."
                + b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
            )
            if alg == "none":
                return signing_input + "."
            assert isinstance(key, bytes), "HS* tokens need the secret bytes as `key`"
            digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
            signature = hmac.new(key, signing_input.encode(), digest).digest()
            return f"{signing_input}.{b64url(signature)}"
        private = key.private if isinstance(key, SigningKey) else key or self.key.private
        return jwt.encode(dict(claims), private, algorithm=alg, headers=header)

    # --- keys ---------------------------------------------------------------------

    def add_key(self, kid: str | None = None, *, sign_with: bool = True) -> SigningKey:
        """Generates a key and publishes it beside the others; with `sign_with`
        it becomes the key new tokens are signed with (a rotation)."""
        new = SigningKey.generate(kid)
        self._published = [*self._published, new]
        if sign_with:
            self.key = new
        return new

    def remove_key(self, kid: str) -> None:
        """Stops publishing a key (tokens it signed can no longer be verified)."""
        self._published = [k for k in self._published if k.kid != kid]

    @property
    def published(self) -> list[SigningKey]:
        return list(self._published)

    def jwks(self) -> dict[str, Any]:
        """The JWKS document as `normal` mode serves it."""
        return {"keys": [k.jwk() for k in self._published]}

    # --- HTTP ---------------------------------------------------------------------

    def _metadata(self) -> dict[str, Any]:
        """The SDK's RFC 8414 document (what `create_auth_routes` serves) plus
        `jwks_uri` and `authorization_response_iss_parameter_supported`."""
        metadata = build_metadata(
            _URL.validate_python(self.issuer), None, self._registration_options(), RevocationOptions()
        )
        metadata.authorization_response_iss_parameter_supported = True
        document = json.loads(metadata.model_dump_json(exclude_none=True))
        document["jwks_uri"] = self.jwks_uri
        assert document["issuer"] == self.issuer, document
        return document

    def _registration_options(self) -> ClientRegistrationOptions:
        return ClientRegistrationOptions(enabled=True, valid_scopes=self.scopes_supported)

    async def _serve_metadata(self, request: Request) -> Response:
        self.metadata_fetches += 1
        return JSONResponse(self._metadata(), headers={"Cache-Control": "no-store"})

    async def _serve_jwks(self, request: Request) -> Response:
        self.jwks_fetches += 1
        mode = self.jwks_mode
        if mode == "slow":
            deadline = time.monotonic() + self.jwks_delay_s
            while time.monotonic() < deadline and self.jwks_mode == "slow" and not self._stopping:
                await asyncio.sleep(0.05)
        elif mode == "down":
            return Response("JWKS unavailable\n", status_code=500, media_type="text/plain")
        elif mode == "garbage":
            return Response("<html>not a key set</html>", media_type="application/json")
        elif mode == "huge":
            document = self.jwks()
            body = json.dumps(document)
            padding = max(0, self.huge_bytes - len(body))
            document["padding"] = "x" * padding
            return Response(json.dumps(document), media_type="application/json")
        return JSONResponse(self.jwks(), headers={"Cache-Control": "no-store"})

    def _app(self) -> Starlette:
        routes = [
            r
            for r in create_auth_routes(
                _Provider(self),
                issuer_url=_URL.validate_python(self.issuer),
                client_registration_options=self._registration_options(),
            )
            if r.path != "/.well-known/oauth-authorization-server"
        ]
        routes += [
            Route(
                "/.well-known/oauth-authorization-server",
                endpoint=cors_middleware(self._serve_metadata, ["GET", "OPTIONS"]),
                methods=["GET", "OPTIONS"],
            ),
            Route(self.jwks_path, endpoint=self._serve_jwks, methods=["GET"]),
        ]
        return Starlette(routes=routes)

    # --- lifecycle ----------------------------------------------------------------

    def start(self) -> AuthServer:
        """Binds a free loopback port, then serves on it from a thread; returns
        once it accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        self.port = sock.getsockname()[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            self._app(), log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"authserver-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_S
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the test authorization server did not start")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the test authorization server did not start within {STARTUP_S} s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stops serving (a `slow` JWKS answer in progress ends too) and closes the port."""
        self._stopping = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(10)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> AuthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
