"""The public surface is exactly `forge.api.__all__`, documented, nothing private leaked.

As trio's `test_exports`: what a user can import from `forge` is listed, each
listed name exists and has a docstring, and no private name or internal
module is part of the surface.
"""

from __future__ import annotations

import inspect
import pathlib
import types

import forge
import forge.api as api


def test_forge_reexports_exactly_the_api():
    """`forge.__all__` is `forge.api.__all__` plus `__version__`, and each name is the same object."""
    assert sorted(forge.__all__) == sorted([*api.__all__, "__version__"])
    for name in api.__all__:
        assert getattr(forge, name) is getattr(api, name), name


def test_all_is_sorted_and_has_no_private_names():
    """`__all__` is sorted, has no duplicates and no `_name`."""
    assert api.__all__ == sorted(set(api.__all__))
    assert not [n for n in api.__all__ if n.startswith("_")]


def test_every_public_name_of_the_module_is_listed():
    """A name defined in `forge.api` without a leading underscore is in `__all__`
    (imports that are not part of the API are spelled `_name`)."""
    public = {n for n, v in vars(api).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)
              and n not in ("annotations",)}
    # `Strategy` is the type of a strategy's name (the registry's), used in signatures only.
    assert public - {"Strategy", "TYPE_CHECKING", "Any", "Callable", "Iterable", "Literal", "Mapping",
                     "Sequence", "Union", "Unpack"} == set(api.__all__)


def test_every_name_is_documented():
    """Each listed name is documented in docs/api.md, and each class and function
    defined in `forge.api` has a docstring of its own."""
    docs = (pathlib.Path(api.__file__).parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    for name in api.__all__:
        assert f"`{name}`" in docs or f"`forge.{name}`" in docs, f"{name} is not in docs/api.md"
        value = getattr(api, name)
        if (inspect.isclass(value) or inspect.isfunction(value)) and value.__module__ == api.__name__:
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_signatures_mention_no_private_type():
    """No public function's annotations name a `_private` type."""
    for name in api.__all__:
        value = getattr(api, name)
        if inspect.isfunction(value):
            for param, note in inspect.get_annotations(value).items():
                assert "_Setup" not in str(note), (name, param)


def test_forge_has_no_attribute_outside_the_surface():
    """An unknown name is an AttributeError (the lazy re-export invents nothing)."""
    try:
        forge.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("forge.no_such_name resolved")


def test_the_package_ships_py_typed():
    """`py.typed` is beside `forge/__init__.py` and listed as package data."""
    import pathlib
    import tomllib

    root = pathlib.Path(forge.__file__).parent
    assert (root / "py.typed").is_file()
    data = tomllib.loads((root.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["forge"]
