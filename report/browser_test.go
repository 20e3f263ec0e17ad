package report

// The browser test opens index.html from disk in headless Chromium and drives it over the
// DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages separated by NUL bytes on
// file descriptors 3 and 4), so it needs no WebSocket client and no network port.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of a Chromium binary, or "" when none is installed.
func chromium() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// cdp is a minimal DevTools-protocol client over Chromium's debugging pipe.
type cdp struct {
	t      *testing.T
	w      *os.File
	in     chan cdpMessage
	next   int64
	events []cdpMessage // every event seen, in order
	ctx    context.Context
}

func (c *cdp) send(session, method string, params any) int64 {
	c.t.Helper()
	c.next++
	p, _ := json.Marshal(params)
	b, _ := json.Marshal(cdpMessage{ID: c.next, Method: method, Params: p, SessionID: session})
	if _, err := c.w.Write(append(b, 0)); err != nil {
		c.t.Fatalf("cdp write %s: %v", method, err)
	}
	return c.next
}

// recv returns the next message, failing the test when the browser is silent until the deadline.
func (c *cdp) recv() cdpMessage {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatal("cdp: chromium closed the pipe")
		}
		if m.Method != "" {
			c.events = append(c.events, m)
		}
		return m
	case <-c.ctx.Done():
		c.t.Fatal("cdp: timed out waiting for chromium")
	}
	return cdpMessage{}
}

// call sends a command and waits for its result.
func (c *cdp) call(session, method string, params any, result any) {
	c.t.Helper()
	id := c.send(session, method, params)
	for {
		m := c.recv()
		if m.ID != id {
			continue
		}
		if len(m.Error) > 0 {
			c.t.Fatalf("cdp %s: %s", method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				c.t.Fatalf("cdp %s result: %v", method, err)
			}
		}
		return
	}
}

// waitEvent waits for an event of the session.
func (c *cdp) waitEvent(session, method string) {
	c.t.Helper()
	for _, e := range c.events {
		if e.Method == method && e.SessionID == session {
			return
		}
	}
	for {
		if m := c.recv(); m.Method == method && m.SessionID == session {
			return
		}
	}
}

// chartProbe is what the page script measured of one chart.
type chartProbe struct {
	ID            string
	W, H          int
	Shapes, Texts int
}

