package check

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

const manifest = "narrows-agent.yaml"

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, b []byte) *Manifest {
	t.Helper()
	m, err := Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
	return m
}

// TestManifest: the manifest as shipped decodes strictly and gives the
// agent what it needs.
func TestManifest(t *testing.T) {
	for _, err := range Check(decode(t, read(t, manifest))) {
		t.Errorf("%s: %v", manifest, err)
	}
}

// TestAllowTryPatch applies allow-try.patch.json as kubectl patch
// --type=json does and holds the result to the same checks: it adds
// --allow-try and makes the container privileged, and changes nothing else.
func TestAllowTryPatch(t *testing.T) {
	base := decode(t, read(t, manifest))
	patch, err := jsonpatch.DecodePatch(read(t, "allow-try.patch.json"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(base.DaemonSet)
	if err != nil {
		t.Fatal(err)
	}
	if j, err = patch.Apply(j); err != nil {
		t.Fatalf("allow-try.patch.json: %v", err)
	}
	ds := &appsv1.DaemonSet{}
	if err := Strict(j, ds); err != nil {
		t.Fatalf("allow-try.patch.json makes a DaemonSet the API refuses: %v", err)
	}
	for _, err := range Check(&Manifest{Namespace: base.Namespace, DaemonSet: ds}) {
		t.Errorf("with allow-try.patch.json: %v", err)
	}
	got, was := &ds.Spec.Template.Spec.Containers[0], base.DaemonSet.Spec.Template.Spec.Containers[0]
	if want := append(slices.Clone(was.Args), "--allow-try"); !slices.Equal(got.Args, want) {
		t.Errorf("args %q, want %q", got.Args, want)
	}
	if p := got.SecurityContext.Privileged; p == nil || !*p {
		t.Errorf("the container is not privileged: --allow-try's rps_cpus is in /sys, read-only in a container that is not")
	}
	got.Args, got.SecurityContext = was.Args, was.SecurityContext
	if !equality.Semantic.DeepEqual(ds, base.DaemonSet) {
		t.Errorf("allow-try.patch.json changes more than the args and the securityContext")
	}
}

// TestDockerfile: the image's entrypoint is the narrows it copies in, so
// the manifest gives serve's arguments alone (Check refuses a command).
func TestDockerfile(t *testing.T) {
	var copied, entry string
	for _, line := range strings.Split(string(read(t, "Dockerfile")), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "COPY" && f[1] == "narrows":
			copied = f[2]
		case len(f) > 1 && f[0] == "ENTRYPOINT":
			var exec []string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT")), &exec); err != nil || len(exec) != 1 {
				t.Fatalf("%q: the exec form, narrows alone, so that args follow it: %v", line, err)
			}
			entry = exec[0]
		}
	}
	if copied == "" || entry != copied {
		t.Errorf("the Dockerfile copies narrows to %q and its ENTRYPOINT is %q", copied, entry)
	}
}

// TestCheckFails: each way the manifest can be wrong, made in its text,
// is refused, by the strict decoding or by Check, saying what.
func TestCheckFails(t *testing.T) {
	good := string(read(t, manifest))
	for _, tc := range []struct{ name, from, to, want string }{
		{"a misspelt field", "hostNetwork: true", "hostNetwrok: true", `unknown field "spec.template.spec.hostNetwrok"`},
		{"a field in the wrong case", "hostNetwork: true", "HostNetwork: true", `unknown field "spec.template.spec.HostNetwork"`},
		{"a field twice", "      hostNetwork: true\n", "      hostNetwork: true\n      hostNetwork: true\n", `"hostNetwork" already set`},
		{"a value of the wrong type", "containerPort: 7447", `containerPort: "7447"`, "cannot unmarshal string"},
		{"a quantity that is none", "memory: 1Gi", "memory: lots", "quantities must match"},
		{"a Secret in the manifest", "---\napiVersion: apps/v1", "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: narrows-agent\n  namespace: narrows\nstringData:\n  secret: s3cret\n---\napiVersion: apps/v1", "a Secret"},
		{"the pod network", "hostNetwork: true", "hostNetwork: false", "hostNetwork is not true"},
		{"a probe on another port", "port: agent", "port: 7448", "readinessProbe connects to port 7448"},
		{"listening on another port", "--listen=:7447", "--listen=:7448", "no TCP containerPort 7448"},
		{"the secret's volume writable", "              readOnly: true", "              readOnly: false", "not mounted read-only"},
		{"the secret readable by others", "defaultMode: 0400", "defaultMode: 0444", "defaultMode"},
		{"the secret in the environment", "          image: IMAGE\n", "          image: IMAGE\n          env:\n            - name: NARROWS_SECRET\n              value: s3cret\n", "NARROWS_SECRET"},
		{"the secret file elsewhere", "--secret-file=/etc/narrows/secret", "--secret-file=/etc/secret", "not in a Secret volume"},
		{"a disk path in the container's layer", "--disk-path=/var/lib/narrows", "--disk-path=/srv", "not in a hostPath"},
		{"a selector that misses the pods", "    matchLabels:\n      app.kubernetes.io/name: narrows\n", "    matchLabels:\n      app.kubernetes.io/name: narrowz\n", "does not select"},
		{"capabilities kept", "            capabilities:\n              drop:\n                - ALL\n", "", "capabilities"},
		{"privileged without --allow-try", "allowPrivilegeEscalation: false", "privileged: true", "privileged without --allow-try"},
		{"a CPU limit", "            limits:\n", "            limits:\n              cpu: 500m\n", "a CPU limit"},
		{"a memory limit under the agent's own", "memory: 1Gi", "memory: 512Mi", "resources.limits.memory"},
		{"a label key that is none", `narrows-agent: "true"`, `narrows agent: "true"`, "the nodeSelector"},
		{"every node", "      nodeSelector:\n        narrows-agent: \"true\"\n", "", "no nodeSelector"},
		{"Pod Security's default level", "    pod-security.kubernetes.io/enforce: privileged\n", "", "pod-security.kubernetes.io/enforce"},
		{"the service account's token", "automountServiceAccountToken: false", "automountServiceAccountToken: true", "automountServiceAccountToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("%s no longer holds %q: make the case anew", manifest, tc.from)
			}
			m, err := Decode([]byte(strings.Replace(good, tc.from, tc.to, 1)))
			if err == nil {
				err = errors.Join(Check(m)...)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)

			}
		})
	}
}
