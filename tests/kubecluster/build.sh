#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and the kubelet for the tests' Kubernetes cluster
# from Debian's `kubernetes` source package (the upstream tree with its vendor/ folder), with
# Debian's Go 1.19; etcd comes from Debian's etcd-server. The binaries land in a per-version cache
# outside the repository (OCC_KUBE_CACHE, default ~/.cache/occ/kube/<version>/); only the missing
# ones are built, and nothing when all are there. Measured: ~6 min of an idle 2-core machine for
# the API server, 1.3 GB peak RSS, a 2 GB build tree (removed afterwards). See
# docs/kubernetes-drivers.md.
set -euo pipefail

KUBE_VERSION=1.20.2
DEB_SOURCE_VERSION=1.20.5+really1.20.2-1.1+deb12u1
CACHE=${OCC_KUBE_CACHE:-$HOME/.cache/occ/kube/$KUBE_VERSION}
BIN=$CACHE/bin

PROGRAMS=(kube-apiserver kube-controller-manager kubelet)
absent=()
for program in "${PROGRAMS[@]}"; do
  [ -x "$BIN/$program" ] || absent+=("$program")
done

packages=(golang-1.19-go golang-1.19-src etcd-server etcd-client golang-github-modern-go-reflect2-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "make kube: Debian packages missing (${missing[*]}) and this is not root" >&2
    exit 1
  fi
  echo "make kube: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

if [ ${#absent[@]} -eq 0 ]; then
  echo "make kube: binaries present in $BIN"
  exit 0
fi

mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Source packages, without touching the system's apt configuration: a private deb-src list.
mkdir -p "$WORK/apt/sources" "$WORK/apt/lists/partial" "$WORK/src"
sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
  > "$WORK/apt/sources/debian-src.sources"
APT_OPTS=(-oDir::Etc::SourceList=/dev/null "-oDir::Etc::SourceParts=$WORK/apt/sources"
          "-oDir::State::Lists=$WORK/apt/lists" -oAPT::Sandbox::User=root)
echo "make kube: fetching Debian source kubernetes=$DEB_SOURCE_VERSION"
apt-get "${APT_OPTS[@]}" update -qq
(cd "$WORK/src" && apt-get "${APT_OPTS[@]}" source --download-only -qq "kubernetes=$DEB_SOURCE_VERSION")
orig=$(ls "$WORK"/src/kubernetes_*.orig.tar.* | head -1)
mkdir -p "$WORK/k8s"
tar -xf "$orig" -C "$WORK/k8s" --strip-components=1

# Vendored reflect2 1.0.1 breaks map iteration on Go >= 1.18: use Debian's 1.0.2.
R2=/usr/share/gocode/src/github.com/modern-go/reflect2
V2=$WORK/k8s/vendor/github.com/modern-go/reflect2
rm -rf "$V2" && mkdir -p "$V2"
cp "$R2"/*.go "$V2"/   # the files only: go.mod and vendor/modules.txt keep their version line

export GOROOT=/usr/lib/go-1.19 PATH=/usr/lib/go-1.19/bin:$PATH
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS= GOCACHE=$WORK/gocache GOPATH=$WORK/gopath
export KUBE_GIT_VERSION=v$KUBE_VERSION KUBE_GIT_TREE_STATE=clean
# The compile is the heavy part: it waits for the machine's shared lock (other benchmarks, gateways).
targets=$(printf 'cmd/%s ' "${absent[@]}")
echo "make kube: building ${absent[*]} (several minutes)"
(cd "$WORK/k8s" && flock /tmp/occ-heavy.lock make WHAT="${targets% }")
# One program at a time, each moved into place whole: the ones already cached stay as they are.
mkdir -p "$BIN"
for program in "${absent[@]}"; do
  cp "$WORK/k8s/_output/bin/$program" "$BIN/.$program.new"
  mv "$BIN/.$program.new" "$BIN/$program"
done
for program in "${absent[@]}"; do
  "$BIN/$program" --version
done
echo "make kube: done, $BIN"
