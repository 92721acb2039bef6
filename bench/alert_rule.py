"""The alert rule's false alarms and power, simulated on score distributions of real runs.

:func:`relevancy.analysis.alerts.check_windows` judges each window of a followed run: *below*
(a one-sided t bound on the mean under the threshold ``X``, with the larger of the window's and
its baseline's spread) and *drop* (Welch's t on the difference from the previous window, past
the 0.02 tie margin), each at a one-sided 0.25 %. This bench measures how often that fires:

* **false alarms**: a run of ``--windows`` consecutive windows of ``n`` rows, every row drawn
  (with replacement) from one distribution of scores: stationary. The threshold ``X`` is the
  distribution's own mean: "stationary" means a mean equal to ``X`` or above, and equal is the
  worst case for the below test (a higher mean alerts less). Each window's baseline is the one
  before it. The share of windows that alert (below, drop, either) is the false-alarm rate.
* **power**: ``--windows`` pairs of a baseline window from the distribution and a window from
  the same distribution shifted down by ``delta`` (every score minus 0.10 or 0.20): the share
  of shifted windows the drop test catches (no threshold), and that any alert catches with
  ``X`` at the unshifted mean.

The distributions are scores the embedded default gave real answers, saved by the agreement
bench (``bench/results/agreement/*_focus_s0_*.txt``, aligned with ``pairs.jsonl`` of the two
development sets at ``../shared/data``; the bench skips without those):

* ``haluquestqa``: the default's scores of all 1,396 HaluQuestQA answers (dev and held out);
* ``medquad``: the default's scores of the 565 MedQuAD/LiveQA answers (right-skewed);
* ``medquad_ragas``: the same generations scored with Ragas' formula (more skewed);
* ``zero_spike`` (bimodal): ``haluquestqa`` with 15 % of rows scoring 0, as a noncommittal
  answer does;
* ``rare_high`` (bimodal, the hard case for the below test): MedQuAD's grade-1 answers (off the
  question, scores near 0.16) with 15 % of rows drawn from HaluQuestQA's top quarter.

The rule is applied in numpy, vectorised over windows, with the library's own quantile
(:func:`relevancy.analysis.alerts.t_quantile`) and constants; the first ``--check`` windows of
every false-alarm run also go through ``check_windows`` itself, and the verdicts must agree.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from bench.harness import RESULTS_DIR, SHARED_DATA, log, main, table

SCORES = RESULTS_DIR / "agreement"
SIZES = (10, 20, 50, 200)
DELTAS = (0.10, 0.20)
SEED = 20261206
#: windows simulated at once (memory: CHUNK x n x 8 bytes a matrix)
CHUNK = 20_000

Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _scores(name: str) -> np.ndarray:
    return np.array([float(x) for x in (SCORES / name).read_text().split()], dtype=np.float64)


def distributions() -> dict[str, tuple[str, np.ndarray, Sampler]]:
    """Each distribution: what it is, a large sample of it (its moments), and a sampler."""
    halu = np.concatenate(
        [
            _scores("haluquestqa_dev_focus_s0_value.txt"),
            _scores("haluquestqa_heldout_focus_s0_value.txt"),
        ]
    )
    halu = halu[np.isfinite(halu)]
    med = _scores("medquad_all_focus_s0_value.txt")
    med_ragas = _scores("medquad_all_focus_s0_ragas.txt")
    pairs = (SHARED_DATA / "medquad_liveqa" / "pairs.jsonl").read_text().splitlines()
    grades = np.array([json.loads(line)["label"] for line in pairs if line.strip()])
    off = med[grades == 1]
    top = halu[halu >= np.quantile(halu, 0.75)]

    def plain(values: np.ndarray) -> Sampler:
        return lambda rng, shape: rng.choice(values, size=shape)

    def mixed(base: np.ndarray, other: np.ndarray, share: float) -> Sampler:
        def sample(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
            out = rng.choice(base, size=shape)
            swap = rng.random(shape) < share
            out[swap] = rng.choice(other, size=int(swap.sum()))
            return out

        return sample

    found = {
        "haluquestqa": (f"HaluQuestQA, the default's scores ({halu.size:,} answers)", plain(halu)),
        "medquad": (f"MedQuAD/LiveQA, the default's scores ({med.size} answers)", plain(med)),
        "medquad_ragas": (
            f"MedQuAD/LiveQA, Ragas' formula on the same generations ({med_ragas.size})",
            plain(med_ragas),
        ),
        "zero_spike": (
            "HaluQuestQA with 15 % of rows at 0 (noncommittal)",
            mixed(halu, np.zeros(1), 0.15),
        ),
        "rare_high": (
            f"MedQuAD grade 1 ({off.size} answers) with 15 % from HaluQuestQA's top quarter",
            mixed(off, top, 0.15),
        ),
    }
    rng = np.random.default_rng(0)
    return {k: (text, f(rng, (1_000_000,)), f) for k, (text, f) in found.items()}


class Rule:
    """The library's rule, vectorised over windows of ``n`` rows (baselines of ``n`` rows)."""

    def __init__(self, n: int) -> None:
        from relevancy.analysis import alerts

        self.alerts = alerts
        self.n = n
        self.q_below = alerts.t_quantile(1 - alerts.BELOW_ALPHA, n - 1)
        # Welch's df lies in [n - 1, 2n - 2]; its quantile falls as df grows: bracket it on a
        # grid and compute it exactly only where the bracket cannot decide
        self.grid = np.linspace(n - 1, 2 * n - 2, 4 * n + 1)
        self.q_grid = np.array([alerts.t_quantile(1 - alerts.DROP_ALPHA, d) for d in self.grid])

    def below(self, new: np.ndarray, old: np.ndarray | None, x: float) -> np.ndarray:
        spread = new.std(axis=1, ddof=1)
        if old is not None:
            spread = np.maximum(spread, old.std(axis=1, ddof=1))
        return new.mean(axis=1) + self.q_below * spread / math.sqrt(self.n) < x

    def drop(self, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        n, alerts = self.n, self.alerts
        v_new, v_old = new.var(axis=1, ddof=1) / n, old.var(axis=1, ddof=1) / n
        se = np.sqrt(v_new + v_old)
        d = new.mean(axis=1) - old.mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (v_new + v_old) ** 2 / ((v_new**2 + v_old**2) / (n - 1))
            needed = (-alerts.DROP_MARGIN - d) / se  # alert when t(df) < needed
        out = np.where(se == 0, d < -alerts.DROP_MARGIN, False)
        live = np.flatnonzero(se > 0)
        at = np.clip(np.searchsorted(self.grid, df[live], side="right") - 1, 0, self.grid.size - 1)
        upper = np.minimum(at + 1, self.grid.size - 1)
        sure = self.q_grid[at] < needed[live]  # the largest the quantile can be is under it
        never = self.q_grid[upper] >= needed[live]
        out[live[sure]] = True
        for i in live[~sure & ~never]:
            out[i] = alerts.t_quantile(1 - alerts.DROP_ALPHA, float(df[i])) < needed[i]
        return out


def _library_verdicts(rows: np.ndarray, x: float) -> list[tuple[bool, bool]]:
    """(below, drop) for each window of ``rows`` by ``check_windows`` itself."""
    from relevancy.analysis.alerts import check_windows

    k, n = rows.shape
    t0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
    step = timedelta(hours=1) / (n + 1)
    times = [t0 + timedelta(hours=w) + step * (i + 1) for w in range(k) for i in range(n)]
    checks = check_windows(
        times, rows.ravel(), below=x, window=timedelta(hours=1), min_rows=n, drop=True
    )
    return [(c.kind == "below", c.kind == "drop") for c in checks]


def false_alarms(sample: Sampler, x: float, n: int, windows: int, seed: int, check: int) -> dict:
    rule = Rule(n)
    rng = np.random.default_rng(seed)
    below = drop = either = alone = 0
    agree = checked = 0
    carry: np.ndarray | None = None  # the window before the chunk: the first one's baseline
    done = 0
    while done < windows:
        k = min(CHUNK, windows - done)
        rows = sample(rng, (k, n))
        old = np.vstack([carry, rows[:-1]]) if carry is not None else rows[:-1]
        new = rows if carry is not None else rows[1:]
        b = rule.below(new, old, x)
        d = rule.drop(new, old) & ~b  # a window alerts once: below first, as the library does
        if carry is None and checked < check:  # the library on the same windows
            span = rows[: check + 1]
            mine = list(zip(b[: span.shape[0] - 1], d[: span.shape[0] - 1], strict=True))
            theirs = _library_verdicts(span, x)[1:]
            agree += sum(tuple(map(bool, m)) == t for m, t in zip(mine, theirs, strict=True))
            checked += len(theirs)
        below, drop, either = below + int(b.sum()), drop + int(d.sum()), either + int((b | d).sum())
        alone += int(rule.below(new, None, x).sum())
        done += new.shape[0]
        carry = rows[-1:]
    return {
        "n": n,
        "windows": done,
        "below": below / done,
        "drop": drop / done,
        "any": either / done,
        "below_own_spread": alone / done,
        "checked": checked,
        "agree": agree,
    }


def power(sample: Sampler, x: float, n: int, delta: float, windows: int, seed: int) -> dict:
    rule = Rule(n)
    rng = np.random.default_rng(seed)
    caught_drop = caught_any = done = 0
    while done < windows:
        k = min(CHUNK, windows - done)
        old = sample(rng, (k, n))
        new = sample(rng, (k, n)) - delta
        d = rule.drop(new, old)
        b = rule.below(new, old, x)
        caught_drop += int(d.sum())
        caught_any += int((d | b).sum())
        done += k
    return {
        "n": n,
        "delta": delta,
        "windows": done,
        "drop": caught_drop / done,
        "any": caught_any / done,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    need = [
        SHARED_DATA / "haluquestqa" / "pairs.jsonl",
        SHARED_DATA / "medquad_liveqa" / "pairs.jsonl",
    ]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        log(f"skipped: the development sets are not there ({', '.join(missing)})")
        return {"skipped": f"no data at {', '.join(missing)}"}
    from relevancy.analysis import alerts

    found = distributions()
    names = [n for n in args.distributions.split(",") if n] or list(found)
    out: dict[str, Any] = {
        "windows": args.windows,
        "seed": args.seed,
        "sizes": args.sizes,
        "deltas": list(DELTAS),
        "rule": {
            "below_alpha": alerts.BELOW_ALPHA,
            "drop_alpha": alerts.DROP_ALPHA,
            "drop_margin": alerts.DROP_MARGIN,
        },
        "distributions": {},
        "false_alarms": [],
        "power": [],
    }
    for k, name in enumerate(names):
        text, big, sample = found[name]
        x = float(big.mean())
        centred = big - x
        out["distributions"][name] = {
            "what": text,
            "mean": x,
            "sd": float(big.std()),
            "skew": float((centred**3).mean() / big.std() ** 3),
        }
        for j, n in enumerate(args.sizes):
            seed = args.seed + 1000 * k + 10 * j
            fa = false_alarms(sample, x, n, args.windows, seed, args.check)
            fa["distribution"] = name
            log(json.dumps(fa))
            out["false_alarms"].append(fa)
            for i, delta in enumerate(DELTAS):
                pw = power(sample, x, n, delta, args.windows, seed + 1 + i)
                pw["distribution"] = name
                log(json.dumps(pw))
                out["power"].append(pw)
    return out


def _pct(value: float) -> str:
    return f"{100 * value:.2f}%"


def tables(fig: dict[str, Any]) -> dict[str, str]:
    if "skipped" in fig:
        return {"": f"Skipped: {fig['skipped']}.", "power": ""}
    worst = max(f["any"] for f in fig["false_alarms"])
    head = [
        "distribution",
        "rows a window",
        "below",
        "drop",
        "**any alert**",
        "below with the window's own spread only",
        "checked by check_windows (agree)",
    ]
    rows = [
        [
            f"`{f['distribution']}`",
            f["n"],
            _pct(f["below"]),
            _pct(f["drop"]),
            f"**{_pct(f['any'])}**",
            _pct(f["below_own_spread"]),
            f"{f['agree']:,} of {f['checked']:,}",
        ]
        for f in fig["false_alarms"]
    ]
    dists = "; ".join(
        f"`{k}`: {d['what']}, mean {d['mean']:.3f}, sd {d['sd']:.3f}, skew {d['skew']:+.2f}"
        for k, d in fig["distributions"].items()
    )
    rule = fig["rule"]
    false = (
        table(head, rows)
        + f"\n\n{fig['windows']:,} windows a line (seed {fig['seed']}, the line's seed offset by "
        f"its place), threshold at the distribution's mean; below at {rule['below_alpha']}, drop "
        f"at {rule['drop_alpha']} past a {rule['drop_margin']} margin. Highest: {_pct(worst)}. "
        f"Distributions: {dists}."
    )
    by: dict[tuple[str, int], dict[float, dict]] = {}
    for p in fig["power"]:
        by.setdefault((p["distribution"], p["n"]), {})[p["delta"]] = p
    head = ["distribution", "rows a window"] + [
        f"drop {d:.2f}: {what}" for d in fig["deltas"] for what in ("drop test", "any alert")
    ]
    rows = [
        [f"`{dist}`", n] + [_pct(cell[d][what]) for d in fig["deltas"] for what in ("drop", "any")]
        for (dist, n), cell in by.items()
    ]
    power_text = (
        table(head, rows)
        + f"\n\n{fig['windows']:,} baseline/shifted pairs a line; 'any alert' with the threshold"
        " at the unshifted mean."
    )
    return {"": false, "power": power_text}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--windows", type=int, default=100_000, help="windows a line (100,000)")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="rows a window")
    p.add_argument("--seed", type=int, default=SEED, help=f"seed (default {SEED})")
    p.add_argument(
        "--check", type=int, default=300, help="windows a line judged by check_windows too"
    )
    p.add_argument("--distributions", default="", help="comma-separated names (default: all five)")


if __name__ == "__main__":
    raise SystemExit(
        main("alert_rule", measure, arguments, quick=["--windows", "3000", "--check", "50"])
    )
