package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/internal/objstore"
	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/internal/secret"
	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// K8sCmd is `wirebench k8s`: the Kubernetes manifests of one multi-host run, printed or written
// as files, so that a run is set up by its arguments instead of by editing YAML.
type K8sCmd struct {
	Config       string        `required:"" placeholder:"FILE" help:"Run config (YAML), checked as replay checks it and put whole into the run's ConfigMap. Files it names (dataset, trace, tokenizer.json) must be on the volume at the path it gives."`
	RunID        string        `name:"run-id" required:"" placeholder:"NAME" help:"Name of the run (lower-case letters, digits and '-', at most 40): it names the Kubernetes objects (wirebench-NAME-capture, ...) and the run's directory on the volume (/data/NAME)."`
	Hosts        int           `required:"" placeholder:"N" help:"Capture pods, one per node: pod i sends shard i/N of the schedule."`
	StartAt      string        `required:"" placeholder:"TIME" help:"Common start of the capture pods: RFC 3339 (2026-01-02T15:04:05Z) or +DURATION from now (+15m). Leave time to replay the schedule and to start every pod."`
	Image        string        `default:"ghcr.io/wirebench/wirebench:latest" help:"Container image with wirebench on the PATH, such as the repository's Dockerfile builds (no shell needed); every pod runs as its user 65532 on a read-only root filesystem."`
	Target       string        `placeholder:"URL" help:"Base URL of the server under test as the pods reach it (e.g. http://vllm.default.svc.cluster.local:8000); overrides target.url of the config."`
	CPUs         int           `name:"cpus" default:"4" help:"CPUs of each capture pod (requests = limits); capture runs one pinned worker per CPU."`
	Memory       string        `default:"4Gi" help:"Memory of each capture pod (requests = limits)."`
	Claim        string        `default:"wirebench-data" placeholder:"NAME" help:"The ReadWriteMany PersistentVolumeClaim every step mounts at /data (several runs may share one)."`
	Storage      string        `default:"20Gi" placeholder:"SIZE|URL" help:"Size the claim requests, or s3://BUCKET/PREFIX: the run lives in object storage (PREFIX/NAME/run, PREFIX/NAME/hosts/<index>), no claim is written and each pod keeps its local copies in a volume of its own (emptyDir)."`
	StorageClass string        `placeholder:"NAME" help:"storageClassName of the claim (default: the cluster's default class)."`
	APIKeySecret string        `placeholder:"NAME" help:"Secret holding the API key under the key named by the config's target.api_key_env (required when the config names one)."`
	S3Secret     string        `name:"s3-secret" placeholder:"NAME" help:"With --storage s3://...: the Secret whose keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and, where present, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3, WIREBENCH_S3_ADDRESSING) become every pod's variables of those names. Without it the pods use their service account's role (EKS IRSA, GKE workload identity)."`
	AggMemory    string        `name:"aggregate-memory" default:"4Gi" help:"Memory of the aggregate container (requests = limits): it peaked at 636-675 MB on 6 M requests from 20 hosts and grows by up to about 80 bytes a request (docs/measurements.md)."`
	DrainTimeout time.Duration `default:"30s" help:"capture --drain-timeout: after SIGTERM, how long a capture pod waits for requests in flight; its termination grace period is this plus 30s."`
	MetricsPort  int           `default:"9464" help:"Port of each capture pod's live metrics (capture --metrics-listen :PORT), with prometheus.io/scrape annotations on the pods; 0: none."`
	CaptureCaps  bool          `name:"capture-caps" help:"Run the capture containers as root with every capability dropped but SYS_NICE (pacer threads at nice -20) and NET_RAW (the packet tap), which a non-root user cannot get in Kubernetes. Without it they run as the image's non-root user with none (Pod Security restricted): pacers at nice 0, tap off."`
	Out          string        `short:"o" placeholder:"DIR" help:"Write the manifests into DIR (00-volume.yaml, 01-replay.yaml, 02-capture.yaml, 03-aggregate-report.yaml) instead of printing them on stdout as one multi-document stream."`
}

