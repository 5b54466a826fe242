// Package check holds deploy/kubernetes's manifest to the Kubernetes
// API: each object decoded into k8s.io/api's own types the way the API
// server decodes a request under strict field validation (kubectl apply
// --validate=strict: an unknown field, a field in the wrong case, a field
// twice or a value of the wrong type is refused), names and labels to
// the API's rules, then to what narrows' agent needs of its DaemonSet.
// It is a module of its own, so that k8s.io's modules stay out of
// narrows' go.mod and its build; no cluster is needed.
package check

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Manifest is the objects of narrows-agent.yaml.
type Manifest struct {
	Namespace *corev1.Namespace
	DaemonSet *appsv1.DaemonSet
}

// Decode reads a YAML manifest of one or more documents strictly.
func Decode(b []byte) (*Manifest, error) {
	m := &Manifest{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if string(j) == "null" {
			continue // comments only
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
		case "v1 Namespace":
			m.Namespace = &corev1.Namespace{}
			err = Strict(j, m.Namespace)
		case "apps/v1 DaemonSet":
			m.DaemonSet = &appsv1.DaemonSet{}
			err = Strict(j, m.DaemonSet)
		case "v1 Secret":
			err = errors.New("a Secret: its value would be in the repository; the operator makes it from a file (kubectl create secret generic --from-file)")
		default:
			err = fmt.Errorf("%q: not an object this manifest holds", gvk)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
	}
	if m.Namespace == nil || m.DaemonSet == nil {
		return nil, errors.New("the manifest must hold a Namespace and a DaemonSet")
	}
	return m, nil
}

// Strict decodes the JSON j into obj as the API server does: field names
// matched in their case, unknown and duplicate fields refused.
func Strict(j []byte, obj any) error {
	strict, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// Check holds the manifest to the API's rules for names and labels and
// to what the agent needs; each error says which.
func Check(m *Manifest) []error {
	c := &checker{}
	ns, ds := m.Namespace, m.DaemonSet
	c.name("the Namespace", ns.Name, validation.IsDNS1123Label)
	c.name("the DaemonSet", ds.Name, validation.IsDNS1123Subdomain)
	for what, set := range map[string]map[string]string{
		"the Namespace's labels": ns.Labels, "the DaemonSet's labels": ds.Labels,
		"the pods' labels": ds.Spec.Template.Labels, "the nodeSelector": ds.Spec.Template.Spec.NodeSelector,
	} {
		c.labels(what, set)
	}
	if ds.Namespace != ns.Name {
		c.errorf("the DaemonSet is in namespace %q, not the manifest's %q", ds.Namespace, ns.Name)
	}
	// Where Pod Security's baseline or restricted level is enforced (a
	// cluster's default may be), a pod on the host's network with a
	// hostPath volume is refused.
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		c.errorf("the Namespace does not allow the host's network and a hostPath (label pod-security.kubernetes.io/enforce: privileged)")
	}

	if sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		c.errorf("the DaemonSet's selector %s does not select its pods' labels %v (%v)", metav1.FormatLabelSelector(ds.Spec.Selector), ds.Spec.Template.Labels, err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		c.errorf("updateStrategy %q: RollingUpdate replaces the agents without a person deleting pods", ds.Spec.UpdateStrategy.Type)
	}

	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork {
		c.errorf("hostNetwork is not true: the agent would measure the pod network's overlay and report the pod's interface, not the node's")
	}
	if len(pod.NodeSelector) == 0 {
		c.errorf("no nodeSelector: an agent on every node, not the database nodes")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		c.errorf("automountServiceAccountToken is not false: the agent never calls the Kubernetes API")
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		c.errorf("%d containers and %d init containers: the agent is one container", len(pod.Containers), len(pod.InitContainers))
		return c.errs
	}
	c.container(pod, pod.Containers[0])
	return c.errs
}

type checker struct{ errs []error }

func (c *checker) errorf(format string, a ...any) { c.errs = append(c.errs, fmt.Errorf(format, a...)) }

func (c *checker) name(what, name string, valid func(string) []string) {
	for _, e := range valid(name) {
		c.errorf("%s's name %q: %s", what, name, e)
	}
}

func (c *checker) labels(what string, set map[string]string) {
	for k, v := range set {
		for _, e := range validation.IsQualifiedName(k) {
			c.errorf("%s: the key %q: %s", what, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			c.errorf("%s: %s's value %q: %s", what, k, v, e)
		}
	}
}

// container checks the agent's container: its command line, port and
// probes, secret, disk path, privileges and resources.
func (c *checker) container(pod corev1.PodSpec, ct corev1.Container) {
	for _, e := range validation.IsDNS1123Label(ct.Name) {
		c.errorf("the container's name %q: %s", ct.Name, e)
	}
	if ct.Image == "" {
		c.errorf("the container has no image")
	}
	if len(ct.Command) != 0 || len(ct.Args) == 0 || ct.Args[0] != "serve" {
		c.errorf("command %q args %q: the image's entrypoint is narrows, and the args begin with serve", ct.Command, ct.Args)
		return
	}
	flags, err := serveFlags(ct.Args[1:])
	if err != nil {
		c.errorf("args: %v", err)
		return
	}

	// The port the agent listens on is the port declared and probed.
	_, p, err := splitListen(flags["--listen"])
	if err != nil {
		c.errorf("--listen: %v", err)
		return
	}
	ports := map[string]int32{}
	for _, cp := range ct.Ports {
		for _, e := range validation.IsValidPortName(cp.Name) {
			c.errorf("the port's name %q: %s", cp.Name, e)
		}
		ports[cp.Name] = cp.ContainerPort
	}
	if !slices.ContainsFunc(ct.Ports, func(cp corev1.ContainerPort) bool {
		return cp.ContainerPort == p && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP)
	}) {
		c.errorf("no TCP containerPort %d, the port of --listen", p)
	}
	for what, pr := range map[string]*corev1.Probe{"readinessProbe": ct.ReadinessProbe, "livenessProbe": ct.LivenessProbe} {
		if pr == nil || pr.TCPSocket == nil {
			c.errorf("no %s connecting to the agent's port", what)
			continue
		}
		port := pr.TCPSocket.Port.IntVal
		if pr.TCPSocket.Port.StrVal != "" {
			port = ports[pr.TCPSocket.Port.StrVal]
		}
		if port != p {
			c.errorf("the %s connects to port %s (%d), not --listen's %d", what, pr.TCPSocket.Port.String(), port, p)
		}
	}

	c.secret(pod, ct, flags)
	c.disks(pod, ct, flags)
	c.privileges(pod, ct, flags)
	c.resources(ct, flags)
}

// secret: read from a Secret mounted read-only, readable by its owner
// alone (else the agent warns), never on the command line or in the
// environment.
func (c *checker) secret(pod corev1.PodSpec, ct corev1.Container, flags map[string][]string) {
	for _, e := range ct.Env {
		if e.Name == "NARROWS_SECRET" {
			c.errorf("NARROWS_SECRET in the environment: kubectl describe and /proc show it; use --secret-file and a Secret volume")
		}
	}
	if _, ok := flags["--secret"]; ok {
		c.errorf("--secret on the command line")
	}
	file := last(flags["--secret-file"])
	if file == "" {
		c.errorf("no --secret-file")
		return
	}
	m, v := mountOf(pod, ct, file)
	switch {
	case v == nil || v.Secret == nil || v.Secret.SecretName == "":
		c.errorf("--secret-file %s is not in a Secret volume", file)
	case !m.ReadOnly:
		c.errorf("--secret-file %s: the Secret volume %q is not mounted read-only", file, m.Name)
	default:
		rel := strings.TrimPrefix(strings.TrimPrefix(file, m.MountPath), "/")
		if len(v.Secret.Items) > 0 && !slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == rel }) {
			c.errorf("--secret-file %s: no item of the Secret volume %q is %s", file, m.Name, rel)
		}
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o077 != 0 {
			c.errorf("the Secret volume %q: defaultMode must let only its owner read it (0400); the agent warns of a secret others may read", m.Name)
		}
	}
}

