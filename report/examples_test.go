package report

// Checks of the pipeline examples this package owns: examples/pipeline/Makefile and
// examples/airflow/wirebench_dag.py (the four stages, in order). The Kubernetes manifests in
// examples/k8s are written by `wirebench k8s` (cmd/wirebench/k8s_test.go) and parsed with the
// Kubernetes API types in examples/k8s/validate.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const examplesDir = "../examples"

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
