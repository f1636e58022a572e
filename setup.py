"""Packages and package data (the rest of the metadata is pyproject.toml's).

geko_lib is the one implementation. ``geko`` is the original tool's import name: a one-file alias
package whose import finder answers ``geko.X`` with the module object ``geko_lib.X`` itself
(``geko.bench is geko_lib.bench``), so a GEKO user's ``from geko import bench`` runs geko_lib's
code and no module is loaded twice (a package-dir mapping of geko -> geko_lib/ would load every
module a second time under the other name, with its own copies of classes and state).

The checkout's ``workflow/`` (Snakefile, rules, scripts, config schema, report captions),
``config/`` (config.yaml and the bundled workloads) and ``profiles/`` travel in a wheel as package
data under ``geko_lib/`` (``geko_lib/workflow/Snakefile`` ...), mapped from where they live in
the checkout, so ``pip install .`` and a wheel run ``geko`` from any directory;
``geko_lib.resources`` finds them there, or at the checkout's root for an editable install.
"""
from setuptools import find_packages, setup

# package name -> the checkout directory it is built from (no Python in them: data only)
DATA_DIRS = {"geko_lib.workflow": "workflow", "geko_lib.config": "config",
             "geko_lib.profiles": "profiles"}

setup(packages=find_packages(include=["geko_lib", "geko_lib.*", "geko"]) + list(DATA_DIRS),
      package_dir=DATA_DIRS,
      # the CUDA C++ kernels of the cuda platform, loaded by their modules
      package_data={**{name: ["**/*"] for name in DATA_DIRS},
                    "geko_lib.platforms.cuda": ["*.cu"]},
      exclude_package_data={name: ["**/__pycache__/*", "**/*.pyc"] for name in DATA_DIRS})
