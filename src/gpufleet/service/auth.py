"""API tokens and roles.

A token reads ``gf_<id>_<secret>``: the id finds the row, the secret is checked against its
argon2id hash (argon2-cffi's defaults, RFC 9106's second recommended profile: t=3, 64 MiB); the
secret itself is never stored. Roles:

- ``viewer``: read everything;
- ``member`` of one tenant: read everything, and submit, cancel, hold, release and re-prioritise
  that tenant's jobs only;
- ``admin``: everything (nodes, quotas, tokens, every tenant's jobs).

Checking an argon2 hash costs tens of milliseconds by design (up to a second on a loaded 2-core
machine), so a token that verified is remembered by a SHA-256 of the whole token, and argon2 runs
once per token and process. What can change after that is the token's row (revoked): it is read
again, a primary-key lookup, when the remembered copy is ``CACHE_S`` seconds old. So a revocation
through this process takes effect at once, one made by another replica within ``CACHE_S``; expiry
is checked on every call. (Re-running argon2 every ``CACHE_S`` stalled every request behind the
one check: the p99 of a 1,000/s load was the hash's time.) A secret that verified once keeps
verifying: its hash is stored once, never changed (a new secret is a new token).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from gpufleet.service.store import Store
from gpufleet.service.store.db import TokenRecord

ROLES = ("viewer", "member", "admin")
PREFIX = "gf_"
CACHE_S = 10.0


@dataclass(frozen=True, slots=True)
class Principal:
    token_id: str
    role: str
    tenant: str | None = None
    name: str = ""

    @property
    def actor(self) -> str:
        return self.token_id

    def may_write_tenant(self, tenant: str) -> bool:
        return self.role == "admin" or (self.role == "member" and self.tenant == tenant)


#: Who is recorded for a call that carried no valid token.
ANONYMOUS = Principal("anonymous", "none")
#: The principal the service itself acts as (demo load, restart, the first start's admin token).
SYSTEM = Principal("system", "admin", name="gpufleet")
#: Who ``gpufleet serve token create|revoke`` acts as: whoever may write the store may do
#: anything, so an admin; the audit row's detail names the OS user and host.
CLI = Principal("cli", "admin", name="command line")


class AuthError(Exception):
    def __init__(self, reason: str, token_id: str = "anonymous") -> None:
        super().__init__(reason)
        self.reason, self.token_id = reason, token_id


def valid_principal(rec: TokenRecord, now: float) -> Principal:
    """The principal a known token stands for now; AuthError when it is revoked or expired. The
    one validity rule for API calls (``Auth.check``, ``Auth.cached``) and dashboard sessions."""
    if rec.revoked_at is not None:
        raise AuthError("token revoked", rec.id)
    if rec.expires_at is not None and rec.expires_at <= now:
        raise AuthError("token expired", rec.id)
    return Principal(rec.id, rec.role, rec.tenant, rec.name)


def token_view(rec: TokenRecord) -> dict[str, Any]:
    """A token as the audit log shows it: its row without the secret's hash (the secret itself
    is stored nowhere)."""
    return {"id": rec.id, "role": rec.role, "tenant": rec.tenant, "name": rec.name,
            "created_at": rec.created_at, "expires_at": rec.expires_at, "revoked_at": rec.revoked_at}


class Auth:
    def __init__(self, store: Store, time_cost: int = 3, memory_kib: int = 65536) -> None:
        self.store = store
        self.hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib)
        self._cache: dict[str, tuple[float, TokenRecord]] = {}
        self._gates: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def create(self, role: str, tenant: str | None = None, name: str = "",
               expires_in_s: float | None = None, *, by: Principal = SYSTEM,
               detail: str = "") -> tuple[str, TokenRecord]:
        """A new token: (the token, shown once; its record), audited as ``by``'s
        ``token.create`` in the same transaction."""
        if role not in ROLES:
            raise ValueError(f"--role {role!r}: expected viewer, member or admin")
        if role == "member" and tenant is None:
            raise ValueError("--role member: needs --tenant, the tenant it acts for")
        if role != "member" and tenant is not None:
            raise ValueError(f"--tenant {tenant!r}: only a member token acts for one tenant "
                             f"({'an' if role == 'admin' else 'a'} {role} token is for every tenant)")
        if expires_in_s is not None and not (0 < expires_in_s < 100 * 365 * 86400):
            raise ValueError("expiry must be a positive number of seconds under 100 years")
        tid = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        now = time.time()
        rec = TokenRecord(tid, self.hasher.hash(secret), role, tenant, name or role, now,
                          now + expires_in_s if expires_in_s is not None else None, None)
        self.store.add_token(rec, audit=_audit(by, "token.create", tid, None, token_view(rec), detail))
        return f"{PREFIX}{tid}_{secret}", rec

    def revoke(self, token_id: str, *, by: Principal = SYSTEM, detail: str = "") -> bool:
        """Revoke an active token (False when there is none), audited as ``by``'s
        ``token.revoke``; its dashboard sessions end with it (``Store.revoke_token``)."""
        rec = self.store.token(token_id)
        at = time.time()
        ok = rec is not None and self.store.revoke_token(token_id, at, audit=_audit(
            by, "token.revoke", token_id, token_view(rec), token_view(replace(rec, revoked_at=at)), detail))
        with self._lock:
            for k in [k for k, (_, r) in self._cache.items() if r.id == token_id]:
                del self._cache[k]
        return ok

    def cached(self, header: str | None) -> Principal | None:
        """The caller when its token verified within ``CACHE_S`` and is still valid, without I/O;
        None when ``check`` must look (an async route calls ``check`` in a thread then)."""
        if not header or not header.startswith("Bearer "):
            return None
        digest = hashlib.sha256(header[7:].strip().encode()).hexdigest()
        now = time.time()
        with self._lock:
            hit = self._cache.get(digest)
        if hit is None or now - hit[0] >= CACHE_S:
            return None
        try:
            return valid_principal(hit[1], now)
        except AuthError:
            return None

    def check(self, header: str | None) -> Principal:
        """The caller of a request with this Authorization header; AuthError when refused."""
        if not header:
            raise AuthError("no token (send Authorization: Bearer <token>)")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError("the Authorization header must be 'Bearer <token>'")
        if not token.startswith(PREFIX) or token.count("_") < 2 or len(token) > 200:
            raise AuthError("not a gpufleet token")
        tid, _, secret = token[len(PREFIX):].partition("_")
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        with self._lock:
            hit = self._cache.get(digest)
        fresh = hit is not None and now - hit[0] < CACHE_S
        rec = hit[1] if hit is not None and fresh else self._verify(digest, tid, secret, now)
        return valid_principal(rec, now)

    def _verify(self, digest: str, tid: str, secret: str, now: float) -> TokenRecord:
        """Check a token against its hash, once per token at a time: concurrent first calls with
        one token wait for the one check (64 clients at once would otherwise run 64 argon2
        checks of 64 MiB each) and then read the cache. A token that verified before is only
        read again (revocation), not hashed again."""
        with self._lock:
            gate = self._gates.setdefault(digest, threading.Lock())
        with gate:
            with self._lock:
                hit = self._cache.get(digest)
            if hit is not None and time.time() - hit[0] < CACHE_S:
                return hit[1]
            found = self.store.token(tid)
            if found is None:
                raise AuthError("unknown token", tid if tid.isalnum() else "anonymous")
            if hit is None or hit[1].secret_hash != found.secret_hash:
                try:
                    self.hasher.verify(found.secret_hash, secret)
                except (VerificationError, InvalidHashError):
                    raise AuthError("wrong token secret", tid) from None
            with self._lock:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                    self._gates.clear()
                self._cache[digest] = (now, found)
            return found


def _audit(by: Principal, action: str, target: str, before: Any, after: Any, detail: str) -> dict[str, Any]:
    return dict(actor=by.actor, role=by.role, action=action, target=target, outcome="ok", detail=detail,
                before=before, after=after)
