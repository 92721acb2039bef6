"""Shared pieces of the benchmarks: input rows, timing proxies, the toy server, memory, JSON
output, and the markdown helpers the benches' ``render`` functions use.

Imported by every ``bench/*.py`` script (they put ``bench/`` on ``sys.path``) and by
``run_all.py``. Nothing here changes the library: timing is measured by wrapping the backend
objects the library is given. Importing it imports nothing from the library.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import os
import platform
import random
import resource
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO_CSV = ROOT / "relevancy" / "data" / "demo.csv"

# --------------------------------------------------------------------------------------------
# input rows
# --------------------------------------------------------------------------------------------

# (city, country, landmark, food)
_CITIES = (
    ("Lisbon", "Portugal", "the Belem Tower", "custard tarts"),
    ("Kyoto", "Japan", "the Fushimi Inari shrine", "tofu dishes"),
    ("Cairo", "Egypt", "the Great Pyramid of Giza", "koshari"),
    ("Toronto", "Canada", "the CN Tower", "peameal bacon"),
    ("Sydney", "Australia", "the Opera House", "meat pies"),
    ("Rome", "Italy", "the Colosseum", "carbonara"),
    ("Istanbul", "Turkey", "the Hagia Sophia", "kebabs"),
    ("Mumbai", "India", "the Gateway of India", "vada pav"),
    ("Mexico City", "Mexico", "the Zocalo", "tacos al pastor"),
    ("Buenos Aires", "Argentina", "the Obelisk", "empanadas"),
    ("Nairobi", "Kenya", "Nairobi National Park", "nyama choma"),
    ("Prague", "Czechia", "the Charles Bridge", "goulash"),
    ("Seoul", "South Korea", "Gyeongbokgung Palace", "kimchi stew"),
    ("Vienna", "Austria", "Schonbrunn Palace", "apple strudel"),
    ("Lima", "Peru", "the Plaza Mayor", "ceviche"),
    ("Edinburgh", "Scotland", "Edinburgh Castle", "haggis"),
    ("Hanoi", "Vietnam", "Hoan Kiem Lake", "pho"),
    ("Marrakesh", "Morocco", "the Jemaa el-Fnaa square", "tagine"),
    ("Oslo", "Norway", "the Viking Ship Museum", "brown cheese"),
    ("Athens", "Greece", "the Acropolis", "souvlaki"),
    ("Havana", "Cuba", "the Malecon", "ropa vieja"),
    ("Bangkok", "Thailand", "the Grand Palace", "pad thai"),
    ("Barcelona", "Spain", "the Sagrada Familia", "paella"),
    ("Moscow", "Russia", "Red Square", "borscht"),
    ("Dublin", "Ireland", "Trinity College", "Irish stew"),
    ("Reykjavik", "Iceland", "the Hallgrimskirkja church", "lamb soup"),
    ("Cape Town", "South Africa", "Table Mountain", "bobotie"),
    ("Amsterdam", "the Netherlands", "the Rijksmuseum", "stroopwafels"),
    ("Berlin", "Germany", "the Brandenburg Gate", "currywurst"),
    ("Budapest", "Hungary", "the Parliament building", "langos"),
    ("Santiago", "Chile", "the San Cristobal Hill", "pastel de choclo"),
    ("Helsinki", "Finland", "the Suomenlinna fortress", "salmon soup"),
)
# (element, symbol, use)
_ELEMENTS = (
    ("hydrogen", "H", "fuel cells"),
    ("helium", "He", "party balloons"),
    ("carbon", "C", "steel making"),
    ("nitrogen", "N", "fertilisers"),
    ("oxygen", "O", "hospital breathing support"),
    ("sodium", "Na", "table salt"),
    ("magnesium", "Mg", "light alloys"),
    ("aluminium", "Al", "drink cans"),
    ("silicon", "Si", "computer chips"),
    ("chlorine", "Cl", "water treatment"),
    ("calcium", "Ca", "cement"),
    ("titanium", "Ti", "aircraft frames"),
    ("iron", "Fe", "construction steel"),
    ("copper", "Cu", "electrical wiring"),
    ("zinc", "Zn", "galvanising steel"),
    ("silver", "Ag", "jewellery"),
    ("tin", "Sn", "solder"),
    ("iodine", "I", "disinfectants"),
    ("tungsten", "W", "light bulb filaments"),
    ("platinum", "Pt", "catalytic converters"),
    ("gold", "Au", "electronics contacts"),
    ("mercury", "Hg", "old thermometers"),
    ("lead", "Pb", "car batteries"),
    ("uranium", "U", "nuclear power"),
)
# (animal, habitat, diet)
_ANIMALS = (
    ("the polar bear", "the Arctic sea ice", "seals"),
    ("the giant panda", "the bamboo forests of China", "bamboo"),
    ("the koala", "the eucalyptus forests of Australia", "eucalyptus leaves"),
    ("the emperor penguin", "Antarctica", "fish and krill"),
    ("the red fox", "forests and farmland of the northern hemisphere", "small rodents"),
    ("the African elephant", "the savannas of Africa", "grasses and bark"),
    ("the snow leopard", "the mountains of Central Asia", "wild sheep and goats"),
    ("the blue whale", "the open oceans", "krill"),
    ("the honey bee", "hives in meadows and gardens", "nectar and pollen"),
    ("the bald eagle", "North American lakes and rivers", "fish"),
    ("the orangutan", "the rainforests of Borneo and Sumatra", "fruit"),
    ("the cheetah", "the grasslands of Africa", "gazelles"),
    ("the sea otter", "the coasts of the North Pacific", "sea urchins"),
    ("the camel", "the deserts of Africa and Asia", "desert plants"),
    ("the hedgehog", "gardens and hedgerows of Europe", "insects and worms"),
    ("the gorilla", "the forests of central Africa", "leaves and stems"),
    ("the kangaroo", "the grasslands of Australia", "grasses"),
    ("the octopus", "rocky sea floors", "crabs and shellfish"),
    ("the wolf", "forests and tundra", "deer and elk"),
    ("the flamingo", "salty lagoons and lakes", "algae and shrimp"),
)

_TEMPLATES: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "city",
        "In which country is {0}?",
        (
            ("on-topic", "{0} is a city in {1}."),
            ("partial", "{0} is a large and busy city."),
            ("off-topic", "{2} attracts many visitors every year."),
            ("noncommittal", "I'm not sure where {0} is."),
        ),
    ),
    (
        "city",
        "What is a famous landmark in {0}?",
        (
            ("on-topic", "{2} is the best-known landmark in {0}."),
            ("partial", "{0} has several old buildings."),
            ("off-topic", "People in {0} like to eat {3}."),
            ("noncommittal", "It depends on what you like to see in {0}."),
        ),
    ),
    (
        "city",
        "What food is {0} known for?",
        (
            ("on-topic", "{0} is known for {3}."),
            ("partial", "{0} has many restaurants and cafes."),
            ("off-topic", "{0} is the capital of {1}."),
            ("noncommittal", "That's hard to say, tastes in {0} differ."),
        ),
    ),
    (
        "element",
        "What is the chemical symbol of {0}?",
        (
            ("on-topic", "The chemical symbol of {0} is {1}."),
            ("partial", "{0} is a chemical element."),
            ("off-topic", "{0} is widely used for {2}."),
            ("noncommittal", "I don't remember the symbol of {0}."),
        ),
    ),
    (
        "element",
        "What is {0} used for?",
        (
            ("on-topic", "{0} is used for {2}."),
            ("partial", "{0} has some industrial uses."),
            ("off-topic", "Its chemical symbol is {1}."),
            ("noncommittal", "I have no idea what {0} is used for, sorry."),
        ),
    ),
    (
        "animal",
        "Where does {0} live?",
        (
            ("on-topic", "{0} lives in {1}."),
            ("partial", "{0} lives in the wild."),
            ("off-topic", "{0} mostly eats {2}."),
            ("noncommittal", "Nobody really knows where {0} lives."),
        ),
    ),
    (
        "animal",
        "What does {0} eat?",
        (
            ("on-topic", "{0} eats mainly {2}."),
            ("partial", "{0} eats other living things."),
            ("off-topic", "{0} can be found in {1}."),
            ("noncommittal", "I cannot say what {0} eats."),
        ),
    ),
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _synthetic() -> list[dict[str, str]]:
    facts = {"city": _CITIES, "element": _ELEMENTS, "animal": _ANIMALS}
    rows = []
    for t, (kind, question, answers) in enumerate(_TEMPLATES):
        for f, fact in enumerate(facts[kind]):
            for label, answer in answers:
                rows.append(
                    {
                        "id": f"syn-{t}-{f}",
                        "variant": label,
                        "user_input": _cap(question.format(*fact)),
                        "response": _cap(answer.format(*fact)),
                        "answer_type": label,
                    }
                )
    return rows


def demo_rows() -> list[dict[str, str]]:
    with DEMO_CSV.open(encoding="utf-8", newline="") as fh:
        return [
            {k: row[k] for k in ("id", "variant", "user_input", "response", "answer_type")}
            for row in csv.DictReader(fh)
        ]


def make_rows(n: int, *, seed: int = 0) -> list[dict[str, str]]:
    """``n`` distinct (user_input, response) rows: the 48 demo rows, then shuffled templated
    variants (cities, elements, animals x on-topic/partial/off-topic/noncommittal answers).

    Beyond the ~900 distinct templated rows, rows repeat with a numbered suffix so every
    response stays distinct (the cache must not hide work).
    """
    base = demo_rows()
    syn = _synthetic()
    random.Random(seed).shuffle(syn)
    pool = base + syn
    seen = set()
    unique = []
    for row in pool:
        key = (row["user_input"], row["response"])
        if key not in seen:
            seen.add(key)
            unique.append(row)
    out = []
    k = 0
    while len(out) < n:
        row = dict(unique[len(out) % len(unique)])
        if len(out) >= len(unique):
            k = len(out) // len(unique)
            row["response"] = f"{row['response']} (Source {k}.)"
            row["id"] = f"{row['id']}-r{k}"
        out.append(row)
    return out


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


class Intervals:
    """Wall-clock intervals during which something was busy (possibly overlapping)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    def add(self, start: float, end: float) -> None:
        self.spans.append((start, end))

    def merged(self) -> list[tuple[float, float]]:
        out: list[list[float]] = []
        for a, b in sorted(self.spans):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return [(a, b) for a, b in out]

    def busy(self) -> float:
        return sum(b - a for a, b in self.merged())


