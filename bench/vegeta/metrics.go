package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// serverMetrics is what the bench reads of the simulator's /metrics.
type serverMetrics struct {
	ok, accepted float64
	ttft, e2e    hist
}

// serverDelta is what the server did between two scrapes.
type serverDelta struct {
	ok, conns int64
	ttft, e2e hist
}

// hist is a Prometheus histogram: cumulative counts at upper bounds (seconds, ascending; the
// last is +Inf).
type hist struct {
	le  []float64
	cum []float64
}

// scrape reads the simulator's request count, accepted connections and served histograms. Its
// own connection is one the server accepts (DisableKeepAlives: one per scrape).
func scrape(base string) (serverMetrics, error) {
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return serverMetrics{}, fmt.Errorf("scrape %s/metrics: %w", base, err)
	}
	defer resp.Body.Close()
	var m serverMetrics
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, v, ok := parseSample(line)
		if !ok {
			continue
		}
		switch name {
		case "vllm:request_success_total":
			m.ok = v
		case "wirebench_sim:connections_accepted_total":
			m.accepted = v
		case "wirebench_sim:served_ttft_seconds_bucket":
			m.ttft.add(labels, v)
		case "wirebench_sim:served_e2e_seconds_bucket":
			m.e2e.add(labels, v)
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("scrape %s/metrics: %w", base, err)
	}
	if len(m.e2e.le) == 0 {
		return m, fmt.Errorf("scrape %s/metrics: no wirebench_sim:served_e2e_seconds (a wirebench older than its served histograms?)", base)
	}
	return m, nil
}

// parseSample splits `name{labels} value`.
func parseSample(line string) (name, labels string, v float64, ok bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return "", "", 0, false
	}
	name = line[:i]
	if j := strings.IndexByte(name, '{'); j >= 0 {
		name, labels = name[:j], name[j:]
	}
	return name, labels, v, true
}

// add records a bucket sample with its le label.
func (h *hist) add(labels string, v float64) {
	_, rest, ok := strings.Cut(labels, `le="`)
	le, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		return
	}
	b, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
	if err != nil {
		return
	}
	h.le = append(h.le, b)
	h.cum = append(h.cum, v)
	sort.Sort(h)
}

func (h *hist) Len() int           { return len(h.le) }
func (h *hist) Less(i, j int) bool { return h.le[i] < h.le[j] }
func (h *hist) Swap(i, j int) {
	h.le[i], h.le[j] = h.le[j], h.le[i]
	h.cum[i], h.cum[j] = h.cum[j], h.cum[i]
}

// since returns what m counted after before.
func (m serverMetrics) since(before serverMetrics) serverDelta {
	// The after scrape's own connection was accepted before the counter was read.
	return serverDelta{ok: int64(m.ok - before.ok), conns: int64(m.accepted-before.accepted) - 1,
		ttft: m.ttft.minus(before.ttft), e2e: m.e2e.minus(before.e2e)}
}

func (h hist) minus(b hist) hist {
	out := hist{le: h.le, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		out.cum[i] = h.cum[i]
		if i < len(b.cum) {
			out.cum[i] -= b.cum[i]
		}
	}
	return out
}

// quantile is the q-quantile as Prometheus's histogram_quantile computes it: linear within the
// bucket that holds rank q × count (from 0 for the first); the largest finite bound when the
// rank falls in +Inf. 0 without observations.
func (h hist) quantile(q float64) time.Duration {
	n := len(h.cum)
	if n == 0 || h.cum[n-1] == 0 {
		return 0
	}
	rank := q * h.cum[n-1]
	i := sort.SearchFloat64s(h.cum, rank)
	if i >= n-1 {
		return seconds(h.le[n-2])
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.le[i-1], h.cum[i-1]
	}
	in := h.cum[i] - below
	if in <= 0 {
		return seconds(h.le[i])
	}
	return seconds(lo + (h.le[i]-lo)*(rank-below)/in)
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }

// tcpOutSegs is the host's count of TCP segments sent (/proc/net/snmp, Tcp OutSegs). On
// loopback both ends' segments are this host's, so its change over a run is every segment of
// the run: the server's data and each ACK the client sent back (and anything else the host
// sent meanwhile; the bench runs on a quiet machine).
func tcpOutSegs() (int64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	return snmpField(string(b), "Tcp:", "OutSegs")
}

// snmpField finds field in /proc/net/snmp's text: a header line and a value line per protocol,
// both starting with proto.
func snmpField(text, proto, field string) (int64, error) {
	var header []string
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != proto {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		if i := slices.Index(header, field); i > 0 && i < len(f) {
			return strconv.ParseInt(f[i], 10, 64)
		}
		break
	}
	return 0, fmt.Errorf("/proc/net/snmp: no %s %s", proto, field)
}
