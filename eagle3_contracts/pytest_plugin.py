"""pytest plugin (``pytest11`` entry point) for eagle3-contracts users. Filled by the capture work."""
