"""Import-only stand-ins for native packages SGLang imports but the CPU model path never calls.

`sgl_kernel` has no CPU wheel and the `torchvision` wheel does not load against CPU torch 2.13,
yet SGLang's model modules import both at module level. Every name imports; calling one (or
using it any other way than passing it around) raises `StubCalled` naming the symbol, so a test
that reached a native op fails loudly instead of computing something else.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types


class StubCalled(RuntimeError):
    """A stubbed native symbol was used: the CPU path under test is not the native-op-free one."""


class _Missing:
    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __getattr__(self, name: str) -> _Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self._qualname}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise StubCalled(f"{self._qualname} is an import-only stub (tests/engines/sglang/stubs)")

    def __repr__(self) -> str:
        return f"<stub {self._qualname}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(self.root + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None


def install(package: types.ModuleType, version: str) -> None:
    """Turn the already-imported stub `package` into a stub whose every name and submodule imports."""
    package.__class__ = _StubModule
    package.__version__ = version
    sys.meta_path.append(_Finder(package.__name__))
