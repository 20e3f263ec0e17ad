package sim

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" for none
	}{
		{"defaults", func(*Config) {}, ""},
		{"negative itl", func(c *Config) { c.ITL = -1 }, "itl"},
		{"bad mode", func(c *Config) { c.Mode = "warp" }, "mode"},
		{"zero block", func(c *Config) { c.BlockSize = 0 }, "block-size"},
		{"rate above 1", func(c *Config) { c.FaultDrop = 2 }, "fault-drop"},
		{"rates sum above 1", func(c *Config) { c.Fault500, c.Fault503 = 0.6, 0.6 }, "sum"},
		{"no model", func(c *Config) { c.Models = nil }, "model"},
		{"mistyped prefix cache", func(c *Config) { c.PrefixCacheBlocks = 1_000_000_000 }, "prefix-cache-blocks: 1000000000 is not in [0, 4194304]"},
		{"mistyped embedding dim", func(c *Config) { c.EmbeddingDim = 1_000_000_000 }, "embedding-dim: 1000000000 is not in [0, 65536]"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate() = %v; want an error containing %q", tt.name, err, tt.want)
		}
	}
}
