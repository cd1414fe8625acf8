"""Test support: real parts that stand in for the outside world (an OpenAI-compatible server)."""
