package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Bytes is a size in bytes written as "256MiB", "1GiB", "64KiB", "500MB" or a plain number of
// bytes in YAML, JSON and flags.
type Bytes int64

// byteUnits are the suffixes Bytes accepts, longest first so that "MiB" is not read as "B".
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3}, {"B", 1},
}

// MarshalText writes the size in the largest binary unit that holds it whole: 256MiB, 1536KiB.
func (b Bytes) MarshalText() ([]byte, error) {
	for _, u := range byteUnits[:4] {
		if b != 0 && int64(b)%u.n == 0 {
			return []byte(strconv.FormatInt(int64(b)/u.n, 10) + u.suffix), nil
		}
	}
	return []byte(strconv.FormatInt(int64(b), 10)), nil
}

func (b *Bytes) UnmarshalText(t []byte) error {
	s := strings.TrimSpace(string(t))
	num, unit := s, int64(1)
	for _, u := range byteUnits {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = strings.TrimSpace(v), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || v*float64(unit) > math.MaxInt64 {
		return fmt.Errorf("invalid size %q (want e.g. 256MiB, 1GiB, 500MB or a number of bytes)", t)
	}
	*b = Bytes(v * float64(unit))
	return nil
}

// UnmarshalYAML decodes a YAML scalar and reports a bad value with its line and column.
func (b *Bytes) UnmarshalYAML(node ast.Node) error {
	tk := node.GetToken()
	if err := b.UnmarshalText([]byte(tk.Value)); err != nil {
		return &PositionError{Line: tk.Position.Line, Col: tk.Position.Column, Msg: err.Error()}
	}
	return nil
}

// UnmarshalJSON accepts a size string or a number of bytes.
func (b *Bytes) UnmarshalJSON(p []byte) error {
	var s string
	if err := json.Unmarshal(p, &s); err != nil {
		s = string(p)
	}
	return b.UnmarshalText([]byte(s))
}
