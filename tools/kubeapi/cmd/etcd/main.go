// Command etcd is upstream etcd (go.etcd.io/etcd/server/v3 at the release
// Kubernetes' own go.mod names), the API server's store for the test of
// `kube run` against a real API server. It is not part of aiperf-action.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
