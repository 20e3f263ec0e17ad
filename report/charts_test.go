package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/wirebench/wirebench/schemas"
)

// svgTarget is a hover target read back from a chart's SVG.
type svgTarget struct {
	X, Y, W, H float64 // circle: centre X, Y; rect: corner and size (SVG coordinates, y down)
	Rect       bool
	Title      string
}

// readSVG parses a chart's SVG: its height (viewBox), the vertices of every path gonum drew (in
// the canvas's coordinates, y up) and the hover targets.
func readSVG(t *testing.T, svg []byte) (height float64, vertices [][2]float64, targets []svgTarget) {
	t.Helper()
	num := regexp.MustCompile(`-?[0-9.]+`)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	inHover, inTitle := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse svg: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			f := func(k string) float64 { v, _ := strconv.ParseFloat(attr[k], 64); return v }
			switch e.Name.Local {
			case "svg":
				vb := strings.Fields(attr["viewBox"])
				height, _ = strconv.ParseFloat(vb[3], 64)
			case "g":
				inHover = inHover || attr["class"] == "hover"
			case "path":
				ns := num.FindAllString(attr["d"], -1)
				for i := 0; i+1 < len(ns); i += 2 {
					x, _ := strconv.ParseFloat(ns[i], 64)
					y, _ := strconv.ParseFloat(ns[i+1], 64)
					vertices = append(vertices, [2]float64{x, y})
				}
			case "circle":
				if inHover {
					targets = append(targets, svgTarget{X: f("cx"), Y: f("cy")})
				}
			case "rect":
				if inHover {
					targets = append(targets, svgTarget{X: f("x"), Y: f("y"), W: f("width"), H: f("height"), Rect: true})
				}
			case "title":
				inTitle = true
			}
		case xml.EndElement:
			inTitle = inTitle && e.Name.Local != "title"
		case xml.CharData:
			if inTitle && len(targets) > 0 {
				targets[len(targets)-1].Title += string(e)
			}
		}
	}
	return height, vertices, targets
}

func chartByID(t *testing.T, cs []*chart, id string) *chart {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no chart %s", id)
	return nil
}

