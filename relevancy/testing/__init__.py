"""Test helpers for relevancy; the library itself never imports them.

* ``fakes``: fake backends for unit tests of logic;
* ``openai_server``: a fault-injecting OpenAI-compatible server (its toy model is in
  ``_toy_model``, its faults in ``_faults``);
* ``processes``: :func:`free_port` and :class:`ServerProcess`, to start a server subprocess
  and wait until it answers;
* ``browser``: the dashboard served on a run store of its own, and the Chromium that the
  browser tests and the browser bench drive.
"""

from relevancy.testing.processes import ServerProcess, free_port

__all__ = ["ServerProcess", "free_port"]
