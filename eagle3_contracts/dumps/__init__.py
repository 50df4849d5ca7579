"""Dumped hidden states: the safetensors dump format (``format``), diagnosing which layer each
dumped segment is (``diagnose``), and the Kimi-K2.5 incident replay (``demo``)."""
