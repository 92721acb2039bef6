"""Keep API keys out of anything a user can see: messages, logs, exports, pages."""

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
    re.compile(r"(?i)(api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^\s'\",]{6,}"),
)


def register_secret(secret: str | None) -> None:
    """Remember a secret so that :func:`redact` hides it wherever it appears."""
    if secret and len(secret) >= 4:
        with _LOCK:
            _SECRETS.add(secret)


def redact(text: object) -> str:
    """``str(text)`` with every registered secret and key-like token replaced by ``***``."""
    out = str(text)
    with _LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        out = out.replace(secret, "***")
    out = _PATTERNS[0].sub("sk-***", out)
    out = _PATTERNS[1].sub(r"\1***", out)
    out = _PATTERNS[2].sub(r"\1***", out)
    return out
