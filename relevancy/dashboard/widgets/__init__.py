"""The dashboard's Streamlit code: page set-up and the sidebar (``page``, ``sidebar``), settings
and the cached metric (``models``), session state and the run store (``state``), and the widgets
the pages share (drill-down, results grid, upload, runner, labels, panels)."""
