package main

import (
	"context"
	"crypto/tls"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// The capture binary against a scripted server that answers every other request with one of
// the broken responses of hostile.Cases (a 200 HTML page, a stream without [DONE], a cut inside
// the chunked framing, an error event, gzip, endless lines, bodies and headers, headers that
// stop, ...), over plain http and over TLS: the run completes, every planned request is one row,
// each broken answer has its error kind and keeps the events before the breakage, the good
// answers between them are ok, and nothing hangs. Over TLS the same kinds as over plain http, and
// the events carry kernel times as on plain http.
func TestCaptureAgainstHostileServer(t *testing.T) {
	overPlainAndTLS(t, func(t *testing.T, srvTLS *tls.Config) {
		srv, err := hostile.Start(hostile.Cases, srvTLS)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		planned := 2 * len(hostile.Cases)
		run := captureRun(t, srv.URL, construn.Stage{Rate: 10, Duration: time.Duration(planned) * 100 * time.Millisecond, MaxTokens: 4})
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "capture", run, "--workers", "1", "--connections", "2", "--quiet", "--tap", "off",
			"--gap-timeout", "1s", "--ttft-timeout", "2s")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("capture: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "panic") {
			t.Errorf("capture output mentions a panic:\n%s", out)
		}
		m, reqs, chunks := rawFiles(t, run)
		if m.Status != schemas.StatusComplete {
			t.Errorf("manifest status %q (missing %q); want complete", m.Status, m.Missing)
		}
		checkHostileRows(t, reqs, srv.Log(), planned)
		checkKernelTimes(t, srvTLS != nil, reqs, chunks)
		t.Logf("%d requests in %v", len(reqs), time.Since(t0).Round(time.Millisecond))
	})
}

// checkHostileRows matches each row to the answer the server gave it (by the client's port and
// the request's place on its connection) and checks its kind.
func checkHostileRows(t *testing.T, reqs []schemas.RawRequest, served []hostile.Served, planned int) {
	t.Helper()
	seqs := map[int64]bool{}
	byPort := map[int32][]schemas.RawRequest{}
	for _, r := range reqs {
		if seqs[r.Seq] {
			t.Errorf("seq %d recorded twice", r.Seq)
		}
		seqs[r.Seq] = true
		if r.LocalPort == nil {
			t.Errorf("seq %d: no local port (%s: %s); want every request on a connection", r.Seq, r.ErrorKind, r.ErrorMessage)
			continue
		}
		byPort[*r.LocalPort] = append(byPort[*r.LocalPort], r)
	}
	if len(seqs) != planned || len(served) != planned {
		t.Fatalf("%d requests recorded, %d answered; want the %d planned", len(seqs), len(served), planned)
	}
	cases := map[string]hostile.Case{}
	for _, c := range hostile.Cases {
		cases[c.Name] = c
	}
	seen := map[string]bool{}
	for _, s := range served {
		rows := byPort[int32(s.Port)]
		sort.Slice(rows, func(i, j int) bool { return rows[i].SentNs < rows[j].SentNs })
		if s.N >= len(rows) {
			t.Errorf("port %d: answer %d (%q) has no row", s.Port, s.N, s.Case)
			continue
		}
		r := rows[s.N]
		if s.Case == "" {
			if r.ErrorKind != "" {
				t.Errorf("seq %d got a good answer; recorded %s: %s", r.Seq, r.ErrorKind, r.ErrorMessage)
			}
			continue
		}
		c := cases[s.Case]
		seen[s.Case] = true
		kind, msg := c.Kind, c.Message
		if r.ErrorKind != kind || !strings.Contains(r.ErrorMessage, msg) || (c.Chunks >= 0 && int(r.Chunks) != c.Chunks) {
			t.Errorf("%s (seq %d): %s %q with %d chunks; want %s containing %q with %d", s.Case, r.Seq, r.ErrorKind, r.ErrorMessage, r.Chunks, kind, msg, c.Chunks)
		}
	}
	if len(seen) != len(hostile.Cases) {
		t.Errorf("%d of %d cases served", len(seen), len(hostile.Cases))
	}
}

// checkKernelTimes checks that every event of a good answer has a kernel time, a quality of
// exact or upper_bound and a receive-stream offset (the tap's join key), and that every
// request on a new connection has its connect time (and over TLS its handshake).
func checkKernelTimes(t *testing.T, tls bool, reqs []schemas.RawRequest, chunks []schemas.RawChunk) {
	t.Helper()
	good := map[int64]bool{}
	for _, r := range reqs {
		good[r.Seq] = r.ErrorKind == ""
		https := r.TLSHandshakeNs != nil && *r.TLSHandshakeNs > 0 && r.TLSResumed != nil
		if !r.ConnReused && r.Status != 0 && (r.ConnectNs == nil || https != tls) {
			t.Errorf("seq %d on a new connection: connect_ns %v, tls_handshake_ns %v, tls_resumed %v; want the connect and, over TLS only, the handshake", r.Seq, r.ConnectNs, r.TLSHandshakeNs, r.TLSResumed)
		}
	}
	n := 0
	for _, ch := range chunks {
		if !good[ch.Seq] {
			continue
		}
		n++
		if ch.RxKernelNs == 0 || ch.RxStreamEnd == 0 || (ch.Quality != schemas.QualityExact && ch.Quality != schemas.QualityUpperBound) {
			t.Errorf("seq %d event %d: kernel %v, rx_stream_end %v, quality %s; want a kernel time, an offset, exact or upper_bound", ch.Seq, ch.Index, ch.RxKernelNs, ch.RxStreamEnd, ch.Quality)
			return
		}
	}
	if n == 0 {
		t.Errorf("no event of a good answer recorded")
	}
}
