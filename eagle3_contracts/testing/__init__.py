"""Test support shipped for downstream repos: tiny synthetic targets (``synthetic``) and tiny
random Hugging Face models (``hf_models``), hypothesis strategies (``strategies``), the pytest
plugin (``pytest_plugin``), the goldens extension and plugin (``goldens``, ``goldens_plugin``),
and the golden cases (``golden_cases``).

Runtime code does not import this package (the parallel simulations are the stated exception);
``tests/test_architecture.py`` holds that rule. Keep this file import-free: the hypothesis entry
point loads ``testing._hypothesis`` in every downstream test run.
"""
