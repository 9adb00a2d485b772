// Package kubecheck holds the test that decodes lisa's Kubernetes
// manifests (deploy/kubernetes) strictly into the k8s.io/api types: an
// unknown or misspelled field, a duplicate key or a value of the wrong
// type fails, as a strict server-side apply would. It is a module of its
// own so that lisa never links Kubernetes code; run it from this
// directory with go test ./... (make test does).
package kubecheck
