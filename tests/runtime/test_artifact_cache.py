"""The artifact store beside the compiled objects: what is written reads back, a missing entry
reads as None, a new version removes the others of its kind, and a cache that cannot be
written costs only the speedup."""

from tessel.runtime import read_artifact, write_artifact


def test_written_artifact_reads_back_and_a_missing_one_is_none(tmp_path):
    write_artifact("lowered", "v1", "key", b"bytes", tmp_path)
    assert read_artifact("lowered", "v1", "key", tmp_path) == b"bytes"
    assert read_artifact("lowered", "v1", "other", tmp_path) is None
    assert read_artifact("kernels", "v1", "key", tmp_path) is None


def test_new_version_removes_the_old_ones_of_its_kind_only(tmp_path):
    write_artifact("lowered", "v1", "a", b"1", tmp_path)
    write_artifact("kernels", "v1", "a", b"k", tmp_path)
    write_artifact("lowered", "v2", "b", b"2", tmp_path)
    assert read_artifact("lowered", "v1", "a", tmp_path) is None
    assert read_artifact("lowered", "v2", "b", tmp_path) == b"2"
    assert read_artifact("kernels", "v1", "a", tmp_path) == b"k"
    write_artifact("lowered", "v2", "c", b"3", tmp_path)  # same version: the others stay
    assert read_artifact("lowered", "v2", "b", tmp_path) == b"2"


def test_unwritable_cache_is_skipped_silently(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    write_artifact("lowered", "v1", "a", b"1", blocker)  # a file where the directory should be
    assert read_artifact("lowered", "v1", "a", blocker) is None
