package main

// Tests of `wirebench k8s`. That its output is valid Kubernetes (the API types, unknown fields
// rejected) is checked in examples/k8s/validate, a module of its own so that k8s.io stays out
// of go.mod.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// k8sNow is the "now" of the tests: before the examples' start time.
var k8sNow = time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)

// exampleCommand reads the command line from the header of dir/00-volume.yaml (its comment
// lines joined, line continuations dropped), dir relative to the repository root.
func exampleCommand(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "00-volume.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd []string
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		text, ok := strings.CutPrefix(line, "#   ")
		if strings.HasPrefix(text, "wirebench k8s ") {
			in = true
		}
		if !in || !ok {
			if in {
				break
			}
			continue
		}
		cmd = append(cmd, strings.Fields(strings.TrimSuffix(text, "\\"))...)
	}
	if len(cmd) < 3 {
		t.Fatalf("%s/00-volume.yaml: no `wirebench k8s ...` command in its header", dir)
	}
	return cmd[2:]
}

// parseK8s parses `wirebench k8s ARGS` as the binary would.
func parseK8s(t *testing.T, args []string) *K8sCmd {
	t.Helper()
	var cli CLI
	p, err := kong.New(&cli, kong.Name("wirebench"), kong.Exit(func(int) { t.Fatalf("kong exited on %v", args) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(append([]string{"k8s"}, args...)); err != nil {
		t.Fatalf("parse k8s %v: %v", args, err)
	}
	return &cli.K8s
}

// TestK8sExamplesUpToDate: the checked-in manifests (on a shared volume in examples/k8s, in
// object storage in examples/k8s/s3) are exactly what the command in their header writes, so
// they cannot drift from the generator.
func TestK8sExamplesUpToDate(t *testing.T) {
	t.Chdir("../..")
	for _, dir := range []string{"examples/k8s", "examples/k8s/s3"} {
		checkK8sExample(t, dir)
	}
}

func checkK8sExample(t *testing.T, dir string) {
	t.Helper()
	args := exampleCommand(t, dir)
	files, err := parseK8s(t, args).render(k8sNow)
	if err != nil {
		t.Fatalf("k8s %v: %v", args, err)
	}
	for i, name := range k8sFiles {
		path := filepath.Join(dir, name)
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[i], want) {
			t.Errorf("%s differs from `wirebench k8s %s`: regenerate it with that command and -o %s\ngot:\n%s", path, strings.Join(args, " "), dir, files[i])
		}
	}
}

// validK8s returns flags that render, with a config in a temporary directory.
func validK8s(t *testing.T, config string) *K8sCmd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return &K8sCmd{Config: path, RunID: "r1", Hosts: 3, StartAt: "+10m", Image: "img:1", CPUs: 2, Memory: "2Gi",
		Claim: "data", Storage: "1Gi", AggMemory: "2Gi", DrainTimeout: 30 * time.Second}
}

const k8sConfig = `name: t
target: {url: http://server.ns.svc:8000, api: completions, model: m}
load:
  stages: [{rate: 10, duration: 5s}]
workload:
  synthetic:
    input: {kind: fixed, value: 16}
    output: {kind: fixed, value: 4}
`

func TestK8sFlagErrors(t *testing.T) {
	cases := []struct {
		name   string
		config string // replaces k8sConfig when set
		edit   func(c *K8sCmd)
		want   string // in the error
	}{
		{"upper-case run id", "", func(c *K8sCmd) { c.RunID = "Run1" }, `--run-id "Run1"`},
		{"run id too long for a Job name", "", func(c *K8sCmd) { c.RunID = strings.Repeat("a", 41) }, "--run-id"},
		{"run id ending in -", "", func(c *K8sCmd) { c.RunID = "r-" }, `--run-id "r-"`},
		{"no hosts", "", func(c *K8sCmd) { c.Hosts = 0 }, "--hosts 0: want >= 1"},
		{"no CPUs", "", func(c *K8sCmd) { c.CPUs = 0 }, "--cpus 0"},
		{"memory in GB", "", func(c *K8sCmd) { c.Memory = "4GB" }, `--memory "4GB"`},
		{"storage empty", "", func(c *K8sCmd) { c.Storage = "" }, `--storage ""`},
		{"aggregate memory in GB", "", func(c *K8sCmd) { c.AggMemory = "2 GB" }, `--aggregate-memory "2 GB"`},
		{"claim with _", "", func(c *K8sCmd) { c.Claim = "my_claim" }, `--claim "my_claim"`},
		{"storage class upper-case", "", func(c *K8sCmd) { c.StorageClass = "Fast" }, `--storage-class "Fast"`},
		{"image with a space", "", func(c *K8sCmd) { c.Image = "a b" }, `--image "a b"`},
		{"drain below a second", "", func(c *K8sCmd) { c.DrainTimeout = 0 }, "--drain-timeout 0s"},
		{"metrics port past 65535", "", func(c *K8sCmd) { c.MetricsPort = 70000 }, "--metrics-port 70000"},
		{"start in the past", "", func(c *K8sCmd) { c.StartAt = "2025-01-01T00:00:00Z" }, "is not in the future"},
		{"start unparsable", "", func(c *K8sCmd) { c.StartAt = "tomorrow" }, `invalid start time "tomorrow"`},
		{"start +negative", "", func(c *K8sCmd) { c.StartAt = "+-5m" }, `--start-at "+-5m"`},
		{"config missing", "", func(c *K8sCmd) { c.Config = "/nonexistent/c.yaml" }, "/nonexistent/c.yaml"},
		{"config unknown key", k8sConfig + "bogus: 1\n", nil, `config.yaml:9:1: unknown key "bogus"`},
		{"shards disagree with hosts", k8sConfig + "capture: {shards: 2}\n", nil, "capture.shards is 2 but --hosts is 3"},
		{"api key without secret", strings.Replace(k8sConfig, "model: m", "model: m, api_key_env: KEY", 1), nil, "give --api-key-secret NAME, a Secret with the key KEY"},
		{"secret without api key", "", func(c *K8sCmd) { c.APIKeySecret = "s" }, "names no target.api_key_env"},
		{"loopback target", "", func(c *K8sCmd) { c.Target = "http://127.0.0.1:8000" }, "a loopback address is the pod itself"},
		{"localhost in config", strings.Replace(k8sConfig, "server.ns.svc", "localhost", 1), nil, `target.url "http://localhost:8000": a loopback`},
		{"target not http", "", func(c *K8sCmd) { c.Target = "ftp://x" }, `--target "ftp://x"`},
		{"secret header in the config", strings.Replace(k8sConfig, "model: m", `model: m, headers: {Authorization: "Bearer sk-1"}`, 1), nil, "target.headers.Authorization holds a secret, which would be written into the ConfigMap"},
		{"header from a variable", strings.Replace(k8sConfig, "model: m", `model: m, headers: {X-Api-Key: "${TOK}"}`, 1), nil, "target.headers.X-Api-Key reads ${TOK}, which the pods do not have"},
		{"password in the config's URL", strings.Replace(k8sConfig, "http://", "http://u:pw@", 1), nil, "target.url holds a secret"},
		{"password in --target", "", func(c *K8sCmd) { c.Target = "http://u:pw@server.ns.svc:8000" }, "--target: a user:password would be written into the replay Job"},
		{"storage neither size nor URL", "", func(c *K8sCmd) { c.Storage = "gs://b/p" }, `--storage "gs://b/p": want a Kubernetes quantity`},
		{"storage URL without bucket", "", func(c *K8sCmd) { c.Storage = "s3:///p" }, `--storage "s3:///p": want s3://BUCKET/PREFIX`},
		{"storage class for no claim", "", func(c *K8sCmd) { c.Storage, c.StorageClass = "s3://b/p", "nfs" }, "--storage-class nfs: --storage s3://b/p writes no claim"},
		{"s3 secret with a claim", "", func(c *K8sCmd) { c.S3Secret = "creds" }, "--s3-secret creds: --storage 1Gi is a claim's size"},
		{"s3 secret upper-case", "", func(c *K8sCmd) { c.Storage, c.S3Secret = "s3://b/p", "Creds" }, `--s3-secret "Creds"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := k8sConfig
			if tc.config != "" {
				cfg = tc.config
			}
			c := validK8s(t, cfg)
			if tc.edit != nil {
				tc.edit(c)
			}
			_, err := c.render(k8sNow)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render() error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestK8sStartAt(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"+10m", "2026-01-02T03:14:05Z"}, // whole seconds from now
		{"+1h30m", "2026-01-02T04:34:05Z"},
		{"2026-01-02T07:00:00+02:00", "2026-01-02T05:00:00Z"}, // in UTC
		{"2026-01-02T03:04:06.25Z", "2026-01-02T03:04:06.25Z"},
		{"1767323100000000000", "2026-01-02T03:05:00Z"}, // unix ns, as capture takes it
	}
	for _, tc := range cases {
		got, err := k8sStartAt(tc.in, k8sNow)
		if err != nil || got.Format(time.RFC3339Nano) != tc.want {
			t.Errorf("k8sStartAt(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestK8sConfigBlock(t *testing.T) {
	cases := []struct {
		in, header, body string
	}{
		{"a: 1\nb: 2\n", "|", "    a: 1\n    b: 2\n"},
		{"a: 1\r\n\r\nb: 2\n\n\n", "|", "    a: 1\n\n    b: 2\n"}, // CRLF, blank line kept unindented, trailing blank lines dropped
		{"  # indented comment\na: 1", "|2", "      # indented comment\n    a: 1\n"},
	}
	for _, tc := range cases {
		h, b, err := configBlock("c.yaml", []byte(tc.in))
		if err != nil || h != tc.header || b != tc.body {
			t.Errorf("configBlock(%q) = %q, %q, %v; want %q, %q", tc.in, h, b, err, tc.header, tc.body)
		}
	}
	if _, _, err := configBlock("big.yaml", bytes.Repeat([]byte("a: 1\n"), 1<<18)); err == nil || !strings.Contains(err.Error(), "big.yaml") {
		t.Errorf("configBlock(1.25 MiB) error = %v; want one naming big.yaml", err)
	}
}

// TestK8sRender checks what follows from the flags: hosts, the API key, the grace period.
func TestK8sRender(t *testing.T) {
	c := validK8s(t, strings.Replace(k8sConfig, "model: m", "model: m, api_key_env: OPENAI_API_KEY", 1))
	c.APIKeySecret, c.Hosts, c.DrainTimeout, c.StorageClass = "llm-key", 12, 90*time.Second, "nfs"
	files, err := c.render(k8sNow)
	if err != nil {
		t.Fatal(err)
	}
	all := string(bytes.Join(files, nil))
	for _, want := range []string{
		"completions: 12\n",
		"parallelism: 12 ",
		`"--shard", "$(JOB_COMPLETION_INDEX)/12"`,
		"terminationGracePeriodSeconds: 120\n", // 90 s drain + 30 s
		`"--drain-timeout", "1m30s"`,
		`storageClassName: "nfs"`,
		`- "/data/r1/hosts/11"`,
		`limits: {memory: "2Gi"}`, // --aggregate-memory
		"value: \"2026-01-02T03:14:05Z\"\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("manifests lack %q", want)
		}
	}
	if strings.Contains(all, "/data/r1/hosts/12") {
		t.Errorf("manifests name host 12 of 12 (hosts count from 0)")
	}
	// The capture pods run as the image's non-root user unless --capture-caps.
	if strings.Contains(all, "add: [") || !strings.Contains(all, "runAsUser: 65532") {
		t.Errorf("manifests without --capture-caps: want no capability added and runAsUser 65532")
	}
	c.CaptureCaps = true
	if files, err = c.render(k8sNow); err != nil || !strings.Contains(string(files[2]), `add: ["SYS_NICE", "NET_RAW"]`) || !strings.Contains(string(files[0]), "--capture-caps") {
		t.Errorf("--capture-caps: %v; want capture's capabilities SYS_NICE and NET_RAW, and the flag in the header", err)
	}
	// The key reaches replay (model discovery) and capture, not aggregate or report.
	key := `secretKeyRef: {name: "llm-key", key: "OPENAI_API_KEY"}`
	for i, want := range []int{0, 1, 1, 0} {
		if got := strings.Count(string(files[i]), key); got != want {
			t.Errorf("%s has the API key %d times; want %d", k8sFiles[i], got, want)
		}
	}
}

// TestK8sRenderS3: with --storage s3://..., no claim; each pod's /data is an emptyDir of its
// own holding its local copies; every container reads the credentials from --s3-secret; every
// command names the run by its URL.
func TestK8sRenderS3(t *testing.T) {
	c := validK8s(t, k8sConfig)
	c.Storage, c.S3Secret = "s3://bench/runs/", "s3-creds"
	files, err := c.render(k8sNow)
	if err != nil {
		t.Fatal(err)
	}
	all := string(bytes.Join(files, nil))
	for _, tc := range []struct {
		text string
		n    int
	}{
		{"PersistentVolumeClaim", 0},
		{"persistentVolumeClaim", 0},
		{"/data/r1", 0},
		{"emptyDir: {}", 3},                                       // a volume of its own in each Job's pods
		{"{name: WIREBENCH_STAGING, value: /data}", 6},            // replay, hosts, host, capture, aggregate, report
		{`key: AWS_SECRET_ACCESS_KEY}}}`, 6},                      // required
		{`key: AWS_ENDPOINT_URL_S3, optional: true}}}`, 6},        // optional
		{`"s3://bench/runs/r1/hosts/$(JOB_COMPLETION_INDEX)"`, 2}, // host-dirs and capture
		{`- "s3://bench/runs/r1/hosts/2"`, 2},                     // the replay's host-dirs and aggregate
		{`["wirebench", "report", "s3://bench/runs/r1/run"]`, 1},
		{"--storage s3://bench/runs/ --aggregate-memory 2Gi --s3-secret s3-creds", 1}, // the header's command, no --claim
	} {
		if got := strings.Count(all, tc.text); got != tc.n {
			t.Errorf("manifests hold %q %d times; want %d", tc.text, got, tc.n)
		}
	}
}

// TestK8sCommand runs the binary: stdout is one multi-document stream, -o writes the files,
// bad flags exit 2.
func TestK8sCommand(t *testing.T) {
	c := validK8s(t, k8sConfig)
	start := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	args := []string{"k8s", "--config", c.Config, "--run-id", "cmd", "--hosts", "2", "--start-at", start}
	out, errOut, err := wirebench(t, time.Minute, args...)
	if err != nil {
		t.Fatalf("wirebench %v: %v\n%s", args, err, errOut)
	}
	if n := strings.Count(out, "\n---\n"); n != 4 {
		t.Errorf("stdout has %d document separators; want 4 (claim, config map, three Jobs)", n)
	}
	dir := t.TempDir()
	if _, errOut, err := wirebench(t, time.Minute, append(args, "-o", dir)...); err != nil {
		t.Fatalf("wirebench -o: %v\n%s", err, errOut)
	}
	var joined []string
	for _, name := range k8sFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		joined = append(joined, string(b))
	}
	if got := strings.Join(joined, "---\n"); got != out {
		t.Errorf("-o files joined differ from stdout")
	}
	_, errOut, err = wirebench(t, time.Minute, "k8s", "--config", c.Config, "--run-id", "cmd", "--hosts", "0", "--start-at", "+1h")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errOut, "--hosts 0: want >= 1") {
		t.Errorf("--hosts 0: err %v, stderr %q; want exit 2 naming --hosts", err, errOut)
	}
}