// Help is shown under `wirebench k8s --help`.
func (c *K8sCmd) Help() string {
	return `Writes the Kubernetes manifests of one multi-host run: a ReadWriteMany claim and a ConfigMap
with the config (00-volume.yaml), a replay Job (01-replay.yaml), an Indexed Job of --hosts
capture pods, one per node, each sending its shard of the schedule from --start-at
(02-capture.yaml), and a Job that aggregates the hosts and draws the report
(03-aggregate-report.yaml). Apply them in that order; each file's header says how, and
docs/kubernetes.md says what the pods' exit codes mean.`
}

// k8sFiles are the manifests, in the order they are applied.
var k8sFiles = []string{"00-volume.yaml", "01-replay.yaml", "02-capture.yaml", "03-aggregate-report.yaml"}

// k8sGraceExtra is what a capture pod's termination grace period adds to --drain-timeout: the
// time to close its files and write the manifest after the drain.
const k8sGraceExtra = 30 * time.Second

//go:embed k8s.tmpl
var k8sTemplate string

var k8sTmpl = template.Must(template.New("k8s").Funcs(template.FuncMap{"q": yamlQuote, "labels": k8sLabels, "s3keys": s3Keys}).Parse(k8sTemplate))

// s3Keys are the variables --s3-secret gives the pods, the first two required.
func s3Keys() []string {
	return []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", objstore.EnvRegion, objstore.EnvEndpointS3, objstore.EnvAddressing}
}

// k8sRun is what the templates read: the checked flags and what follows from them.
type k8sRun struct {
	*K8sCmd
	Command          string   // the canonical command that writes these manifests
	StartAt          string   // RFC 3339, UTC
	ConfigHeader     string   // the block scalar's indicator: "|" or "|2"
	ConfigText       string   // the config, indented under config.yaml
	APIKeyEnv        string   // target.api_key_env of the config
	ReplayCommand    []string // wirebench replay ...
	HostsCommand     []string // wirebench host-dirs: every host's directory
	GraceSeconds     int64
	AggregateMemory  string
	AggregateCommand []string
	S3               bool   // --storage s3://...: no claim; the pods' /data is their own emptyDir
	RunDir           string // the replay's and the merged run: /data/NAME/run or s3://.../NAME/run
	HostsDir         string // the parent of the capture hosts' run directories
}

func (c *K8sCmd) Run(ctx context.Context, log *slog.Logger) error {
	files, err := c.render(time.Now())
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if c.Out == "" {
		_, err := os.Stdout.Write(bytes.Join(files, []byte("---\n")))
		return err
	}
	for i, b := range files {
		if err := schemas.WriteFileAtomic(filepath.Join(c.Out, k8sFiles[i]), b); err != nil {
			return err
		}
	}
	log.Info("wrote the manifests; apply them in order (see 00-volume.yaml)", "dir", c.Out, "files", strings.Join(k8sFiles, " "))
	return nil
}