def _minus(spans: list[tuple[float, float]], cut: list[tuple[float, float]]) -> float:
    """Total length of ``spans`` (merged) outside ``cut`` (merged)."""
    total = 0.0
    for a, b in spans:
        length = b - a
        for c, d in cut:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                length -= hi - lo
        total += max(0.0, length)
    return total


def exclusive_split(wall: float, layers: dict[str, Intervals]) -> dict[str, float]:
    """Split ``wall`` seconds into layers, in priority order, plus ``overhead``.

    Each layer gets the time it was busy while no earlier layer was: e.g. generation first,
    then embedding outside generation, then cache outside both; what is left is overhead.
    """
    out: dict[str, float] = {}
    taken = Intervals()
    for name, intervals in layers.items():
        spans = intervals.merged()
        out[name] = _minus(spans, taken.merged())
        taken.spans.extend(spans)
    out["overhead"] = max(0.0, wall - sum(out.values()))
    return out


class TimedGenerator:
    """A QuestionGenerator proxy that records when ``agenerate`` is busy."""

    def __init__(self, inner: Any, intervals: Intervals) -> None:
        self.inner = inner
        self.intervals = intervals
        self.name = inner.name

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    async def agenerate(self, response: str, n: int) -> Any:
        start = time.perf_counter()
        try:
            return await self.inner.agenerate(response, n)
        finally:
            self.intervals.add(start, time.perf_counter())

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class TimedSyncGenerator(TimedGenerator):
    """Like :class:`TimedGenerator` but times the blocking ``generate`` inside the thread,
    so the time a row spends queued for the thread pool is not counted as generation."""

    async def agenerate(self, response: str, n: int) -> Any:
        def run() -> Any:
            start = time.perf_counter()
            try:
                return self.inner.generate(response, n)
            finally:
                self.intervals.add(start, time.perf_counter())

        return await asyncio.to_thread(run)


