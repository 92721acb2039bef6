"""Keep API keys and passwords out of anything a user can see: messages, logs, exports, pages.

:func:`redact` hides the secrets it was told of (:func:`register_secret`), key-like tokens
(``sk-...``, ``Bearer ...``, ``api_key=...``), the ``user:password@`` part of any address
(``http://user:PW@host/v1`` becomes ``http://***@host/v1``) and the values of query-string
parameters named like secrets (``?api-key=``, ``&token=``, ``&sig=``...).
"""

from __future__ import annotations

import re
import threading

__all__ = ["register_secret", "redact"]

_SECRETS: set[str] = set()
_LOCK = threading.Lock()
# Key-like tokens even when we were never told about them (sk-..., Bearer ...).
_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-.=]{8,}"),
    re.compile(r"(?i)(api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^\s'\",&#]{6,}"),
    # an address's user:password@ (the scheme kept, the host kept)
    re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s@'\"<>]+@"),
    # a query-string parameter named like a secret: its value
    re.compile(
        r"(?i)([?&;][^=&#\s'\"<>]*(?:key|token|secret|passw|pwd|sig|auth|credential)"
        r"[^=&#\s'\"<>]*=)[^&#\s'\"<>]+"
    ),
)


def register_secret(secret: str | None) -> None:
    """Remember a secret so that :func:`redact` hides it wherever it appears."""
    if secret and len(secret) >= 4:
        with _LOCK:
            _SECRETS.add(secret)


def redact(text: object) -> str:
    """``str(text)`` with every registered secret, key-like token, address password and secret
    query-string value replaced by ``***``."""
    out = str(text)
    with _LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        out = out.replace(secret, "***")
    out = _PATTERNS[3].sub(r"\1***@", out)
    out = _PATTERNS[4].sub(r"\1***", out)  # before api_key=...: it stops at the next &
    out = _PATTERNS[0].sub("sk-***", out)
    out = _PATTERNS[1].sub(r"\1***", out)
    out = _PATTERNS[2].sub(r"\1***", out)
    return out
