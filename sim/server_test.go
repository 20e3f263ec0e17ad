package sim

import (
	"testing"
	"time"
)

func TestServeStopsOnCancel(t *testing.T) {
	cfg := zeroConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln := listenLocal(t)
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	w := rawPost(t, ln.Addr().String(), "/v1/completions", `{"model":"sim","prompt":"a","max_tokens":3}`)
	if w.status != 200 {
		t.Fatalf("status %d", w.status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v; want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of cancel")
	}
}