class TimedEmbedder:
    """An Embedder proxy that records when ``aembed`` is busy and how many texts it saw."""

    def __init__(self, inner: Any, intervals: Intervals) -> None:
        self.inner = inner
        self.intervals = intervals
        self.name = inner.name
        self.calls = 0
        self.texts = 0
        self.dim = getattr(inner, "dim", None)

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    async def aembed(self, texts: Sequence[str]) -> Any:
        start = time.perf_counter()
        try:
            return await self.inner.aembed(texts)
        finally:
            self.intervals.add(start, time.perf_counter())
            self.calls += 1
            self.texts += len(texts)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def timed_cache(path: str | os.PathLike[str], intervals: Intervals) -> Any:
    """A :class:`relevancy.Cache` whose reads and writes are timed."""
    from relevancy import Cache

    class TimedCache(Cache):
        pass

    for name in ("get_generations", "put_generations", "get_embeddings", "put_embeddings"):
        original = getattr(Cache, name)

        def wrapper(self: Any, *args: Any, _original: Any = original) -> Any:
            start = time.perf_counter()
            try:
                return _original(self, *args)
            finally:
                intervals.add(start, time.perf_counter())

        setattr(TimedCache, name, wrapper)
    return TimedCache(path)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# --------------------------------------------------------------------------------------------
