"""The Streamlit dashboard's shared code (``streamlit run app.py``).

Streamlit glue lives in ``sidebar``, ``state``, ``ui``, ``drilldown`` and ``runner``; the
Streamlit-free parts (``charts``, ``datasets``) can be imported and tested without Streamlit.
Importing this package itself does not import Streamlit.
"""
