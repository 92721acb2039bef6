"""The Streamlit dashboard's shared code (``streamlit run app.py``); pages live in ``pages/``.

* ``views/`` draws without Streamlit: figures (``charts``, ``projection_chart``,
  ``compare_charts``), tables and text (``datasets``, ``sentence_table``, ``compare_table``,
  ``format``), links (``links``), the Agreement and chance views, examples and the HTML report.
* ``widgets/`` is Streamlit: page set-up, the sidebar, settings and the cached metric, session
  state, and the widgets the pages share.

Pages read widgets and call these modules; importing this package does not import Streamlit.
"""
