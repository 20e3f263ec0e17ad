package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Limits of the comparison the table ends with (issue 24): wherever vegeta's server-side E2E p99
// is under fairP99, wirebench's server-side p50 and p99 (TTFT and E2E) must be within fairRatio
// of vegeta's, and its CPU per request at most vegeta's.
const (
	fairP99   = 10 * time.Millisecond
	fairRatio = 1.2
)

// writeTable prints one Markdown row per case: the server's latencies under each client and
// their ratio, what it served, each client's CPU per request and the connections it accepted;
// then how wirebench compares where the server was not saturated.
func writeTable(w io.Writer, o options, keys []caseKey, results map[caseKey]map[string]result) {
	fmt.Fprintln(w, "Server-side latencies are the simulator's own (from reading a request to writing its first token / last event), vegeta / wirebench (wirebench ÷ vegeta).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| simulator | rate/s | tokens | server TTFT p50 | server TTFT p99 | server E2E p50 | server E2E p99 | served | client CPU per request | server CPU per request | connections | wirebench trust, notes |")
	fmt.Fprintln(w, "|---|---:|---:|---|---|---|---|---|---|---|---|---|")
	var judged, fair, cheaper int
	var unfair []string
	for _, k := range keys {
		v, wb := results[k]["vegeta"], results[k]["wirebench"]
		row := []string{simName(o.sims[k.sim]), fmtInt(int64(k.rate)), strconv.Itoa(k.tokens)}
		if v.failed != nil || wb.failed != nil {
			row = append(row, "–", "–", "–", "–", "–", "–", "–", "–", mdEscape(fmt.Sprintf("failed: vegeta %v; wirebench %v", v.failed, wb.failed)))
			fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
			continue
		}
		ok := true
		for _, c := range []struct {
			a, b hist
			p    float64
		}{{v.served.ttft, wb.served.ttft, 0.5}, {v.served.ttft, wb.served.ttft, 0.99}, {v.served.e2e, wb.served.e2e, 0.5}, {v.served.e2e, wb.served.e2e, 0.99}} {
			a, b := c.a.quantile(c.p), c.b.quantile(c.p)
			row = append(row, fmt.Sprintf("%s / %s (%s)", fmtDur(a), fmtDur(b), ratio(b, a)))
			ok = ok && float64(b) <= fairRatio*float64(a)
		}
		row = append(row, fmt.Sprintf("%s / %s", fmtInt(v.served.ok), fmtInt(wb.served.ok)),
			fmt.Sprintf("%s / %s", fmtDur(v.cpuPerRequest()), fmtDur(wb.cpuPerRequest())),
			fmt.Sprintf("%s / %s (%s)", fmtDur(v.serverCPUPerRequest()), fmtDur(wb.serverCPUPerRequest()), ratio(wb.serverCPUPerRequest(), v.serverCPUPerRequest())),
			fmt.Sprintf("%s / %s", fmtInt(v.served.conns), fmtInt(wb.served.conns)),
			mdEscape(joinNonEmpty("; ", wb.trust, wb.note, vegetaNote(v))))
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
		if v.served.e2e.quantile(0.99) < fairP99 {
			judged++
			if ok {
				fair++
			} else {
				unfair = append(unfair, fmt.Sprintf("%s %d/s ×%d", simName(o.sims[k.sim]), k.rate, k.tokens))
			}
			if wb.cpuPerRequest() <= v.cpuPerRequest() {
				cheaper++
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Where vegeta's server-side E2E p99 was under %v (%d cases): wirebench's server-side p50 and p99 within %.1f× of vegeta's in %d", fairP99, judged, fairRatio, fair)
	if len(unfair) > 0 {
		fmt.Fprintf(w, " (not: %s)", strings.Join(unfair, "; "))
	}
	fmt.Fprintf(w, "; wirebench's client CPU per request at most vegeta's in %d.\n", cheaper)
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func vegetaNote(v result) string {
	if v.note == "" {
		return ""
	}
	return "vegeta " + v.note
}

// ratio formats b / a: 1.06×, or – when a is 0.
func ratio(b, a time.Duration) string {
	if a <= 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(b)/float64(a), 'f', 2, 64) + "×"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown model"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown model"
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// fmtInt writes n with thousands separators (1,000).
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
