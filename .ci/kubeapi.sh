#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the module proxy (tools/kubeapi:
# k8s.io/kubernetes and go.etcd.io/etcd/server/v3 at one release, every
# k8s.io staging module at the matching v0.x) into a cache outside the
# checkout, keyed by tools/kubeapi/go.sum, and prints the folder. About 7
# minutes on a 2-core machine the first time; nothing after.
set -euo pipefail
cd "$(dirname "$0")/../tools/kubeapi"
key=$(sha256sum go.mod go.sum | sha256sum | cut -c1-16)
out=${AIPERF_KUBEAPI_CACHE:-$HOME/.cache/aiperf-action/kubeapi}/$key
if [ ! -x "$out/kube-apiserver" ] || [ ! -x "$out/etcd" ]; then
  mkdir -p "$out"
  version=$(awk '$1 == "k8s.io/kubernetes" {print $2}' go.mod)
  go build -o "$out/kube-apiserver.tmp" -ldflags "-X k8s.io/component-base/version.gitVersion=$version" ./cmd/kube-apiserver >&2
  go build -o "$out/etcd.tmp" ./cmd/etcd >&2
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
  mv "$out/etcd.tmp" "$out/etcd"
fi
echo "$out"
