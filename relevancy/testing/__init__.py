"""Test helpers for relevancy: fakes and a fault-injecting OpenAI-compatible server."""
