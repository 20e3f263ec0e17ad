package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// The API key (target.api_key_env) is sent with every request and written nowhere: not in any
// file of the run (manifest, schedule, raw and metrics Parquet, report), not in the config, not
// in a log line at debug level, not in the terminal summary.
func TestAPIKeyWrittenNowhere(t *testing.T) {
	b := make([]byte, 12)
	rand.Read(b)
	secret := "sk-wirebench-e2e-" + hex.EncodeToString(b)
	srv, err := hostile.Start(nil, nil) // every answer good; it records the Authorization header
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	target := schemas.Target{URL: srv.URL, API: "completions", Model: "sim", APIKeyEnv: "WIREBENCH_E2E_API_KEY"}
	if err := construn.Write(dir, target, []construn.Stage{{Rate: 20, Duration: time.Second, MaxTokens: 4}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--log-level", "debug", "run", filepath.Join(dir, "constant.yaml"), "-o", out, "--workers", "1", "--tap", "off")
	cmd.Env = append(os.Environ(), target.APIKeyEnv+"="+secret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	served := srv.Log()
	if len(served) != 20 {
		t.Errorf("%d requests answered; want 20", len(served))
	}
	for _, s := range served {
		if s.Auth != "Bearer "+secret {
			t.Fatalf("a request carried Authorization %q; want the key as a bearer token", s.Auth)
		}
	}
	if stderr.Len() == 0 || stdout.Len() == 0 {
		t.Errorf("no logs (%d bytes) or no summary (%d bytes)", stderr.Len(), stdout.Len())
	}
	for name, text := range map[string][]byte{"stdout": stdout.Bytes(), "stderr": stderr.Bytes()} {
		if bytes.Contains(text, []byte(secret)) {
			t.Errorf("the API key is in %s", name)
		}
	}
	files := 0
	for _, root := range []string{dir, out} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files++
			if b, err := os.ReadFile(path); err != nil || bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s: holds the API key (read error %v)", path, err)
			}
			return nil
		})
	}
	// Parquet pages are compressed: look at the decoded text columns too.
	_, reqs, _ := rawFiles(t, out)
	for _, r := range reqs {
		if strings.Contains(r.ErrorMessage+r.OutputText, secret) {
			t.Errorf("seq %d: a text column holds the API key", r.Seq)
		}
	}
	if m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName)); err != nil || !bytes.Contains(m.Config, []byte(target.APIKeyEnv)) {
		t.Errorf("manifest config (err %v) does not name the key's variable %s", err, target.APIKeyEnv)
	}
	if files < 10 {
		t.Errorf("%d files looked at; want the whole run (schedule, raw, metrics, report)", files)
	}
}
