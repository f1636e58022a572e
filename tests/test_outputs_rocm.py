"""rocm details the real tools decide (issue 14): logic files whose entry 5 is
{SolutionDefaults, Solutions}, the code-object versions TensileCreateLibrary accepts, the
version the original builds, and the created library's per-architecture layout."""
import copy

import pytest
import yaml

from geko_lib import library
from geko_lib.platforms import PlatformError
from geko_lib.platforms.rocm import library_build as lb
from geko_lib.platforms.rocm.platform import RocmPlatform, tensile_libpath

from .conftest import FIXTURES, ROOT

LOGIC = sorted((FIXTURES / "tensile_logic").glob("gfx950_*.yaml"))[0]


def defaults_and_overrides(data: list) -> list:
    """The logic list with entry 5 in the defaults + overrides form of current TensileLite."""
    solutions = data[5]
    shared = set.intersection(*(set(s) for s in solutions))
    defaults = {k: solutions[0][k] for k in sorted(shared)
                if all(s[k] == solutions[0][k] for s in solutions)}
    overrides = [{k: v for k, v in s.items() if k not in defaults} for s in solutions]
    return [*data[:5], {"SolutionDefaults": defaults, "Solutions": overrides}, *data[6:]]


def test_solution_defaults_are_read_as_whole_solutions(tmp_path):
    data = yaml.safe_load(LOGIC.read_text())
    compact = tmp_path / LOGIC.name
    compact.write_text(yaml.safe_dump(defaults_and_overrides(copy.deepcopy(data)),
                                      default_flow_style=None, sort_keys=False))
    assert len(compact.read_text()) < len(LOGIC.read_text())  # the form saves space
    lib, full = library.load(compact), library.load(LOGIC)
    assert [dict(s) for s in lib.solutions] == [dict(s) for s in full.solutions]
    assert lib.size_entries() == full.size_entries()
    # written back whole, which every TensileLite revision reads
    out = library.dump(lib, tmp_path / "out" / LOGIC.name)
    assert isinstance(yaml.safe_load(out.read_text())[5], list)


def test_bad_solution_defaults_name_the_file(tmp_path):
    data = yaml.safe_load(LOGIC.read_text())
    data[5] = {"SolutionDefaults": {"DepthU": 64}, "Solutions": "not a list"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data, default_flow_style=None))
    with pytest.raises(library.LibraryError, match="bad.yaml: entry 5 .*SolutionDefaults"):
        library.load(bad)


def test_code_object_versions_are_tensilecreatelibrarys():
    assert set(lb.CODE_OBJECT_VERSIONS) == {"4", "5", "V4", "V5", "default"}
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    entry = schema["properties"]["rocm"]["properties"]["code_object_version"]
    assert set(entry["enum"]) == set(lb.CODE_OBJECT_VERSIONS) and entry["default"] == "5"
    assert RocmPlatform.code_object_version == "5"  # the original builds version 5


def test_version_6_is_refused_before_the_tool_runs(tmp_path):
    with pytest.raises(PlatformError, match="code object version '6'"):
        lb.create_library(tmp_path / "tensilelite", tmp_path / "libs", tmp_path / "out",
                          code_object_version="6", library_format="msgpack", python="python3")


def test_libpath_is_the_per_arch_directory(tmp_path):
    arch_dir = tmp_path / "tensile" / "library" / "gfx950"
    arch_dir.mkdir(parents=True)
    (arch_dir / "TensileLibrary_lazy_gfx950.dat").write_text("{}")
    assert tensile_libpath(tmp_path / "tensile") == arch_dir.resolve()
