package replay

import (
	"fmt"
	"os"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/wirebench/wirebench/schemas"
)

// WriteConfig writes cfg to path as a YAML config that LoadConfig reads back as cfg (fields at
// their zero value are left out), under comment as a head comment when it is not empty. Those
// who plan a config built in Go with Plan keep it with it this way: `wirebench calibrate`'s
// DIR/calibrate.yaml, internal/construn's constant.yaml.
func WriteConfig(path string, cfg *schemas.Config, comment string) error {
	b, err := yaml.MarshalWithOptions(cfg, yaml.OmitZero())
	if err != nil {
		return fmt.Errorf("encode config %s: %w", path, err)
	}
	if comment != "" {
		b = append([]byte("# "+strings.ReplaceAll(comment, "\n", "\n# ")+"\n"), b...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}
