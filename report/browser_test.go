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
	"regexp"
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
	Labels        []textBox // every text gonum drew, with its box on the page
	Targets       int       // hover targets (circles and rects of the .hover group)
	Titled        int       // targets with a non-empty <title>
	Inside        int       // targets whose centre lies inside the chart
	Topmost       int       // sampled targets under which the pointer finds a hover target, not a drawing
	Sampled       int
	Sample        string   // the title of the last target
	Covered       []string // titles of point and bar targets that meet a legend's box
	Outside       []string // dashed lines whose box leaves every plot area (by more than a pixel)
	Areas         int      // plot areas the SVG declares
}

// textBox is a text of a chart and its bounding box on the page, in CSS pixels.
type textBox struct {
	S          string
	L, R, T, B float64
}

// pageProbe is what the page script measured of the whole page.
type pageProbe struct {
	ScrollW, ClientW int // the document's scroll width and the viewport's width
	Tables           []struct {
		Head    string // first header cell's text and the table's position, to name it
		W       float64
		Room    float64  // the width of the box it sits in
		Wrapped []string // first-column cells (stage and run labels) laid out on more than one line
	}
	Charts []chartProbe
}

// probeScript measures the page: overflow, tables, and per chart its texts, hover targets
// and whether a pointer at a target's centre reaches it.
const probeScript = `JSON.stringify((() => {
	const de = document.documentElement;
	const page = {scrollW: de.scrollWidth, clientW: de.clientWidth, tables: [], charts: []};
	const lines = e => { const r = document.createRange(); r.selectNodeContents(e);
		return new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top))).size; };
	document.querySelectorAll("table").forEach((t, i) => page.tables.push({
		head: i + ": " + t.querySelector("th").textContent + " .. " + t.querySelector("tr").lastElementChild.textContent,
		w: t.getBoundingClientRect().width, room: t.parentElement.clientWidth,
		wrapped: Array.from(t.querySelectorAll("td:first-child")).filter(td => lines(td) > 1).map(td => td.textContent)}));
	for (const f of document.querySelectorAll("figure.chart")) {
		const svg = f.querySelector("svg");
		if (!svg) { page.charts.push({id: f.dataset.chart}); continue; }
		const sr = svg.getBoundingClientRect();
		const texts = Array.from(svg.querySelectorAll("text"));
		const targets = Array.from(svg.querySelectorAll(".hover > *"));
		const box = e => e.getBoundingClientRect();
		const meets = (a, b) => a.left <= b.right && b.left <= a.right && a.top <= b.bottom && b.top <= a.bottom;
		const areas = Array.from(svg.querySelectorAll("rect.plot-area")).map(box);
		const legends = Array.from(svg.querySelectorAll("rect.legend-box")).map(box);
		const within = (r, a) => r.left >= a.left - 1 && r.right <= a.right + 1 && r.top >= a.top - 1 && r.bottom <= a.bottom + 1;
		const centre = e => { const r = e.getBoundingClientRect(); return [(r.left + r.right) / 2, (r.top + r.bottom) / 2]; };
		const c = {id: f.dataset.chart, w: Math.round(sr.width), h: Math.round(sr.height),
			shapes: svg.querySelectorAll("path").length, texts: texts.length,
			labels: texts.map(t => { const r = t.getBoundingClientRect(); return {s: t.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom}; }),
			targets: targets.length,
			titled: targets.filter(e => { const t = e.querySelector("title"); return t && t.textContent.trim() !== ""; }).length,
			inside: targets.filter(e => { const [x, y] = centre(e); return x >= sr.left && x <= sr.right && y >= sr.top && y <= sr.bottom; }).length,
			topmost: 0, sampled: 0, sample: targets.length ? targets[targets.length - 1].querySelector("title").textContent : "",
			areas: areas.length,
			covered: targets.filter(e => !e.classList.contains("band") && legends.some(l => meets(box(e), l))).map(e => e.querySelector("title").textContent),
			outside: Array.from(svg.querySelectorAll("path")).filter(e => (e.getAttribute("style") || "").includes("stroke-dasharray"))
				.filter(e => !areas.some(a => within(box(e), a))).map(e => e.getAttribute("d").slice(0, 60))};
		for (const e of [targets[0], targets[Math.floor(targets.length / 2)], targets[targets.length - 1]]) {
			if (!e) continue;
			e.scrollIntoView({block: "center", inline: "center"});
			const [x, y] = centre(e);
			c.sampled++;
			const hit = document.elementFromPoint(x, y);
			if (hit && svg.contains(hit) && hit.parentElement.classList.contains("hover")) c.topmost++;
		}
		page.charts.push(c);
	}
	window.scrollTo(0, 0);
	return page;
})())`

// viewportW is the browser's width in the test: a laptop screen.
const viewportW = 1280

