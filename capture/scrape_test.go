package capture

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// TestScrapeUsesTargetTLS: an https metrics_url on the target's host is scraped with the
// target's TLS settings (here its ca_file); on another host, or without them, the server's
// self-signed certificate is not trusted and the scrape warns instead.
func TestScrapeUsesTargetTLS(t *testing.T) {
	cfg, pem, err := hostile.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	// The second scrape begins once the first was read and parsed: it ends the test's scrape.
	var scrapes atomic.Int32
	var stop atomic.Pointer[context.CancelFunc]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scrapes.Add(1) > 1 {
			(*stop.Load())()
			return
		}
		io.WriteString(w, "vllm:num_requests_running 3\n")
	}))
	srv.TLS = cfg
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	metrics := srv.URL + "/metrics"
	for _, tc := range []struct {
		name   string
		target schemas.Target
		rows   bool
	}{
		{"same host with ca_file", schemas.Target{URL: srv.URL, MetricsURL: metrics, TLS: schemas.TargetTLS{CAFile: ca}}, true},
		{"same host without ca_file", schemas.Target{URL: srv.URL, MetricsURL: metrics}, false},
		{"other host", schemas.Target{URL: "https://localhost:1", MetricsURL: metrics, TLS: schemas.TargetTLS{CAFile: ca}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := metricsClient(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			client.Timeout = 20 * time.Second // a handshake on a loaded machine may take seconds
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			scrapes.Store(0)
			stop.Store(&cancel)
			var warned error
			rows := scrape(ctx, client, metrics, func(int64) int32 { return 0 }, func(err error) { warned = err; cancel() })
			if ctx.Err() == context.DeadlineExceeded {
				t.Fatal("scrape neither read a sample nor warned in 30s")
			}
			if got := len(rows) > 0; got != tc.rows {
				t.Errorf("%d rows, warning %v; want rows: %v", len(rows), warned, tc.rows)
			}
			if !tc.rows && (warned == nil || !strings.Contains(warned.Error(), "certificate")) {
				t.Errorf("warning %v; want the untrusted certificate named", warned)
			}
		})
	}
}