// TestHoverTitles reads the charts' SVG back: every point of a latency profile has a target
// whose title gives its run, stage, load and value, centred on a vertex of the line gonum drew;
// every bar of the quality chart has one with its stage's figure.
func TestHoverTitles(t *testing.T) {
	dir := t.TempDir()
	runs, err := loadRuns([]string{fixtureA.write(t, dir), fixtureB.write(t, dir)}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := buildCharts(runs)
	if err != nil {
		t.Fatal(err)
	}

	height, vertices, targets := readSVG(t, chartByID(t, cs, "ttft").SVG)
	want := map[string]bool{}
	for _, r := range runs {
		for _, s := range r.Stages {
			for _, p := range []struct {
				name string
				v    *int64
			}{{"p50", s.TTFT.P50}, {"p90", s.TTFT.P90}, {"p99", s.TTFT.P99}} {
				want[fmt.Sprintf("%s · stage %s · %s req/s · TTFT %s %s", r.Label, s.Name, fmtRate(*s.AchievedRate), p.name, fmtDur(*p.v))] = true
			}
		}
	}
	if !want[`run-a · stage r1 · 1.00 req/s · TTFT p50 42.5ms`] {
		t.Fatalf("the expected titles lack run A's first p50 (42.5ms in the stage table): %v", want)
	}
	if len(targets) != len(want) {
		t.Errorf("ttft chart has %d hover targets; want %d (3 percentiles × 8 stages × 2 runs)", len(targets), len(want))
	}
	for _, tg := range targets {
		if !want[tg.Title] {
			t.Errorf("ttft target titled %q; want one of the data's titles", tg.Title)
		}
		delete(want, tg.Title)
		if !onVertex(tg.X, height-tg.Y, vertices) {
			t.Errorf("ttft target %q at (%.2f, %.2f) is on no vertex of a drawn line", tg.Title, tg.X, tg.Y)
		}
	}
	for w := range want {
		t.Errorf("ttft chart lacks a target titled %q", w)
	}

	_, _, bars := readSVG(t, chartByID(t, cs, "quality-1").SVG)
	if got, want := len(bars), len(qualityPanels)*len(runs[0].Stages); got != want {
		t.Errorf("quality-1 has %d hover targets; want %d (a bar per panel and stage)", got, want)
	}
	for _, want := range []string{`stage r24 · rate fidelity (achieved / planned): 0.930`, `stage r24 · lateness: send lag p99: 4.23ms`} {
		if !hasTitle(bars, want) {
			t.Errorf("quality-1 lacks a bar titled %q", want)
		}
	}
	for _, b := range bars {
		if !b.Rect || b.W <= 0 || b.H <= 0 {
			t.Errorf("quality-1 target %+v; want a rectangle of positive size", b)
		}
	}
}

// onVertex reports whether (x, y) is within 0.01 of one of the vertices.
func onVertex(x, y float64, vertices [][2]float64) bool {
	for _, v := range vertices {
		if math.Abs(v[0]-x) < 0.01 && math.Abs(v[1]-y) < 0.01 {
			return true
		}
	}
	return false
}

func hasTitle(ts []svgTarget, title string) bool {
	for _, t := range ts {
		if t.Title == title {
			return true
		}
	}
	return false
}

// TestLogLatencyAxis checks that a profile from 20 ms to 40 s gets a log axis whose labels
// include both ends, and a narrow one a linear axis from 0.
func TestLogLatencyAxis(t *testing.T) {
	st := func(p50 int64) schemas.Stage {
		return schemas.Stage{Stage: 0, Name: "s", AchievedRate: ptr(1.0), TTFT: schemas.Dist{Count: 1, P50: &p50, P90: &p50, P99: &p50}}
	}
	wide := &run{Label: "w", Stages: []schemas.Stage{st(20e6), st(40e9)}}
	wide.Stages[1].Stage, wide.Stages[1].AchievedRate = 1, ptr(2.0)
	narrow := &run{Label: "n", Stages: []schemas.Stage{st(8e6), st(25e6)}}
	narrow.Stages[1].Stage, narrow.Stages[1].AchievedRate = 1, ptr(2.0)
	for _, tt := range []struct {
		r      *run
		label  string
		labels []string
	}{
		{wide, "TTFT (log scale)", []string{"10ms", "100ms", "1s", "10s", "50s"}},
		{narrow, "TTFT", []string{"0", "5ms", "10ms", "15ms", "20ms", "25ms"}},
	} {
		c := latencyChart("ttft", "TTFT", func(s *schemas.Stage) schemas.Dist { return s.TTFT }, nil, []*run{tt.r})
		if err := c.render(); err != nil {
			t.Fatal(err)
		}
		texts := svgTexts(t, c.SVG)
		if !strings.Contains(texts, "|"+tt.label+"|") {
			t.Errorf("%s: chart texts %s; want the axis label %q", tt.r.Label, texts, tt.label)
		}
		if !strings.Contains(texts, "|"+strings.Join(tt.labels, "|")+"|") {
			t.Errorf("%s: chart texts %s; want the y ticks %v in a row", tt.r.Label, texts, tt.labels)
		}
	}
}

// svgTexts returns the texts of an SVG joined by |, with | at both ends.
func svgTexts(t *testing.T, svg []byte) string {
	t.Helper()
	var out []string
	dec := xml.NewDecoder(bytes.NewReader(svg))
	in := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			in = e.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				out = append(out, string(e))
			}
		}
	}
	return "|" + strings.Join(out, "|") + "|"
}

// oklab returns c in the OKLab space, where the distance between two colours follows how
// different people see them (0.02 is about the least difference one notices).
func oklab(c color.Color) [3]float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		x := float64(v) / 0xffff
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	lr, lg, lb := lin(r), lin(g), lin(b)
	l := math.Cbrt(0.4122214708*lr + 0.5363325363*lg + 0.0514459929*lb)
	m := math.Cbrt(0.2119034982*lr + 0.6806995451*lg + 0.1073969566*lb)
	s := math.Cbrt(0.0883024619*lr + 0.2817188376*lg + 0.6299787005*lb)
	return [3]float64{0.2104542553*l + 0.7936177850*m - 0.0040720468*s, 1.9779984951*l - 2.4285922050*m + 0.4505937099*s,
		0.0259040371*l + 0.7827717662*m - 0.8086757660*s}
}

