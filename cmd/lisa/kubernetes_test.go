package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lisa-llm/lisa/config"
)

// The Kubernetes manifests are checked without a cluster: here, without
// Kubernetes' Go types (lisa links no Kubernetes code), the settings the
// sandbox and the probes need, and the container's arguments through lisa
// serve --check-config. The module deploy/kubernetes/kubecheck decodes
// every document strictly into the k8s.io/api types (a typo in a field
// name, which kubectl apply's lenient clients silently drop, fails there).

// kubeDocs decodes every document of a manifest file.
func kubeDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs
}

// kget walks a path of map keys and list indexes (as "0").
func kget(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// quantityBytes parses the memory quantities the manifests use (Mi, Gi).
func quantityBytes(t *testing.T, q any) int64 {
	t.Helper()
	s, _ := q.(string)
	m := regexp.MustCompile(`^(\d+)(Mi|Gi)$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("memory quantity %v: want N Mi or N Gi", q)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if m[2] == "Gi" {
		return n << 30
	}
	return n << 20
}

func TestKubernetesManifests(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "kubernetes")
	docs := kubeDocs(t, filepath.Join(dir, "lisa.yaml"))
	byKind := map[string]map[string]any{}
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		if byKind[kind] != nil {
			t.Fatalf("two %s objects in lisa.yaml", kind)
		}
		byKind[kind] = d
	}
	wantAPI := map[string]string{"Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1",
		"HorizontalPodAutoscaler": "autoscaling/v2"}
	for kind, api := range wantAPI {
		if byKind[kind] == nil {
			t.Fatalf("lisa.yaml has no %s", kind)
		}
		if got := byKind[kind]["apiVersion"]; got != api {
			t.Errorf("%s: apiVersion %v, want %s", kind, got, api)
		}
	}
	if len(byKind) != len(wantAPI) {
		t.Errorf("kinds %v, want exactly %v", slices.Collect(func(yield func(string) bool) {
			for k := range byKind {
				if !yield(k) {
					return
				}
			}
		}), wantAPI)
	}

	dep := byKind["Deployment"]
	name := kget(dep, "metadata", "name")
	labels, _ := kget(dep, "spec", "template", "metadata", "labels").(map[string]any)
	selects := func(what string, sel any) {
		m, _ := sel.(map[string]any)
		if len(m) == 0 {
			t.Errorf("%s: empty selector", what)
		}
		for k, v := range m {
			if labels[k] != v {
				t.Errorf("%s: selector %s=%v does not match the pod's labels %v", what, k, v, labels)
			}
		}
	}
	selects("Deployment", kget(dep, "spec", "selector", "matchLabels"))
	selects("Service", kget(byKind["Service"], "spec", "selector"))
	selects("PodDisruptionBudget", kget(byKind["PodDisruptionBudget"], "spec", "selector", "matchLabels"))
	if r, _ := kget(dep, "spec", "replicas").(int); r < 2 {
		t.Errorf("replicas %v: want at least 2", kget(dep, "spec", "replicas"))
	}
	hpa := byKind["HorizontalPodAutoscaler"]
	if kget(hpa, "spec", "scaleTargetRef", "kind") != "Deployment" || kget(hpa, "spec", "scaleTargetRef", "name") != name {
		t.Errorf("HPA targets %v", kget(hpa, "spec", "scaleTargetRef"))
	}
	if kget(hpa, "spec", "metrics", "0", "resource", "name") != "cpu" {
		t.Errorf("HPA metric %v, want cpu", kget(hpa, "spec", "metrics"))
	}

	pod := kget(dep, "spec", "template", "spec")
	for path, want := range map[string]any{
		"securityContext/runAsUser":            10001,
		"securityContext/runAsGroup":           10001,
		"securityContext/runAsNonRoot":         true,
		"securityContext/seccompProfile/type":  "Unconfined",
		"securityContext/appArmorProfile/type": "Unconfined",
		"automountServiceAccountToken":         false,
	} {
		if got := kget(pod, strings.Split(path, "/")...); got != want {
			t.Errorf("pod %s = %v, want %v", path, got, want)
		}
	}
	ann := kget(dep, "spec", "template", "metadata", "annotations")
	if kget(ann, "prometheus.io/scrape") != "true" || kget(ann, "prometheus.io/path") != "/metrics" || kget(ann, "prometheus.io/port") != "8080" {
		t.Errorf("Prometheus annotations %v", ann)
	}

	containers, _ := kget(pod, "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("%d containers, want 1", len(containers))
	}
	c := containers[0]
	for path, want := range map[string]any{
		"securityContext/readOnlyRootFilesystem":   true,
		"securityContext/allowPrivilegeEscalation": false,
		"securityContext/capabilities/drop/0":      "ALL",
		"ports/0/containerPort":                    8080,
		"ports/0/name":                             "http",
	} {
		if got := kget(c, strings.Split(path, "/")...); got != want {
			t.Errorf("container %s = %v, want %v", path, got, want)
		}
	}
	for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		if kget(c, probe, "httpGet", "path") != "/health" || kget(c, probe, "httpGet", "port") != "http" {
			t.Errorf("%s: %v, want GET /health on port http", probe, kget(c, probe))
		}
	}
	if kget(byKind["Service"], "spec", "ports", "0", "targetPort") != "http" {
		t.Errorf("Service targetPort %v, want http", kget(byKind["Service"], "spec", "ports", "0", "targetPort"))
	}

	// Volumes: the model read-only from a claim, the key digests from a
	// Secret, each mounted read-only.
	mounts := map[string]any{}
	for _, m := range kget(c, "volumeMounts").([]any) {
		mounts[kget(m, "name").(string)] = m
	}
	vols := map[string]any{}
	for _, v := range kget(pod, "volumes").([]any) {
		vols[kget(v, "name").(string)] = v
	}
	if kget(mounts["models"], "readOnly") != true || kget(vols["models"], "persistentVolumeClaim", "readOnly") != true {
		t.Errorf("the model volume is not read-only: %v %v", mounts["models"], vols["models"])
	}
	if kget(mounts["keys"], "readOnly") != true || kget(vols["keys"], "secret", "secretName") == nil {
		t.Errorf("the keys are not a read-only Secret: %v %v", mounts["keys"], vols["keys"])
	}
	for name := range mounts {
		if vols[name] == nil {
			t.Errorf("mount %s has no volume", name)
		}
	}

	// The arguments, as lisa serve reads them: the key file's mount path
	// becomes a file with a digest here; --check-config opens nothing else.
	var args []string
	for _, a := range kget(c, "args").([]any) {
		s, ok := a.(string)
		if !ok {
			t.Fatalf("argument %v is not a string (quote numbers in YAML)", a)
		}
		args = append(args, s)
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args %q: want lisa serve", args)
	}
	keysPath := kget(mounts["keys"], "mountPath").(string) + "/keys"
	d, err := config.HashKey("kubernetes-test-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keysFile, []byte(d.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := slices.Clone(args)
	for i := range local {
		if local[i] == keysPath {
			local[i] = keysFile
		}
	}
	var so, se bytes.Buffer
	if code := run(append(local, "--check-config"), &so, &se); code != 0 {
		t.Fatalf("lisa %q --check-config: exit %d\n%s", local, code, se.String())
	}
	js, _, _ := strings.Cut(so.String(), "\nconfiguration ok")
	var cfg config.Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Model, kget(mounts["models"], "mountPath").(string)+"/") {
		t.Errorf("model %q is not in the model volume", cfg.Model)
	}
	if cfg.Listen != "0.0.0.0:8080" || len(cfg.ModelSHA256) != 64 || cfg.APIKeysFile != keysFile {
		t.Errorf("listen %q, model_sha256 %q, api_keys_file %q", cfg.Listen, cfg.ModelSHA256, cfg.APIKeysFile)
	}
	// The pod's memory limit holds the worker's cap and the broker.
	limit := quantityBytes(t, kget(c, "resources", "limits", "memory"))
	request := quantityBytes(t, kget(c, "resources", "requests", "memory"))
	if cfg.MemoryLimitBytes <= 0 || request < cfg.MemoryLimitBytes+256<<20 || limit < request {
		t.Errorf("memory request %d, limit %d for a worker cap of %d: want request >= cap + 256 MiB, limit >= request",
			request, limit, cfg.MemoryLimitBytes)
	}
	if cpu := kget(c, "resources", "requests", "cpu"); cpu != strconv.Itoa(cfg.Threads) {
		t.Errorf("cpu request %v, threads %d: want them equal", cpu, cfg.Threads)
	}

	// The variants decode too, and the queue-depth one reads the metric
	// lisa exports.
	for _, d := range kubeDocs(t, filepath.Join(dir, "variants", "hpa-queue-depth.yaml")) {
		if d["apiVersion"] != "autoscaling/v2" || kget(d, "spec", "metrics", "0", "pods", "metric", "name") != "lisa_queue_depth" {
			t.Errorf("queue-depth HPA: %v", d)
		}
		if kget(d, "spec", "scaleTargetRef", "name") != name {
			t.Errorf("queue-depth HPA targets %v", kget(d, "spec", "scaleTargetRef"))
		}
	}
}
