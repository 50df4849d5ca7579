"""Import-only stub of torchvision (the wheel fails against CPU torch 2.13); see ../_import_stub.py."""

from _import_stub import install as _install

_install(__import__(__name__), "0.0.0+e3stub")
