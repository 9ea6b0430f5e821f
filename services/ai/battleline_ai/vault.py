"""Where an AI worker keeps the seat token it got by redeeming a join ticket.

Why: a worker that dies mid-match holds the only copy of the seat token, and
the join ticket in the request stream is spent. So that another worker can
take the seat over, the token is written to ``bl:{match}:ai`` (same hash
tag, so the same Redis Cluster slot, as the match) -- sealed, never in plain
text: the request stream and Redis snapshots are readable by more people
and programs than the AI workers, and a leaked seat token lets its holder
play the AI's seat.

Sealing: encrypt-then-MAC with HMAC-SHA256 as the PRF (a counter-mode
keystream, then a tag over nonce, match id and ciphertext), from a secret
only AI workers have (``BATTLELINE_AI_SECRET``). The standard library has no
AEAD cipher and the project takes no crypto dependency for one short string;
this construction is a textbook one (PRF-CTR + HMAC) with separate keys.
The match id is bound into the tag, so a sealed token cannot be moved to
another match's key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from typing import Any

SECRET_ENV = "BATTLELINE_AI_SECRET"
KEY_TTL_S = 8 * 24 * 3600  # outlives the engine's default 7-day retention of finished matches
_NONCE = 16
_TAG = 32


def vault_key(match_id: str) -> str:
    """The Redis key of a match's sealed AI seat token (hash-tagged like the match)."""
    return f"bl:{{{match_id}}}:ai"


def secret_from_env() -> bytes:
    """The workers' shared secret; a fresh one (exported for child processes) if unset."""
    value = os.environ.get(SECRET_ENV)
    if not value:
        value = secrets.token_urlsafe(32)
        os.environ[SECRET_ENV] = value
    return value.encode()


class Sealer:
    """Seals and opens seat tokens with keys derived from one secret."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError(f"{SECRET_ENV} must be at least 16 characters")
        self._enc = hmac.new(secret, b"battleline-ai-vault enc", hashlib.sha256).digest()
        self._mac = hmac.new(secret, b"battleline-ai-vault mac", hashlib.sha256).digest()

    def _stream(self, nonce: bytes, size: int) -> bytes:
        blocks = (
            hmac.new(self._enc, nonce + i.to_bytes(4, "big"), hashlib.sha256).digest()
            for i in range(-(-size // 32))
        )
        return b"".join(blocks)[:size]

    def _tag(self, nonce: bytes, match_id: str, body: bytes) -> bytes:
        return hmac.new(self._mac, nonce + match_id.encode() + b"\0" + body,
                        hashlib.sha256).digest()

    def seal(self, match_id: str, token: str) -> str:
        """Ciphertext of `token`, bound to `match_id`, as ASCII."""
        plain = token.encode()
        nonce = secrets.token_bytes(_NONCE)
        body = bytes(a ^ b for a, b in zip(plain, self._stream(nonce, len(plain)), strict=True))
        return base64.urlsafe_b64encode(nonce + body + self._tag(nonce, match_id, body)).decode()

    def open(self, match_id: str, sealed: str) -> str:
        """The token sealed for `match_id`; ValueError if forged, moved or sealed elsewhere."""
        raw = base64.urlsafe_b64decode(sealed.encode())
        if len(raw) < _NONCE + _TAG:
            raise ValueError("sealed token too short")
        nonce, body, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
        if not hmac.compare_digest(tag, self._tag(nonce, match_id, body)):
            raise ValueError("sealed token does not verify (other secret or other match)")
        return bytes(a ^ b for a, b in zip(body, self._stream(nonce, len(body)),
                                           strict=True)).decode()


class Vault:
    """Sealed AI seat tokens in Redis (any redis.asyncio client, plain or cluster)."""

    def __init__(self, redis: Any, sealer: Sealer) -> None:
        self.redis = redis
        self.sealer = sealer

    async def put(self, match_id: str, token: str) -> None:
        key = vault_key(match_id)
        await self.redis.hset(key, "token", self.sealer.seal(match_id, token))
        await self.redis.expire(key, KEY_TTL_S)

    async def get(self, match_id: str) -> str | None:
        raw = await self.redis.hget(vault_key(match_id), "token")
        if raw is None:
            return None
        return self.sealer.open(match_id, raw.decode() if isinstance(raw, bytes) else raw)

    async def drop(self, match_id: str) -> None:
        await self.redis.delete(vault_key(match_id))
