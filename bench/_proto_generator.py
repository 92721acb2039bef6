"""A prototype of a faster embedded generator, for ``bench/throughput.py --variants``.

It is *not* used by the library; it measures two proposed changes to
``relevancy/backends/_local_generator.py`` on the same model, prompt, grammar and sampling
settings (top_k 40, top_p 0.95, min_p 0.05, temperature 0.7, seed + i per sample, the
``QUESTION_GRAMMAR``, max_tokens 40, a wall-clock limit):

``parallel``
    The N samples of a row are decoded as N sequences of one llama.cpp batch: the row's prompt
    is evaluated once into sequence 0 and shared with the others (``llama_memory_seq_cp``), then
    each step decodes one token for every unfinished sequence in a single ``llama_decode``.
    On a CPU a batch of 3 tokens costs little more than 1 (the weights are read once).
``lazy grammar``
    As llama.cpp's own ``common_sampler`` does: sample from the unconstrained chain, then check
    only the chosen token against the grammar; apply the grammar to the whole vocabulary (49k
    tokens) and resample only when that token is rejected. The grammar is still enforced on
    every token; it is just no longer evaluated for 49k candidates at every step.

The shared prompt prefix stays in the KV cache across rows, as in llama-cpp-python.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from typing import Any

import llama_cpp
import numpy as np

from relevancy._result import Generation, GenerationSet
from relevancy.backends._local_generator import QUESTION_GRAMMAR, SmolLMGenerator, _load

_TOKEN_DTYPE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


class ProtoGenerator:
    """Question generator with parallel sequences and/or a lazy grammar check."""

    def __init__(
        self,
        base: SmolLMGenerator,
        *,
        parallel: bool = True,
        lazy_grammar: bool = True,
        n_seq_max: int = 4,
    ) -> None:
        self.base = base
        self.parallel = parallel
        self.lazy_grammar = lazy_grammar
        llm, _ = _load(base._path, base.n_ctx, base.threads)
        self._llm = llm  # the shared weights; this class has its own context
        self.name = base.name + "+proto"
        self._model = llm._model.model
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = base.n_ctx
        params.n_batch = 512
        params.n_ubatch = 512
        params.n_seq_max = n_seq_max
        params.n_threads = base.threads
        params.n_threads_batch = base.threads
        params.kv_unified = True
        params.no_perf = True
        self._ctx = llama_cpp.llama_init_from_model(self._model, params)
        if not self._ctx:
            raise RuntimeError("llama_init_from_model failed")
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(512, 0, n_seq_max)
        self._n_seq_max = n_seq_max
        self._cached: list[int] = []
        self._lock = threading.Lock()
        self.resamples = 0
        self.tokens = 0

    def close(self) -> None:
        if self._ctx:
            llama_cpp.llama_batch_free(self._batch)
            llama_cpp.llama_free(self._ctx)
            self._ctx = None

    def fingerprint(self) -> dict[str, Any]:
        fp = dict(self.base.fingerprint())
        fp["decoder"] = f"proto parallel={self.parallel} lazy={self.lazy_grammar}"
        return fp

    # -- llama.cpp plumbing ----------------------------------------------------------------
    def _chain(self, seed: int, grammar: bool) -> Any:
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        add = llama_cpp.llama_sampler_chain_add
        if grammar:
            add(chain, self._grammar())
        add(chain, llama_cpp.llama_sampler_init_top_k(40))
        add(chain, llama_cpp.llama_sampler_init_typical(1.0, 1))
        add(chain, llama_cpp.llama_sampler_init_top_p(0.95, 1))
        add(chain, llama_cpp.llama_sampler_init_min_p(0.05, 1))
        add(chain, llama_cpp.llama_sampler_init_temp(self.base.temperature))
        add(chain, llama_cpp.llama_sampler_init_dist(seed))
        return chain

    def _grammar(self) -> Any:
        return llama_cpp.llama_sampler_init_grammar(
            self._vocab, QUESTION_GRAMMAR.encode("utf-8"), b"root"
        )

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """``items``: (token, position, sequence, wants logits), at most 512."""
        b = self._batch
        b.n_tokens = len(items)
        for k, (tok, pos, seq, logits) in enumerate(items):
            b.token[k] = tok
            b.pos[k] = pos
            b.n_seq_id[k] = 1
            b.seq_id[k][0] = seq
            b.logits[k] = 1 if logits else 0
        rc = llama_cpp.llama_decode(self._ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def _prompt(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` into sequence 0, reusing the cached common prefix."""
        common = 0
        for a, c in zip(tokens, self._cached):
            if a != c:
                break
            common += 1
        common = min(common, len(tokens) - 1)
        llama_cpp.llama_memory_seq_rm(self._mem, -1, common, -1)
        rest = list(range(common, len(tokens)))
        for start in range(0, len(rest), 512):
            part = rest[start : start + 512]
            last = start + 512 >= len(rest)
            self._decode(
                [(tokens[p], p, 0, last and p == rest[-1]) for p in part]
            )  # logits only for the prompt's last token
        self._cached = list(tokens)

    def _valid(self, grammar: Any, token: int) -> bool:
        one = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 1.0, 0.0))
        arr = llama_cpp.llama_token_data_array(one, 1, -1, False)
        llama_cpp.llama_sampler_apply(grammar, ctypes.byref(arr))
        return math.isfinite(one[0].logit)

    def _resample(self, grammar: Any, chain: Any, idx: int) -> int:
        """Grammar over the whole vocabulary, then the chain (as the grammar-first path)."""
        self.resamples += 1
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self._ctx, idx), shape=(self._n_vocab,)
        )
        data = np.empty(self._n_vocab, dtype=_TOKEN_DTYPE)
        data["id"] = np.arange(self._n_vocab, dtype=np.int32)
        data["logit"] = logits
        data["p"] = 0.0
        ptr = data.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data))
        arr = llama_cpp.llama_token_data_array(ptr, self._n_vocab, -1, False)
        llama_cpp.llama_sampler_apply(grammar, ctypes.byref(arr))
        llama_cpp.llama_sampler_apply(chain, ctypes.byref(arr))
        return int(ptr[arr.selected].id)

    # -- generation ------------------------------------------------------------------------
    def _run(self, tokens: list[int], seqs: list[int], seeds: list[int]) -> dict[int, Any]:
        """Decode ``seqs`` (already holding the prompt) together until each ends."""
        n_prompt = len(tokens)
        lazy = self.lazy_grammar
        chains = {s: self._chain(seed, grammar=not lazy) for s, seed in zip(seqs, seeds)}
        grammars = {s: self._grammar() for s in seqs} if lazy else {}
        out: dict[int, list[int]] = {s: [] for s in seqs}
        status: dict[int, str | None] = {s: None for s in seqs}
        deadline = time.perf_counter() + self.base.time_limit
        # logits of the prompt's last token sit at index n_last of the last prompt batch
        idx = {s: -1 for s in seqs}
        try:
            active = list(seqs)
            step = 0
            while active:
                finished = []
                for s in active:
                    tok = llama_cpp.llama_sampler_sample(chains[s], self._ctx, idx[s])
                    if lazy:
                        g = grammars[s]
                        if not self._valid(g, tok):
                            tok = self._resample(g, chains[s], idx[s])
                        if not llama_cpp.llama_vocab_is_eog(self._vocab, tok):
                            llama_cpp.llama_sampler_accept(g, tok)
                    if llama_cpp.llama_vocab_is_eog(self._vocab, tok):
                        status[s] = "done"
                        finished.append(s)
                        continue
                    out[s].append(tok)
                    if len(out[s]) >= self.base.max_tokens:
                        status[s] = "cap"
                        finished.append(s)
                if time.perf_counter() > deadline:
                    for s in active:
                        if status[s] is None:
                            status[s] = "time"
                    break
                active = [s for s in active if s not in finished]
                if not active:
                    break
                self._decode([(out[s][-1], n_prompt + step, s, True) for s in active])
                idx = {s: k for k, s in enumerate(active)}
                step += 1
        finally:
            for c in chains.values():
                llama_cpp.llama_sampler_free(c)
            for g in grammars.values():
                llama_cpp.llama_sampler_free(g)
        self.tokens += sum(len(v) for v in out.values())
        return {s: (out[s], status[s]) for s in seqs}

    def generate(self, response: str, n: int) -> GenerationSet:
        prompt = self.base.prompt(response)
        started = time.perf_counter()
        with self._lock:
            tokens = self._llm.tokenize(prompt.encode("utf-8"), special=True)
            results: dict[int, Any] = {}
            if self.parallel and n <= self._n_seq_max:
                self._prompt(tokens)
                for s in range(1, n):
                    llama_cpp.llama_memory_seq_cp(self._mem, 0, s, -1, -1)
                results = self._run(tokens, list(range(n)), [self.base.seed + i for i in range(n)])
                for s in range(1, n):
                    llama_cpp.llama_memory_seq_rm(self._mem, s, -1, -1)
            else:
                for i in range(n):
                    self._prompt(tokens)
                    results[i] = self._run(tokens, [0], [self.base.seed + i])[0]
                    llama_cpp.llama_memory_seq_rm(self._mem, 0, len(tokens), -1)
            llama_cpp.llama_memory_seq_rm(self._mem, 0, len(tokens), -1)
        generations = []
        for i in range(n):
            toks, status = results[i]
            text = self._llm.detokenize(toks).decode("utf-8", errors="ignore").strip()
            if status == "time":
                generations.append(
                    Generation("", None, f"cut off after {self.base.time_limit:g} s")
                )
            elif status == "cap" or not text.endswith("?"):
                generations.append(
                    Generation(
                        "", None, f"hit the {self.base.max_tokens}-token cap before a question"
                    )
                )
            else:
                generations.append(Generation(text, None))
        return GenerationSet(
            generations=generations,
            cacheable=all(not (g.error or "").startswith("cut off") for g in generations),
            model=self.base.fingerprint()["model"],
            usage={"prompt_tokens": len(tokens) * n, "completion_tokens": 0},
            requests=n,
            seconds=time.perf_counter() - started,
        )

    async def agenerate(self, response: str, n: int) -> GenerationSet:
        import asyncio

        return await asyncio.to_thread(self.generate, response, n)
