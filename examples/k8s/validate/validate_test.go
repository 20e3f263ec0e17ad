package validate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// binary is the wirebench binary: $WIREBENCH (make test passes bin/wirebench), else built from
// the repository in TestMain.
var binary string

// repoRoot is the wirebench repository, three levels up.
const repoRoot = "../../.."

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wirebench-k8s-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = os.Getenv("WIREBENCH")
	if binary == "" {
		binary = filepath.Join(dir, "wirebench")
		build := exec.Command("go", "build", "-o", binary, "./cmd/wirebench")
		build.Dir, build.Stdout, build.Stderr = repoRoot, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build wirebench:", err)
			os.Exit(1)
		}
	}
	if binary, err = filepath.Abs(binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run describes the manifests' run, as the flags gave it.
type run struct {
	id     string
	hosts  int
	start  string // RFC 3339
	config string // the config file's text
	caps   bool   // --capture-caps
	noLive bool   // --metrics-port 0
	s3     string // --storage s3://BUCKET/PREFIX, else "" (a claim)
	secret string // --s3-secret
}

// metricsPort is the capture pods' live metrics port: the default, or 0 with --metrics-port 0.
func (r run) metricsPort() int {
	if r.noLive {
		return 0
	}
	return 9464
}

// base is where the run lives: /data/ID on the claim, or PREFIX/ID in object storage.
func (r run) base() string {
	if r.s3 != "" {
		return strings.TrimSuffix(r.s3, "/") + "/" + r.id
	}
	return "/data/" + r.id
}

func (r run) runDir() string          { return r.base() + "/run" }
func (r run) hostDir(i int) string    { return r.base() + "/hosts/" + strconv.Itoa(i) }
func (r run) name(comp string) string { return "wirebench-" + r.id + "-" + comp }

// generate runs `wirebench k8s ARGS` and returns its stdout.
func generate(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"k8s"}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wirebench k8s %v: %v\n%s", args, err, errb.String())
	}
	return out
}

// writeConfig writes a run config whose target is a name the generator accepts.
func writeConfig(t *testing.T, extra string) (string, string) {
	t.Helper()
	text := `name: k8s-test
seed: 3
target: {url: "http://server.test:8000", api: completions, model: sim, ignore_eos: true, timeout: 30s` + extra + `}
load:
  stages:
    - {rate: 20, duration: 2s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 16}
    output: {kind: fixed, value: 4}
tokenizer: whitespace
`
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, text
}

