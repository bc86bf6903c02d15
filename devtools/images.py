"""Container images without a registry or a container engine: OCI image archives written from
files on this machine, for ``ctr images import`` (the tests' real node, tests/kubecluster/node.py).

An image is one uncompressed layer (a tar of ``Entry`` objects: files copied from the host,
symlinks and folders, every one owned by root unless said otherwise, modification times zero) and
its config (entrypoint, command, environment, user, working folder). The same inputs give the same
bytes, so the digest of the archive follows its inputs, and a cached archive is reused while they
are unchanged (``build``: the archive is named after the hash of its inputs).

``busybox_image`` is the small image the node needs first: Debian's ``busybox-static`` with its
applets linked, run as the Pod sandbox (``sleep infinity``; the kubelet's "pause" container) and
as the test Pods' container.

``gateway_image`` is the OpenClaw gateway an Agent's Pod runs on the Kubernetes ComputeDriver:
that root file system plus Node 24 and the pinned ``openclaw`` as ``make runtime`` installed them
from runtime/'s committed locks, the C libraries they link (this machine's Debian ones), and the
user, paths and command of the Dockerfile's ``gateway`` stage (``GATEWAY``; tests/devtools/
test_images.py checks the Dockerfile says the same). Differences from the Dockerfile's image: no
Debian base beyond those libraries and busybox, and no ca-certificates (its Pods reach nothing
off this machine).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
# The applets the images link (sh for a Pod's command, env for `occ tui`'s exec (occ_cli.kube.TUI_ENTRY),
# ip to read a Pod's routes, the rest for tests).
BUSYBOX_APPLETS = ("sh", "env", "sleep", "ip", "cat", "ls", "echo", "true", "hostname", "wget", "nc", "ps")
IMAGE_FORMAT = 1  # bumped when the way archives are written changes (invalidates the cache)


class ImageUnavailable(RuntimeError):
    """What an image is made of is not on this machine."""


@dataclass(frozen=True)
class Entry:
    """One member of the layer: ``source`` copied (a file), ``content`` written (a file), or a
    ``link`` target (a symlink), or none of them (a folder)."""

    path: str  # inside the image, without the leading slash
    source: Path | None = None
    link: str | None = None
    content: bytes | None = None
    # False for a file an image's ``pins`` stand for (its size is hashed, not its bytes).
    hash_content: bool = True
    mode: int | None = None  # default: the source's mode, 0o755 for folders
    uid: int = 0
    gid: int = 0


@dataclass(frozen=True)
class Image:
    name: str  # the reference containerd stores it under, e.g. "occ.local/busybox"
    entries: Sequence[Entry]
    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Sequence[str] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    user: str = ""
    workdir: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    # Files whose bytes stand for entries not hashed one by one (a package lock for the
    # node_modules ``npm ci`` installed from it: tens of thousands of files).
    pins: Sequence[Path] = ()

    def input_hash(self) -> str:
        """The hash of everything the archive is made of (each source file's bytes included, or
        its size and the bytes of the ``pins`` that fix it); computed once per image."""
        cached = self.__dict__.get("_input_hash")
        if cached is not None:
            return str(cached)
        digest = hashlib.sha256(f"format {IMAGE_FORMAT}\n".encode())
        digest.update(json.dumps(self._config_fields(), sort_keys=True).encode())
        for pin in self.pins:
            digest.update(f"pin {pin.name} {_file_digest(pin)}".encode())
        for entry in self.entries:
            # Where a source file sits on this machine is not hashed, only what it holds: a clone
            # elsewhere (CI's) reuses the archive another checkout built.
            digest.update(json.dumps([entry.path, entry.link, entry.mode, entry.uid, entry.gid,
                                      entry.source is not None]).encode())
            if entry.source is not None and not entry.source.is_dir():
                digest.update((_file_digest(entry.source) if entry.hash_content
                               else str(entry.source.stat().st_size)).encode())
            if entry.content is not None:
                digest.update(hashlib.sha256(entry.content).hexdigest().encode())
        object.__setattr__(self, "_input_hash", digest.hexdigest())  # frozen: cached beside the fields
        return digest.hexdigest()

    def reference(self) -> str:
        """``name:<first 16 hex of the input hash>``: a new tag whenever an input changes."""
        return f"{self.name}:{self.input_hash()[:16]}"

    def _config_fields(self) -> dict[str, object]:
        return {"Entrypoint": list(self.entrypoint) or None, "Cmd": list(self.cmd) or None,
                "Env": list(self.env), "User": self.user, "WorkingDir": self.workdir,
                "Labels": dict(self.labels) or None}


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _layer(entries: Iterable[Entry], out: Path) -> tuple[str, int]:
    """Write the layer tar to ``out``; its sha256 (the diff id) and size."""
    with out.open("wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(entries, key=lambda e: e.path):
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.uid, info.gid, info.mtime = entry.uid, entry.gid, 0
            info.uname = info.gname = ""
            if entry.link is not None:
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.link, 0o777
                tar.addfile(info)
            elif entry.content is not None:
                info.size, info.mode = len(entry.content), entry.mode if entry.mode is not None else 0o644
                tar.addfile(info, io.BytesIO(entry.content))
            elif entry.source is None:
                info.type, info.mode = tarfile.DIRTYPE, entry.mode if entry.mode is not None else 0o755
                tar.addfile(info)
            else:
                stat = entry.source.stat()
                info.size = stat.st_size
                info.mode = entry.mode if entry.mode is not None else stat.st_mode & 0o7777
                with entry.source.open("rb") as handle:
                    tar.addfile(info, handle)
    return _file_digest(out), out.stat().st_size


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def write_archive(image: Image, out: Path) -> None:
    """The OCI image layout of ``image`` as one tar at ``out`` (what ``ctr images import`` reads;
    the reference is the ``io.containerd.image.name`` annotation)."""
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        layer_path = Path(scratch) / "layer.tar"
        layer_digest, layer_size = _layer(image.entries, layer_path)
        config = json.dumps({
            "architecture": "amd64" if os.uname().machine == "x86_64" else "arm64",
            "os": "linux",
            "config": {key: value for key, value in image._config_fields().items() if value},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
            "history": [{"created_by": "devtools.images"}],
        }, sort_keys=True).encode()
        config_digest = hashlib.sha256(config).hexdigest()
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": f"sha256:{config_digest}", "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": f"sha256:{layer_digest}", "size": layer_size}],
        }, sort_keys=True).encode()
        manifest_digest = hashlib.sha256(manifest).hexdigest()
        reference = image.reference()
        index = json.dumps({
            "schemaVersion": 2,
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "digest": f"sha256:{manifest_digest}", "size": len(manifest),
                           "annotations": {"io.containerd.image.name": reference,
                                           "org.opencontainers.image.ref.name": reference.rsplit(":", 1)[1]}}],
        }, sort_keys=True).encode()
        partial = out.with_name(out.name + ".partial")
        with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            _add_bytes(tar, "index.json", index)
            _add_bytes(tar, f"blobs/sha256/{manifest_digest}", manifest)
            _add_bytes(tar, f"blobs/sha256/{config_digest}", config)
            info = tarfile.TarInfo(f"blobs/sha256/{layer_digest}")
            info.size, info.mode, info.mtime = layer_size, 0o644, 0
            with layer_path.open("rb") as handle:
                tar.addfile(info, handle)
        partial.replace(out)


def build(image: Image, cache: Path) -> Path:
    """The archive of ``image`` in ``cache``, written only when no archive of the same inputs is
    there (``<name>-<input hash>.tar``)."""
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{image.name.replace('/', '_')}-{image.input_hash()}.tar"
    if not out.exists():
        write_archive(image, out)
    return out


def busybox_image(name: str = "occ.local/busybox") -> Image:
    """Debian's static busybox at /bin/busybox with ``BUSYBOX_APPLETS`` linked to it, plus the
    folders a container runtime expects; runs ``sleep infinity`` unless told otherwise."""
    if not BUSYBOX.is_file():
        raise ImageUnavailable(f"{BUSYBOX} is missing: install Debian's busybox-static (`make kube` as root)")
    entries = [Entry("bin"), Entry("bin/busybox", source=BUSYBOX), Entry("etc"), Entry("proc"), Entry("sys"),
               Entry("dev"), Entry("tmp", mode=0o1777), Entry("root", mode=0o700)]
    entries += [Entry(f"bin/{applet}", link="busybox") for applet in BUSYBOX_APPLETS]
    return Image(name=name, entries=entries, cmd=("sleep", "infinity"))


def copy_tree_entries(root: Path, prefix: str, *, uid: int = 0, gid: int = 0, hash_content: bool = True
                      ) -> list[Entry]:
    """Every folder, file and symlink under ``root`` as entries below ``prefix`` in the image
    (files' bytes hashed unless ``hash_content`` is off: an image pin stands for them)."""
    entries = [Entry(prefix, uid=uid, gid=gid)]
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder)
        relative = base.relative_to(root)
        for name in dirs:
            path = base / name
            target = f"{prefix}/{relative / name}".replace("/./", "/")
            if path.is_symlink():
                entries.append(Entry(target, link=os.readlink(path), uid=uid, gid=gid))
            else:
                entries.append(Entry(target, mode=path.stat().st_mode & 0o7777, uid=uid, gid=gid))
        for name in sorted(files):
            path = base / name
            target = f"{prefix}/{relative / name}".replace("/./", "/")
            if path.is_symlink():
                entries.append(Entry(target, link=os.readlink(path), uid=uid, gid=gid))
            else:
                entries.append(Entry(target, source=path, uid=uid, gid=gid, hash_content=hash_content))
    return entries