// browse opens url in headless Chromium, viewportW pixels wide, and returns what probeScript
// measured, the DevTools events seen and a full-page screenshot.
func browse(t *testing.T, bin, url string) (pageProbe, []cdpMessage, []byte) {
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
		fmt.Sprintf("--window-size=%d,1000", viewportW), "about:blank")
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
	c.call(s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": viewportW, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	c.call(s, "Page.navigate", map[string]any{"url": url}, nil)
	c.waitEvent(s, "Page.loadEventFired")

	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	c.call(s, "Runtime.evaluate", map[string]any{"returnByValue": true, "expression": probeScript}, &eval)
	var page pageProbe
	if err := json.Unmarshal([]byte(eval.Result.Value), &page); err != nil {
		t.Fatalf("page probe returned %.300q: %v", eval.Result.Value, err)
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
	return page, c.events, png
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
	tests := []struct {
		name     string
		runs     []fixtureRun
		want     []string // charts
		artifact string   // screenshot file
	}{
		{"ab", []fixtureRun{fixtureA, fixtureB}, []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput",
			"breakdown-1", "breakdown-2", "timeline-1", "timeline-2", "quality-1", "quality-2"}, "report-browser.png"},
		{"demo", []fixtureRun{fixtureDemo}, []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput",
			"breakdown-1", "timeline-1", "quality-1"}, "report-demo.png"},
		{"demo-6", []fixtureRun{fixtureDemo6}, []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput",
			"breakdown-1", "timeline-1", "quality-1"}, "report-demo-6.png"},
		{"long names", []fixtureRun{fixtureLongNames}, []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput",
			"breakdown-1", "timeline-1", "quality-1"}, "report-long-names.png"},
		{"one stage", []fixtureRun{fixtureOne}, []string{"ttft", "tpot", "itl", "ntpot", "e2e", "throughput", "tokens", "goodput",
			"breakdown-1", "timeline-1", "quality-1"}, "report-one-stage.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := writeReport(t, tt.runs...)
			index, err := filepath.Abs(filepath.Join(out, IndexName))
			if err != nil {
				t.Fatal(err)
			}
			url := "file://" + index
			page, events, png := browse(t, bin, url)
			for _, p := range append(chartProblems(page.Charts, tt.want), fitProblems(page)...) {
				t.Error(p)
			}
			for _, p := range pageProblems(events, url) {
				t.Errorf("index.html: %s; want no console error and no network request", p)
			}
			saveScreenshot(t, png, tt.artifact)
		})
	}
}

// chartProblems lists what is wrong with the charts: a wanted chart missing, or one not drawn,
// or not readable, or without hover titles: two texts of a chart overlap (bar labels above
// all), a tick label has more than six significant digits, a point or bar lacks a titled
// target that the pointer reaches.
func chartProblems(charts []chartProbe, want []string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	got := map[string]bool{}
	for _, ch := range charts {
		got[ch.ID] = true
		if ch.W < 300 || ch.H < 200 || ch.Shapes < 10 || ch.Texts < 5 {
			bad("chart %s is %dx%d px with %d paths and %d texts; want a drawn chart (>= 300x200, >= 10 paths, >= 5 texts)", ch.ID, ch.W, ch.H, ch.Shapes, ch.Texts)
		}
		if ch.Targets == 0 || ch.Titled != ch.Targets || ch.Inside != ch.Targets {
			bad("chart %s has %d hover targets, %d titled, %d inside the chart; want every point and bar titled and inside", ch.ID, ch.Targets, ch.Titled, ch.Inside)
		}
		if ch.Topmost != ch.Sampled {
			bad("chart %s: the pointer reaches %d of %d sampled hover targets; want all (nothing drawn over them)", ch.ID, ch.Topmost, ch.Sampled)
		}
		if ch.Areas == 0 {
			bad("chart %s declares no plot area; want a rect.plot-area per plot", ch.ID)
		}
		for _, c := range ch.Covered {
			bad("chart %s: a legend covers the data point %q; want every legend off the data", ch.ID, c)
		}
		for _, d := range ch.Outside {
			bad("chart %s: a dashed line (%s...) leaves the plot area; want lines inside the plot", ch.ID, d)
		}
		if !strings.HasPrefix(ch.Sample, "stage ") && !strings.HasPrefix(ch.Sample, "run-") {
			bad("chart %s: a hover title reads %q; want it to name the stage", ch.ID, ch.Sample)
		}
		for _, l := range ch.Labels {
			if n := sigDigits(l.S); n > 6 {
				bad("chart %s: label %q has %d significant digits; want at most 6", ch.ID, l.S, n)
			}
		}
		for i, a := range ch.Labels {
			for _, b := range ch.Labels[i+1:] {
				if overlap(a, b) {
					bad("chart %s: texts %q %+v and %q %+v overlap", ch.ID, a.S, a, b.S, b)
				}
			}
		}
	}
	for _, id := range want {
		if !got[id] {
			bad("index.html lacks chart %s; has %v", id, got)
		}
	}
	if len(charts) != len(want) {
		bad("index.html has %d charts; want %d", len(charts), len(want))
	}
	return out
}

