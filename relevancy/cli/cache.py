"""``relevancy cache``: show or clear the persistent cache."""

from __future__ import annotations

import argparse
from typing import Any

from relevancy.cli import add_command


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "cache")
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    p.add_argument("--cache-dir", default=None)
    p.set_defaults(func=cmd_cache)


def cmd_cache(args: argparse.Namespace) -> int:
    from relevancy.backends.cache import Cache  # lazy: `relevancy cache --help` needs no numpy

    cache = Cache(args.cache_dir) if args.cache_dir else Cache()
    if args.action == "clear":
        before = cache.stats()
        cache.clear()
        print(
            f"cleared {before['generations']} generations and {before['embeddings']} "
            f"embeddings from {before['path']}"
        )
    else:
        s = cache.stats()
        print(
            f"path         {s['path']}\ngenerations  {s['generations']}\n"
            f"embeddings   {s['embeddings']}\nsize         {s['bytes'] / 1e6:.1f} MB"
        )
    return 0
