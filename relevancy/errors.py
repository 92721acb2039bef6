"""One exception hierarchy: catch :class:`RelevancyError` to catch them all."""

from __future__ import annotations

__all__ = [
    "RelevancyError",
    "InputError",
    "ConfigError",
    "BackendUnreachable",
    "BackendError",
    "GenerationError",
    "EmbeddingError",
]


class RelevancyError(Exception):
    """Base class of every error raised on purpose by ``relevancy``."""


class InputError(RelevancyError, ValueError):
    """Bad user input: an empty string, a missing column, an unreadable file."""


class ConfigError(RelevancyError, ValueError):
    """A backend or option is mis-configured (missing key, bad spec, bad URL)."""


class BackendUnreachable(ConfigError):
    """A remote backend did not answer at all when checked (refused, dropped, timed out): a
    command that can wait for it (``--follow``, ``--once``) goes on; others stop."""


class BackendError(RelevancyError):
    """A backend failed to produce what was asked (after its retries)."""


class GenerationError(BackendError):
    """The question generator failed or returned nothing usable."""


class EmbeddingError(BackendError):
    """The embedding backend failed or returned vectors of the wrong shape."""
