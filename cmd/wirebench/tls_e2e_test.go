package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// proxy is a TLS-terminating nginx (Debian's package) on loopback in front of an upstream.
type proxy struct {
	URL      string // https://127.0.0.1:PORT
	PlainURL string // http://127.0.0.1:PORT: the same proxy without TLS
	CAFile   string // the CA that signed the proxy's certificate (and the client's)
	CertFile string // a client certificate from that CA, for mutual TLS
	KeyFile  string
	Dir      string
}

// startNginx starts nginx on loopback proxying to upstream as an LLM server's ingress would
// (HTTP/1.1 keep-alive upstream, proxy_buffering off so each event is forwarded as it comes),
// over TLS with a certificate for 127.0.0.1 from a CA the test makes, and over plain http.
// With clientCert the TLS port asks for a client certificate from that CA. The test is
// skipped where nginx is missing.
func startNginx(t testing.TB, upstream string, clientCert bool) proxy {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (apt-get install nginx-light): the https tests through a real TLS terminator are skipped")
		}
	}
	dir := t.TempDir()
	p := proxy{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client.key")}
	ca, err := hostile.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	_, srvCert, srvKey, err := ca.Issue(time.Now().Add(24*time.Hour), "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	_, cliCert, cliKey, err := ca.Issue(time.Now().Add(24*time.Hour), "wirebench client")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.pem": ca.PEM, "server.pem": srvCert, "server.key": srvKey, "client.pem": cliCert, "client.key": cliKey} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tlsAddr, plainAddr := freeAddr(t), freeAddr(t)
	verify := ""
	if clientCert {
		verify = "ssl_verify_client on; ssl_client_certificate ca.pem;"
	}
	up := strings.TrimPrefix(upstream, "http://")
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;
  upstream up { server %s; keepalive 64; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering off;
  server {
    listen %s ssl;
    ssl_certificate server.pem; ssl_certificate_key server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    %s
    location / { proxy_pass http://up; }
  }
  server {
    listen %s;
    location / { proxy_pass http://up; }
  }
}
`, up, tlsAddr, verify, plainAddr)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir+"/", "-c", "nginx.conf", "-e", "error.log")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for _, a := range []string{tlsAddr, plainAddr} {
		waitListening(t, a, func() string { b, _ := os.ReadFile(filepath.Join(dir, "error.log")); return out.String() + string(b) })
	}
	p.URL, p.PlainURL = "https://"+tlsAddr, "http://"+plainAddr
	return p
}

// waitListening waits (up to 10 s) until addr accepts a connection; logs says why not.
func waitListening(t testing.TB, addr string, logs func() string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not listen on %s: %v\n%s", addr, err, logs())
		}
	}
}

// tlsTarget is the target of a constant run through p's TLS port.
func (p proxy) tlsTarget(mutual bool) schemas.Target {
	tgt := schemas.Target{URL: p.URL, API: "completions", Model: "sim", TLS: schemas.TargetTLS{CAFile: p.CAFile}}
	if mutual {
		tgt.TLS.CertFile, tgt.TLS.KeyFile = p.CertFile, p.KeyFile
	}
	return tgt
}

// constantRun writes a constant-rate run against tgt.
func constantRun(t *testing.T, tgt schemas.Target, st construn.Stage) string {
	t.Helper()
	run := t.TempDir()
	if err := construn.Write(run, tgt, []construn.Stage{st}); err != nil {
		t.Fatal(err)
	}
	return run
}

// httpsCheck is what a run through the TLS port says about its events and bounds.
type httpsCheck struct {
	requests, ok, newConns, handshakes, resumed int
	events, kernel, exact, offsets              int
	ttftLoAboveZero                             int // ok requests whose TTFT interval does not start at 0
	tapped, tapInBounds, exactAtTap             int // events with a tap time; within [rx_after, rx_kernel]; exact events within the stamp allowance of it
	txTapped                                    int // ok requests whose last ciphertext byte the tap saw leave, at or after sent_ns
	stage                                       schemas.Stage
}

func (c httpsCheck) String() string {
	return fmt.Sprintf("%d requests (%d ok; %d new connections, %d handshakes, %d resumed); %d events: %d kernel-stamped, %d exact, %d with a stream offset; "+
		"%d ttft intervals off 0; tap: %d timed, %d inside the socket bounds, %d exact at the tap time, %d departures; stage exact %.4f, uncertainty %v (%s), client_bound %v %s",
		c.requests, c.ok, c.newConns, c.handshakes, c.resumed, c.events, c.kernel, c.exact, c.offsets, c.ttftLoAboveZero,
		c.tapped, c.tapInBounds, c.exactAtTap, c.txTapped, val(c.stage.ExactShare), time.Duration(val(c.stage.UncertaintyNs)), c.stage.UncertaintyFigure, c.stage.ClientBound, c.stage.ClientBoundReason)
}

// checkHTTPS aggregates run and reads what its files say about the events' times.
func checkHTTPS(t *testing.T, run string) httpsCheck {
	t.Helper()
	cv := boundsCoverage(t, run)
	_, reqs, chunks := rawFiles(t, run)
	c := httpsCheck{stage: cv.stage}
	for _, r := range reqs {
		c.requests++
		if r.ErrorKind == "" {
			c.ok++
		}
		if !r.ConnReused && r.ConnectNs != nil {
			c.newConns++
			if r.TLSHandshakeNs != nil && *r.TLSHandshakeNs > 0 && r.TLSResumed != nil {
				c.handshakes++
				if *r.TLSResumed {
					c.resumed++
				}
			}
		}
	}
	var tt *aggregate.TapTimes
	if m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName)); err == nil && m.Tap != nil && m.Tap.On {
		if tt, err = aggregate.LoadTapTimes(context.Background(), run); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range reqs {
		if tx, ok := tapTx(tt, r.Seq); ok && r.ErrorKind == "" && tx >= r.SentNs {
			c.txTapped++
		}
	}
	for _, ch := range chunks {
		c.events++
		if ch.RxKernelNs != 0 {
			c.kernel++
		}
		if ch.Quality == schemas.QualityExact {
			c.exact++
		}
		if ch.RxStreamEnd != 0 {
			c.offsets++
		}
		if tt == nil || ch.RxKernelNs == 0 || ch.RxAfterNs == 0 {
			continue
		}
		if ns, ok := tt.Rx[[2]int64{ch.Seq, int64(ch.Index)}]; ok {
			c.tapped++
			if ch.RxAfterNs <= ns && ns <= ch.RxKernelNs {
				c.tapInBounds++
			}
			if ch.Quality == schemas.QualityExact && ch.RxKernelNs-ns <= int64(schemas.DefaultStampAllowance) {
				c.exactAtTap++
			}
		}
	}
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.OK && r.TTFTLoNs != nil && *r.TTFTLoNs > 0 {
			c.ttftLoAboveZero++
		}
	}
	return c
}

// TestHTTPSThroughNginx: capture through a real TLS terminator (nginx) in front of the
// simulator, with the packet tap off and on. Every event has the kernel time, rx_after_ns and
// receive-stream offset of the TLS record that completed it, never an approx user time; TTFT
// intervals no longer start at 0; every new connection records its handshake and later ones
// resume the session; with the tap, every event is timed by the segment that carried its
// record's end, that time lies inside the event's socket bounds, and an exact event's kernel
// time is that segment's (within the stamp allowance: the segment after a record that only ends
// the chunked framing can stamp the read, as on plain http).
func TestHTTPSThroughNginx(t *testing.T) {
	sim := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	p := startNginx(t, sim, false)
	for _, tap := range []string{"off", "on"} {
		t.Run("tap-"+tap, func(t *testing.T) {
			if tap == "on" {
				needTap(t)
			}
			run := constantRun(t, p.tlsTarget(false), construn.Stage{Rate: 100, Duration: 2 * time.Second, InputTokens: 16, MaxTokens: 16})
			if _, stderr, err := wirebench(t, time.Minute, "capture", run, "--quiet", "--workers", "1", "--connections", "1", "--tap", tap); err != nil {
				t.Fatalf("capture: %v\n%s", err, stderr)
			}
			c := checkHTTPS(t, run)
			t.Logf("https through nginx, tap %s: %v", tap, c)
			if c.requests != 200 || c.ok != c.requests {
				t.Errorf("%v; want 200 requests, all ok", c)
			}
			if c.kernel != c.events || c.offsets != c.events || c.exact*2 < c.events {
				t.Errorf("%v; want every event kernel-stamped with a stream offset, most exact", c)
			}
			if c.ttftLoAboveZero*2 < c.ok {
				t.Errorf("%v; want most TTFT intervals to start after 0 (the socket's lower bound)", c)
			}
			if c.newConns == 0 || c.handshakes != c.newConns || c.resumed == 0 && c.newConns > 1 {
				t.Errorf("%v; want a handshake on every new connection, later ones resumed", c)
			}
			if tap == "on" && (c.tapped != c.events || c.tapInBounds != c.tapped || c.exactAtTap*10 < c.exact*9 || c.txTapped != c.ok) {
				t.Errorf("%v; want every event tapped, inside its socket bounds, 90%% of exact events within %v of their tap time, every request's departure tapped", c, schemas.DefaultStampAllowance)
			}
		})
	}
}

// TestHTTPSMutualTLS: `wirebench run` through nginx asking for a client certificate: with
// target.tls's cert_file and key_file every request is answered; without them the run stops
// in its first second with an error that names the target and gives nginx's reason (it
// answers 400; a server that refuses the handshake instead is TestTLSHandshakeErrors' case);
// with a CA that did not sign the proxy's certificate, that the certificate is not trusted.
func TestHTTPSMutualTLS(t *testing.T) {
	sim := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	p := startNginx(t, sim, true)
	other, err := hostile.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(p.Dir, "other-ca.pem")
	if err := os.WriteFile(otherCA, other.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	wrongCA := p.tlsTarget(true)
	wrongCA.TLS.CAFile = otherCA
	for _, tt := range []struct {
		name string
		tgt  schemas.Target
		want string // "" = the run succeeds
	}{
		{"client certificate", p.tlsTarget(true), ""},
		{"no client certificate", p.tlsTarget(false), "No required SSL certificate was sent"}, // nginx answers 400
		{"wrong CA", wrongCA, "not signed by a trusted CA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(constantRun(t, tt.tgt, construn.Stage{Rate: 20, Duration: 2 * time.Second, InputTokens: 8, MaxTokens: 4}), "constant.yaml")
			out := filepath.Join(t.TempDir(), "run")
			_, stderr, err := wirebench(t, time.Minute, "run", cfg, "-o", out, "--quiet", "--tap", "off")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("run: %v\n%s", err, stderr)
				}
				_, reqs, _ := rawFiles(t, out)
				for _, r := range reqs {
					if r.ErrorKind != "" {
						t.Fatalf("seq %d: %s: %s; want every request answered", r.Seq, r.ErrorKind, r.ErrorMessage)
					}
				}
				return
			}
			if err == nil || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, p.URL) || !strings.Contains(stderr, "first second") {
				t.Errorf("run: err %v; want a failure naming %s and %q in the first second; stderr:\n%s", err, p.URL, tt.want, stderr)
			}
		})
	}
}

// TestRunWithFaultMixOverTLS: the fault mix of TestRunWithFaultMix through nginx's TLS port:
// each fault lands in the same kind as on plain http.
func TestRunWithFaultMixOverTLS(t *testing.T) {
	p := startNginx(t, startFaultySim(t), false)
	checkFaultMix(t, p.tlsTarget(false))
}

// BenchmarkCaptureTLS runs capture through nginx in front of the simulator (20 ms / 5 ms, 16
// tokens) at 100 and 1,000 req/s, over nginx's plain port and over its TLS port, and reports
// what BenchmarkCapture does: compare the two's cpu_us/req (the TLS client's cost per request)
// and exact_share. `make bench` runs it; each case is a 3 s stage.
func BenchmarkCaptureTLS(b *testing.B) {
	p := startNginx(b, startSim(b, "--ttft", "20ms", "--itl", "5ms"), false)
	for _, rate := range []float64{100, 1000} {
		for _, mode := range []string{"plain", "tls"} {
			tgt := p.tlsTarget(false)
			if mode == "plain" {
				tgt = schemas.Target{URL: p.PlainURL, Model: "sim"}
			}
			b.Run(fmt.Sprintf("rate=%g/%s", rate, mode), func(b *testing.B) {
				for b.Loop() {
					measureCapture(b, tgt, rate, 16)
				}
			})
		}
	}
}

// tapTx returns the tap's departure time of request seq, if the run was tapped and saw it.
func tapTx(tt *aggregate.TapTimes, seq int64) (int64, bool) {
	if tt == nil {
		return 0, false
	}
	ns, ok := tt.Tx[seq]
	return ns, ok
}

// BenchmarkHTTPSNginx is issue 25's measurement: through nginx's TLS and its plain port in front
// of the simulator (20 ms / 5 ms, 16 tokens), capture with its defaults, the tap off and on, a
// 5 s constant stage at 100 and 1,000 req/s, then aggregate. Per case it reports the exact
// share, TTFT p50 and the widest p50/p90/p99 bound of TTFT and ITL (µs), and logs the run's
// trust line and the stage's load and client-bound verdicts. `make bench` runs it once;
// WIREBENCH_BENCH_CAPTURE_FLAGS adds capture flags, as for BenchmarkCapture.
func BenchmarkHTTPSNginx(b *testing.B) {
	p := startNginx(b, startSim(b, "--ttft", "20ms", "--itl", "5ms"), false)
	for _, rate := range []float64{100, 1000} {
		for _, port := range []string{"plain", "tls"} {
			for _, tap := range []string{"off", "on"} {
				tgt := p.tlsTarget(false)
				if port == "plain" {
					tgt = schemas.Target{URL: p.PlainURL, API: "completions", Model: "sim"}
				}
				b.Run(fmt.Sprintf("rate=%g/%s/tap=%s", rate, port, tap), func(b *testing.B) {
					if tap == "on" && os.Geteuid() != 0 {
						b.Skip("the packet tap needs CAP_NET_RAW")
					}
					for b.Loop() {
						httpsCase(b, tgt, rate, tap)
					}
				})
			}
		}
	}
}

// httpsCase runs one case of BenchmarkHTTPSNginx and reports its figures.
func httpsCase(b *testing.B, tgt schemas.Target, rate float64, tap string) {
	run := b.TempDir()
	st := construn.Stage{Rate: rate, Duration: 5 * time.Second, InputTokens: 16, MaxTokens: 16}
	if err := construn.Write(run, tgt, []construn.Stage{st}); err != nil {
		b.Fatal(err)
	}
	capture := append([]string{"capture", run, "--quiet", "--tap", tap}, strings.Fields(os.Getenv("WIREBENCH_BENCH_CAPTURE_FLAGS"))...)
	var trust string
	for _, args := range [][]string{capture, {"aggregate", run}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			b.Fatalf("%s: %v\n%s", args[0], err, out)
		}
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "trust ") {
				trust = strings.TrimSpace(line)
			}
		}
	}
	rows, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil || len(rows) != 1 {
		b.Fatalf("stages.parquet: %d rows, %v", len(rows), err)
	}
	s := rows[0]
	width := func(d schemas.Dist) (w int64) {
		for _, lh := range [][2]*int64{{d.P50Lo, d.P50Hi}, {d.P90Lo, d.P90Hi}, {d.P99Lo, d.P99Hi}} {
			if lh[0] != nil && lh[1] != nil {
				w = max(w, *lh[1]-*lh[0])
			}
		}
		return w
	}
	b.ReportMetric(val(s.ExactShare)*100, "%exact")
	b.ReportMetric(float64(val(s.TTFT.P50))/1e6, "ttft-p50-ms")
	b.ReportMetric(float64(width(s.TTFT))/1e3, "ttft-width-µs")
	b.ReportMetric(float64(width(s.ITL))/1e3, "itl-width-µs")
	b.ReportMetric(float64(val(s.SendLag.P99))/1e3, "send-lag-p99-µs")
	b.Logf("%s; load delivered %v (%s); client-bound %v (%s)", trust, s.LoadDelivered, s.LoadReason, s.ClientBound, s.ClientBoundReason)
}
