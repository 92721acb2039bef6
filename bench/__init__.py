"""The benchmarks: each ``python -m bench.NAME`` measures one target, side by side in one run;
``python -m bench.run_all`` runs them and refreshes the tables of ``bench/RESULTS.md``."""
