package replay

// Workload says what is sent: exactly one of its members is set.
type Workload struct {
	Synthetic *Synthetic `yaml:"synthetic" json:"synthetic,omitempty"`
}

// Synthetic draws input and output lengths from distributions.
type Synthetic struct {
	Input        Dist `yaml:"input" json:"input"`
	Output       Dist `yaml:"output" json:"output"`
	RandomTokens bool `yaml:"random_tokens" json:"random_tokens,omitempty"`
}

// Dist is a token-length distribution, clipped to [min, max].
type Dist struct {
	Kind  string  `yaml:"kind" json:"kind"` // fixed, uniform, normal, lognormal, exponential, empirical
	Value int     `yaml:"value" json:"value,omitempty"`
	Mean  float64 `yaml:"mean" json:"mean,omitempty"`
	Std   float64 `yaml:"std" json:"std,omitempty"`
	Min   int     `yaml:"min" json:"min,omitempty"`
	Max   int     `yaml:"max" json:"max,omitempty"`
	File  string  `yaml:"file" json:"file,omitempty"` // empirical histogram
}
