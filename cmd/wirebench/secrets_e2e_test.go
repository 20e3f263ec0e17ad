package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/wirebench/wirebench/schemas"
)

// echoServer is an OpenAI-compatible completions server that gives credentials back: its POSTs
// are answered in turn with a good stream, a 401 whose body echoes the request's credential
// headers, a good stream, and a 200 stream whose error event echoes them. It records the headers
// of every POST.
type echoServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []http.Header
}

func startEchoServer(t *testing.T, tls bool) *echoServer {
	t.Helper()
	s := &echoServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if tls {
		s.TLS = trustedServerTLS(t)
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *echoServer) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if r.Method != http.MethodPost {
		io.WriteString(w, "ok")
		return
	}
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, r.Header.Clone())
	s.mu.Unlock()
	var echo strings.Builder
	for _, k := range []string{"Authorization", "X-Api-Key", "Proxy-Authorization", "Api-Key"} {
		fmt.Fprintf(&echo, "%s: %s; ", k, r.Header.Get(k))
	}
	if n%4 == 1 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"invalid credentials %s"}}`, echo.String())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if n%4 == 3 {
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"rejected %s\",\"code\":401}}\n\n", echo.String())
	} else {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"ok %s\",\"finish_reason\":\"length\"}]}\n\n", echo.String())
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *echoServer) posts() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.got...)
}

// parquetText returns every string value and the key-value metadata of a Parquet file, decoded
// (zstd pages hide their text from a plain search of the file).
func parquetText(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b strings.Builder
	for _, kv := range pf.Metadata().KeyValueMetadata {
		b.WriteString(kv.Key + "=" + kv.Value + "\n")
	}
	buf := make([]parquet.Row, 64)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				for _, v := range row {
					if v.Kind() == parquet.ByteArray {
						b.Write(v.ByteArray())
						b.WriteByte('\n')
					}
				}
			}
			if err != nil {
				break
			}
		}
		rows.Close()
	}
	return b.String()
}

func randomHex() string {
	b := make([]byte, 10)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Secrets planted everywhere a config can hold one (the API key through api_key_env, literal
// Authorization, x-api-key and Proxy-Authorization headers, an api-key header read from a
// variable, a password in the target URL) are sent, echoed back by the server in 401 bodies, in
// error events of 200 streams and in the generated text (kept with --keep-text), and written
// nowhere: not in any file of the run (the manifest,
// the schedule, raw and metrics Parquet with their columns decoded, the report), not in a log
// line at debug level (replay, capture, its workers, aggregate, report), not on stdout.
func TestSecretsWrittenNowhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"tls", true}} {
		t.Run(tc.name, func(t *testing.T) { secretsWrittenNowhere(t, tc.tls) })
	}
}

func secretsWrittenNowhere(t *testing.T, tls bool) {
	srv := startEchoServer(t, tls)
	h := randomHex()
	key, litAuth, xkey, tok := "sk-key-"+h, "lit-auth-"+h, "xkey-"+h, "tok-"+h
	proxyPass, urlPass := "proxy-pw-"+h, "url-pw-"+h
	proxyCred := base64.StdEncoding.EncodeToString([]byte("proxyuser:" + proxyPass))
	secrets := []string{key, litAuth, xkey, tok, proxyPass, proxyCred, urlPass}
	t.Setenv("WIREBENCH_E2E_SECRET_KEY", key)
	t.Setenv("WIREBENCH_E2E_SECRET_TOK", tok)
	url := strings.Replace(srv.URL, "://", "://wbuser:"+urlPass+"@", 1)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "secrets.yaml")
	yaml := fmt.Sprintf(`target:
  url: %q
  model: m
  api_key_env: WIREBENCH_E2E_SECRET_KEY
  headers:
    Authorization: "Bearer %s"
    x-api-key: %q
    Proxy-Authorization: "Basic %s"
    api-key: "${WIREBENCH_E2E_SECRET_TOK}"
    X-Team: perf
