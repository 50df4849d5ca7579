"""pytest plugin for golden snapshots (goldens work fills this)."""
