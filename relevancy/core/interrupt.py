"""Ctrl-C that stops a command, whatever the process that started it did with SIGINT.

A shell without job control (``sh -c 'relevancy score ... &'``, a CI script, a wrapper that
backgrounds its job) starts a background command with SIGINT *ignored*, and Python keeps an
inherited ``SIG_IGN``: no ``KeyboardInterrupt`` ever comes, and ``kill -INT`` does nothing. A
command that promises to stop on Ctrl-C (keep the rows written, exit 130) sets Python's own
handler back for as long as it runs, with :func:`ctrl_c_interrupts`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["ctrl_c_interrupts"]


@contextlib.contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """Within the block, SIGINT raises ``KeyboardInterrupt`` in the main thread, even where the
    process inherited SIGINT ignored; the handler found before is put back after.

    A handler someone installed (a callable) is left as it is; so is everything off the main
    thread, where Python cannot set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    replaced = before in (signal.SIG_IGN, signal.SIG_DFL)
    if replaced:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if replaced:
            signal.signal(signal.SIGINT, before)
