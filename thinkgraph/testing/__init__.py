"""Regression tests from recorded runs: fixtures that replay offline, and a pytest plugin.

`thinkgraph export-test RUN` writes a fixture (`thinkgraph.testing.regress`) and a test
that replays it; the plugin (`thinkgraph.testing.plugin`) gives tests `thinkgraph_replay`.
"""