func mustParse(t *testing.T, name string, data []byte) objects {
	t.Helper()
	var o objects
	if err := parse(name, data, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestExamples parses the checked-in examples (cmd/wirebench checks that they are the
// generator's output for the command in their header: 4 hosts of run "example").
func TestExamples(t *testing.T) {
	var o objects
	files, _ := filepath.Glob("../*.yaml")
	for _, f := range files {
		if filepath.Base(f) == "config.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := parse(f, b, &o); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, o, run{id: "example", hosts: 4, start: "2030-01-01T00:00:00Z", config: string(config)})
}

// TestExamplesS3 parses the checked-in examples of a run in object storage (examples/k8s/s3).
func TestExamplesS3(t *testing.T) {
	var o objects
	files, _ := filepath.Glob("../s3/*.yaml")
	if len(files) != 4 {
		t.Fatalf("examples/k8s/s3 holds %d manifests; want 4", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := parse(f, b, &o); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, o, run{id: "example", hosts: 4, start: "2030-01-01T00:00:00Z", config: string(config), s3: "s3://bench-runs/wirebench", secret: "wirebench-s3"})
}

// TestGenerated parses the generator's output for several host counts.
func TestGenerated(t *testing.T) {
	cfg, text := writeConfig(t, "")
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	for _, hosts := range []int{1, 4, 20} {
		t.Run(strconv.Itoa(hosts), func(t *testing.T) {
			r := run{id: "run-" + strconv.Itoa(hosts), hosts: hosts, start: start, config: text}
			out := generate(t, "--config", cfg, "--run-id", r.id, "--hosts", strconv.Itoa(hosts), "--start-at", start, "--target", "http://vllm.ns.svc:8000")
			checkRun(t, mustParse(t, "stdout", out), r)
		})
	}
}

// TestGeneratedOptions covers what the options add: the API key from a Secret, a storage
// class, other sizes, a config that starts indented.
func TestGeneratedOptions(t *testing.T) {
	cfg, text := writeConfig(t, ", api_key_env: OPENAI_API_KEY")
	text = "  # indented first line\n" + text
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	out := generate(t, "--config", cfg, "--run-id", "opts", "--hosts", "3", "--start-at", start, "--api-key-secret", "llm-key",
		"--storage-class", "nfs-client", "--cpus", "8", "--memory", "16Gi", "--storage", "1Ti", "--claim", "bench.data", "--drain-timeout", "2m", "--aggregate-memory", "8Gi",
		"--capture-caps", "--metrics-port", "0")
	o := mustParse(t, "stdout", out)
	checkRun(t, o, run{id: "opts", hosts: 3, start: start, config: text, caps: true, noLive: true})
	if sc := o.claims[0].Spec.StorageClassName; sc == nil || *sc != "nfs-client" {
		t.Errorf("claim storageClassName = %v; want nfs-client", sc)
	}
	for comp, c := range map[string]corev1.Container{"replay": o.jobs["replay"].Spec.Template.Spec.InitContainers[0], "capture": o.jobs["capture"].Spec.Template.Spec.Containers[0]} {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "OPENAI_API_KEY" })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil ||
			c.Env[i].ValueFrom.SecretKeyRef.Name != "llm-key" || c.Env[i].ValueFrom.SecretKeyRef.Key != "OPENAI_API_KEY" {
			t.Errorf("%s env = %+v; want OPENAI_API_KEY from secret llm-key key OPENAI_API_KEY", comp, c.Env)
		}
	}
	c := o.jobs["capture"].Spec.Template.Spec.Containers[0]
	if got := c.Resources.Limits.Cpu().Value(); got != 8 {
		t.Errorf("capture cpu limit = %d; want 8", got)
	}
	if m := o.jobs["report"].Spec.Template.Spec.InitContainers[0].Resources.Limits.Memory(); m.Value() != 8<<30 {
		t.Errorf("aggregate memory limit = %v; want 8Gi", m)
	}
	if g := o.jobs["capture"].Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 150 {
		t.Errorf("capture terminationGracePeriodSeconds = %v; want 150 (2m drain + 30s)", g)
	}
}

// TestStrict: the parser rejects what the API server would not take, so that passing means
// something.
func TestStrict(t *testing.T) {
	cfg, _ := writeConfig(t, "")
	good := string(generate(t, "--config", cfg, "--run-id", "s", "--hosts", "2", "--start-at", "+1h", "--target", "http://x.svc:80"))
	cases := []struct{ name, from, to, want string }{
		{"misspelled field", "backoffLimit: 0\n  podFailurePolicy", "backoffLimt: 0\n  podFailurePolicy", `unknown field "backoffLimt"`},
		{"duplicate field", "  completionMode: Indexed\n", "  completionMode: Indexed\n  completionMode: NonIndexed\n", "already set in map"},
		{"string for an int", "completions: 2\n", "completions: two\n", "completions"},
		{"unknown kind", "kind: ConfigMap", "kind: ConfigMapp", `kind "ConfigMapp"`},
		{"bad label value", "app.kubernetes.io/component: capture\n", "app.kubernetes.io/component: capture!\n", "metadata.labels"},
		{"mount of no volume", "- {name: data, mountPath: /data}", "- {name: date, mountPath: /data}", `volumeMounts[0].name: Not found: "date"`},
		{"policy naming no container", "containerName: capture,", "containerName: capturer,", `containerName: Not found: "capturer"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("generator output has no %q to change", tc.from)
			}
			var o objects
			err := parse("edited", []byte(strings.Replace(good, tc.from, tc.to, 1)), &o)
			if err == nil {
				for _, j := range o.jobs {
					if err = checkPod(j); err != nil {
						break
					}
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse(edited) = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// checkRun checks the manifests of one run: the objects, and that each step reads what the one
// before it wrote, on the volume it mounts.
func checkRun(t *testing.T, o objects, r run) {
	t.Helper()
	claims := 1
	if r.s3 != "" {
		claims = 0 // the run lives in object storage: no shared volume
	}
	if len(o.claims) != claims || len(o.configs) != 1 || len(o.jobs) != 3 {
		t.Fatalf("%d claims, %d config maps, jobs %v; want %d, 1 and replay, capture, report", len(o.claims), len(o.configs), keys(o.jobs), claims)
	}
	cm, claimName := o.configs[0], ""
	if claims == 1 {
		claim := o.claims[0]
		claimName = claim.Name
		if !slices.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) || claim.Spec.Resources.Requests.Storage().Sign() <= 0 {
			t.Errorf("claim: accessModes %v storage %v; want [ReadWriteMany] (several pods write) and a size", claim.Spec.AccessModes, claim.Spec.Resources.Requests.Storage())
		}
	}
	if cm.Name != r.name("config") || strings.TrimRight(cm.Data["config.yaml"], "\n") != strings.TrimRight(r.config, "\n") {
		t.Errorf("config map %s config.yaml:\n%s\nwant %s holding the config:\n%s", cm.Name, cm.Data["config.yaml"], r.name("config"), r.config)
	}
	for comp, j := range o.jobs {
		if j.Name != r.name(comp) || len(validation.IsDNS1123Label(j.Name)) > 0 {
			t.Errorf("job %q: want name %q, a DNS label (at most 63: it is a label value on its pods)", j.Name, r.name(comp))
		}
		if err := checkPod(j); err != nil {
			t.Errorf("job %s: %v", j.Name, err)
		}
		checkVolumes(t, j, claimName, cm.Name)
		checkS3Env(t, j, r)
		checkLabels(t, j, r.id, comp)
	}
	checkReplay(t, o.jobs["replay"], r)
	checkCapture(t, o.jobs["capture"], r)
	checkReport(t, o.jobs["report"], r)
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func checkLabels(t *testing.T, j *batchv1.Job, id, comp string) {
	t.Helper()
	for _, l := range []map[string]string{j.Labels, j.Spec.Template.Labels} {
		if l["app.kubernetes.io/instance"] != id || l["app.kubernetes.io/component"] != comp {
			t.Errorf("job %s labels %v; want instance %s, component %s", j.Name, l, id, comp)
		}
	}
}

// checkVolumes: the data volume is the claim (with none, an emptyDir of the pod's own), the
// config volume the config map, and every path under /data or /config a container's command
// names is under one of its mounts.
func checkVolumes(t *testing.T, j *batchv1.Job, claim, cm string) {
	t.Helper()
	spec := j.Spec.Template.Spec
	for _, v := range spec.Volumes {
		switch {
		case v.Name == "data" && claim == "" && v.EmptyDir != nil && v.PersistentVolumeClaim == nil:
		case v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim:
		case v.Name == "config" && v.ConfigMap != nil && v.ConfigMap.Name == cm:
		default:
			t.Errorf("job %s volume %+v; want data = claim %s or config = config map %s", j.Name, v, claim, cm)
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, p := range commandPaths(c) {
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return under(p, m.MountPath) }) {
				t.Errorf("job %s container %s uses %s, under none of its mounts %v", j.Name, c.Name, p, c.VolumeMounts)
			}
		}
	}
}

// checkS3Env: with the run in object storage, every container keeps its local copies in /data
// (WIREBENCH_STAGING) and, with --s3-secret, reads the credentials from that Secret under the
// variables' own names; on a claim, none of it.
func checkS3Env(t *testing.T, j *batchv1.Job, r run) {
	t.Helper()
	spec := j.Spec.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		staging, key := env["WIREBENCH_STAGING"], env["AWS_SECRET_ACCESS_KEY"]
		if r.s3 == "" {
			if staging.Name != "" || key.Name != "" {
				t.Errorf("job %s container %s has object-storage variables, for a run on a claim", j.Name, c.Name)
			}
			continue
		}
		if staging.Value != "/data" || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/data" }) {
			t.Errorf("job %s container %s: WIREBENCH_STAGING %q, mounts %v; want /data, mounted", j.Name, c.Name, staging.Value, c.VolumeMounts)
		}
		ref := key.ValueFrom
		if r.secret != "" && (ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != r.secret || ref.SecretKeyRef.Key != "AWS_SECRET_ACCESS_KEY" || ref.SecretKeyRef.Optional != nil) {
			t.Errorf("job %s container %s: AWS_SECRET_ACCESS_KEY %+v; want it from secret %s, key AWS_SECRET_ACCESS_KEY, required", j.Name, c.Name, key, r.secret)
		}
	}
}

// pathRe finds absolute paths: after a space, an '=' or an opening quote ("$host"/x is not one).
var pathRe = regexp.MustCompile(`(?:^|[\s=]|\s["'])(/[^\s"';]*)`)

// commandPaths returns the absolute paths in a container's command and args.
func commandPaths(c corev1.Container) []string {
	var ps []string
	for _, s := range slices.Concat(c.Command, c.Args) {
		for _, m := range pathRe.FindAllStringSubmatch(s, -1) {
			ps = append(ps, m[1])
		}
	}
	return ps
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func checkReplay(t *testing.T, j *batchv1.Job, r run) {
	t.Helper()
	spec := j.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("replay job: %d init containers, %d containers; want replay, then the hosts' directories", len(spec.InitContainers), len(spec.Containers))
	}
	replay := spec.InitContainers[0]
	if got := command(replay); len(got) < 6 || !slices.Equal(got[:6], []string{"wirebench", "replay", "/config/config.yaml", "-o", r.runDir(), "--force"}) {
		t.Errorf("replay command %q; want wirebench replay /config/config.yaml -o %s --force", got, r.runDir())
	}
	// Then every host's directory, so that a host that never runs is a directory aggregate
	// reports as missing.
	want := []string{"wirebench", "host-dirs", "--from", r.runDir()}
	for i := range r.hosts {
		want = append(want, r.hostDir(i))
	}
	if got := command(spec.Containers[0]); !slices.Equal(got, want) {
		t.Errorf("hosts command %q; want %q", got, want)
	}
	for _, m := range replay.VolumeMounts {
		if m.MountPath == "/config" && !m.ReadOnly {
			t.Errorf("replay mounts the config read-write")
		}
	}
	checkRetries(t, j, batchv1.PodFailurePolicyActionIgnore)
	checkSecurity(t, j, false)
}

func command(c corev1.Container) []string { return slices.Concat(c.Command, c.Args) }

// checkRetries: no failure is retried, and a disruption gets the given action (Ignore: run
// again; FailJob: never).
func checkRetries(t *testing.T, j *batchv1.Job, disruption batchv1.PodFailurePolicyAction) {
	t.Helper()
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 || j.Spec.PodFailurePolicy == nil {
		t.Fatalf("job %s backoffLimit %v podFailurePolicy %v; want 0 and a policy", j.Name, j.Spec.BackoffLimit, j.Spec.PodFailurePolicy)
	}
	got := map[string]batchv1.PodFailurePolicyAction{}
	for _, rule := range j.Spec.PodFailurePolicy.Rules {
		for _, pc := range rule.OnPodConditions {
			got[string(pc.Type)] = rule.Action
		}
		if e := rule.OnExitCodes; e != nil && e.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && slices.Equal(e.Values, []int32{0}) {
			got["exit != 0"] = rule.Action
		}
	}
	want := map[string]batchv1.PodFailurePolicyAction{string(corev1.DisruptionTarget): disruption, "exit != 0": batchv1.PodFailurePolicyActionFailJob}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("job %s podFailurePolicy on %s: %q; want %q", j.Name, k, got[k], v)
		}
	}
}

// varRe finds Kubernetes' $(VAR) references in a command.
var varRe = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func checkCapture(t *testing.T, j *batchv1.Job, r run) {
	t.Helper()
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil ||
		int(*s.Completions) != r.hosts || int(*s.Parallelism) != r.hosts {
		t.Errorf("capture: completionMode %v completions %v parallelism %v; want Indexed, %d and %d (every shard at once)", s.CompletionMode, s.Completions, s.Parallelism, r.hosts, r.hosts)
	}
	checkRetries(t, j, batchv1.PodFailurePolicyActionFailJob)
	pod := s.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("capture job: %d init containers, %d containers; want the host's directory, then capture", len(pod.InitContainers), len(pod.Containers))
	}
	c := pod.Containers[0]
	// The pod's run directory: hosts/<index>, made afresh from the replay's; then capture in it.
	host := r.base() + "/hosts/$(JOB_COMPLETION_INDEX)"
	if got, want := command(pod.InitContainers[0]), []string{"wirebench", "host-dirs", "--from", r.runDir(), host}; !slices.Equal(got, want) {
		t.Errorf("capture's init command %q; want %q", got, want)
	}
	got := command(c)
	want := []string{"wirebench", "capture", host, "--shard", "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(r.hosts), "--start-at", "$(START_AT)", "--drain-timeout"}
	// Then the live metrics on the port the pod's scrape annotations name.
	metrics := []string{"--metrics-listen", ":" + strconv.Itoa(r.metricsPort())}
	if r.metricsPort() == 0 {
		metrics = nil
	}
	if len(got) != len(want)+2+len(metrics) || !slices.Equal(got[:len(want)], want) || got[len(want)+1] != "--quiet" || !slices.Equal(got[len(want)+2:], metrics) {
		t.Fatalf("capture command %q; want %q D --quiet %q", got, want, metrics)
	}
	ann := s.Template.Annotations
	if port := strconv.Itoa(r.metricsPort()); r.metricsPort() > 0 && (ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != port ||
		len(c.Ports) != 1 || c.Ports[0].ContainerPort != int32(r.metricsPort())) || r.metricsPort() == 0 && (len(ann) > 0 || len(c.Ports) > 0) {
		t.Errorf("capture pod annotations %v ports %v; want prometheus.io/scrape and port %s, and the container port, when the metrics are on", ann, c.Ports, port)
	}
	drain, err := time.ParseDuration(got[len(want)])
	if g := pod.TerminationGracePeriodSeconds; err != nil || g == nil || time.Duration(*g)*time.Second <= drain {
		t.Errorf("capture terminationGracePeriodSeconds %v with --drain-timeout %s; want longer than the drain", g, got[len(want)])
	}
	env := map[string]string{"JOB_COMPLETION_INDEX": "set by the Job controller"}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["START_AT"] != r.start {
		t.Errorf("capture START_AT = %q; want %q", env["START_AT"], r.start)
	}
	for _, m := range varRe.FindAllStringSubmatch(strings.Join(got, " "), -1) {
		if _, ok := env[m[1]]; !ok {
			t.Errorf("capture command uses $(%s), which its environment does not define: Kubernetes would pass it as is", m[1])
		}
	}
	// One capture pod per node: the anti-affinity selects this run's capture pods.
	a := pod.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("capture affinity %+v; want one required pod anti-affinity term", a)
	}
	term := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	other := labels.Set{"app.kubernetes.io/component": "capture", "app.kubernetes.io/instance": r.id + "-other"}
	if err != nil || term.TopologyKey != corev1.LabelHostname || !sel.Matches(labels.Set(s.Template.Labels)) || sel.Matches(other) {
		t.Errorf("capture anti-affinity %+v (%v): want topology %s, selecting this run's capture pods and not another run's", term, err, corev1.LabelHostname)
	}
	// Guaranteed QoS (whole CPUs under a static CPU manager) and the capabilities capture uses.
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("capture %s request %v limit %v; want equal and set", res, req.String(), lim.String())
		}
	}
	checkSecurity(t, j, r.caps)
}

// checkSecurity: every pod runs as the image's non-root user with the volume writable by its
// group, every container on a read-only root filesystem, without privilege escalation and
// with every capability dropped; with --capture-caps (caps) the capture container alone runs
// as root with SYS_NICE and NET_RAW added back.
func checkSecurity(t *testing.T, j *batchv1.Job, caps bool) {
	t.Helper()
	spec := j.Spec.Template.Spec
	if p := spec.SecurityContext; p == nil || p.RunAsNonRoot == nil || !*p.RunAsNonRoot || p.RunAsUser == nil || *p.RunAsUser != 65532 ||
		p.FSGroup == nil || *p.FSGroup != 65532 || p.SeccompProfile == nil || p.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("job %s pod securityContext %+v; want runAsNonRoot, runAsUser and fsGroup 65532, seccomp RuntimeDefault", j.Name, p)
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		sc, add := c.SecurityContext, []corev1.Capability(nil)
		if c.Name == "capture" && caps {
			add = []corev1.Capability{"SYS_NICE", "NET_RAW"}
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot {
				t.Errorf("job %s container %s securityContext %+v; want root: a non-root user gets no added capability", j.Name, c.Name, sc)
			}
		} else if sc != nil && (sc.RunAsUser != nil || sc.RunAsNonRoot != nil) {
			t.Errorf("job %s container %s overrides the pod's user: %+v", j.Name, c.Name, sc)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, add) {
			t.Errorf("job %s container %s securityContext %+v; want a read-only root, no privilege escalation, capabilities drop ALL, add %v", j.Name, c.Name, sc, add)
		}
	}
}

func checkReport(t *testing.T, j *batchv1.Job, r run) {
	t.Helper()
	checkRetries(t, j, batchv1.PodFailurePolicyActionIgnore)
	spec := j.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("report job: %d init containers, %d containers; want aggregate, then report", len(spec.InitContainers), len(spec.Containers))
	}
	want := []string{"wirebench", "aggregate"}
	for i := range r.hosts {
		want = append(want, r.hostDir(i))
	}
	want = append(want, "-o", r.runDir())
	if got := slices.Concat(spec.InitContainers[0].Command, spec.InitContainers[0].Args); !slices.Equal(got, want) {
		t.Errorf("aggregate command %q; want %q (every host's directory, merged into the replay's)", got, want)
	}
	if got := slices.Concat(spec.Containers[0].Command, spec.Containers[0].Args); !slices.Equal(got, []string{"wirebench", "report", r.runDir()}) {
		t.Errorf("report command %q; want wirebench report %s", got, r.runDir())
	}
	checkSecurity(t, j, false)
}

// TestPodCommands runs the manifests' own commands, with /data and /config in a temporary
// directory and the target swapped for a `wirebench sim` on 127.0.0.1: replay, the capture
// pods (their commands as written, $(VAR) expanded as the kubelet does) from a common start, aggregate and report; once with both
// pods, once with pod 1 never started.
func TestPodCommands(t *testing.T) {
	cfg, _ := writeConfig(t, "")
	o := mustParse(t, "stdout", generate(t, "--config", cfg, "--run-id", "e2e", "--hosts", "2", "--start-at", "+1h", "--target", "http://server.test:8000"))
	sim := startSim(t)
	t.Run("both pods", func(t *testing.T) {
		m, out := runPods(t, o, volumeSite(t, sim), 0, 1)
		// Both shards together sent the whole schedule, and aggregate read both.
		want := fmt.Sprintf(": %d requests, %d ok,", m.Stages[0].Requests, m.Stages[0].Requests)
		if m.Status != "complete" || !strings.Contains(out, want) {
			t.Errorf("merged status %q, aggregate printed:\n%s\nwant complete and a stage line with %q", m.Status, out, want)
		}
	})
	t.Run("pod 1 never runs", func(t *testing.T) {
		m, _ := runPods(t, o, volumeSite(t, sim), 0)
		if m.Status == "complete" || !slices.ContainsFunc(m.Missing, func(s string) bool { return strings.Contains(s, "shard 1/2") }) {
			t.Errorf("merged status %q, missing %q; want not complete, and shard 1/2 named missing", m.Status, m.Missing)
		}
	})
}

// TestPodCommandsS3 runs the pods' commands of a run in object storage (--storage s3://...)
// against a real S3 server on loopback (versitygw with its posix backend, whose objects are
// files on disk the test reads), as TestPodCommands does on a claim: the pods share nothing
// but the bucket, each keeping its local copies in a directory of its own.
func TestPodCommandsS3(t *testing.T) {
	endpoint, objects := startS3(t)
	cfg, _ := writeConfig(t, "")
	o := mustParse(t, "stdout", generate(t, "--config", cfg, "--run-id", "e2e", "--hosts", "2", "--start-at", "+1h", "--target", "http://server.test:8000",
		"--storage", "s3://runs/sweeps", "--s3-secret", "s3-creds"))
	root := t.TempDir()
	s := site{root: root, run: filepath.Join(objects, "runs", "sweeps", "e2e"),
		swap: strings.NewReplacer("/config/", root+"/config/", "http://server.test:8000", startSim(t), ":9464", "127.0.0.1:0"),
		env: map[string]string{"WIREBENCH_STAGING": t.TempDir(), "AWS_ACCESS_KEY_ID": "k8s-test", "AWS_SECRET_ACCESS_KEY": "k8s-test-secret",
			"AWS_SESSION_TOKEN": "", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": endpoint, "WIREBENCH_S3_ADDRESSING": "path"}}
	m, out := runPods(t, o, s, 0, 1)
	want := fmt.Sprintf(": %d requests, %d ok,", m.Stages[0].Requests, m.Stages[0].Requests)
	if m.Status != "complete" || !strings.Contains(out, want) {
		t.Errorf("merged status %q, aggregate printed:\n%s\nwant complete and a stage line with %q", m.Status, out, want)
	}
	if ents, _ := os.ReadDir(s.env["WIREBENCH_STAGING"]); len(ents) != 0 {
		t.Errorf("the pods left %d local copies; want none", len(ents))
	}
}

// startS3 starts versitygw (built by .ci/run: $WIREBENCH_VERSITYGW, else
// ~/.cache/wirebench/bin/versitygw-v1.8.0/versitygw) on a free loopback port, with bucket
// "runs", and returns its endpoint and the directory holding its buckets. It skips the test
// where versitygw is missing.
func startS3(t *testing.T) (string, string) {
	t.Helper()
	bin := os.Getenv("WIREBENCH_VERSITYGW")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache/wirebench/bin/versitygw-v1.8.0/versitygw")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no S3 server to test against: %v (.ci/run builds versitygw)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "runs"), 0o755); err != nil { // a bucket is a directory
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--access", "k8s-test", "--secret", "k8s-test-secret", "--port", addr, "--quiet", "posix", root)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw on %s: %v", addr, err)
		}
	}
	return "http://" + addr, root
}

