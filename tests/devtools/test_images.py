"""devtools/images.py: OCI archives written from files, the same bytes for the same inputs."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from devtools import images


def _image(tmp_path: Path, content: bytes = b"#!/bin/sh\necho hi\n") -> images.Image:
    tool = tmp_path / "tool"
    tool.write_bytes(content)
    tool.chmod(0o755)
    return images.Image(name="occ.local/test", entries=[images.Entry("bin"), images.Entry("bin/tool", source=tool),
                                                        images.Entry("bin/sh", link="tool")],
                        entrypoint=("/bin/tool",), user="1000:1000")


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_an_archive_is_an_oci_layout_whose_blobs_match_their_digests(tmp_path):
    image = _image(tmp_path)
    archive = images.build(image, tmp_path / "cache")
    members = _members(archive)
    for name, data in members.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(members["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == image.reference()
    manifest = json.loads(members[f"blobs/sha256/{entry['digest'].split(':')[1]}"])
    config = json.loads(members[f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"])
    assert config["config"]["Entrypoint"] == ["/bin/tool"]
    assert config["config"]["User"] == "1000:1000"
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    layer = tmp_path / "layer.tar"
    layer.write_bytes(members[f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}"])
    with tarfile.open(layer) as tar:
        tool, link = tar.getmember("bin/tool"), tar.getmember("bin/sh")
        assert (tool.mode, tool.uid, tool.mtime) == (0o755, 0, 0)
        assert link.issym()
        assert link.linkname == "tool"


def test_the_same_inputs_give_the_same_bytes_and_a_changed_file_a_new_reference(tmp_path):
    images.write_archive(_image(tmp_path), tmp_path / "a.tar")
    images.write_archive(_image(tmp_path), tmp_path / "b.tar")
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    before = _image(tmp_path).reference()
    assert _image(tmp_path, b"#!/bin/sh\necho changed\n").reference() != before


def test_a_cached_archive_is_reused_until_an_input_changes(tmp_path):
    cache = tmp_path / "cache"
    archive = images.build(_image(tmp_path), cache)
    stamp = archive.stat().st_mtime_ns
    assert images.build(_image(tmp_path), cache) == archive
    assert archive.stat().st_mtime_ns == stamp
    other = images.build(_image(tmp_path, b"#!/bin/sh\necho other\n"), cache)
    assert other != archive
