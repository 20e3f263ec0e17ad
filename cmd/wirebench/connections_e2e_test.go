package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
)

// TestConnectionsNearInflight: against the simulator answering in 50 ms at 400 req/s (about 20
// requests in flight), the stage records the connections it opened and the most open at once,
// the terminal shows them, and they stay near what the requests in flight need: no spiral.
func TestConnectionsNearInflight(t *testing.T) {
	url := startSim(t, "--mode", "fixed", "--ttft", "50ms", "--itl", "0")
	run := captureRun(t, url, construn.Stage{Rate: 400, Duration: 3 * time.Second, MaxTokens: 4})
	_, st, out, rep := footprintRun(t, run, "--workers", "1", "--connections", "8")
	s := st[0]
	t.Logf("opened %d, open at most %d, in flight at most %d, warm %d", s.ConnectionsOpened, s.ConnectionsPeak, s.InflightPeak, s.ConnectionsWarm)
	if s.InflightPeak < 10 || s.ConnectionsWarm != 8 || s.ConnectionsPeak < s.InflightPeak {
		t.Errorf("in flight at most %d, warm %d, open at most %d; want about 20 in flight, 8 warm, at least as many open as in flight", s.InflightPeak, s.ConnectionsWarm, s.ConnectionsPeak)
	}
	if s.ConnectionSpiral || s.ConnectionsOpened > 2*s.InflightPeak+s.ConnectionsWarm {
		t.Errorf("opened %d connections for at most %d in flight and %d warm (spiral %v); want at most twice the in-flight peak plus the warm pool", s.ConnectionsOpened, s.InflightPeak, s.ConnectionsWarm, s.ConnectionSpiral)
	}
	if want := fmt.Sprintf("%d connections opened (%d open at most)", s.ConnectionsOpened, s.ConnectionsPeak); !strings.Contains(out, want) {
		t.Errorf("aggregate output lacks %q:\n%s", want, out)
	}
	if !strings.Contains(rep["summary.md"], fmt.Sprintf("%d connections opened, %d open at most", s.ConnectionsOpened, s.ConnectionsPeak)) {
		t.Errorf("summary.md lacks the stage's connections")
	}
}

// TestConnectionSpiralReported: a server that closes the connection after every other answer
// makes the client open about one connection per two requests, far more than the one or two in
// flight need: the stage is marked (connection_spiral, trust amber) and the terminal says so.
func TestConnectionSpiralReported(t *testing.T) {
	closing := make([]hostile.Case, 100)
	for i := range closing {
		closing[i] = hostile.Case{Name: fmt.Sprint("close-", i), Close: true, Respond: func(w io.Writer) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
				"data: {\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
		}}
	}
	srv, err := hostile.Start(closing, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	run := captureRun(t, srv.URL, construn.Stage{Rate: 100, Duration: 2 * time.Second, MaxTokens: 4})
	_, st, out, rep := footprintRun(t, run, "--workers", "1", "--connections", "4", "--tap", "off")
	s := st[0]
	t.Logf("opened %d, open at most %d, in flight at most %d, warm %d", s.ConnectionsOpened, s.ConnectionsPeak, s.InflightPeak, s.ConnectionsWarm)
	if !s.ConnectionSpiral || s.ConnectionsOpened < 80 {
		t.Fatalf("opened %d connections for at most %d in flight and %d warm, spiral %v; want about 100 and the spiral reported", s.ConnectionsOpened, s.InflightPeak, s.ConnectionsWarm, s.ConnectionSpiral)
	}
	if !strings.Contains(out, "CONNECTION SPIRAL") || strings.Contains(out, "trust green") {
		t.Errorf("aggregate output lacks the spiral or is green:\n%s", out)
	}
	if !strings.Contains(rep["profile.json"], `"connection_spiral": true`) || !strings.Contains(rep["summary.md"], "connection spiral") {
		t.Errorf("report lacks the spiral")
	}
}