// disks: each --disk-path is a writable hostPath, the node's filesystem.
func (c *checker) disks(pod corev1.PodSpec, ct corev1.Container, flags map[string][]string) {
	for _, d := range flags["--disk-path"] {
		m, v := mountOf(pod, ct, d)
		switch {
		case v == nil || v.HostPath == nil:
			c.errorf("--disk-path %s is not in a hostPath volume: a disk test would measure the container's own layer", d)
		case m.ReadOnly:
			c.errorf("--disk-path %s: the volume %q is mounted read-only", d, m.Name)
		case v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate && *v.HostPath.Type != corev1.HostPathDirectory:
			c.errorf("--disk-path %s: the hostPath %q must be a directory (type Directory or DirectoryOrCreate)", d, v.HostPath.Path)
		}
	}
}

// privileges: no capability and no way to gain one, unless --allow-try
// asks the node's settings to be changed (rps_cpus in /sys, which a
// container sees read-only unless privileged).
func (c *checker) privileges(pod corev1.PodSpec, ct corev1.Container, flags map[string][]string) {
	sc := ct.SecurityContext
	if sc == nil {
		c.errorf("the container has no securityContext")
		return
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		c.errorf("no seccompProfile RuntimeDefault")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.errorf("readOnlyRootFilesystem is not true: the agent writes only in its --disk-path")
	}
	_, allowTry := flags["--allow-try"]
	if sc.Privileged != nil && *sc.Privileged {
		if !allowTry {
			c.errorf("privileged without --allow-try: only changing the node's settings needs it")
		}
		if uid := runAsUser(pod, sc); uid == nil || *uid != 0 {
			c.errorf("--allow-try as a user other than root: rps_cpus is root's to write")
		}
		// The API server's own rule (ValidateSecurityContext).
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			c.errorf("privileged with allowPrivilegeEscalation false: the API server refuses it")
		}
		return
	}
	if allowTry {
		c.errorf("--allow-try in a container that is not privileged: it sees /sys read-only, and holds no CAP_NET_ADMIN")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.errorf("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		c.errorf("capabilities: the agent needs none (drop ALL, add none): %v", sc.Capabilities)
	}
}

