package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestParseAdapter(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Adapter
		bad  bool
	}{
		{in: "sql:+5ms", want: Adapter{"sql", 5 * time.Millisecond}},
		{in: "sql:5ms", want: Adapter{"sql", 5 * time.Millisecond}}, // + is optional
		{in: "sql", want: Adapter{"sql", 0}},                        // no offset
		{in: ":5ms", bad: true},                                     // no name
		{in: "sql:fast", bad: true},                                 // not a duration
	} {
		got, err := ParseAdapter(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("ParseAdapter(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

// An adapter is served under its own name with its offset before the first token (fixed mode:
// prefill = TTFT + offset in the ground truth, which names the model); /v1/models lists it with
// its parent; an unknown model gets 404 with an OpenAI error.
func TestLoRAAdapters(t *testing.T) {
	cfg := zeroConfig()
	cfg.Mode, cfg.TTFT, cfg.ITL = "fixed", 5*time.Millisecond, time.Millisecond
	cfg.LoRA = []Adapter{{"slow", 20 * time.Millisecond}}
	_, addr := startServer(t, cfg)
	for _, tt := range []struct {
		model   string
		prefill time.Duration
	}{{"sim", 5 * time.Millisecond}, {"slow", 25 * time.Millisecond}} {
		w := rawPost(t, addr, "/v1/completions", `{"model":"`+tt.model+`","prompt":"a b","max_tokens":3,"stream":true}`)
		evs, err := parseSSE(w.body)
		if w.status != 200 || err != nil {
			t.Fatalf("model %s: status %d, %v; body %s", tt.model, w.status, err, w.body)
		}
		x := groundTruth(t, evs)
		if x.PrefillNs != int64(tt.prefill) || x.Model != tt.model {
			t.Errorf("model %s: x-sim prefill_ns %d, model %q; want %d, %q", tt.model, x.PrefillNs, x.Model, tt.prefill, tt.model)
		}
	}
	w := rawPost(t, addr, "/v1/completions", `{"model":"nope","prompt":"a","max_tokens":1}`)
	var e struct {
		Error struct{ Message, Type string }
	}
	if err := json.Unmarshal(w.body, &e); w.status != http.StatusNotFound || err != nil || e.Error.Type != "NotFoundError" {
		t.Errorf("unknown model: status %d, body %s; want 404 with an OpenAI error object", w.status, w.body)
	}
	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID     string
			Parent *string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range list.Data {
		if m.ID == "slow" {
			found = m.Parent != nil && *m.Parent == "sim"
		}
	}
	if !found {
		t.Errorf("/v1/models = %+v; want slow with parent sim", list.Data)
	}
}
