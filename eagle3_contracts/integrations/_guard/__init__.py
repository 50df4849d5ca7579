"""The guard code both engine integrations import (torch-free except ``verdict``): the
environment's settings, the releases each integration was checked against, the trained claim,
the release table that answers for the installed engine, the judgement and its log lines.

The vLLM plugin (``integrations.vllm``) and the SGLang hooks (``integrations.sglang``) differ
only in how they reach the engine's tensors; what they read, whom they believe and what they
say is decided here once."""
