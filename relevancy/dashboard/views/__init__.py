"""What the dashboard draws, without Streamlit: plotly figures, tables, formatted text, links
and the HTML report. Every module here can be imported and tested without a Streamlit runtime
(``tests/test_architecture.py`` checks that none imports Streamlit)."""
