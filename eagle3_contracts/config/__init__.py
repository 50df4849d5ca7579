"""Config-only checking, torch-free: read drafter/target configs (``readers``), check a
drafter's own coherence (``drafter``), resolve and compare what each system feeds (``plan``),
and assemble the ``check`` report (``check``). Example configs ship in ``examples``.

Nothing in this package imports torch; ``tests/test_architecture.py`` holds that rule.
"""