func colorDistance(a, b color.Color) float64 {
	x, y := oklab(a), oklab(b)
	return math.Sqrt((x[0]-y[0])*(x[0]-y[0]) + (x[1]-y[1])*(x[1]-y[1]) + (x[2]-y[2])*(x[2]-y[2]))
}

// TestStageColors: every two stages of a run of up to ten differ by at least 0.10 in OKLab
// (the demo's six stages were two alike dark purples on the old sequential scale), none is
// near the verdicts' red or amber, and up to 40 stages every stage differs from its
// neighbours and no two are the same colour.
func TestStageColors(t *testing.T) {
	for i := range len(stagePalette) {
		for j := range i {
			if d := colorDistance(stageColor(i), stageColor(j)); d < 0.10 {
				t.Errorf("stages %d and %d: colours %v and %v are %.3f apart in OKLab; want >= 0.10", j, i, stageColor(j), stageColor(i), d)
			}
		}
		for _, v := range []color.Color{red, amber} {
			if d := colorDistance(stageColor(i), v); d < 0.10 {
				t.Errorf("stage %d: colour %v is %.3f from the verdict colour %v; want >= 0.10", i, stageColor(i), d, v)
			}
		}
	}
	const many = 40
	for i := 1; i < many; i++ {
		if d := colorDistance(stageColor(i), stageColor(i-1)); d < 0.10 {
			t.Errorf("neighbouring stages %d and %d are %.3f apart in OKLab; want >= 0.10", i-1, i, d)
		}
		for j := range i {
			if d := colorDistance(stageColor(i), stageColor(j)); d < 0.02 {
				t.Errorf("stages %d and %d of %d: colours %v and %v are %.3f apart; want every stage its own colour", j, i, many, stageColor(j), stageColor(i), d)
			}
		}
	}
}

// fixtureCharts writes the fixture runs and returns their loaded runs and rendered charts.
func fixtureCharts(t *testing.T, fs ...fixtureRun) ([]*run, []*chart) {
	t.Helper()
	dir := t.TempDir()
	var dirs []string
	for _, f := range fs {
		dirs = append(dirs, f.write(t, dir))
	}
	runs, err := loadRuns(dirs, quiet())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := buildCharts(runs)
	if err != nil {
		t.Fatal(err)
	}
	return runs, cs
}

// chartFixtures are the reports the geometry tests draw: an A/B comparison, the demo's six and
// twenty stages, long names and a single stage.
var chartFixtures = []struct {
	name string
	runs []fixtureRun
}{
	{"ab", []fixtureRun{fixtureA, fixtureB}},
	{"demo-6", []fixtureRun{fixtureDemo6}},
	{"demo", []fixtureRun{fixtureDemo}},
	{"long names", []fixtureRun{fixtureLongNames}},
	{"one stage", []fixtureRun{fixtureOne}},
}

// TestLegendsCoverNoData: in every plot of every chart, the legend's box lies inside the data
// area and covers no point's hover target, no bar and no vertex of a timeline's lines (the
// demo's goodput peak sat under its legend).
func TestLegendsCoverNoData(t *testing.T) {
	for _, fx := range chartFixtures {
		t.Run(fx.name, func(t *testing.T) {
			_, cs := fixtureCharts(t, fx.runs...)
			for _, c := range cs {
				if len(c.panels) == 0 {
					t.Errorf("chart %s recorded no plot", c.ID)
				}
				for _, p := range c.panels {
					if p.Legend.Size().X == 0 {
						continue
					}
					if !inside(p.Legend, p.Area) {
						t.Errorf("chart %s: legend box %v lies outside its data area %v", c.ID, p.Legend, p.Area)
					}
					if hit := covered(p.Legend, c.hover); hit != "" {
						t.Errorf("chart %s: legend box %v covers %s", c.ID, p.Legend, hit)
					}
				}
			}
		})
	}
}

