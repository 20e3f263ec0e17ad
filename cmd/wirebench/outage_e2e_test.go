package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// killSim kills (SIGKILL) this test's simulator listening on addr.
func killSim(t *testing.T, addr string) {
	t.Helper()
	for _, pid := range children(os.Getpid(), "sim") {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.Contains(b, []byte("\x00"+addr+"\x00")) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no simulator on %s to kill", addr)
}

// waitSending waits until the capture of the run in dir has been sending for d.
func waitSending(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName)); err == nil && m.StartNs != 0 {
			time.Sleep(time.Until(time.Unix(0, m.StartNs).Add(d)))
			return
		}
	}
	t.Fatalf("capture of %s did not start in 30s", dir)
}

// A server that dies mid-run (SIGKILL) and comes back on the same port: `wirebench run` goes on
// to its planned end, every request sent while it was away is a connect or reset row, the
// requests after its return are answered, and the manifest, the terminal summary and
// profile.json say when it went away and came back.
func TestRunSurvivesServerDeath(t *testing.T) {
	addr := freeAddr(t)
	simArgs := []string{"--listen", addr, "--ttft", "10ms", "--itl", "5ms"}
	url := startSim(t, simArgs...)
	const rate, planned = 40, 240
	cfg := filepath.Join(captureRun(t, url, construn.Stage{Rate: rate, Duration: planned / rate * time.Second, InputTokens: 16, MaxTokens: 8}), "constant.yaml")
	out := filepath.Join(t.TempDir(), "run")
	cmd, stdout, stderr := startWirebench(t, "run", cfg, "-o", out, "--workers", "1", "--tap", "off", "--quiet")
	waitSending(t, out, 1500*time.Millisecond)
	killed := time.Now()
	killSim(t, addr)
	time.Sleep(1500 * time.Millisecond)
	restarting := time.Now()
	startSim(t, simArgs...)
	back := time.Now()
	if err := waitExit(t, cmd, 60*time.Second, stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}

	m, reqs, _ := rawFiles(t, out)
	if m.Status != schemas.StatusComplete || len(reqs) != planned {
		t.Errorf("manifest status %q, %d requests; want complete with all %d planned (missing %q)", m.Status, len(reqs), planned, m.Missing)
	}
	away, answered := 0, 0
	for _, r := range reqs {
		begun := time.Unix(0, r.SendStartNs)
		switch {
		case begun.After(killed.Add(100*time.Millisecond)) && begun.Before(restarting):
			away++
			if r.ErrorKind != schemas.ErrConnect && r.ErrorKind != schemas.ErrReset {
				t.Errorf("seq %d begun %v after the kill: %q %s; want connect or reset", r.Seq, begun.Sub(killed), r.ErrorKind, r.ErrorMessage)
			}
		case begun.After(back.Add(300 * time.Millisecond)):
			answered++
			if r.ErrorKind != "" {
				t.Errorf("seq %d begun %v after the restart: %q %s; want it answered", r.Seq, begun.Sub(back), r.ErrorKind, r.ErrorMessage)
			}
		}
	}
	if away < 40 || answered < 40 {
		t.Errorf("%d requests while the server was away, %d after it came back; want about 56 and 50", away, answered)
	}

	if len(m.Outages) != 1 {
		t.Fatalf("manifest outages %+v; want one", m.Outages)
	}
	o := m.Outages[0]
	t.Logf("killed at +0, restarted in [%v, %v]: %s", restarting.Sub(killed), back.Sub(killed), o)
	start, end := time.Unix(0, o.StartNs), time.Unix(0, o.EndNs)
	if d := start.Sub(killed); d < -50*time.Millisecond || d > 300*time.Millisecond {
		t.Errorf("outage starts %v after the kill; want within [-50ms, 300ms]", d)
	}
	if !o.Back || end.Before(restarting) || end.After(back.Add(500*time.Millisecond)) {
		t.Errorf("outage back %v, ends %v after the restart began; want back within [0, %v]", o.Back, end.Sub(restarting), back.Sub(restarting)+500*time.Millisecond)
	}
	if o.Errors[schemas.ErrConnect] == 0 || o.Requests < int64(away) {
		t.Errorf("outage holds %d requests %v; want at least the %d sent while away, connect among them", o.Requests, o.Errors, away)
	}
	if !strings.Contains(stdout.String(), "target unreachable") {
		t.Errorf("run summary does not name the outage:\n%s", stdout.String())
	}
	var p struct {
		Runs []struct {
			Outages []schemas.Outage `json:"outages"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report", "profile.json"))
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil || len(p.Runs) != 1 || len(p.Runs[0].Outages) != 1 || p.Runs[0].Outages[0].StartNs != o.StartNs {
		t.Errorf("profile.json outages (err %v): %+v; want the manifest's", err, p.Runs)
	}
}