# the toy server
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def toy_server() -> Iterator[str]:
    """The toy OpenAI-compatible server (``relevancy.testing.openai_server``, instant answers)
    in a subprocess on 127.0.0.1; yields its base URL and stops it afterwards."""
    # imported here so that importing this module never imports the library
    from relevancy.testing.processes import ServerProcess, free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "relevancy.testing.openai_server", "--port", str(port)]
    with ServerProcess(
        cmd, url_to_poll=base + "/models", timeout=60, poll_interval=0.2, stop_timeout=10
    ):
        yield base


# --------------------------------------------------------------------------------------------
# memory, environment, output
# --------------------------------------------------------------------------------------------


def vm_hwm_mb(pid: int | str = "self") -> float:
    """Peak resident set size (VmHWM) of a process, in MiB; NaN when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    if pid == "self":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return float("nan")


def vm_rss_mb(pid: int | str = "self") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def parser(description: str, default_rows: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rows", type=int, default=default_rows, help=f"rows (default {default_rows})")
    p.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    return p


def emit(data: dict[str, Any], path: Path | None) -> None:
    """Print the figures (human-readable JSON) and write them to ``path`` if given."""
    data.setdefault("peak_rss_mb", round(vm_hwm_mb(), 1))
    data.setdefault("load_average_end", load_average())
    data.setdefault("python", platform.python_version())
    text = json.dumps(data, indent=2, default=_json_default)
    print(text)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")


def _json_default(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def log(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# markdown, for the benches' render functions
# --------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 2) -> str:
    """A figure for a table: ``digits`` decimals with thousands separators, tiny values in
    scientific notation, "–" for a missing one."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if abs(value) and abs(value) < 10 ** (-digits):
            return f"{value:.1e}"
        return f"{value:,.{digits}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A markdown table; cells that are not strings go through :func:`fmt`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in row) + " |"
        for row in rows
    ]
    return "\n".join(lines)
