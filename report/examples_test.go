package report

// Checks of the pipeline examples this package owns: examples/k8s/*.yaml (valid YAML, an
// Indexed Job capturing one shard per pod, then aggregate and report), examples/pipeline/Makefile
// and examples/airflow/wirebench_dag.py (the four stages, in order).

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/wirebench/wirebench/replay"
)

const examplesDir = "../examples"

// k8sObject is the part of a Kubernetes object the test checks.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		AccessModes    []string `yaml:"accessModes"`
		CompletionMode string   `yaml:"completionMode"`
		Completions    *int     `yaml:"completions"`
		Parallelism    *int     `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name         string   `yaml:"name"`
					Image        string   `yaml:"image"`
					Command      []string `yaml:"command"`
					Args         []string `yaml:"args"`
					Env          []struct{ Name, Value string }
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func loadK8s(t *testing.T) map[string]k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(examplesDir, "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob examples/k8s: %v, %d files; want the manifests", err, len(files))
	}
	objs := map[string]k8sObject{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for i := 0; ; i++ {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: invalid: %v", f, i, err)
			}
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Errorf("%s document %d: kind %q apiVersion %q name %q; want all three", f, i, o.Kind, o.APIVersion, o.Metadata.Name)
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objs
}

func TestK8sManifests(t *testing.T) {
	objs := loadK8s(t)
	pvc, ok := objs["PersistentVolumeClaim/wirebench-data"]
	if !ok || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != "ReadWriteMany" {
		t.Errorf("PVC wirebench-data = %+v (present %v); want accessModes [ReadWriteMany] (several pods write to it)", pvc.Spec.AccessModes, ok)
	}

	// The config in the ConfigMap is a valid wirebench config.
	cm, ok := objs["ConfigMap/wirebench-config"]
	if !ok || cm.Data["config.yaml"] == "" {
		t.Fatalf("ConfigMap wirebench-config with data config.yaml missing")
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cm.Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.LoadConfig(cfgPath); err != nil {
		t.Errorf("replay.LoadConfig(ConfigMap config.yaml) = %v; want a valid config", err)
	}

	// Every Job mounts the shared claim and runs wirebench.
	for _, name := range []string{"wirebench-replay", "wirebench-capture", "wirebench-aggregate-report"} {
		j, ok := objs["Job/"+name]
		if !ok {
			t.Errorf("Job %s missing; have %v", name, keys(objs))
			continue
		}
		if j.APIVersion != "batch/v1" || j.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Errorf("Job %s: apiVersion %q restartPolicy %q; want batch/v1, Never", name, j.APIVersion, j.Spec.Template.Spec.RestartPolicy)
		}
		claim := false
		for _, v := range j.Spec.Template.Spec.Volumes {
			claim = claim || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "wirebench-data")
		}
		if !claim || len(j.Spec.Template.Spec.Containers) != 1 || len(j.Spec.Template.Spec.Containers[0].VolumeMounts) == 0 {
			t.Errorf("Job %s does not mount the claim wirebench-data in its one container", name)
		}
	}

	// The capture Job: Indexed, N pods at once, shard $(JOB_COMPLETION_INDEX)/N with a common start.
	c := objs["Job/wirebench-capture"]
	if c.Spec.CompletionMode != "Indexed" || c.Spec.Completions == nil || c.Spec.Parallelism == nil || *c.Spec.Completions != *c.Spec.Parallelism {
		t.Fatalf("capture Job: completionMode %q completions %v parallelism %v; want Indexed with completions = parallelism", c.Spec.CompletionMode, c.Spec.Completions, c.Spec.Parallelism)
	}
	n := *c.Spec.Completions
	script := strings.Join(append(c.Spec.Template.Spec.Containers[0].Command, c.Spec.Template.Spec.Containers[0].Args...), " ")
	m := regexp.MustCompile(`wirebench capture \S+ --shard \$\(JOB_COMPLETION_INDEX\)/(\d+) --start-at "?\$\(START_AT\)"?`).FindStringSubmatch(script)
	if m == nil || m[1] != itoa(n) {
		t.Errorf("capture command %q; want `wirebench capture RUN --shard $(JOB_COMPLETION_INDEX)/%d --start-at $(START_AT)`", script, n)
	}
	env := map[string]string{}
	for _, e := range c.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["START_AT"] == "" || env["SHARDS"] != itoa(n) {
		t.Errorf("capture env = %v; want START_AT set and SHARDS = %d", env, n)
	}

	ar := objs["Job/wirebench-aggregate-report"].Spec.Template.Spec.Containers
	if len(ar) == 1 {
		s := strings.Join(append(ar[0].Command, ar[0].Args...), " ")
		ia, ir := strings.Index(s, "wirebench aggregate /data/hosts/*"), strings.Index(s, "wirebench report /data/run")
		if ia < 0 || ir < ia {
			t.Errorf("aggregate-report script %q; want `wirebench aggregate /data/hosts/*` then `wirebench report /data/run`", s)
		}
	}
}

func keys(m map[string]k8sObject) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func itoa(n int) string { return strconv.Itoa(n) }

// stageOrder returns the positions of the four stage commands in s, failing when one is
// missing or out of order.
func stageOrder(t *testing.T, what, s string, pattern string) {
	t.Helper()
	last := -1
	for _, st := range []string{"replay", "capture", "aggregate", "report"} {
		re := regexp.MustCompile(strings.ReplaceAll(pattern, "STAGE", st))
		loc := re.FindStringIndex(s)
		if loc == nil {
			t.Errorf("%s has no %s command (pattern %s)", what, st, re)
			continue
		}
		if loc[0] < last {
			t.Errorf("%s runs %s before the stage that feeds it", what, st)
		}
		last = loc[0]
	}
}

func TestPipelineMakefile(t *testing.T) {
	path := filepath.Join(examplesDir, "pipeline", "Makefile")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stageOrder(t, path, string(b), `\$\(WIREBENCH\) STAGE `)
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed; checked the text only")
	}
	// A dry run from scratch prints the four commands in pipeline order.
	run := filepath.Join(t.TempDir(), "run")
	out, err := exec.Command(mk, "-n", "--no-print-directory", "-f", path, "WIREBENCH=wb", "CONFIG="+path, "RUN="+run).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	want := []string{"wb replay " + path + " -o " + run + " --force", "wb capture " + run, "wb aggregate " + run, "wb report " + run}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("make -n printed %d commands; want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("make -n command %d = %q; want it to start with %q", i, lines[i], w)
		}
	}
}

func TestAirflowDAG(t *testing.T) {
	path := filepath.Join(examplesDir, "airflow", "wirebench_dag.py")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if got := strings.Count(s, "BashOperator("); got != 4 {
		t.Errorf("%s has %d BashOperator tasks; want 4, one per stage", path, got)
	}
	stageOrder(t, path, s, `task_id="STAGE",\s*bash_command=f"wirebench STAGE `)
	if !strings.Contains(s, "replay >> capture >> aggregate >> report") {
		t.Errorf("%s does not chain replay >> capture >> aggregate >> report", path)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed; checked the text only")
	}
	// Syntax check (Airflow itself is not needed to compile the file).
	cmd := exec.Command(py, "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read())", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("python3 cannot parse %s: %v\n%s", path, err, out)
	}
}
