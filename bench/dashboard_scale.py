"""The dashboard with a large run: a synthetic 10,000-row run in the run store.

Builds ``--rows`` synthetic ``RelevancyResult`` objects (3 generated questions each, 384-d unit
vectors clustered by topic like real MiniLM embeddings, two answer variants per question), then
times each piece the dashboard relies on, skipping cleanly whatever is not there yet:

1. run store (``relevancy/store.py``): ``create_run`` + ``append_results`` (batches of 250, as
   a scoring run writes them), ``load_run``, file size;
2. projection (``relevancy/projection.py``, else numpy): ``build_points``, PCA, UMAP
   (``umap-learn``; ``NUMBA_CACHE_DIR`` kept stable so numba compiles once per machine; the
   import and a warm-up fit are timed apart from the real fit);
3. pages under ``streamlit.testing.v1.AppTest`` with the run active: ``app.py`` then each of
   ``pages/1_Dataset.py`` (the results table), ``2_Distributions``, ``3_Embeddings`` (PCA).

Peak memory: the process's VmHWM, plus RSS after each step. :func:`render` writes the
"Dashboard at scale" section of ``RESULTS.md``.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, emit, fmt, log, parser, r, table, vm_hwm_mb, vm_rss_mb  # noqa: E402

DIM = 384


def synthetic_results(n: int, seed: int = 0) -> tuple[Any, list[Any]]:
    import numpy as np
    import pandas as pd

    from relevancy import QuestionScore, RelevancyResult

    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(max(2, n // 50), DIM))
    n_q = max(1, n // 2)  # two answer variants per question
    topic_of = rng.integers(0, len(topics), size=n_q)
    ui = topics[topic_of] + 0.6 * rng.normal(size=(n_q, DIM))
    ui /= np.linalg.norm(ui, axis=1, keepdims=True)
    inputs, results = [], []
    for i in range(n):
        q = i % n_q
        variant = "prompt-A" if i < n_q else "prompt-B"
        drift = rng.uniform(0.3, 1.6)
        qv = ui[q] + drift * rng.normal(size=(3, DIM)) / math.sqrt(DIM) * 6
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        sims = (qv @ ui[q]).tolist()
        nc = bool(rng.random() < 0.08)
        user_input = f"Synthetic question {q} about topic {topic_of[q]}: what happens?"
        response = f"Synthetic answer {i} ({variant}) about topic {topic_of[q]}."
        inputs.append(
            {"id": f"q{q}", "variant": variant, "user_input": user_input, "response": response}
        )
        results.append(
            RelevancyResult(
                user_input=user_input,
                response=response,
                value=0.0 if nc else float(np.mean(sims)),
                questions=[
                    QuestionScore(f"Generated question {i}.{k} on topic {topic_of[q]}?", s, None)
                    for k, s in enumerate(sims)
                ],
                noncommittal=nc,
                noncommittal_method="exemplars",
                noncommittal_detail="synthetic",
                answer_similarity=float(rng.uniform(0.1, 0.9)),
                llm="local:SmolLM2-135M-Instruct-Q4_1",
                embeddings="local:all-MiniLM-L6-v2-int8",
                strictness=3,
                user_input_embedding=ui[q].tolist(),
                question_embeddings=qv.tolist(),
                timings={"generation_s": 1.0, "embedding_s": 0.01, "total_s": 1.01},
            )
        )
    return pd.DataFrame(inputs), results


def step(out: dict[str, Any], name: str, fn: Any) -> Any:
    """Run one step, record seconds and RSS after it; record the error and go on if it fails."""
    start = time.perf_counter()
    try:
        value = fn()
    except Exception as exc:
        out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        log(f"  {name} failed:\n{traceback.format_exc(limit=4)}")
        return None
    out[name] = {"s": r(time.perf_counter() - start), "rss_mb": r(vm_rss_mb(), 1)}
    log(f"  {name}: {out[name]['s']} s, RSS {out[name]['rss_mb']} MiB")
    return value


def cache_resource_variant(pages: list[Path], run_id: int, timeout: float) -> dict[str, Any]:
    """The same renders with the run cached by ``st.cache_resource`` (one shared object)
    instead of ``st.cache_data`` (an unpickled copy per hit): a bench-side patch of
    ``relevancy.dashboard.state._load`` that imitates the proposed change."""
    try:
        import streamlit as st
        from streamlit.testing.v1 import AppTest

        import relevancy.dashboard.state as state
        from relevancy.store import RunStore
    except ImportError as exc:
        return {"skipped": str(exc)}
    original = state._load

    @st.cache_resource(show_spinner=False, max_entries=12)
    def _load(path: str, rid: int, version: str) -> Any:
        return RunStore(path).load_run(rid)

    state._load = _load
    renders: dict[str, Any] = {}
    try:
        at = AppTest.from_file(str(pages[0]), default_timeout=timeout)
        at.session_state["active_run"] = run_id
        for page in [*pages, pages[1]]:
            if not page.exists():
                continue
            start = time.perf_counter()
            if page.name != "app.py":
                at.switch_page(f"pages/{page.name}")
            at.run()
            name = page.stem if page.stem not in renders else page.stem + " (again)"
            renders[name] = {
                "s": r(time.perf_counter() - start),
                "rss_mb": r(vm_rss_mb(), 1),
                "exceptions": [str(e.value)[:300] for e in at.exception],
            }
            log(f"  cache_resource variant, page {name}: {renders[name]['s']} s")
    finally:
        state._load = original
    return renders


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=10_000)
    p.add_argument("--no-umap", action="store_true", help="skip UMAP")
    p.add_argument("--no-apptest", action="store_true", help="skip the AppTest page renders")
    p.add_argument("--timeout", type=float, default=600.0, help="AppTest timeout per page")
    p.add_argument(
        "--no-cache-resource-variant",
        dest="cache_resource_variant",
        action="store_false",
        help="skip the second AppTest pass with the run held by st.cache_resource",
    )
    return p


def measure(args: Any) -> dict[str, Any]:
    """The store, the projections and the AppTest renders, step by step."""
    # the same folder scripts/test.sh uses, so numba compiles once per machine
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "relevancy" / "numba"))
    out: dict[str, Any] = {"bench": "dashboard_scale", "rows": args.rows}
    steps: dict[str, Any] = {}
    out["steps"] = steps

    tmp = tempfile.TemporaryDirectory(prefix="bench-dash-")
    store_file = Path(tmp.name) / "runs.sqlite3"
    os.environ["RELEVANCY_STORE"] = str(store_file)
    os.environ["RELEVANCY_CACHE_DIR"] = str(Path(tmp.name) / "cache")

    built = step(steps, "build_results", lambda: synthetic_results(args.rows))
    if built is None:
        return out
    inputs, results = built

    # 1. run store ------------------------------------------------------------------------
    data = None
    run_id = None
    try:
        from relevancy.store import RunStore, import_demo
    except ImportError as exc:
        out["store_skipped"] = f"relevancy.store unavailable: {exc}"
    else:
        store = RunStore(store_file)
        import_demo(store)  # as the dashboard does on first start; our run is then the newest

        def write() -> int:
            rid = store.create_run("bench 10k", {"backend": "embedded"}, inputs, source="bench")
            for start in range(0, len(results), 250):
                store.append_results(rid, enumerate(results[start : start + 250], start))
            return rid

        run_id = step(steps, "store_write", write)
        if run_id is not None:
            data = step(steps, "store_load_run", lambda: store.load_run(run_id))
            out["store_file_mb"] = r(store_file.stat().st_size / 2**20, 1)
        try:
            from relevancy.store import _result_json
        except ImportError:
            pass
        else:  # the JSON encoding share of store_write
            step(steps, "store_json_encode", lambda: [_result_json(x) for x in results])
        if data is not None:
            import pickle

            # what st.cache_data does on every hit: hand back an unpickled copy
            step(steps, "cache_data_hit_copy", lambda: pickle.loads(pickle.dumps(data)))

    # 2. projections ----------------------------------------------------------------------
    import numpy as np

    try:
        from relevancy.projection import build_points, project
    except ImportError as exc:
        out["projection_module"] = f"unavailable ({exc}); numpy PCA on the raw matrix"
        matrix = np.vstack(
            [np.vstack([x.user_input_embedding, *x.question_embeddings]) for x in results]
        )

        def project(m: Any, method: str = "pca", dims: int = 2) -> Any:
            c = m - m.mean(axis=0)
            u, s, _ = np.linalg.svd(c, full_matrices=False)
            return u[:, :dims] * s[:dims]

    else:
        frame = data.frame if data is not None else None
        res = data.results if data is not None else results
        if frame is None:
            import pandas as pd

            frame = pd.DataFrame({"row": range(len(results)), "variant": inputs["variant"]})
        built_pts = step(steps, "build_points", lambda: build_points(frame, res))
        matrix = built_pts[1] if built_pts is not None else None
    if matrix is not None:
        out["points"] = int(matrix.shape[0])
        step(steps, "pca_2d", lambda: project(matrix, "pca", 2))

        def pca_cov(m: Any = matrix, dims: int = 2) -> Any:
            x = np.asarray(m, dtype=np.float64)
            c = x - x.mean(axis=0)
            _, vecs = np.linalg.eigh(c.T @ c)
            return c @ vecs[:, ::-1][:, :dims]

        step(steps, "pca_2d_covariance_eigh", pca_cov)
        if not args.no_umap:
            try:
                t0 = time.perf_counter()
                import umap  # noqa: F401

                steps["umap_import"] = {"s": r(time.perf_counter() - t0)}
            except ImportError as exc:
                out["umap_skipped"] = f"umap-learn not installed: {exc}"
            else:
                # a tiny fit first: numba compiles here (cached in NUMBA_CACHE_DIR afterwards)
                step(steps, "umap_warmup_fit_200", lambda: project(matrix[:200], "umap", 2))
                step(steps, "umap_2d", lambda: project(matrix, "umap", 2))
                if matrix.shape[0] > 5000:
                    sample = np.random.default_rng(0).choice(matrix.shape[0], 5000, replace=False)
                    step(steps, "umap_2d_5000_points", lambda: project(matrix[sample], "umap", 2))

    # 3. pages under AppTest --------------------------------------------------------------
    pages = [ROOT / "app.py"] + [
        ROOT / "pages" / f"{name}.py" for name in ("1_Dataset", "2_Distributions", "3_Embeddings")
    ]
    if args.no_apptest:
        out["apptest_skipped"] = "--no-apptest"
    elif run_id is None or not pages[0].exists():
        out["apptest_skipped"] = "no app.py or no run store"
    else:
        try:
            from streamlit.testing.v1 import AppTest
        except ImportError as exc:
            out["apptest_skipped"] = f"streamlit unavailable: {exc}"
        else:
            at = AppTest.from_file(str(pages[0]), default_timeout=args.timeout)
            at.session_state["active_run"] = run_id
            renders: dict[str, Any] = {}
            for page in pages:
                if not page.exists():
                    renders[page.name] = {"skipped": "missing"}
                    continue
                name = page.stem
                start = time.perf_counter()
                try:
                    if page.name != "app.py":
                        at.switch_page(f"pages/{page.name}")
                    at.run()
                    errors = [str(e.value)[:300] for e in at.exception]
                except Exception as exc:
                    errors = [f"{type(exc).__name__}: {str(exc)[:300]}"]
                renders[name] = {
                    "s": r(time.perf_counter() - start),
                    "rss_mb": r(vm_rss_mb(), 1),
                    "exceptions": errors,
                }
                log(f"  page {name}: {renders[name]['s']} s {errors or ''}")
            out["apptest_first_render"] = renders
            start = time.perf_counter()
            at.switch_page("pages/1_Dataset.py")
            at.run()
            out["apptest_rerender_dataset_s"] = r(time.perf_counter() - start)
            if args.cache_resource_variant:
                out["apptest_cache_resource_variant"] = cache_resource_variant(
                    pages, run_id, args.timeout
                )
    tmp.cleanup()
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def main() -> int:
    args = build_parser().parse_args()
    out = measure(args)
    emit(out, args.json)
    return 1 if "error" in out["steps"]["build_results"] else 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Dashboard at scale" section of RESULTS.md."""
    s = fig.get("steps", {})
    rows = []
    names = {
        "build_results": "build synthetic results (bench only)",
        "store_write": "run store: create_run + append_results (batches of 250)",
        "store_load_run": "run store: load_run",
        "store_json_encode": "JSON-encoding the results alone (`store._result_json`)",
        "cache_data_hit_copy": "`st.cache_data` hit: an unpickled copy of the RunData",
        "build_points": "projection.build_points",
        "pca_2d": "PCA 2D (`projection.pca`, SVD of the n x 384 matrix)",
        "pca_2d_covariance_eigh": "PCA 2D via eigh of the 384 x 384 covariance (alternative)",
        "umap_import": "`import umap` (numba)",
        "umap_warmup_fit_200": "UMAP warm-up fit, 200 points (numba compile)",
        "umap_2d": "UMAP 2D, all points",
        "umap_2d_5000_points": "UMAP 2D, a 5,000-point sample",
    }
    for key, label in names.items():
        d = s.get(key)
        if d:
            rows.append([label, d.get("s", d.get("error")), d.get("rss_mb")])
    for name, d in (fig.get("apptest_first_render") or {}).items():
        exc = "; ".join(d.get("exceptions", []))[:120]
        rows.append(
            [
                f"AppTest first render `{name}`" + (f" (exception: {exc})" if exc else ""),
                d.get("s", d.get("skipped")),
                d.get("rss_mb"),
            ]
        )
    if fig.get("apptest_rerender_dataset_s") is not None:
        rows.append(
            ["AppTest re-render `1_Dataset` (cached run)", fig["apptest_rerender_dataset_s"], None]
        )
    for name, d in (fig.get("apptest_cache_resource_variant") or {}).items():
        if isinstance(d, dict):
            rows.append(
                [
                    f"AppTest `{name}` with the run in `st.cache_resource` (bench-side patch)",
                    d.get("s"),
                    d.get("rss_mb"),
                ]
            )
    extra = [fig[k] for k in ("store_skipped", "umap_skipped", "apptest_skipped") if k in fig]
    return "\n".join(
        [
            f"{fig['rows']:,} synthetic rows (3 questions each, 384-d vectors clustered by topic, "
            f"two variants per question) = {fmt(fig.get('points'), 0)} points to project; store "
            f"file {fmt(fig.get('store_file_mb'), 1)} MiB.",
            "",
            table(["step", "seconds", "RSS after, MiB"], rows),
            "",
            f"Peak RSS {fmt(fig.get('peak_rss_mb'), 0)} MiB (one process: store, projections and "
            "AppTest)." + (" Skipped: " + "; ".join(extra) if extra else ""),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
