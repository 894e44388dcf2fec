"""resolve_inside: the one confinement check every file tool relies on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.errors import ToolError
from plane.tools.workspace import locate, relative, resolve_inside
from tests.support.fixtures_examples import examples


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """workspace/ with sub/, links in and out; outside/ beside it."""
    root = tmp_path / "workspace"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "to_etc").symlink_to("/etc")
    (root / "to_outside").symlink_to(outside)
    (root / "to_secret").symlink_to(outside / "secret.txt")
    (root / "to_sub").symlink_to("sub")
    (root / "dangling_out").symlink_to(tmp_path / "nowhere" / "x")
    (root / "up").symlink_to("..")
    return root


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("sub/f.txt", "sub/f.txt"),
        (".", "."),
        ("./sub/../sub/f.txt", "sub/f.txt"),
        ("new/deeper/file.txt", "new/deeper/file.txt"),
        ("to_sub/f.txt", "sub/f.txt"),
        ("to_sub/new.txt", "sub/new.txt"),
        ("~/x", "~/x"),  # no home expansion: a directory named ~
    ],
)
def test_paths_inside_resolve_to_where_they_really_are(tree: Path, path: str, expected: str):
    real = resolve_inside(tree, path)
    assert relative(tree, real) == expected
    assert real == Path(os.path.realpath(tree / expected))


def test_an_absolute_path_inside_the_workspace_is_allowed(tree: Path):
    assert resolve_inside(tree, str(tree / "sub" / "f.txt")) == tree.resolve() / "sub" / "f.txt"


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../outside/secret.txt",
        "a/../../x",
        "sub/../../workspace2",
        "/etc/passwd",
        "/",
        "to_etc",
        "to_etc/passwd",
        "to_outside/secret.txt",
        "to_outside/new_file.txt",
        "to_secret",
        "to_sub/../../outside",
        "dangling_out",
        "up",
        "up/outside/secret.txt",
        "up/workspace/sub/f.txt",  # out and back in: a symlink may not leave, even briefly
    ],
)
def test_paths_that_escape_are_refused(tree: Path, path: str):
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_inside(tree, path)


def test_the_refusal_quotes_the_path_as_given(tree: Path):
    with pytest.raises(ToolError) as refused:
        resolve_inside(tree, "a/../../x")
    assert str(refused.value) == "`a/../../x` is outside the workspace."


def test_a_workspace_reached_through_a_symlink_still_confines(tree: Path, tmp_path: Path):
    alias = tmp_path / "alias"
    alias.symlink_to(tree)
    assert relative(alias, resolve_inside(alias, "sub/f.txt")) == "sub/f.txt"
    with pytest.raises(ToolError, match="outside"):
        resolve_inside(alias, "../outside/secret.txt")


def test_a_sibling_whose_name_starts_like_the_workspace_is_outside(tree: Path):
    (tree.parent / "workspace-evil").mkdir()
    with pytest.raises(ToolError, match="outside"):
        resolve_inside(tree, "../workspace-evil")
    with pytest.raises(ToolError, match="outside"):
        resolve_inside(tree, str(tree.parent / "workspace-evil"))


def test_nul_bytes_are_refused(tree: Path):
    with pytest.raises(ToolError, match="NUL byte") as refused:
        resolve_inside(tree, "sub/f.txt\x00.png")
    assert "\x00" not in str(refused.value)


@pytest.mark.parametrize("path", ["", "   "])
def test_an_empty_path_is_refused(tree: Path, path: str):
    with pytest.raises(ToolError, match="empty"):
        resolve_inside(tree, path)


def test_very_long_paths_are_refused_clearly(tree: Path):
    with pytest.raises(ToolError, match="characters long; the limit is 4096") as refused:
        resolve_inside(tree, "a/" * 3000)
    assert len(str(refused.value)) < 200
    with pytest.raises(ToolError, match="name longer than 255 bytes"):
        resolve_inside(tree, "x" * 300)
    with pytest.raises(ToolError, match="name longer than 255 bytes"):
        resolve_inside(tree, "é" * 200)  # 200 characters, 400 bytes


SEGMENTS = st.sampled_from(
    ["sub", "f.txt", "..", ".", "to_etc", "to_outside", "to_sub", "up", "dangling_out", "x", ""]
)


@settings(max_examples=examples(300), deadline=None)
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=8), absolute=st.booleans())
def test_whatever_the_path_the_result_is_inside_or_refused(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str], absolute: bool
):
    root = _shared_tree(tmp_path_factory)
    path = "/".join(parts)
    if absolute:
        path = str(root / path)
    try:
        real = resolve_inside(root, path)
    except ToolError:
        return
    real_root = Path(os.path.realpath(root))
    assert real == real_root or real_root in real.parents
    assert Path(os.path.realpath(real)) == real  # nothing left to resolve


_TREES: dict[int, Path] = {}


def _shared_tree(factory: pytest.TempPathFactory) -> Path:
    key = id(factory)
    if key not in _TREES:
        base = factory.mktemp("prop")
        root = base / "workspace"
        (root / "sub").mkdir(parents=True)
        (root / "sub" / "f.txt").write_text("x")
        (base / "outside").mkdir()
        (root / "to_etc").symlink_to("/etc")
        (root / "to_outside").symlink_to(base / "outside")
        (root / "to_sub").symlink_to("sub")
        (root / "dangling_out").symlink_to(base / "nowhere")
        (root / "up").symlink_to("..")
        _TREES[key] = root
    return _TREES[key]


def test_a_symlink_with_an_absolute_target_inside_is_followed_from_the_workspace(tree: Path):
    (tree / "abs_sub").symlink_to(tree / "sub")
    (tree / "abs_real").symlink_to(Path(os.path.realpath(tree)) / "sub" / "f.txt")
    assert relative(tree, resolve_inside(tree, "abs_sub/f.txt")) == "sub/f.txt"
    assert relative(tree, resolve_inside(tree, "abs_real")) == "sub/f.txt"


def test_a_refused_path_makes_no_directory_on_its_way(tree: Path):
    with pytest.raises(ToolError, match="outside"):
        locate(tree, "made/../../x", make_parents=True)
    assert not (tree / "made").exists()


def test_missing_directories_are_made_one_at_a_time_inside(tree: Path):
    with locate(tree, "to_sub/a/b/new.txt", make_parents=True) as place:
        assert (place.rel, place.name) == ("sub/a/b/new.txt", "new.txt")
        assert place.lstat() is None and place.parent is not None
    assert (tree / "sub" / "a" / "b").is_dir()


def test_a_file_in_the_middle_of_a_path_is_named(tree: Path):
    with pytest.raises(ToolError, match="has a part that is not a directory"):
        locate(tree, "sub/f.txt/more")
