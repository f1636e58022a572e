"""The original tool's import name: ``import geko``, ``from geko import bench, optim, search,
library``, ``from geko.schemas import GemmType``, ``geko.bench.log`` ... are geko_lib's modules.

Why an alias and not a second package: geko's code lives in ``geko_lib/`` (the project's layout
names it), and a GEKO user's scripts say ``geko``. Mapping the folder twice (a setuptools
``package-dir`` entry, or a symlink) would load every module twice under two names, so
``geko.library.Library`` would not be ``geko_lib.library.Library`` and two copies of module
state would exist. Instead this package installs an import finder that answers ``geko.X`` with
the module object ``geko_lib.X`` itself (``geko.bench is geko_lib.bench``): one implementation,
two names, and it works from a checkout without installing (``bin/geko`` and ``scripts/*.py``
put the repository root on ``sys.path``).

As the original's ``geko/__init__.py`` does, importing ``geko`` sets up the ``GEKO`` logger:
INFO lines on stderr as ``GEKO:INFO [module:function] message``, unless that logger already
has a handler or a level (``logging.getLogger("GEKO").setLevel(logging.DEBUG)`` for more).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util  # a submodule: `import importlib` alone does not bind it
import logging
import sys

import geko_lib
from geko_lib import log_setup

_TARGET = "geko_lib"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``geko.<name>`` -> the already imported (or now imported) ``geko_lib.<name>``."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        target_name = _TARGET + fullname[len(__name__):]
        try:
            target_spec = importlib.util.find_spec(target_name)
        except ModuleNotFoundError:
            return None
        if target_spec is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=target_spec.submodule_search_locations is not None)

    def create_module(self, spec):
        return importlib.import_module(_TARGET + spec.name[len(__name__):])

    def exec_module(self, module):
        # the module ran once, as geko_lib.<name>; the import system keeps its own spec, name
        # and file (it only fills attributes a module lacks)
        pass


if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())


def __getattr__(name):
    """``geko.bench`` after ``import geko`` alone: geko_lib's attribute or submodule."""
    try:
        return getattr(geko_lib, name)
    except AttributeError:
        pass
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


class _Stderr(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is when a line is logged, not as it was at import."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def _setup_logger() -> None:
    logger = logging.getLogger(log_setup.LOGGER)
    if not logger.handlers:
        logger.addHandler(log_setup.attach(_Stderr()))
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


_setup_logger()
