package kubecheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests are the files checked, relative to this directory: every
// YAML file of deploy/kubernetes and its variants.
func manifests(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"../*.yaml", "../variants/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 2 {
		t.Fatalf("found the manifests %q, want lisa.yaml and its variants", files)
	}
	return files
}

// newObject returns an empty object of the typed kind a document
// declares; the manifests use no other kinds.
func newObject(tm metav1.TypeMeta) (any, error) {
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a kind this test knows (add it to newObject)", tm.APIVersion, tm.Kind)
}

// decodeAll decodes every document of data strictly into its type.
func decodeAll(data []byte) ([]any, error) {
	r := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []any
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		obj, err := newObject(tm)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		// As the API server decodes: YAML to JSON (a duplicate key is an
		// error), then JSON with case-sensitive field names, unknown and
		// duplicate fields refused.
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
		strict, err := sigsjson.UnmarshalStrict(js, obj)
		if err == nil {
			err = errors.Join(strict...)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
		objs = append(objs, obj)
	}
}

// stripComments drops the comment lines of a document.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

// TestManifestsDecodeStrictly decodes every manifest into the API types
// and checks that the objects refer to each other consistently.
func TestManifestsDecodeStrictly(t *testing.T) {
	var deployments []*appsv1.Deployment
	var others []any
	for _, f := range manifests(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(objs) == 0 {
			t.Errorf("%s: no object", f)
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				deployments = append(deployments, d)
			} else {
				others = append(others, o)
			}
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("%d Deployments, want lisa's one", len(deployments))
	}
	d := deployments[0]
	podLabels := labels.Set(d.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v (%v)", d.Spec.Selector, podLabels, err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want lisa's one", len(pod.Containers))
	}
	c := pod.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
			t.Errorf("%s probe %+v: want an HTTP GET of /health", name, p)
			continue
		}
		if port := p.HTTPGet.Port; port.StrVal != "" && ports[port.StrVal] == 0 {
			t.Errorf("%s probe: port %q is no port of the container", name, port.StrVal)
		}
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("volume mount %q names no volume of the pod", m.Name)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("the container's security context %+v: want a read-only root and no privilege escalation", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 10001 || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("the pod's security context %+v: want UID 10001, non-root", psc)
	}
	for _, o := range others {
		switch o := o.(type) {
		case *corev1.Service:
			if !labels.SelectorFromSet(o.Spec.Selector).Matches(podLabels) || len(o.Spec.Selector) == 0 {
				t.Errorf("Service %s selects %v, not lisa's pods %v", o.Name, o.Spec.Selector, podLabels)
			}
			for _, p := range o.Spec.Ports {
				if p.TargetPort.StrVal != "" && ports[p.TargetPort.StrVal] == 0 {
					t.Errorf("Service %s: target port %q is no port of the container", o.Name, p.TargetPort.StrVal)
				}
			}
		case *policyv1.PodDisruptionBudget:
			if s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector); err != nil || !s.Matches(podLabels) {
				t.Errorf("PodDisruptionBudget %s does not select lisa's pods (%v)", o.Name, err)
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			if r := o.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.Name != d.Name {
				t.Errorf("HorizontalPodAutoscaler %s scales %s %s, not the Deployment %s", o.Name, r.Kind, r.Name, d.Name)
			}
		}
	}
}

// TestStrictDecodingRefuses shows that the decoding fails on what
// kubectl's lenient clients would drop: the check can fail.
func TestStrictDecodingRefuses(t *testing.T) {
	data, err := os.ReadFile("../lisa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"misspelled field", "readOnlyRootFilesystem:", "readOnlyRootFileSystem:", "unknown field"},
		{"field at the wrong level", "      automountServiceAccountToken: false", "      automountServiceAccountToken: false\n      runAsUser: 1", "unknown field"},
		{"wrong type", "replicas: 2", "replicas: two", "replicas"},
		{"duplicate key", "  replicas: 2", "  replicas: 2\n  replicas: 3", "already set"},
		{"unknown kind", "kind: PodDisruptionBudget", "kind: PodDisruptionBudge", "not a kind this test knows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(data, []byte(tc.from)) {
				t.Fatalf("lisa.yaml no longer holds %q: update the test", tc.from)
			}
			bad := bytes.Replace(data, []byte(tc.from), []byte(tc.to), 1)
			if _, err := decodeAll(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decoding with %s: %v, want an error with %q", tc.name, err, tc.want)
			}
		})
	}
}