load: {stages: [{rate: 20, duration: 1s, arrival: constant}]}
workload: {synthetic: {input: {kind: fixed, value: 4}, output: {kind: fixed, value: 2}}}
`, url, litAuth, xkey, proxyCred)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := wirebench(t, time.Minute, "--log-level", "debug", "run", cfg, "-o", out, "--workers", "1", "--tap", "off", "--keep-text")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}

	// The secrets went out (the API key wins over the config's own Authorization) ...
	posts := srv.posts()
	if len(posts) != 20 {
		t.Errorf("%d requests answered; want 20", len(posts))
	}
	for _, p := range posts {
		if p.Get("Authorization") != "Bearer "+key || p.Get("X-Api-Key") != xkey || p.Get("Proxy-Authorization") != "Basic "+proxyCred || p.Get("Api-Key") != tok {
			t.Errorf("a request carried %v; want the planted credentials", p)
			break
		}
	}
	// ... came back in error messages, which are recorded with the secrets replaced.
	_, reqs, _ := rawFiles(t, out)
	echoed := map[string]int{}
	for _, r := range reqs {
		if r.ErrorKind != "" && strings.Count(r.ErrorMessage, "[REDACTED]") == 4 {
			echoed[r.ErrorKind]++
		}
	}
	if echoed[schemas.ErrHTTPStatus] != 5 || echoed[schemas.ErrServerEvent] != 5 {
		t.Errorf("redacted echoes by kind %v; want 5 http_status (401 bodies) and 5 server_error_event", echoed)
	}

	if !strings.Contains(stderr, "capture starting") || !strings.Contains(stderr, "report written") || stdout == "" {
		t.Errorf("no log lines of capture and report, or no summary\nstderr:\n%s\nstdout:\n%s", stderr, stdout)
	}
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	files := 0
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
		}
		texts[path] = string(b)
		if strings.HasSuffix(path, ".parquet") {
			texts[path+" (decoded)"] = parquetText(t, path)
		}
		return nil
	})
	if files < 10 {
		t.Errorf("%d files looked at; want the whole run (schedule, raw, metrics, report)", files)
	}
	for name, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the planted secret %s", name, s)
			}
		}
	}
	m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var config bytes.Buffer
	json.Compact(&config, m.Config)
	for _, want := range []string{`"url":"http` + map[bool]string{false: "", true: "s"}[tls] + `://[REDACTED]@127.0.0.1:`, `"Authorization":"[REDACTED]"`,
		`"x-api-key":"[REDACTED]"`, `"api-key":"${WIREBENCH_E2E_SECRET_TOK}"`, `"X-Team":"perf"`, `"api_key_env":"WIREBENCH_E2E_SECRET_KEY"`} {
		if !strings.Contains(config.String(), want) {
			t.Errorf("manifest config lacks %s:\n%s", want, config.String())
		}
	}
}

// A header value with a line break would end the header and start another (header injection);
// a header name must be an HTTP token. Both are config errors naming file:line:field, before
// anything is written or sent; a line break that comes from a variable stops capture at its
// start, naming the field.
func TestHeaderLineBreaksRejected(t *testing.T) {
	srv := startEchoServer(t, false)
	t.Setenv("WIREBENCH_E2E_CRLF", "a\r\nX-Injected: 1")
	for _, tc := range []struct {
		name, headers, want string
	}{
		{"CR LF in a value", `{X-Team: perf, X-Evil: "a\r\nX-Injected: 1"}`, "headers.yaml:4: target.headers.X-Evil: the value holds a CR at byte 1"},
		{"LF in a value", `{X-Evil: "a\nX-Injected: 1"}`, "headers.yaml:4: target.headers.X-Evil: the value holds an LF at byte 1"},
		{"NUL in a value", `{X-Evil: "a\0b"}`, "headers.yaml:4: target.headers.X-Evil: the value holds a NUL at byte 1"},
		{"line break in a name", `{"X-Evil: a\r\nX-Injected": "1"}`, `headers.yaml:4: target.headers: "X-Evil: a\r\nX-Injected" is not a header name`},
		{"CR LF from a variable", `{X-Evil: "${WIREBENCH_E2E_CRLF}"}`, "manifest.json: target.headers.X-Evil: the value holds a CR at byte 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "headers.yaml")
			yaml := fmt.Sprintf("target:\n  url: %q\n  model: m\n  headers: %s\nload: {stages: [{rate: 5, duration: 1s, arrival: constant}]}\nworkload: {synthetic: {input: {kind: fixed, value: 4}, output: {kind: fixed, value: 2}}}\n", srv.URL, tc.headers)
			if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "run")
			_, stderr, err := wirebench(t, time.Minute, "run", cfg, "-o", out, "--workers", "1", "--tap", "off")
			if code := exitCode(err); code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("run: exit %d; want 1 with %q\nstderr:\n%s", code, tc.want, stderr)
			}
			if posts := srv.posts(); len(posts) > 0 {
				t.Errorf("%d requests reached the server (the first with headers %v); want none", len(posts), posts[0])
			}
			if _, err := os.Stat(filepath.Join(out, "raw")); !os.IsNotExist(err) {
				t.Errorf("%s/raw exists (%v); want nothing captured", out, err)
			}
		})
	}
}

