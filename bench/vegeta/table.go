package main

import (
	"fmt"
	"io"
	"os"
	"slices"
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

// writeTable prints one Markdown row per case, vegeta against the wirebench client wbClient
// (clientWirebench or clientAtVegeta): the server's latencies under each and their ratio, what
// it served, each client's CPU per request, the connections it accepted and the TCP segments
// per request; then how wirebench compares where the server was not saturated.
func writeTable(w io.Writer, o options, keys []caseKey, results map[caseKey]map[string][]result, wbClient string) {
	if wbClient == clientAtVegeta {
		fmt.Fprintf(w, "The same, with wirebench sending at the send times of the vegeta run just before it (vegeta's results' timestamps replayed as a trace): both clients offer the server the same load.\n\n")
	} else {
		fmt.Fprintf(w, "Server-side latencies are the simulator's own (from reading a request to writing its first token / last event), vegeta / wirebench (wirebench ÷ vegeta); every figure is the median of %d runs per client.\n\n", o.repeat)
	}
	fmt.Fprintln(w, "| simulator | rate/s | tokens | server TTFT p50 | server TTFT p99 | server E2E p50 | server E2E p99 | served | client CPU per request | server CPU per request | connections | TCP segments per request | wirebench trust, notes |")
	fmt.Fprintln(w, "|---|---:|---:|---|---|---|---|---|---|---|---|---|---|")
	var judged, fair, cheaper int
	var unfair []string
	for _, k := range keys {
		row := []string{simName(o.sims[k.sim]), fmtInt(int64(k.rate)), strconv.Itoa(k.tokens)}
		vs, wbs := results[k][clientVegeta], results[k][wbClient]
		if err := firstFailure(vs, wbs); err != "" {
			row = append(row, "–", "–", "–", "–", "–", "–", "–", "–", "–", mdEscape(err))
			fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
			continue
		}
		v, wb := medianFigures(vs), medianFigures(wbs)
		ok := true
		for _, c := range [][2]time.Duration{{v.ttft50, wb.ttft50}, {v.ttft99, wb.ttft99}, {v.e2e50, wb.e2e50}, {v.e2e99, wb.e2e99}} {
			row = append(row, fmt.Sprintf("%s / %s (%s)", fmtDur(c[0]), fmtDur(c[1]), ratio(c[1], c[0])))
			ok = ok && float64(c[1]) <= fairRatio*float64(c[0])
		}
		row = append(row, fmt.Sprintf("%s / %s", fmtInt(v.ok), fmtInt(wb.ok)),
			fmt.Sprintf("%s / %s", fmtDur(v.cpu), fmtDur(wb.cpu)),
			fmt.Sprintf("%s / %s (%s)", fmtDur(v.serverCPU), fmtDur(wb.serverCPU), ratio(wb.serverCPU, v.serverCPU)),
			fmt.Sprintf("%s / %s", fmtInt(v.conns), fmtInt(wb.conns)),
			fmt.Sprintf("%.1f / %.1f", v.segments, wb.segments),
			mdEscape(notes(vs, wbs)))
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
		if v.e2e99 < fairP99 {
			judged++
			if ok {
				fair++
			} else {
				unfair = append(unfair, fmt.Sprintf("%s %d/s ×%d", simName(o.sims[k.sim]), k.rate, k.tokens))
			}
			if wb.cpu <= v.cpu {
				cheaper++
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Where vegeta's server-side E2E p99 was under %v (%d cases), %s: server-side p50 and p99 within %.1f× of vegeta's in %d", fairP99, judged, wbClient, fairRatio, fair)
	if len(unfair) > 0 {
		fmt.Fprintf(w, " (not: %s)", strings.Join(unfair, "; "))
	}
	fmt.Fprintf(w, "; client CPU per request at most vegeta's in %d.\n", cheaper)
}

// firstFailure describes the first failed run of a case, or returns "".
func firstFailure(vs, wbs []result) string {
	for _, r := range vs {
		if r.failed != nil {
			return fmt.Sprintf("failed: vegeta %v", r.failed)
		}
	}
	for _, r := range wbs {
		if r.failed != nil {
			return fmt.Sprintf("failed: wirebench %v", r.failed)
		}
	}
	if len(vs) == 0 || len(wbs) == 0 {
		return "not run (interrupted)"
	}
	return ""
}

// notes lists wirebench's trust per run (green/green/amber) and every distinct note of either
// client.
func notes(vs, wbs []result) string {
	var trust, seen []string
	add := func(n string) {
		if n != "" && !slices.Contains(seen, n) {
			seen = append(seen, n)
		}
	}
	for _, r := range wbs {
		trust = append(trust, r.trust)
		add(r.note)
	}
	for _, r := range vs {
		add(vegetaNote(r))
	}
	return joinNonEmpty("; ", append([]string{strings.Join(trust, "/")}, seen...)...)
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
