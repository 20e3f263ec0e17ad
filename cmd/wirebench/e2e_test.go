package main

// Shared helpers for the end-to-end tests: they run the real binary (built once in TestMain)
// against `wirebench sim` on 127.0.0.1. Each stage's end-to-end tests live in
// <stage>_e2e_test.go.

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/internal/simproc"
)

// binary is the wirebench binary under test.
var binary string

func TestMain(m *testing.M) {
	// WIREBENCH_E2E_BINARY runs the tests against another build (e.g. main's, to see a new
	// test fail there).
	if b := os.Getenv("WIREBENCH_E2E_BINARY"); b != "" {
		binary = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "wirebench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "wirebench")
	build := exec.Command("go", "build", "-o", binary, ".")
	// Static, as `make build` and the Dockerfile build it: the image test puts it in an image.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build wirebench:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// wirebench runs the binary with args, bounded by timeout, and returns stdout, stderr and the
// error (an *exec.ExitError for a non-zero exit).
func wirebench(t *testing.T, timeout time.Duration, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("wirebench %v: timed out after %v\nstderr:\n%s", args, timeout, errb.String())
	}
	return out.String(), errb.String(), err
}

// startSim starts `wirebench sim --listen 127.0.0.1:0 ARGS...` and returns its base URL (the
// first line the simulator prints on stdout). The simulator is stopped when the test ends.
func startSim(t testing.TB, args ...string) string {
	t.Helper()
	var errb syncBuffer
	url, stop, err := simproc.Start(binary, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...), -1, &errb, slog.Default())
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errb.String())
	}
	t.Cleanup(stop)
	return url
}

// syncBuffer is a strings.Builder safe for the writes of a child's stderr copier.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	out, _, err := wirebench(t, 30*time.Second, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"replay", "capture", "aggregate", "report", "run", "sim", "calibrate", "schema", "version"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("--help does not list %q:\n%s", c, out)
		}
	}
}

func TestSchemaCommandMatchesSchemasMarkdown(t *testing.T) {
	out, _, err := wirebench(t, 30*time.Second, "schema", "--format", "md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../schemas/SCHEMAS.md")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Error("wirebench schema --format md differs from schemas/SCHEMAS.md")
	}
	out, _, err = wirebench(t, 30*time.Second, "schema", "raw-chunks")
	if err != nil || !strings.Contains(out, "rx_kernel_ns") {
		t.Errorf("schema raw-chunks: err=%v, output lacks rx_kernel_ns:\n%s", err, out)
	}
	if _, _, err := wirebench(t, 30*time.Second, "schema", "nope"); err == nil {
		t.Error("schema nope: want an error for an unknown kind")
	}
}

// val is *p, or the zero value for null (a test that wants the figure then sees 0 and says so).
func val[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// overPlainAndTLS runs f as the subtests "plain" and "tls"; srvTLS is nil on "plain" and
// trustedServerTLS's config on "tls".
func overPlainAndTLS(t *testing.T, f func(t *testing.T, srvTLS *tls.Config)) {
	t.Run("plain", func(t *testing.T) { f(t, nil) })
	t.Run("tls", func(t *testing.T) { f(t, trustedServerTLS(t)) })
}

// trustedServerTLS returns a self-signed server config whose certificate the wirebench commands
// the test starts trust (SSL_CERT_FILE, set for the test's duration).
func trustedServerTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, pem, err := hostile.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile)
	return cfg
}