@dataclass(frozen=True)
class GatewayLayout:
    """Where the gateway image keeps Node and OpenClaw, and how it runs them: the facts the
    Kubernetes driver's Pod spec relies on (occ/drivers/kube/manifests.py) and the Dockerfile's
    ``gateway`` stage states."""

    node_modules: str = "/opt/node/node_modules"  # runtime/node's node_modules
    node_bin: str = "/opt/node/bin"  # a link to the node-linux-* package's bin folder
    app_modules: str = "/app/node_modules"  # runtime/openclaw's node_modules
    entry: str = "/app/openclaw.mjs"  # a link to the openclaw package's entry
    entry_target: str = "/app/node_modules/openclaw/openclaw.mjs"
    home: str = "/home/node"
    uid: int = 1000
    gid: int = 1000
    user: str = "1000:1000"
    cmd: tuple[str, ...] = ("node", "/app/openclaw.mjs", "gateway")
    env: tuple[str, ...] = ("PATH=/opt/node/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/home/node",
                            "NODE_ENV=production")


GATEWAY = GatewayLayout()
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def shared_libraries(binaries: Iterable[Path]) -> list[Path]:
    """The shared libraries ``binaries`` load (``ldd``), as the paths the loader looks them up by."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise ImageUnavailable("ldd is missing (Debian's libc-bin)")
    found: set[Path] = set()
    for binary in binaries:
        result = subprocess.run([ldd, str(binary)], capture_output=True, text=True, check=False)  # noqa: S603 - our own files
        if result.returncode != 0:
            raise ImageUnavailable(f"ldd {binary}: {result.stderr.strip() or result.stdout.strip()}")
        found.update(Path(match.group(1)) for match in map(_LDD_PATH.search, result.stdout.splitlines()) if match)
    return sorted(found)


def gateway_image(runtime: Path, name: str = "occ.local/openclaw-gateway") -> Image:
    """The gateway image from ``runtime`` (the project's runtime/ folder after ``make runtime``):
    busybox's root file system, ``GATEWAY``'s layout, the user ``node`` (1000) in /etc/passwd, and
    the C libraries of ``node`` and of the packages' Linux (glibc) native modules."""
    node_modules, app_modules = runtime / "node" / "node_modules", runtime / "openclaw" / "node_modules"
    nodes = sorted(node_modules.glob("node-linux-*/bin/node"))
    if not nodes or not (app_modules / "openclaw" / "openclaw.mjs").is_file():
        raise ImageUnavailable(f"the OpenClaw runtime is not installed under {runtime}: run `make runtime`")
    node = nodes[0]
    native = [path for path in app_modules.rglob("*.node")
              if "linux" in str(path) and "musl" not in str(path) and path.is_file()]
    layout = GATEWAY
    entries = [entry for entry in busybox_image().entries if entry.path != "tmp"]
    entries += [Entry("tmp", mode=0o1777), Entry("home"), Entry("home/node", uid=layout.uid, gid=layout.gid),
                Entry("etc/passwd", content=b"root:x:0:0:root:/root:/bin/sh\n"
                                            b"node:x:1000:1000::/home/node:/bin/sh\n"),
                Entry("etc/group", content=b"root:x:0:\nnode:x:1000:\n"),
                Entry("opt"), Entry("opt/node"), Entry("app"),
                Entry(layout.node_bin.strip("/"), link=f"node_modules/{node.parent.parent.name}/bin"),
                Entry(layout.entry.strip("/"), link=os.path.relpath(layout.entry_target, Path(layout.entry).parent))]
    # The two trees are what `npm ci` installed from runtime/'s locks: the locks are hashed (the
    # image's pins), each file's size and path, and node's own bytes (the binary that runs).
    entries += [entry if entry.source != node else Entry(entry.path, source=node)
                for entry in copy_tree_entries(node_modules, layout.node_modules.strip("/"), hash_content=False)]
    entries += copy_tree_entries(app_modules, layout.app_modules.strip("/"), hash_content=False)
    folders: set[str] = set()
    for library in shared_libraries([node, *native]):
        inside = library.as_posix().strip("/")
        parts = inside.split("/")
        folders.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
        entries.append(Entry(inside, source=library.resolve(), mode=0o755))
    known = {entry.path for entry in entries}
    entries += [Entry(folder) for folder in sorted(folders - known)]
    return Image(name=name, entries=entries, cmd=layout.cmd, env=layout.env, user=layout.user, workdir=layout.home,
                 pins=(runtime / "node" / "package-lock.json", runtime / "openclaw" / "package-lock.json"))