// resources: requested, a memory limit above what the agent holds itself
// to, and no CPU limit.
func (c *checker) resources(ct corev1.Container, flags map[string][]string) {
	r := ct.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() {
		c.errorf("resources.requests: cpu and memory, so the scheduler counts the agent")
	}
	if _, ok := r.Limits[corev1.ResourceCPU]; ok {
		c.errorf("a CPU limit: its CFS quota would throttle a test and change what it measures")
	}
	maxMemory := cmp.Or(last(flags["--max-memory"]), "512MiB")
	bound, err := resource.ParseQuantity(strings.TrimSuffix(maxMemory, "B"))
	if err != nil {
		c.errorf("--max-memory %s: %v", maxMemory, err)
		return
	}
	bound.Add(resource.MustParse("64Mi")) // the Go runtime's room (serve.go's runtimeRoom)
	if lim, ok := r.Limits[corev1.ResourceMemory]; !ok || lim.Cmp(bound) <= 0 {
		c.errorf("resources.limits.memory %v: it must be more than the agent's own bound, --max-memory %s and the runtime's 64 MiB (%v)", r.Limits.Memory(), maxMemory, &bound)
	}
}

// runAsUser is the container's user, or the pod's.
func runAsUser(pod corev1.PodSpec, sc *corev1.SecurityContext) *int64 {
	if sc.RunAsUser != nil || pod.SecurityContext == nil {
		return sc.RunAsUser
	}
	return pod.SecurityContext.RunAsUser
}

func last(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// serveFlags reads narrows serve's arguments: --name=value, --name value,
// or a boolean --name.
func serveFlags(args []string) (map[string][]string, error) {
	bools := map[string]bool{"--allow-try": true, "--insecure": true, "--verbose": true}
	flags := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("%q is not a flag", a)
		}
		name, value, ok := strings.Cut(a, "=")
		if !ok && !bools[name] {
			if i+1 == len(args) {
				return nil, fmt.Errorf("%s has no value", name)
			}
			i++
			value = args[i]
		}
		flags[name] = append(flags[name], value)
	}
	if _, ok := flags["--listen"]; !ok {
		flags["--listen"] = []string{":7447"} // serve's default with a secret
	}
	return flags, nil
}

func splitListen(s []string) (host string, port int32, err error) {
	hostPort := last(s)
	i := strings.LastIndex(hostPort, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q is not HOST:PORT", hostPort)
	}
	n, err := strconv.ParseInt(hostPort[i+1:], 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("%q: the port must be a number from 1 to 65535", hostPort)
	}
	return hostPort[:i], int32(n), nil
}

// mountOf is the container's mount that holds file (the deepest), and
// its volume.
func mountOf(pod corev1.PodSpec, ct corev1.Container, file string) (*corev1.VolumeMount, *corev1.Volume) {
	var best *corev1.VolumeMount
	for i, m := range ct.VolumeMounts {
		mp, f := path.Clean(m.MountPath), path.Clean(file)
		if (f == mp || strings.HasPrefix(f, mp+"/")) && (best == nil || len(mp) > len(best.MountPath)) {
			best = &ct.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, nil
	}
	for i, v := range pod.Volumes {
		if v.Name == best.Name {
			return best, &pod.Volumes[i]
		}
	}
	return best, nil
}