// inside reports whether r lies within area.
func inside(r, area vg.Rectangle) bool {
	return r.Min.X >= area.Min.X && r.Max.X <= area.Max.X && r.Min.Y >= area.Min.Y && r.Max.Y <= area.Max.Y
}

// covered names a mark or line vertex of hs that box meets, "" when none.
func covered(box vg.Rectangle, hs *hoverSet) string {
	for _, m := range hs.marks {
		if r, ok := m.box(); ok && meetsAny(box, []vg.Rectangle{r}) {
			return fmt.Sprintf("the target of %q at %v", m.Title, r)
		}
	}
	for _, v := range hs.avoid {
		if meetsAny(box, []vg.Rectangle{{Min: v, Max: v}}) {
			return fmt.Sprintf("a line vertex at %v", v)
		}
	}
	return ""
}

// TestQualityLimitsAgreeWithVerdicts: in the measurement-quality panels whose dashed line is a
// verdict's limit, a bar past the limit is never in the colour of a passed verdict (the demo's
// "client's share of the lateness" bars stood at 95% over a "limit 50" line, blue); the caption
// says what a grey bar is.
func TestQualityLimitsAgreeWithVerdicts(t *testing.T) {
	for _, fx := range chartFixtures {
		runs, cs := fixtureCharts(t, fx.runs...)
		for _, r := range runs {
			for _, pn := range qualityPanels {
				if pn.fails == nil {
					continue
				}
				for i := range r.Stages {
					s := &r.Stages[i]
					if v := pn.get(s); !math.IsNaN(v) && pn.fails(v) && pn.barColor(s) == levelColors[schemas.TrustGreen] {
						t.Errorf("%s: stage %s's bar in %q is %.3g, past the limit %g, and coloured as passed", fx.name, s.Name, pn.title, v, pn.limit)
					}
				}
			}
		}
		if q := chartByID(t, cs, "quality-1"); !strings.Contains(q.Caption, "blames no one (grey bar)") {
			t.Errorf("%s: quality caption %q; want it to say what a grey bar is", fx.name, q.Caption)
		}
	}
}

// TestLatencyChartErrorBars: stages with 95% intervals get error bars and the caption says what
// they are; the hover title quotes the interval; a log axis leaves out a bar reaching 0.
func TestLatencyChartErrorBars(t *testing.T) {
	st := func(i int32, p50 int64) schemas.Stage {
		return schemas.Stage{Stage: i, Name: "s", AchievedRate: ptr(float64(i + 1)),
			TTFT:   schemas.Dist{Count: 3000, P50: &p50, P90: &p50, P99: &p50},
			TTFTCI: schemas.CI{P50Lo: ptr(p50 * 9 / 10), P50Hi: ptr(p50 * 11 / 10), P99Lo: ptr(p50 * 8 / 10), P99Hi: ptr(p50 * 13 / 10)}}
	}
	r := &run{Label: "r", Stages: []schemas.Stage{st(0, 20e6), st(1, 30e6)}}
	get := func(s *schemas.Stage) schemas.Dist { return s.TTFT }
	with := latencyChart("ttft", "TTFT", get, intervalColumns["ttft_ns"], []*run{r})
	without := latencyChart("ttft", "TTFT", get, nil, []*run{r})
	for _, c := range []*chart{with, without} {
		if err := c.render(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(with.Caption, "Error bars: 95% intervals") || strings.Contains(without.Caption, "Error bars") {
		t.Errorf("captions %q / %q; want error bars explained only where drawn", with.Caption, without.Caption)
	}
	if !strings.Contains(string(with.SVG), "TTFT p50 20.0ms [18.0ms, 22.0ms]") {
		t.Errorf("chart with intervals: no hover title quoting the p50 interval")
	}
	var eb errorBars
	eb.add(1, 20, 18, 22)
	if !eb.draw(plot.New(), latencyScale{}) || !eb.draw(plot.New(), latencyScale{log: true}) {
		t.Errorf("a bar from 18 to 22 ms was not drawn")
	}
	eb = errorBars{}
	eb.add(1, 20, 0, 22)
	if eb.draw(plot.New(), latencyScale{log: true}) {
		t.Errorf("a bar from 0 was drawn on a log axis")
	}
}