// exitCode returns the exit status of a finished command's error (0 for nil, -1 if it did not
// exit).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A variable the target reads (target.api_key_env, ${VAR} in target.headers) that is unset: a
// config error at replay time under `run` (capture follows on this host), naming
// file:line:field and the variable; a warning from `replay` alone (capture may run on another
// host), then an error at capture's start naming the field and the variable, before a worker
// starts or a request is sent. Set where capture runs, the split run works; a secret written in
// the config is not in the run directory, so a capture on its own names it and what to do.
func TestTargetVariablesCheckedWhereCaptureRuns(t *testing.T) {
	srv := startEchoServer(t, false)
	dir := t.TempDir()
	write := func(name, headers string) string {
		p := filepath.Join(dir, name)
		yaml := fmt.Sprintf("target:\n  url: %q\n  model: m\n  api_key_env: WIREBENCH_E2E_SPLIT_KEY\n  headers: %s\nload: {stages: [{rate: 5, duration: 1s, arrival: constant}]}\nworkload: {synthetic: {input: {kind: fixed, value: 4}, output: {kind: fixed, value: 2}}}\n", srv.URL, headers)
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("split.yaml", `{X-Api-Key: "${WIREBENCH_E2E_SPLIT_TOK}"}`)
	for _, v := range []string{"WIREBENCH_E2E_SPLIT_KEY", "WIREBENCH_E2E_SPLIT_TOK"} {
		t.Setenv(v, "") // restored at the end
		os.Unsetenv(v)
	}

	out := filepath.Join(t.TempDir(), "run")
	_, stderr, err := wirebench(t, time.Minute, "run", cfg, "-o", out, "--workers", "1", "--tap", "off")
	for _, want := range []string{"split.yaml:4: target.api_key_env: environment variable WIREBENCH_E2E_SPLIT_KEY is not set",
		"split.yaml:5: target.headers.X-Api-Key: environment variable WIREBENCH_E2E_SPLIT_TOK is not set"} {
		if exitCode(err) != 1 || !strings.Contains(stderr, want) {
			t.Errorf("run with the variables unset: exit %d; want 1 with %q\nstderr:\n%s", exitCode(err), want, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("run failed at replay but made %s (%v)", out, err)
	}

	_, stderr, err = wirebench(t, time.Minute, "replay", cfg, "-o", out)
	if err != nil || !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "split.yaml:4: target.api_key_env: environment variable WIREBENCH_E2E_SPLIT_KEY") {
		t.Fatalf("replay with the variables unset: %v; want success with a warning naming split.yaml:4: target.api_key_env\n%s", err, stderr)
	}
	_, stderr, err = wirebench(t, time.Minute, "capture", out, "--workers", "1", "--tap", "off", "--quiet")
	want := filepath.Join(out, "manifest.json") + ": target.api_key_env: environment variable WIREBENCH_E2E_SPLIT_KEY is not set"
	if exitCode(err) != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "manifest.json: target.headers.X-Api-Key: environment variable WIREBENCH_E2E_SPLIT_TOK") {
		t.Errorf("capture with the variables unset: exit %d; want 1 with %q and the header's variable\nstderr:\n%s", exitCode(err), want, stderr)
	}
	if ents, _ := os.ReadDir(filepath.Join(out, "raw")); len(srv.posts()) > 0 || len(ents) > 0 {
		t.Errorf("capture failed at its start, but %d requests were sent and raw/ holds %d files", len(srv.posts()), len(ents))
	}

	key, tok := "sk-split-"+randomHex(), "tok-split-"+randomHex()
	t.Setenv("WIREBENCH_E2E_SPLIT_KEY", key)
	t.Setenv("WIREBENCH_E2E_SPLIT_TOK", tok)
	if _, stderr, err := wirebench(t, time.Minute, "capture", out, "--workers", "1", "--tap", "off", "--quiet"); err != nil {
		t.Fatalf("capture with the variables set: %v\n%s", err, stderr)
	}
	posts := srv.posts()
	if len(posts) != 5 || posts[0].Get("Authorization") != "Bearer "+key || posts[0].Get("X-Api-Key") != tok {
		t.Errorf("%d requests, the first with %v; want 5 with the key and the header from the capture host's variables", len(posts), posts)
	}

	lit := write("literal.yaml", `{X-Api-Key: "xkey-literal-in-the-config"}`)
	out2 := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := wirebench(t, time.Minute, "replay", lit, "-o", out2); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	_, stderr, err = wirebench(t, time.Minute, "capture", out2, "--workers", "1", "--tap", "off", "--quiet")
	want = "target.headers.X-Api-Key: its value is a secret, which the run directory does not keep: write it as ${VAR}"
	if exitCode(err) != 1 || !strings.Contains(stderr, want) {
		t.Errorf("capture of a run whose config wrote a secret: exit %d; want 1 with %q\nstderr:\n%s", exitCode(err), want, stderr)
	}
	if n := len(srv.posts()); n != 5 {
		t.Errorf("%d requests in all; want none sent by the refused capture", n-5)
	}
}
