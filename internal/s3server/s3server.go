// Package s3server starts a real S3-compatible server on loopback for tests: versitygw
// (github.com/versity/versitygw) with its posix backend in a temporary directory. It is not
// a mock: the tests see a server's own answers (conditional PUT, multipart, listing,
// errors). .ci/run builds it once into Path; a test skips, saying how to get it, where it is
// missing.
package s3server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Version is the versitygw release .ci/run builds.
const Version = "v1.8.0"

// EnvBinary names the versitygw binary to use instead of Path.
const EnvBinary = "WIREBENCH_VERSITYGW"

// Path is where .ci/run builds versitygw: ~/.cache/wirebench/bin/versitygw-VERSION/versitygw.
func Path() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "wirebench", "bin", "versitygw-"+Version, "versitygw")
}

// Server is a running versitygw with one bucket.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Access   string
	Secret   string
	Bucket   string

	bin, root, log string
	cmd            *exec.Cmd
}

// Env is the environment a wirebench process needs to reach the server (AWS variables).
func (s *Server) Env() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID": s.Access, "AWS_SECRET_ACCESS_KEY": s.Secret, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": s.Endpoint, "AWS_ENDPOINT_URL": "",
	}
}

// binary finds versitygw: $WIREBENCH_VERSITYGW, Path, or versitygw on the PATH.
func binary() (string, error) {
	if b := os.Getenv(EnvBinary); b != "" {
		return b, nil
	}
	if _, err := os.Stat(Path()); err == nil {
		return Path(), nil
	}
	return exec.LookPath("versitygw")
}

// Start starts versitygw on a free port of 127.0.0.1 with a new bucket, and stops it when the
// test ends. It skips the test when versitygw is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Skipf("no S3 server to test against: versitygw not found at $%s, %s or on the PATH (.ci/run builds it: GOBIN=%s go install github.com/versity/versitygw/cmd/versitygw@%s)",
			EnvBinary, Path(), filepath.Dir(Path()), Version)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Endpoint: "http://127.0.0.1:" + port, Access: "wirebench-test", Secret: "wirebench-test-secret", Bucket: "runs",
		bin: bin, root: t.TempDir(), log: filepath.Join(t.TempDir(), "versitygw.log")}
	s.start(t)
	t.Cleanup(s.Stop)
	if err := s.makeBucket(); err != nil {
		b, _ := os.ReadFile(s.log)
		t.Fatalf("versitygw on %s: %v\nits log:\n%s", s.Endpoint, err, b)
	}
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.cmd = exec.Command(s.bin, "--access", s.Access, "--secret", s.Secret, "--port", s.Endpoint[len("http://"):], "--quiet", "posix", s.root)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID=", "ROOT_SECRET_ACCESS_KEY=") // only the flags
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.bin, err)
	}
}

// Stop kills the server: the tests of what a command does when its store goes away.
func (s *Server) Stop() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same port and data, and waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.start(t)
	if err := s.makeBucket(); err != nil {
		b, _ := os.ReadFile(s.log)
		t.Fatalf("versitygw on %s after a restart: %v\nits log:\n%s", s.Endpoint, err, b)
	}
}

// makeBucket waits up to 30 s for the server to answer and makes the bucket, unless it exists.
func (s *Server) makeBucket() error {
	c, err := minio.New(s.Endpoint[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4(s.Access, s.Secret, ""), Region: "us-east-1"})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		cancel()
		if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
			return nil // a restart: the bucket is on disk
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}
