"""What a real node changes on this machine, recorded before it starts and put back after it
stopped (tests/kubecluster/node.py).

The kubelet sets kernel tunables (``vm.overcommit_memory``, ``kernel.panic``,
``kernel.panic_on_oops`` …) and cgroups; the CNI bridge plugin turns on IP forwarding and adds a
bridge (and a route to the Pods' subnet with it); containerd and the kubelet mount the Pods' root
file systems, network namespaces, shared memory and secret volumes, and leave folders in fixed
places (``/var/log/pods``, ``/run/containerd``). ``HostState.record()`` takes all of it;
``restore()`` unmounts what was mounted since, deletes the network links added since, writes the
iptables rules and sysctls back, removes the cgroups and files created since; ``differences()``
says what still differs (a test asserts there is nothing).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# The tunables a node changes (the kubelet's own, the bridge plugin's forwarding) and their peers.
SYSCTLS = (
    "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
    "net/ipv4/conf/all/forwarding", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/route_localnet",
    "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
    "net/netfilter/nf_conntrack_max", "kernel/pid_max", "fs/inotify/max_user_instances",
    "fs/inotify/max_user_watches",
)
# Folders outside the node's own root that the kubelet, containerd and the CNI plugins write to.
WATCHED_FOLDERS = (Path("/var/log/pods"), Path("/var/log/containers"), Path("/run/containerd"),
                   Path("/var/lib/cni"), Path("/run/netns"), Path("/var/run/netns"),
                   Path("/usr/libexec/kubernetes"), Path("/var/lib/kubelet"), Path("/etc/cni"))
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _sysctls() -> dict[str, str]:
    found = {}
    for name in SYSCTLS:
        with contextlib.suppress(OSError):
            found[name] = (Path("/proc/sys") / name).read_text().strip()
    return found


def _iptables() -> dict[str, str]:
    """``iptables-save`` of each family (without its comments and counters)."""
    rules = {}
    for tool in ("iptables-save", "ip6tables-save"):
        if shutil.which(tool) is None:
            continue
        result = subprocess.run([tool], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            rules[tool] = "\n".join(line for line in result.stdout.splitlines() if not line.startswith("#"))
    return rules


def _mounts() -> list[str]:
    """Mount points in mount order (``/proc/self/mountinfo``, field 5)."""
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def _links() -> set[str]:
    result = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True)
    return {link["ifname"] for link in json.loads(result.stdout)}


def _routes() -> list[str]:
    result = subprocess.run(["ip", "route", "show", "table", "main"], capture_output=True, text=True, check=True)
    return sorted(result.stdout.splitlines())


def _cgroups() -> set[str]:
    """The cgroup folders of every v1 hierarchy and the unified one (two levels deep: what a
    kubelet adds is ``kubepods/…`` under each hierarchy's root)."""
    found: set[str] = set()
    if not CGROUP_ROOT.is_dir():
        return found
    for hierarchy in CGROUP_ROOT.iterdir():
        with contextlib.suppress(OSError):
            for child in hierarchy.iterdir():
                if child.is_dir():
                    found.add(str(child))
    return found


def _files(folders: tuple[Path, ...]) -> set[str]:
    found: set[str] = set()
    for folder in folders:
        if not folder.exists() and not folder.is_symlink():
            continue
        found.add(str(folder))
        for base, dirs, files in os.walk(folder):
            found.update(str(Path(base) / name) for name in dirs + files)
    return found


@dataclass(frozen=True)
class HostState:
    sysctls: dict[str, str]
    iptables: dict[str, str]
    mounts: list[str]
    links: set[str]
    routes: list[str]
    cgroups: set[str]
    files: set[str]

    @classmethod
    def record(cls) -> HostState:
        return cls(sysctls=_sysctls(), iptables=_iptables(), mounts=_mounts(), links=_links(), routes=_routes(),
                   cgroups=_cgroups(), files=_files(WATCHED_FOLDERS))

    def restore(self) -> list[str]:
        """Put this state back; what could not be (each as a line), for the caller to report."""
        problems: list[str] = []
        # Counted, not as a set: a mount stacked on a folder that was already a mount point is new too.
        added = Counter(_mounts()) - Counter(self.mounts)
        for mountpoint in reversed(_mounts()):
            if added[mountpoint] > 0:
                added[mountpoint] -= 1
                result = subprocess.run(["umount", "-l", mountpoint], capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    problems.append(f"umount {mountpoint}: {result.stderr.strip()}")
        for link in sorted(_links() - self.links):
            result = subprocess.run(["ip", "link", "delete", link], capture_output=True, text=True, check=False)
            if result.returncode != 0 and link in _links():
                problems.append(f"ip link delete {link}: {result.stderr.strip()}")
        for tool, rules in self.iptables.items():
            if _iptables().get(tool) != rules:
                restore = tool.replace("-save", "-restore")
                result = subprocess.run([restore], input=rules + "\n", capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    problems.append(f"{restore}: {result.stderr.strip()}")
        for name, value in self.sysctls.items():
            path = Path("/proc/sys") / name
            try:
                if path.read_text().strip() != value:
                    path.write_text(value)
            except OSError as exc:
                problems.append(f"sysctl {name}={value}: {exc}")
        # Deepest first: a kubelet's cgroups nest (kubepods/burstable/pod…/…).
        for folder in sorted(_cgroups() - self.cgroups):
            for base, _dirs, _names in os.walk(folder, topdown=False):  # bottom up: children first
                try:
                    os.rmdir(base)
                except OSError as exc:
                    problems.append(f"rmdir {base}: {exc}")
        for path in sorted(_files(WATCHED_FOLDERS) - self.files, key=len, reverse=True):
            target = Path(path)
            with contextlib.suppress(FileNotFoundError):
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
        return problems

    def differences(self, other: HostState) -> list[str]:
        """What ``other`` (a later record) has that this one has not, one line each."""
        lines = []
        for name in sorted(set(self.sysctls) | set(other.sysctls)):
            if self.sysctls.get(name) != other.sysctls.get(name):
                lines.append(f"sysctl {name}: {self.sysctls.get(name)} -> {other.sysctls.get(name)}")
        for tool in sorted(set(self.iptables) | set(other.iptables)):
            if self.iptables.get(tool) != other.iptables.get(tool):
                lines.append(f"{tool} differs")
        lines += [f"mount {m}" for m in sorted((Counter(other.mounts) - Counter(self.mounts)).elements())]
        lines += [f"mount gone {m}" for m in sorted((Counter(self.mounts) - Counter(other.mounts)).elements())]
        lines += [f"link {name}" for name in sorted(other.links ^ self.links)]
        lines += [f"route {route}" for route in sorted(set(other.routes) ^ set(self.routes))]
        lines += [f"cgroup {name}" for name in sorted(other.cgroups ^ self.cgroups)]
        lines += [f"file {name}" for name in sorted(other.files ^ self.files)]
        return lines
