package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSimServesAndStops runs the real `wirebench sim` with a flags file plus an overriding
// flag, sends one plain streaming request and checks the wire format, the ground-truth comment
// and the file's settings; the harness then stops it with SIGINT.
func TestSimServesAndStops(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sim.yaml")
	if err := os.WriteFile(cfg, []byte("model: [from-file]\nttft: 20ms\nitl: 2ms\nmax_num_seqs: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startSim(t, "--config", cfg, "--itl", "1ms")
	client := &http.Client{Timeout: 20 * time.Second}

	resp, err := client.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	models, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(models), `"id":"from-file"`) {
		t.Errorf("/v1/models = %s; want the model named in the config file", models)
	}

	body := `{"model":"from-file","prompt":"hello sim","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err = client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, read %v", resp.StatusCode, err)
	}
	text := string(b)
	for _, want := range []string{
		`"text":"the "`, `"finish_reason":"length"`,
		`"usage":{"prompt_tokens":2,"total_tokens":5,"completion_tokens":3}`,
		`: x-sim {"queue_ns":0,"prefill_ns":20000000,"decode_ns":2000000,"sent_ns":[`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stream lacks %q (ttft from the file, itl 1ms from the flag):\n%s", want, text)
		}
	}
	if !strings.HasSuffix(text, "\n\ndata: [DONE]\n\n") {
		t.Errorf("stream does not end with the x-sim comment then data: [DONE]:\n%s", text)
	}

	resp, err = client.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: status %d; want 404", resp.StatusCode)
	}
}

func TestSimRejectsBadConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(cfg, []byte("max-num-seqz: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := wirebench(t, 30*time.Second, "sim", "--listen", "127.0.0.1:0", "--config", cfg)
	if err == nil || !strings.Contains(stderr, "max-num-seqz") || !strings.Contains(stderr, cfg) {
		t.Errorf("sim --config with an unknown key: err=%v, stderr=%q; want a failure naming the file and key", err, stderr)
	}
	_, stderr, err = wirebench(t, 30*time.Second, "sim", "--listen", "127.0.0.1:0", "--fault-drop", "1.5")
	if err == nil || !strings.Contains(stderr, "fault-drop") {
		t.Errorf("sim --fault-drop 1.5: err=%v, stderr=%q; want a failure naming fault-drop", err, stderr)
	}
}

// startSimCmd starts cmd (a `wirebench sim` listening on 127.0.0.1:0) and returns the base URL
// it prints first; it kills the simulator and fails the test when none comes.
func startSimCmd(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first stdout line %q (%v); want the base URL", line, err)
	}
	return strings.TrimSpace(line)
}

// TestSimExitsCleanlyOnSignal: SIGTERM stops the simulator with exit status 0.
func TestSimExitsCleanlyOnSignal(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		cmd := exec.Command(binary, "sim", "--listen", "127.0.0.1:0")
		startSimCmd(t, cmd)
		cmd.Process.Signal(sig)
		if err := waitExit(t, cmd, 10*time.Second, new(strings.Builder)); err != nil {
			t.Errorf("wirebench sim after %v: %v; want exit status 0", sig, err)
		}
	}
}

// TestSimExitsWithStdin: with --exit-with-stdin the simulator stops (status 0) once its
// standard input ends, as when the process that started it dies; without the flag it keeps
// serving.
func TestSimExitsWithStdin(t *testing.T) {
	for _, exitWith := range []bool{true, false} {
		args := []string{"sim", "--listen", "127.0.0.1:0"}
		if exitWith {
			args = append(args, "--exit-with-stdin")
		}
		cmd := exec.Command(binary, args...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		url := startSimCmd(t, cmd)
		stdin.Close()
		if !exitWith {
			time.Sleep(500 * time.Millisecond)
			resp, err := http.Get(url + "/health")
			if err != nil {
				t.Errorf("without --exit-with-stdin, GET /health after its stdin ended: %v; want it still serving", err)
			} else {
				resp.Body.Close()
			}
			cmd.Process.Signal(os.Interrupt)
		}
		if err := waitExit(t, cmd, 10*time.Second, new(strings.Builder)); err != nil {
			t.Errorf("wirebench %v after its stdin closed: %v; want exit status 0", args, err)
		}
	}
}
