package main

import (
	"reflect"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/wirebench/wirebench/sim"
)

// TestSimFlagDefaults: `wirebench sim` without flags configures the simulator as
// sim.DefaultConfig does (both read sim.Config's default tags), and a flag lands in its field.
func TestSimFlagDefaults(t *testing.T) {
	parse := func(args ...string) sim.Config {
		t.Helper()
		var cli struct {
			Sim SimCmd `cmd:""`
		}
		p, err := kong.New(&cli)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(append([]string{"sim"}, args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := cli.Sim.config()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got, want := parse(), sim.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("sim flags' defaults = %+v;\nwant sim.DefaultConfig() %+v", got, want)
	}
	got := parse("--max-num-seqs", "8", "--model", "a,b", "--lora", "x:+5ms", "--fault-429", "0.5")
	if got.MaxNumSeqs != 8 || !reflect.DeepEqual(got.Models, []string{"a", "b"}) || len(got.LoRA) != 1 || got.LoRA[0].Name != "x" || got.Fault429 != 0.5 {
		t.Errorf("parsed flags = %+v; want max-num-seqs 8, models a, b, lora x, fault-429 0.5", got)
	}
}
