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


def test_a_pinned_tree_is_hashed_by_its_pin_and_sizes_and_content_entries_are_written(tmp_path):
    """Files an image's pins stand for are not read for the hash (tens of thousands of files in
    node_modules); a changed pin (the lock) or size changes the reference, and ``content``
    entries are written as they are."""
    tree, lock = tmp_path / "tree", tmp_path / "package-lock.json"
    tree.mkdir()
    (tree / "a.js").write_text("one")
    lock.write_text('{"v": 1}')

    def image() -> images.Image:
        return images.Image(name="occ.local/pinned", pins=(lock,),
                            entries=[*images.copy_tree_entries(tree, "app", hash_content=False),
                                     images.Entry("etc/passwd", content=b"node:x:1000:1000::/home/node:/bin/sh\n")])

    first = image().reference()
    (tree / "a.js").write_text("two")  # same size, same pin: the lock says it is the same install
    assert image().reference() == first
    lock.write_text('{"v": 2}')
    assert image().reference() != first
    archive = images.build(image(), tmp_path / "cache")
    members = _members(archive)
    manifest = next(json.loads(data) for data in members.values() if b'"layers"' in data)
    layer = tmp_path / "layer.tar"
    layer.write_bytes(members[f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}"])
    with tarfile.open(layer) as tar:
        assert tar.extractfile("etc/passwd").read() == b"node:x:1000:1000::/home/node:/bin/sh\n"  # type: ignore[union-attr]
        assert tar.extractfile("app/a.js").read() == b"two"  # type: ignore[union-attr]


def _dockerfile_stage(name: str) -> list[str]:
    """The instructions of the Dockerfile's stage ``name`` (continuation lines joined)."""
    text = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text().replace("\\\n", " ")
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("FROM "):
            inside = line.split()[-1] == name and " AS " in line
        elif inside and line.strip() and not line.startswith("#"):
            lines.append(" ".join(line.split()))
    return lines


def test_the_dockerfile_gateway_stage_describes_the_same_image():
    """One image in two recipes: ``docker build --target gateway`` (registry users) and
    ``devtools.images.gateway_image`` (the real node's tests) agree on what the Kubernetes
    driver's Pod relies on: its command, user, home, PATH and where node and openclaw are."""
    from occ.drivers.kube import manifests

    stage = _dockerfile_stage("gateway")
    layout = images.GATEWAY
    (cmd,) = [line for line in stage if line.startswith("CMD ")]
    assert tuple(json.loads(cmd.removeprefix("CMD "))) == layout.cmd
    assert f"USER {layout.user}" in stage
    assert f"WORKDIR {layout.home}" in stage
    (env,) = [line for line in stage if line.startswith("ENV ")]
    assert sorted(env.removeprefix("ENV ").split()) == sorted(layout.env)
    copies = {line.split()[-1]: line.split()[-2] for line in stage if line.startswith("COPY --from=build")}
    assert copies == {layout.node_modules: "/app/runtime/node/node_modules",
                      layout.app_modules: "/app/runtime/openclaw/node_modules"}
    (links,) = [" ".join(line.split()) for line in stage if line.startswith("RUN ln -s")]
    assert f"{layout.node_bin} &&" in links  # /opt/node/bin -> the node-linux-* package's bin
    assert f"ln -s {layout.entry_target} {layout.entry}" in links
    assert f"--uid {layout.uid} --gid {layout.gid} --home-dir {layout.home}" in " ".join(stage)
    # …and on what the driver's Pod spec takes from them.
    assert layout.entry == manifests.OPENCLAW_ENTRY
    assert layout.home == manifests.HOME
    assert layout.cmd[:2] == ("node", manifests.OPENCLAW_ENTRY)