// render checks the flags and the config and returns the manifests in k8sFiles order.
func (c *K8sCmd) render(now time.Time) ([][]byte, error) {
	r, err := c.plan(now)
	if err != nil {
		return nil, err
	}
	var files [][]byte
	for _, name := range k8sFiles {
		var b bytes.Buffer
		if err := k8sTmpl.ExecuteTemplate(&b, name, r); err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		files = append(files, b.Bytes())
	}
	return files, nil
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	quantity     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$`)
)

// maxRunID keeps the longest object name, wirebench-NAME-capture, well inside the 63
// characters of a label value (the Job's name is one on its pods).
const maxRunID = 40

// plan checks every flag (all errors at once, each naming its flag) and the config.
func (c *K8sCmd) plan(now time.Time) (*k8sRun, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !dnsLabel.MatchString(c.RunID) || len(c.RunID) > maxRunID {
		bad("--run-id %q: want lower-case letters, digits and '-', starting and ending with a letter or digit, at most %d", c.RunID, maxRunID)
	}
	if c.Hosts < 1 {
		bad("--hosts %d: want >= 1", c.Hosts)
	}
	if c.CPUs < 1 {
		bad("--cpus %d: want >= 1", c.CPUs)
	}
	for _, q := range [][2]string{{"--memory", c.Memory}, {"--storage", c.Storage}, {"--aggregate-memory", c.AggMemory}} {
		if !quantity.MatchString(q[1]) && (q[0] != "--storage" || !objstore.IsURL(q[1])) {
			bad("%s %q: want a Kubernetes quantity such as 4Gi or 500M", q[0], q[1])
		}
	}
	errs = append(errs, c.checkStorage()...)
	for _, n := range [][2]string{{"--claim", c.Claim}, {"--storage-class", c.StorageClass}, {"--api-key-secret", c.APIKeySecret}, {"--s3-secret", c.S3Secret}} {
		if (n[1] != "" || n[0] == "--claim") && (!dnsSubdomain.MatchString(n[1]) || len(n[1]) > 253) {
			bad("%s %q: want a Kubernetes object name (lower-case letters, digits, '-' and '.')", n[0], n[1])
		}
	}
	if c.Image == "" || strings.ContainsAny(c.Image, " \t\n\"'") {
		bad("--image %q: want an image reference such as ghcr.io/wirebench/wirebench:v1", c.Image)
	}
	if c.MetricsPort < 0 || c.MetricsPort > 65535 {
		bad("--metrics-port %d: want a port, or 0 for none", c.MetricsPort)
	}
	if c.DrainTimeout < time.Second {
		bad("--drain-timeout %v: want >= 1s", c.DrainTimeout)
	}
	start, err := k8sStartAt(c.StartAt, now)
	if err != nil {
		errs = append(errs, err)
	}
	cfg, err := replay.LoadConfig(c.Config)
	if err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, c.checkConfig(cfg)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c.fill(cfg, start)
}

// checkStorage checks what --storage s3://... asks of the other flags.
func (c *K8sCmd) checkStorage() []error {
	if !objstore.IsURL(c.Storage) {
		if c.S3Secret != "" {
			return []error{fmt.Errorf("--s3-secret %s: --storage %s is a claim's size, not s3://BUCKET/PREFIX", c.S3Secret, c.Storage)}
		}
		return nil
	}
	var errs []error
	if _, err := objstore.ParseURL(c.Storage); err != nil {
		errs = append(errs, fmt.Errorf("--storage %w", err))
	}
	if c.StorageClass != "" {
		errs = append(errs, fmt.Errorf("--storage-class %s: --storage %s writes no claim", c.StorageClass, c.Storage))
	}
	return errs
}

// k8sStartAt reads --start-at: RFC 3339 or unix ns as capture takes it, or +DURATION from now
// (whole seconds); the time must be in the future.
func k8sStartAt(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return t, fmt.Errorf("--start-at %q: want +DURATION (e.g. +15m) or an RFC 3339 time", s)
		}
		t = now.Add(dur).Truncate(time.Second)
	} else {
		var err error
		if t, err = capture.ParseStartAt(s); err != nil {
			return t, fmt.Errorf("--start-at: %w", err)
		}
	}
	if !t.After(now) {
		return t, fmt.Errorf("--start-at %s is not in the future (now %s): the pods would all start late", t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// checkConfig checks what the config must agree on with the flags.
func (c *K8sCmd) checkConfig(cfg *schemas.Config) []error {
	var errs []error
	if n := cfg.Capture.Shards; n > 1 && n != c.Hosts {
		errs = append(errs, fmt.Errorf("%s: capture.shards is %d but --hosts is %d: every pod would refuse its shard", c.Config, n, c.Hosts))
	}
	env := cfg.Target.APIKeyEnv
	switch {
	case env != "" && c.APIKeySecret == "":
		errs = append(errs, fmt.Errorf("%s: target.api_key_env is %s: give --api-key-secret NAME, a Secret with the key %s", c.Config, env, env))
	case env == "" && c.APIKeySecret != "":
		errs = append(errs, fmt.Errorf("--api-key-secret %s: %s names no target.api_key_env to set from it", c.APIKeySecret, c.Config))
	}
	errs = append(errs, c.checkSecrets(cfg.Target)...)
	if c.Target != "" {
		return append(errs, checkPodTarget("--target", c.Target)...)
	}
	for i, target := range cfg.Target.Endpoints() {
		flag := c.Config + ": target.url"
		if len(cfg.Target.URLs) > 0 {
			flag = fmt.Sprintf("%s: target.urls[%d].url", c.Config, i)
		}
		errs = append(errs, checkPodTarget(flag, target)...)
	}
	return errs
}

// checkPodTarget refuses a target URL the pods cannot reach: not a base URL, or loopback.
func checkPodTarget(flag, target string) []error {
	u, err := url.Parse(target)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return []error{fmt.Errorf("%s %q: want a base URL such as http://vllm.default.svc.cluster.local:8000", flag, target)}
	case u.Hostname() == "localhost" || net.ParseIP(u.Hostname()).IsLoopback():
		return []error{fmt.Errorf("%s %q: a loopback address is the pod itself; give --target with the server's address as the pods reach it", flag, target)}
	}
	return nil
}

// checkSecrets refuses secrets other than the API key: written in the config they would be in
// the ConfigMap, and the capture pods could not get them (the run directory keeps them
// redacted); read from a variable, the pods have only the Secret's.
func (c *K8sCmd) checkSecrets(t schemas.Target) []error {
	var errs []error
	const how = "give the key with target.api_key_env and --api-key-secret"
	for _, f := range t.SecretFields() {
		errs = append(errs, fmt.Errorf("%s: %s holds a secret, which would be written into the ConfigMap and which the capture pods could not get: %s", c.Config, f, how))
	}
	for _, e := range secret.EnvVars(t) {
		if e.Field != "target.api_key_env" {
			errs = append(errs, fmt.Errorf("%s: %s reads ${%s}, which the pods do not have: %s", c.Config, e.Field, e.Name, how))
		}
	}
	if redact.URL(c.Target) != c.Target {
		errs = append(errs, fmt.Errorf("--target: a user:password would be written into the replay Job: %s", how))
	}
	return errs
}

// fill derives what the templates need from checked flags.
func (c *K8sCmd) fill(cfg *schemas.Config, start time.Time) (*k8sRun, error) {
	text, err := os.ReadFile(c.Config)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	header, body, err := configBlock(c.Config, text)
	if err != nil {
		return nil, err
	}
	base := "/data/" + c.RunID
	if objstore.IsURL(c.Storage) {
		base = strings.TrimSuffix(c.Storage, "/") + "/" + c.RunID
	}
	runDir := base + "/run"
	r := &k8sRun{K8sCmd: c, StartAt: start.Format(time.RFC3339Nano), ConfigHeader: header, ConfigText: body,
		APIKeyEnv: cfg.Target.APIKeyEnv, GraceSeconds: int64(math.Ceil((c.DrainTimeout + k8sGraceExtra).Seconds())),
		AggregateMemory: c.AggMemory, S3: objstore.IsURL(c.Storage), RunDir: runDir, HostsDir: base + "/hosts"}
	r.ReplayCommand = []string{"wirebench", "replay", "/config/config.yaml", "-o", runDir, "--force"}
	if c.Target != "" {
		r.ReplayCommand = append(r.ReplayCommand, "--target", c.Target)
	}
	var hosts []string
	for i := range c.Hosts {
		hosts = append(hosts, fmt.Sprintf("%s/%d", r.HostsDir, i))
	}
	r.HostsCommand = slices.Concat([]string{"wirebench", "host-dirs", "--from", runDir}, hosts)
	r.AggregateCommand = slices.Concat([]string{"wirebench", "aggregate"}, hosts, []string{"-o", runDir})
	r.Command = c.command(r.StartAt)
	return r, nil
}

// maxConfigMap is the most a ConfigMap holds (1 MiB), less room for the object around it.
const maxConfigMap = 1<<20 - 4096

// configBlock returns the config as the body of a YAML literal block scalar under a key indented
// by 2 (each line indented by 4, one final newline) and the scalar's header: "|2" when the first
// line starts with a space, which a plain "|" would take as the indentation.
func configBlock(path string, text []byte) (header, body string, err error) {
	s := strings.TrimRight(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	if len(s) > maxConfigMap {
		return "", "", fmt.Errorf("%s: %d bytes: more than a ConfigMap holds (1 MiB)", path, len(s))
	}
	header = "|"
	if strings.HasPrefix(s, " ") {
		header = "|2"
	}
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" {
			b.WriteString("    ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return header, b.String(), nil
}

// command is the canonical command line that writes these manifests (every flag but -o),
// wrapped into comment lines.
func (c *K8sCmd) command(start string) string {
	args := []string{"--config", c.Config, "--run-id", c.RunID, "--hosts", strconv.Itoa(c.Hosts), "--start-at", start, "--image", c.Image}
	if c.Target != "" {
		args = append(args, "--target", c.Target)
	}
	args = append(args, "--cpus", strconv.Itoa(c.CPUs), "--memory", c.Memory)
	if !objstore.IsURL(c.Storage) {
		args = append(args, "--claim", c.Claim)
	}
	args = append(args, "--storage", c.Storage, "--aggregate-memory", c.AggMemory)
	if c.StorageClass != "" {
		args = append(args, "--storage-class", c.StorageClass)
	}
	if c.APIKeySecret != "" {
		args = append(args, "--api-key-secret", c.APIKeySecret)
	}
	if c.S3Secret != "" {
		args = append(args, "--s3-secret", c.S3Secret)
	}
	args = append(args, "--drain-timeout", c.DrainTimeout.String(), "--metrics-port", strconv.Itoa(c.MetricsPort))
	var parts []string
	for i := 0; i < len(args); i += 2 {
		parts = append(parts, args[i]+" "+shellQuote(args[i+1]))
	}
	if c.CaptureCaps {
		parts = append(parts, "--capture-caps")
	}
	line, lines := "wirebench k8s", []string{}
	for _, part := range parts {
		if len(line)+1+len(part) > 90 {
			lines = append(lines, line+" \\")
			line = "    "
		} else {
			line += " "
		}
		line += part
	}
	return strings.Join(append(lines, line), "\n#   ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// yamlQuote writes s as a YAML double-quoted scalar (a JSON string is one).
func yamlQuote(s string) string { return strconv.Quote(s) }

// k8sLabels is the labels of the run's objects of one component, each line after the first
// indented by indent spaces.
func k8sLabels(run, component string, indent int) string {
	pad := "\n" + strings.Repeat(" ", indent)
	return "app.kubernetes.io/name: wirebench" + pad + "app.kubernetes.io/instance: " + run + pad + "app.kubernetes.io/component: " + component
}

// HostDirsCmd is `wirebench host-dirs`, which the manifests run where a shell script would make
// the capture hosts' run directories: the image has no shell.
type HostDirsCmd struct {
	From string   `required:"" placeholder:"RUN" help:"The replay's run directory (or s3://BUCKET/PREFIX)."`
	Dirs []string `arg:"" placeholder:"DIR" help:"Host run directories (or s3:// URLs) to make afresh."`
}

// Run makes each directory afresh: the replay's manifest copied (capture rewrites it), its
// schedule linked by a relative path (read only; a copy per host would multiply the prompts).
// In object storage, where nothing links, each host's directory gets a copy of the schedule.
func (c *HostDirsCmd) Run(ctx context.Context, log *slog.Logger) error {
	from, err := stageRun(ctx, c.From, false, nil, log, "raw/", "metrics/", "report/")
	if err != nil {
		return err
	}
	defer from.discard()
	manifest, err := os.ReadFile(filepath.Join(from.Dir, schemas.ManifestName))
	if err != nil {
		return err
	}
	for _, d := range c.Dirs {
		if err := makeHostDir(ctx, from.Dir, d, manifest, log); err != nil {
			return err
		}
	}
	log.Info("made the host directories", "from", c.From, "dirs", len(c.Dirs))
	return nil
}

// makeHostDir makes the host directory dir afresh from the replay in the local directory from.
func makeHostDir(ctx context.Context, from, dir string, manifest []byte, log *slog.Logger) (err error) {
	run, err := stageRun(ctx, dir, true, os.Args[1:], log, noFiles...)
	if err != nil {
		return err
	}
	defer finishRun(ctx, run, &err, log)
	if err := run.Clear(ctx); err != nil {
		return err
	}
	d := run.Dir
	link, err := filepath.Rel(d, filepath.Join(from, "schedule"))
	if err != nil {
		return fmt.Errorf("host directory %s: %w", dir, err)
	}
	if err := os.RemoveAll(d); err != nil {
		return err
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	if err := schemas.WriteFileAtomic(filepath.Join(d, schemas.ManifestName), manifest); err != nil {
		return err
	}
	return os.Symlink(link, filepath.Join(d, "schedule"))
}
