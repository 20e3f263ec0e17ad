package replay

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestTrafficConfigErrors(t *testing.T) {
	synth := "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	stages := "load:\n  stages:\n    - {rate: 10, duration: 1s}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"share above 1", goodHead + stages + synth + "  cancel: {share: 1.5, after_tokens: 3}\n", []string{"c.yaml:9:", "workload.cancel.share: 1.5: want a share in (0, 1]"}},
		{"no cancel point", goodHead + stages + synth + "  cancel: {share: 0.5}\n", []string{"workload.cancel: set exactly one of after_tokens and after"}},
		{"two cancel points", goodHead + stages + synth + "  cancel: {share: 0.5, after_tokens: 3, after: 1s}\n", []string{"workload.cancel: set exactly one"}},
		{"tokens of embeddings", "target: {url: \"http://x:1\", api: embeddings}\n" + stages + synth + "  cancel: {share: 0.5, after_tokens: 3}\n", []string{"workload.cancel.after_tokens: target.api embeddings streams no tokens"}},
		{"url and urls", "target: {url: \"http://x:1\", urls: [{url: \"http://y:1\"}]}\n" + stages + synth, []string{"c.yaml:1:", "target.urls: set target.url or target.urls, not both"}},
		{"bad urls entry", "target:\n  urls: [{url: \"http://y:1\"}, {url: \"y:2\", weight: -1}]\n" + stages + synth, []string{"c.yaml:2:", "target.urls[1].url: invalid URL", "target.urls[1].weight: -1: want a weight > 0"}},
		{"same url twice", "target:\n  urls: [{url: \"http://y:1\"}, {url: \"http://y:1\"}]\n" + stages + synth, []string{"target.urls[1].url: the same as target.urls[0]"}},
		{"bad pick", "target:\n  urls: [{url: \"http://y:1\"}, {url: \"http://y:2\"}]\n  pick: least_loaded\n" + stages + synth, []string{"c.yaml:3:", `target.pick: "least_loaded": want round_robin or random`}},
		{"pick without urls", "target:\n  url: \"http://x:1\"\n  pick: random\n" + stages + synth, []string{"target.pick: only with target.urls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			if err == nil {
				t.Fatalf("LoadConfig = nil; want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadConfig error %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

// target.urls sets target.url to its first entry and defaults pick and weights.
func TestTargetURLsDefaults(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "target:\n  urls: [{url: \"http://a:1\"}, {url: \"http://b:1\", weight: 2}]\nload:\n  stages:\n    - {rate: 10, duration: 1s}\nworkload:\n  synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 8}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tg := cfg.Target
	if tg.URL != "http://a:1" || tg.Pick != "round_robin" || tg.URLs[0].Weight != 1 || tg.URLs[1].Weight != 2 {
		t.Errorf("target url %q, pick %q, urls %+v; want http://a:1, round_robin, weights 1 and 2", tg.URL, tg.Pick, tg.URLs)
	}
	if got := tg.Endpoints(); len(got) != 2 || got[1] != "http://b:1" {
		t.Errorf("Endpoints() = %v; want both base URLs", got)
	}
}

// The turns of a conversation go to its first turn's endpoint; each conversation and each
// single request takes the next pick.
func TestConversationKeepsItsEndpoint(t *testing.T) {
	tr := &traffic{pick: newEndpointPicker([]schemas.Endpoint{{Weight: 1}, {Weight: 1}}, "round_robin", 1), conv: -1}
	rows := []schemas.ScheduleRequest{
		{Conversation: 0, Turn: 0}, {Conversation: 0, Turn: 1}, {Conversation: 0, Turn: 2},
		{Conversation: 1, Turn: 0}, {Conversation: 1, Turn: 1}, {Conversation: -1}, {Conversation: -1},
	}
	var got strings.Builder
	for i := range rows {
		tr.apply(&rows[i])
		got.WriteByte(byte('0' + rows[i].Endpoint))
	}
	if got.String() != "0001101" {
		t.Errorf("endpoints %s; want 0001101 (turns with their conversation, the rest round robin)", got.String())
	}
}

func TestEndpointPicker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []float64
		pick    string
		want    string // the first picks, as endpoint digits
	}{
		// equal weights: plain round robin
		{"round robin", []float64{1, 1, 1}, "round_robin", "012012012"},
		// 3:1 interleaved, never four in a row to the heavy one
		{"weighted round robin", []float64{3, 1}, "round_robin", "00100010"},
		// fractional weights keep their shares
		{"fractional weights", []float64{0.5, 0.25, 0.25}, "round_robin", "01200120"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := make([]schemas.Endpoint, len(tc.weights))
			for i, w := range tc.weights {
				eps[i] = schemas.Endpoint{URL: "http://x", Weight: w}
			}
			p := newEndpointPicker(eps, tc.pick, 1)
			var b strings.Builder
			for range len(tc.want) {
				b.WriteByte(byte('0' + p.next()))
			}
			if b.String() != tc.want {
				t.Errorf("picks %s; want %s", b.String(), tc.want)
			}
		})
	}
	// random: seeded (the same picks for the same seed), shares near the weights
	count := func(seed int64) (string, [2]int) {
		p := newEndpointPicker([]schemas.Endpoint{{Weight: 3}, {Weight: 1}}, "random", seed)
		var b strings.Builder
		var n [2]int
		for range 4000 {
			e := p.next()
			n[e]++
			if b.Len() < 32 {
				b.WriteByte(byte('0' + e))
			}
		}
		return b.String(), n
	}
	a, n := count(9)
	if b, _ := count(9); a != b {
		t.Errorf("random picks %s and %s for the same seed; want the same", a, b)
	}
	if n[1] < 850 || n[1] > 1150 {
		t.Errorf("random picks %v of 4000 at weights 3:1; want about 1000 at endpoint 1", n)
	}
}