// merged is the part of the merged run's manifest the test reads.
type merged struct {
	Status  string
	Missing []string
	Stages  []struct{ Requests int64 }
}

// site is where the pods of TestPodCommands run: paths swapped into a temporary directory (and
// the metrics port for a free one: the pods of one host would share it), variables the kubelet
// would set, and where their run ("e2e") is seen on this machine's disk.
type site struct {
	root string
	swap *strings.Replacer
	env  map[string]string // set in every container, over its own
	run  string            // the run's directory on disk: hosts/<i> and run/ below it
}

// volumeSite is a claim: /data and /config in a temporary directory.
func volumeSite(t *testing.T, sim string) site {
	root := t.TempDir()
	return site{root: root, run: filepath.Join(root, "data", "e2e"), swap: strings.NewReplacer("/data/", root+"/data/",
		"/config/", root+"/config/", "http://server.test:8000", sim, ":9464", "127.0.0.1:0")}
}

// runPods runs replay, the capture pods given, aggregate and report at s and returns the merged
// manifest and what aggregate printed.
func runPods(t *testing.T, o objects, s site, pods ...int) (merged, string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(s.root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, "config", "config.yaml"), []byte(o.configs[0].Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := o.jobs["replay"].Spec.Template.Spec
	runContainer(t, replay.InitContainers[0], s.swap, s.env)
	runContainer(t, replay.Containers[0], s.swap, s.env)
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(s.run, "hosts", strconv.Itoa(i), "schedule/requests.parquet")); err != nil {
			t.Errorf("after replay, host %d: %v; want its directory with the schedule", i, err)
		}
	}
	capture := o.jobs["capture"].Spec.Template.Spec
	start := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	for _, i := range pods {
		wg.Go(func() {
			env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i), "START_AT": start}
			maps.Copy(env, s.env)
			runContainer(t, capture.InitContainers[0], s.swap, env)
			runContainer(t, capture.Containers[0], s.swap, env)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	spec := o.jobs["report"].Spec.Template.Spec
	out := runContainer(t, spec.InitContainers[0], s.swap, s.env)
	runContainer(t, spec.Containers[0], s.swap, s.env)
	if _, err := os.Stat(filepath.Join(s.run, "run/report/index.html")); err != nil {
		t.Errorf("report: %v", err)
	}
	var m merged
	b, err := os.ReadFile(filepath.Join(s.run, "run/manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || len(m.Stages) != 1 {
		t.Fatalf("merged manifest: %v, %d stages; want 1", err, len(m.Stages))
	}
	return m, out
}

// runContainer runs a container's command as the kubelet would, without a shell: $(VAR)
// expanded from its environment (the container's own, then extra), then paths swapped; it
// returns its stdout and fails the test on a non-zero exit.
func runContainer(t *testing.T, c corev1.Container, swap *strings.Replacer, extra map[string]string) string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
	}
	maps.Copy(vars, extra)
	argv := command(c)
	for i := range argv {
		argv[i] = swap.Replace(varRe.ReplaceAllStringFunc(argv[i], func(ref string) string {
			if v, ok := vars[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if argv[0] == "wirebench" {
		argv[0] = binary
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("container %s: %v\n%s", c.Name, err, errb.String())
	}
	return string(out)
}

// startSim starts `wirebench sim` on a free loopback port and returns its base URL.
func startSim(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, binary, "sim", "--listen", "127.0.0.1:0", "--ttft", "5ms", "--itl", "2ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("wirebench sim printed %q, %v; want its base URL", line, err)
	}
	return strings.TrimSpace(line)
}
