"""The Streamlit dashboard's shared code (``streamlit run app.py``); pages live in ``pages/``.

Pages call these modules and only read widgets and draw:

* ``page`` sets a page up (config, CSS, the sidebar, the header); ``sidebar`` draws the shared
  sidebar and its navigation; ``models`` holds the settings, the API key and the cached metric;
  ``state`` the session state, the run store and cached run loading.
* ``drilldown`` draws one result's explanation (:func:`relevancy.explain.explain_result`);
  ``tables`` the results grid; ``upload`` the new-run widgets; ``judge_panel`` the judge check;
  ``runner`` scores a run with progress and Cancel.
* Without Streamlit: ``ui`` (formatters), ``charts`` (plotly figures), ``datasets`` (upload
  checks, filters, the results table), ``comparison``, ``examples`` and ``report`` (the HTML
  report).

Importing this package itself does not import Streamlit.
"""