// browse opens url in headless Chromium and returns the charts found, the DevTools events seen
// and a full-page screenshot.
func browse(t *testing.T, bin, url string) ([]chartProbe, []cdpMessage, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	toChrome, ourEnd, err := os.Pipe() // chromium reads commands on fd 3
	if err != nil {
		t.Fatal(err)
	}
	ourIn, fromChrome, err := os.Pipe() // and writes replies on fd 4
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-default-apps", "--hide-scrollbars", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe",
		"--window-size=1400,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	toChrome.Close()
	fromChrome.Close()
	defer func() {
		ourEnd.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	}()

	c := &cdp{t: t, w: ourEnd, in: make(chan cdpMessage, 256), ctx: ctx}
	go func() {
		r := bufio.NewReader(ourIn)
		defer close(c.in)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMessage
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				c.in <- m
			}
		}
	}()

	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	s := att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		c.call(s, m, map[string]any{}, nil)
	}
	c.call(s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	c.call(s, "Page.navigate", map[string]any{"url": url}, nil)
	c.waitEvent(s, "Page.loadEventFired")

	// Every chart: a figure with an inline SVG of real size holding many drawn elements.
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	c.call(s, "Runtime.evaluate", map[string]any{"returnByValue": true, "expression": `JSON.stringify(
		Array.from(document.querySelectorAll("figure.chart")).map(f => {
			const svg = f.querySelector("svg");
			const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
			return {id: f.dataset.chart, w: Math.round(r.width), h: Math.round(r.height),
				shapes: svg ? svg.querySelectorAll("path").length : 0, texts: svg ? svg.querySelectorAll("text").length : 0};
		}))`}, &eval)
	var charts []chartProbe
	if err := json.Unmarshal([]byte(eval.Result.Value), &charts); err != nil {
		t.Fatalf("chart probe returned %q: %v", eval.Result.Value, err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	c.call(s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Errorf("screenshot: %v", err)
	}
	c.send("", "Browser.close", map[string]any{})
	return charts, c.events, png
}

// pageProblems lists console errors and warnings, exceptions and every request but url itself.
func pageProblems(events []cdpMessage, url string) []string {
	var out []string
	for _, e := range events {
		var p struct {
			Type      string                            `json:"type"`
			Entry     struct{ Level, Text, URL string } `json:"entry"`
			Request   struct{ URL string }              `json:"request"`
			Exception json.RawMessage                   `json:"exceptionDetails"`
			Args      []struct{ Value any }             `json:"args"`
		}
		json.Unmarshal(e.Params, &p)
		switch e.Method {
		case "Runtime.exceptionThrown":
			out = append(out, fmt.Sprintf("page threw: %.200s", p.Exception))
		case "Runtime.consoleAPICalled":
			if p.Type == "error" || p.Type == "assert" || p.Type == "warning" {
				out = append(out, fmt.Sprintf("console %s: %v", p.Type, p.Args))
			}
		case "Log.entryAdded":
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("browser log %s: %s (%s)", p.Entry.Level, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			if p.Request.URL != url {
				out = append(out, "request: "+p.Request.URL)
			}
		}
	}
	return out
}

func TestBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (Debian: apt-get install -y chromium); skipping the browser test")
	}
	out, _ := writeReport(t, fixtureA, fixtureB)
	index, err := filepath.Abs(filepath.Join(out, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + index
	charts, events, png := browse(t, bin, url)

	want := []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput", "breakdown-1", "breakdown-2",
		"timeline-1", "timeline-2", "quality-1", "quality-2"}
	got := map[string]bool{}
	for _, ch := range charts {
		got[ch.ID] = true
		if ch.W < 300 || ch.H < 200 || ch.Shapes < 10 || ch.Texts < 5 {
			t.Errorf("chart %s is %dx%d px with %d paths and %d texts; want a drawn chart (>= 300x200, >= 10 paths, >= 5 texts)", ch.ID, ch.W, ch.H, ch.Shapes, ch.Texts)
		}
	}
	for _, id := range want {
		if !got[id] {
			t.Errorf("index.html lacks chart %s; has %v", id, got)
		}
	}
	if len(charts) != len(want) {
		t.Errorf("index.html has %d charts; want %d", len(charts), len(want))
	}
	for _, p := range pageProblems(events, url) {
		t.Errorf("index.html: %s; want no console error and no network request", p)
	}
	if len(png) < 10_000 {
		t.Errorf("screenshot is %d bytes; want a PNG of the page", len(png))
	}
	dir := os.Getenv("WIREBENCH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "wirebench-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	p := filepath.Join(dir, "report-browser.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("write screenshot artifact: %v", err)
	}
	t.Logf("screenshot artifact: %s", p)
}

// TestBrowserSeesProblems checks the checker: a page with an exception, a console error and a
// request to 127.0.0.1 must produce all three, and an empty chart must show as empty.
func TestBrowserSeesProblems(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (Debian: apt-get install -y chromium); skipping the browser test")
	}
	path := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><body><figure class="chart" data-chart="empty"><svg width="10" height="10"></svg></figure>
<img src="http://127.0.0.1:9/x.png"><script>console.error("boom"); notDefined();</script></body></html>`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	charts, events, _ := browse(t, bin, url)
	probs := strings.Join(pageProblems(events, url), "\n")
	for _, want := range []string{"page threw", "console error", "request: http://127.0.0.1:9/x.png"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems of the bad page = %q; want one containing %q", probs, want)
		}
	}
	if len(charts) != 1 || charts[0].W >= 300 {
		t.Errorf("charts of the bad page = %+v; want one tiny chart", charts)
	}
}
