package main

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// imageUser is the USER of the Dockerfile's final stage, and the user `wirebench k8s` runs
// its pods as.
const imageUser = "65532:65532"

// TestImageFromScratch builds the Dockerfile's final stage (FROM scratch) around the static
// binary under test with podman, with no registry, and runs in it, as its non-root user on a
// read-only root filesystem and the host's network: `wirebench version`, then a short
// `wirebench run` against the simulator on 127.0.0.1, whose run directory (a mounted host
// directory) must be complete and written by the image's user. It skips, saying why, without
// podman or where containers cannot run (no permission to create namespaces or set limits).
func TestImageFromScratch(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman not found: the image test needs a daemonless builder (apt-get install podman runc; .ci/run installs them)")
	}
	if static, err := isStatic(binary); err != nil || !static {
		t.Skipf("%s is not a static binary (%v): the image holds one built with CGO_ENABLED=0", binary, err)
	}
	ctxDir := t.TempDir()
	containerfile, err := finalStage("../../Dockerfile", ctxDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("localhost/wirebench-e2e:%d", time.Now().UnixNano())
	if out, err := runPodman(t, podman, "build", "--pull=never", "-q", "-t", tag, "-f", filepath.Join(ctxDir, "Containerfile"), ctxDir); err != nil {
		t.Fatalf("podman build: %v\n%s\nContainerfile:\n%s", err, out, containerfile)
	}
	t.Cleanup(func() { runPodman(t, podman, "rmi", "-f", tag) })

	// The container's limits are lowered to values any host allows: raising them needs
	// CAP_SYS_RESOURCE, which a nested or sandboxed runner lacks. runc copes with hybrid
	// cgroup hierarchies, which crun refuses.
	run := []string{"run", "--rm", "--pull=never", "--network=host", "--read-only", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}
	if _, err := exec.LookPath("runc"); err == nil {
		run = append(run, "--runtime", "runc")
	}
	out, err := runPodman(t, podman, append(run, tag, "version")...)
	if err != nil && strings.Contains(out, "OCI") {
		t.Skipf("containers cannot run here (the image was built): podman run: %v\n%s", err, out)
	}
	if err != nil || !strings.HasPrefix(out, "wirebench ") || !strings.Contains(out, "schema version") {
		t.Fatalf("podman run %s version: %v\n%s\nwant `wirebench VERSION (schema version N, ...)`", tag, err, out)
	}

	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil { // the image's user writes the run here
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(imageRunConfig, "URL", url)
	if err := os.WriteFile(filepath.Join(work, "c.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runPodman(t, podman, append(run, "-v", work+":/work", tag, "run", "/work/c.yaml", "-o", "/work/run", "--quiet")...)
	if err != nil {
		t.Fatalf("wirebench run in the container: %v\n%s", err, out)
	}
	manifest := filepath.Join(work, "run", schemas.ManifestName)
	m, err := schemas.ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q (missing %v); want complete", m.Status, m.Missing)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(work, "run", "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 1 || stages[0].Requests != 40 || stages[0].Completed != 40 {
		t.Errorf("stages.parquet %+v; want one stage of 40 requests, 40 completed (20/s for 2 s)", stages)
	}
	if st, err := os.Stat(filepath.Join(work, "run", "report", "index.html")); err != nil || st.Size() == 0 {
		t.Errorf("report/index.html: %v; want the report", err)
	}
	if st, err := os.Stat(manifest); err == nil {
		sys := st.Sys().(*syscall.Stat_t)
		if got := fmt.Sprintf("%d:%d", sys.Uid, sys.Gid); got != imageUser {
			t.Errorf("manifest.json owned by %s; want the image's user %s", got, imageUser)
		}
	}
}

// imageRunConfig is a 2-second run at 20 requests/s; URL is the simulator's.
const imageRunConfig = `name: image
seed: 1
target: {url: URL, api: completions, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages:
    - {rate: 20, duration: 2s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 16}
    output: {kind: fixed, value: 8}
tokenizer: whitespace
`

// runPodman runs podman with args, bounded to 3 minutes, and returns its stdout and stderr.
func runPodman(t *testing.T, podman string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, podman, args...).CombinedOutput()
	return string(out), err
}

// isStatic reports whether the ELF file at path asks for no dynamic loader.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// finalStage returns the Dockerfile's last stage as a Containerfile that builds without the
// build stage: each `COPY --from=build SRC DST` copies SRC from ctxDir instead, where it puts
// the binary under test (for /out/wirebench) or the host's own SRC (the CA certificates).
func finalStage(dockerfile, ctxDir string) (string, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var stage []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FROM "):
			stage = []string{line}
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "COPY --from=build "):
			f := strings.Fields(line)
			if len(f) != 4 {
				return "", fmt.Errorf("%s:%d: %q: want COPY --from=build SRC DST", dockerfile, n, line)
			}
			src := binary
			if f[2] != "/out/wirebench" {
				src = f[2]
			}
			if err := copyFile(src, filepath.Join(ctxDir, f[2])); err != nil {
				return "", fmt.Errorf("%s:%d: %w", dockerfile, n, err)
			}
			stage = append(stage, "COPY "+strings.TrimPrefix(f[2], "/")+" "+f[3])
		default:
			stage = append(stage, line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if len(stage) == 0 || stage[0] != "FROM scratch" {
		return "", fmt.Errorf("%s: final stage %q; want FROM scratch", dockerfile, stage)
	}
	return strings.Join(stage, "\n") + "\n", nil
}

// copyFile copies src to dst, making dst's directory, with src's mode.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, st.Mode().Perm())
}