// fitProblems lists what is wider than the window: the page must scroll only down, and every
// table fit the box it sits in (so its scroll bar is never needed at this width).
func fitProblems(page pageProbe) []string {
	var out []string
	if page.ClientW != viewportW || page.ScrollW > page.ClientW {
		out = append(out, fmt.Sprintf("page is %d px wide in a %d px viewport (window %d); want no horizontal overflow", page.ScrollW, page.ClientW, viewportW))
	}
	for _, tb := range page.Tables {
		if tb.W > tb.Room+0.5 {
			out = append(out, fmt.Sprintf("table %q is %.0f px wide in %.0f px; want it to fit at %d px", tb.Head, tb.W, tb.Room, viewportW))
		}
		for _, w := range tb.Wrapped {
			out = append(out, fmt.Sprintf("table %q: the label %q wraps; want every stage and run label on one line", tb.Head, w))
		}
	}
	return out
}

// overlap reports whether two text boxes overlap by more than a pixel each way (touching
// lines of a legend do not count).
func overlap(a, b textBox) bool {
	return min(a.R, b.R)-max(a.L, b.L) > 1 && min(a.B, b.B)-max(a.T, b.T) > 1
}

// numberLabel matches a tick label: a number with an optional unit or thousands suffix.
var numberLabel = regexp.MustCompile(`^-?[0-9]*\.?[0-9]+(ns|µs|ms|s|k|M)?$`)

// sigDigits returns the significant digits of a numeric label (leading zeros do not count;
// 40000 has five), 0 for any other text.
func sigDigits(s string) int {
	if !numberLabel.MatchString(s) {
		return 0
	}
	digits := strings.TrimLeft(strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s), "0")
	return len(digits)
}

// saveScreenshot writes the page's screenshot to $WIREBENCH_ARTIFACTS (default: a folder in
// the temporary directory) for people to look at.
func saveScreenshot(t *testing.T, png []byte, name string) {
	t.Helper()
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
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("write screenshot artifact: %v", err)
	}
	t.Logf("screenshot artifact: %s", p)
}

// TestBrowserSeesProblems checks the checker: a page with an exception, a console error and a
// request to 127.0.0.1 must produce all three; an empty chart must show as empty; overlapping
// texts, a tick label with float noise, untitled or covered hover targets, a table wider than
// the window, a legend over a point, a dashed line off the plot and a wrapped stage label must
// each be found.
func TestBrowserSeesProblems(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (Debian: apt-get install -y chromium); skipping the browser test")
	}
	path := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><body><figure class="chart" data-chart="empty"><svg width="10" height="10"></svg></figure>
<figure class="chart" data-chart="bad"><svg width="400" height="300" viewBox="0 0 400 300">
<text x="10" y="20">sweep-00</text><text x="30" y="20">sweep-01</text><text x="10" y="100">1.2000000000000002</text>
<g class="hover"><circle cx="50" cy="50" r="5"><title>stage 0</title></circle><circle cx="90" cy="50" r="5"></circle>
<circle cx="130" cy="50" r="5"><title>stage 2</title></circle></g><rect x="120" y="40" width="20" height="20"/>
<g class="geometry" visibility="hidden"><rect class="plot-area" x="0" y="0" width="200" height="200"/><rect class="legend-box" x="40" y="40" width="20" height="20"/></g>
<path d="M10,10L390,290" style="fill:none;stroke:#888888;stroke-dasharray:4,4"/></svg></figure>
<table><tr><th><div style="width: 2000px">wide</div></th></tr></table>
<table><tr><th>stage</th></tr><tr><td><div style="width: 40px; white-space: normal">sweep-00 sweep-01</div></td></tr></table>
<img src="http://127.0.0.1:9/x.png"><script>console.error("boom"); notDefined();</script></body></html>`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	page, events, _ := browse(t, bin, url)
	probs := strings.Join(pageProblems(events, url), "\n")
	for _, want := range []string{"page threw", "console error", "request: http://127.0.0.1:9/x.png"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems of the bad page = %q; want one containing %q", probs, want)
		}
	}
	if len(page.Charts) != 2 || page.Charts[0].W >= 300 {
		t.Errorf("charts of the bad page = %+v; want a tiny chart first", page.Charts)
	}
	found := strings.Join(append(chartProblems(page.Charts, []string{"empty", "bad"}), fitProblems(page)...), "\n")
	for _, want := range []string{
		"chart empty is",   // not drawn
		`texts "sweep-00"`, // overlapping labels
		`label "1.2000000000000002" has 17 significant digits`,   // float noise
		"3 hover targets, 2 titled",                              // an untitled point
		"the pointer reaches 2 of 3",                             // a point under a rectangle
		"page is",                                                // wider than the window
		`table "0: wide .. wide" is`,                             // and a table with it
		`a legend covers the data point "stage 0"`,               // a legend over a point
		"a dashed line (M10,10L390,290...) leaves the plot area", // a line off the plot
		`the label "sweep-00 sweep-01" wraps`,                    // a stage label on two lines
	} {
		if !strings.Contains(found, want) {
			t.Errorf("the checks found:\n%s\nwant a problem containing %q", found, want)
		}
	}
}
