# Loaded by python at start-up when this directory is on PYTHONPATH (python-shim.sh).
# Two fixes to the environment Debian 12 gives the suite (protobuf 3.21, C++ runtime),
# neither of which changes what the suite sends or checks (docs/CONFORMANCE.md):
#
# 1. The suite's generated gRPC stubs import their messages as the top-level module
#    a2a_pb2, while the suite imports them as specification.generated.a2a_pb2. In this
#    runtime the two imports give two sets of classes, and every isinstance check of a
#    gRPC response fails ("expected lf.a2a.v1.Task, got lf.a2a.v1.Task"). The top-level
#    name is made to load the package's module, so there is one set of classes.
# 2. The suite compares gRPC events by their re-serialized bytes, assuming ("gRPC protos
#    are serialized deterministically") that one event serializes the same way twice.
#    This runtime writes each map (a Struct's fields) in a per-instance order: parsing
#    the same bytes twice and serializing both differs every time. The A2A messages'
#    SerializeToString is made deterministic (map keys in order), as the suite assumes.
import functools
import importlib
import importlib.abc
import importlib.util
import sys

_PKG = "specification.generated.a2a_pb2"


def _deterministic(cls):
    orig = cls.SerializeToString

    @functools.wraps(orig)
    def serialize(self, **kw):
        kw.setdefault("deterministic", True)
        return orig(self, **kw)

    cls.SerializeToString = serialize


def _patch(module):
    from google.protobuf.message import Message

    for value in list(vars(module).values()):
        if isinstance(value, type) and issubclass(value, Message):
            _deterministic(value)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "a2a_pb2":
            return importlib.util.spec_from_loader(name, _Alias())
        if name != _PKG:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                spec.loader = _Patching(spec.loader)
                return spec
        return None


class _Alias(importlib.abc.Loader):
    def create_module(self, spec):
        return importlib.import_module(_PKG)

    def exec_module(self, module):
        pass


class _Patching(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _patch(module)


sys.meta_path.insert(0, _Finder())
