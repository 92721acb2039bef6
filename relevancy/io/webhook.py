"""An alert posted to a webhook (Slack's incoming webhooks, or anything that takes JSON).

The body is ``{"text": "<one line>", "relevancy": {...the check..., "run": run}}``: Slack shows
``text``, other receivers read ``relevancy``. Standard library only (``urllib``). A webhook
URL's path is its secret (Slack's is the key itself), so no message ever shows more of it than
``scheme://host``.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from relevancy.core.redact import redact
from relevancy.errors import InputError

__all__ = ["post_alert", "alert_body", "webhook_host", "check_webhook_url", "WebhookUncertain"]


class WebhookUncertain(InputError):
    """The alert was sent whole but no answer came (a time-out or a dropped connection while
    waiting for it): whether the receiver took it cannot be known. Posting it again could post
    it twice, so a follower does not (it says so instead)."""


def webhook_host(url: str) -> str:
    """``scheme://host[:port]`` of a URL, all a message may show of it (no path, no query, no
    credentials); ``?`` for a part that cannot be read (``http://[::1/x``).

    >>> webhook_host("https://hooks.slack.com/services/T000/B000/XXXX")
    'https://hooks.slack.com'
    >>> webhook_host("http://127.0.0.1:99999/secret")
    'http://127.0.0.1:?'
    """
    text = str(url).strip()
    scheme = text.partition("://")[0] if "://" in text else ""
    scheme = scheme if scheme.isascii() and scheme.isalpha() else ""
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed [ around an IPv6 address
        return f"{scheme or '?'}://?"
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a number, or above 65535
        port = ":?"
    return f"{parts.scheme or '?'}://{host}{port}"


def check_webhook_url(url: str) -> str:
    """``url`` stripped, once it is an http(s) URL with a host and a valid port; else
    :class:`InputError` in one line that shows no more of it than ``scheme://host``.

    >>> check_webhook_url(" https://hooks.slack.com/services/T000/B000/XXXX ")
    'https://hooks.slack.com/services/T000/B000/XXXX'
    >>> check_webhook_url("ftp://files.example.com/XXXX")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    relevancy.errors.InputError: the alert webhook ftp://files.example.com is not an http(s) URL...
    """
    text = str(url).strip()
    where = webhook_host(text)
    give = "give http(s)://HOST[:PORT]/PATH"
    if not text:
        raise InputError(f"the alert webhook is empty: {give}, or leave it out")
    try:
        parts = urlsplit(text)
    except ValueError:
        raise InputError(
            f"the alert webhook {where} is not a URL: its host does not read (an IPv6 address "
            f"needs its closing ]); {give}"
        ) from None
    if not parts.scheme or "://" not in text:  # "hooks.slack.com/services/...": no scheme
        raise InputError(
            f"the alert webhook ({len(text)} characters, not shown: it may hold a secret) does "
            f"not start with http:// or https://: {give}"
        )
    if parts.scheme.lower() not in ("http", "https"):
        raise InputError(f"the alert webhook {where} is not an http(s) URL: {give}")
    if not parts.hostname:
        raise InputError(f"the alert webhook {where} names no host: {give}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        raise InputError(
            f"the alert webhook {where} has a port that is not a number from 1 to 65535: {give}"
        )
    return text


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else str(value)


def alert_body(check: Mapping[str, Any] | Any, *, run: str) -> dict[str, Any]:
    """The JSON body of ``check``: a mapping, or an object with ``to_json()`` (and
    ``message``), such as :class:`relevancy.analysis.alerts.WindowCheck`.

    >>> alert_body({"message": "relevancy 0.41 is below 0.60", "n": 212}, run="#3 prod")
    {'text': 'relevancy 0.41 is below 0.60 (run #3 prod)', 'relevancy': {'message': \
'relevancy 0.41 is below 0.60', 'n': 212, 'run': '#3 prod'}}
    """
    if isinstance(check, Mapping):
        data = dict(check)
    elif callable(getattr(check, "to_json", None)):
        data = dict(check.to_json())
    else:
        raise TypeError("post_alert: give a mapping or an object with to_json()")
    message = data.get("message") or getattr(check, "message", "") or "relevancy alert"
    line = " ".join(str(message).split())
    return {"text": f"{line} (run {run})", "relevancy": _plain({**data, "run": run})}


def post_alert(
    url: str, check: Mapping[str, Any] | Any, *, run: str, timeout: float = 10.0
) -> None:
    """POST ``check`` (see :func:`alert_body`) as JSON to the webhook ``url``, waiting at most
    ``timeout`` seconds. Raises :class:`InputError` (one line naming only ``scheme://host``)
    when the URL is not http(s), the receiver answers other than 2xx, or cannot be reached (the
    alert was not taken: post it again later), and :class:`WebhookUncertain` when the alert was
    sent whole and no answer came (it may have been taken: do not post it again)."""
    where = webhook_host(url)
    check_webhook_url(url)
    body = json.dumps(alert_body(check, run=run), ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(
        str(url).strip(),
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "relevancy-alerts"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (http(s) only)
            status = answer.status
            answer.read(65536)
    except urllib.error.HTTPError as exc:
        status = exc.code
        exc.close()
    except urllib.error.URLError as exc:  # before or while sending: the alert was not taken
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise InputError(
                f"the webhook at {where} did not answer within {timeout:g} s"
            ) from None
        text = " ".join(redact(reason).replace(str(url).strip(), where).split())[:160]
        raise InputError(f"the webhook at {where} could not be reached: {text}") from None
    except OSError as exc:  # sent whole, then no answer: urllib raises these bare
        why = (
            f"did not answer within {timeout:g} s"
            if isinstance(exc, TimeoutError)
            else f"dropped the connection ({type(exc).__name__})"
        )
        raise WebhookUncertain(
            f"the webhook at {where} took the alert and {why}: whether it was taken cannot be known"
        ) from None
    except ValueError as exc:  # an address urllib cannot use
        text = " ".join(redact(exc).replace(str(url).strip(), where).split())[:160]
        raise InputError(f"the webhook at {where} could not be reached: {text}") from None
    if not 200 <= status < 300:
        raise InputError(f"the webhook at {where} answered HTTP {status}: the alert was not taken")
