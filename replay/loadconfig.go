package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/wirebench/wirebench/internal/secret"
	"github.com/wirebench/wirebench/internal/tlsclient"
	"github.com/wirebench/wirebench/schemas"
)

// LoadConfig reads a YAML config, rejects unknown keys (naming the key and line), fills in
// defaults, resolves relative file paths against the config file's directory and validates
// every field. Errors name the file, the line and the field, e.g.
// "smoke.yaml:7: load.stages[1].rate: must be > 0".
func LoadConfig(path string) (*schemas.Config, error) {
	cfg, _, err := loadConfig(path, false)
	return cfg, err
}

// loadConfig is LoadConfig that also returns, one per variable, the errors for the environment
// variables the target reads (target.api_key_env, ${VAR} in target.headers) that are unset or
// empty here; whether that is an error is the caller's to decide (capture may run elsewhere).
// With files it also checks that every file the config names for replay can be opened (k8s's
// LoadConfig does not: those files are on the cluster's volume).
func loadConfig(path string, files bool) (*schemas.Config, []error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fileError("config", path, err)
	}
	return parseConfig(path, data, files)
}

func parseConfig(path string, data []byte, files bool) (*schemas.Config, []error, error) {
	var cfg schemas.Config
	if err := yaml.UnmarshalWithOptions(data, &cfg, yaml.DisallowUnknownField()); err != nil {
		return nil, nil, yamlError(path, data, err)
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, nil, yamlError(path, data, err)
	}
	v := &validator{path: path, file: file}
	if err := v.check(&cfg, filepath.Dir(path), files); err != nil {
		return nil, nil, err
	}
	return &cfg, v.unsetEnv(&cfg), nil
}

// check fills in c's defaults, resolves its relative paths against dir ("": leaves them) and
// validates it; with files it also checks that every file replay reads opens.
func (v *validator) check(c *schemas.Config, dir string, files bool) error {
	setDefaults(c)
	if dir != "" {
		resolvePaths(c, dir)
	}
	v.config(c)
	if len(v.errs) == 0 && files {
		v.files(c)
	}
	if len(v.errs) > 0 {
		return errors.Join(v.errs...)
	}
	if len(c.Target.URLs) > 0 {
		c.Target.URL = c.Target.URLs[0].URL // what model discovery and the co-location check use
	}
	return nil
}

// fileError is the one line for a file that cannot be read: what it is, its path and why
// ("config my.yaml: no such file or directory").
func fileError(what, path string, err error) error {
	return fmt.Errorf("%s %s: %w", what, path, pathReason(err))
}

// pathReason is err without the operation and path os puts in it ("no such file or
// directory"), for messages that name the path themselves.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// unsetEnv is what is left to report of a valid config: one error per environment variable the
// target reads (target.api_key_env, ${VAR} in target.headers) that is unset or empty here.
func (v *validator) unsetEnv(c *schemas.Config) []error {
	for _, e := range secret.EnvVars(c.Target) {
		if os.Getenv(e.Name) == "" {
			v.errf(e.Field, "environment variable %s is not set (or empty)", e.Name)
		}
	}
	return v.errs
}

// yamlError turns a go-yaml error into "file:line:col: message" with the offending key or value.
func yamlError(path string, data []byte, err error) error {
	var pe *schemas.PositionError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %s: %s", path, pe.Line, pe.Col, fieldAt(data, pe.Line, pe.Col), pe.Msg)
	}
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		tk := ye.GetToken()
		msg := ye.GetMessage()
		var uf *yaml.UnknownFieldError
		var te *yaml.TypeError
		switch {
		case errors.As(err, &uf):
			msg = unknownKey(fieldAt(data, tk.Position.Line, tk.Position.Column), tk.Value)
		case errors.As(err, &te):
			msg = fmt.Sprintf("%s: cannot use %q as %s", fieldAt(data, tk.Position.Line, tk.Position.Column), tk.Value, typeName(te.DstType.Kind()))
		}
		return fmt.Errorf("%s:%d:%d: %s", path, tk.Position.Line, tk.Position.Column, msg)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// fieldAt returns the dotted path ("load.stages[0].rate") of the key or value whose token is at
// line and col, or "value" when it cannot be found.
func fieldAt(data []byte, line, col int) string {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return "value"
	}
	f := &finder{line: line, col: col}
	for _, d := range file.Docs {
		ast.Walk(f, d)
	}
	if f.path == "" {
		return "value"
	}
	return strings.TrimPrefix(strings.TrimPrefix(f.path, "$"), ".")
}

type finder struct {
	line, col int
	path      string
}

func (f *finder) Visit(n ast.Node) ast.Visitor {
	if tk := n.GetToken(); tk != nil && tk.Position.Line == f.line && tk.Position.Column == f.col && f.path == "" {
		f.path = n.GetPath()
	}
	return f
}

func typeName(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	}
	return k.String()
}

// validator collects field errors with the line of the field (or of its nearest parent present
// in the file); without a file (a config passed as a value) errors name the field only.
type validator struct {
	path string
	file *ast.File
	errs []error
}

func (v *validator) errf(field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if v.file == nil { // a config passed as a value (Plan): no lines
		v.errs = append(v.errs, fmt.Errorf("%s: %s: %s", v.path, field, msg))
		return
	}
	v.errs = append(v.errs, fmt.Errorf("%s:%d: %s: %s", v.path, v.line(field), field, msg))
}

// line finds the line of field ("load.stages[1].rate") in the YAML, falling back to parents.
func (v *validator) line(field string) int {
	for f := field; f != ""; {
		p, err := yaml.PathString("$." + f)
		if err == nil {
			if n, err := p.FilterFile(v.file); err == nil && n != nil && n.GetToken() != nil {
				return n.GetToken().Position.Line
			}
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return 1
}

func setDefaults(c *schemas.Config) {
	if c.Target.API == "" {
		c.Target.API = schemas.APICompletions
	}
	if len(c.Target.URLs) > 0 && c.Target.Pick == "" {
		c.Target.Pick = schemas.PickRoundRobin
	}
	for i := range c.Target.URLs {
		if c.Target.URLs[i].Weight == 0 {
			c.Target.URLs[i].Weight = 1
		}
	}
	if c.Target.MaxTokens == "" {
		c.Target.MaxTokens = schemas.MaxTokensWorkload
	}
	if c.Tokenizer == "" {
		c.Tokenizer = "whitespace"
	}
	def := func(s *schemas.StageSpec) {
		if s.Rate != 0 && s.Arrival == "" {
			s.Arrival = schemas.ArrivalPoisson
		}
		if s.Arrival == schemas.ArrivalGamma && s.Burstiness == 0 {
			s.Burstiness = 1
		}
	}
	if c.Load.Warmup != nil {
		def(c.Load.Warmup)
	}
	for i := range c.Load.Stages {
		def(&c.Load.Stages[i])
	}
	if s := c.Load.Sweep; s != nil {
		if s.Scale == "" {
			s.Scale = schemas.ScaleLinear
		}
		if s.Arrival == "" {
			s.Arrival = schemas.ArrivalPoisson
		}
		if s.Arrival == schemas.ArrivalGamma && s.Burstiness == 0 {
			s.Burstiness = 1
		}
	}
	w := &c.Workload
	for _, k := range workloadKinds(w) {
		k.setDefaults()
	}
	if im := w.Images; im != nil {
		if im.Format == "" {
			im.Format = schemas.ImagePNG
		}
		if im.Distinct == 0 {
			im.Distinct = 16
		}
	}
	if t := w.Tools; t != nil && t.Choice == "" {
		t.Choice = "auto"
	}
	if w.Batch == 0 {
		w.Batch = 1
	}
}

// fileField is a path the config names, with its field. Relative paths are relative to the
// config file; check marks the ones replay opens (an empirical file of a distribution of
// another kind is ignored; the TLS files are checked with the rest of target.tls).
type fileField struct {
	field string
	path  *string
	check bool
}

// distFile is the file of a length distribution (field names it); only an empirical one is read.
func distFile(field string, d *schemas.LengthDist) fileField {
	return fileField{field + ".file", &d.File, d.Kind == schemas.DistEmpirical}
}

// fileFields lists every path the config names.
func fileFields(c *schemas.Config) []fileField {
	tls := &c.Target.TLS
	out := []fileField{{"target.tls.ca_file", &tls.CAFile, false}, {"target.tls.cert_file", &tls.CertFile, false},
		{"target.tls.key_file", &tls.KeyFile, false}}
	w := &c.Workload
	for _, k := range workloadKinds(w) {
		out = append(out, k.files()...)
	}
	if d := w.Documents; d != nil {
		out = append(out, distFile("workload.documents.count", &d.Count), distFile("workload.documents.tokens", &d.Tokens))
	}
	switch c.Tokenizer {
	case "whitespace", "o200k_base", "cl100k_base":
	default: // a tokenizer.json or a directory holding one
		out = append(out, fileField{"tokenizer", &c.Tokenizer, true})
	}
	return out
}

func resolvePaths(c *schemas.Config, dir string) {
	for _, f := range fileFields(c) {
		if *f.path != "" && !filepath.IsAbs(*f.path) {
			*f.path = filepath.Join(dir, *f.path)
		}
	}
}

// files checks that every file the config names for replay can be opened, so that a missing
// one is an error naming its line and field, not only its path.
func (v *validator) files(c *schemas.Config) {
	for _, f := range fileFields(c) {
		if !f.check || *f.path == "" {
			continue
		}
		fh, err := os.Open(*f.path)
		if err != nil {
			v.errf(f.field, "%s: %v", *f.path, pathReason(err))
			continue
		}
		fh.Close()
	}
}

func (v *validator) config(c *schemas.Config) {
	v.target(&c.Target, c.Workload.Tools != nil)
	ks := workloadKinds(&c.Workload)
	if len(ks) != 1 {
		v.errf("workload", "set exactly one of %s (got %d)", kindKeys(), len(ks))
	}
	if slices.ContainsFunc(ks, workloadKind.ownTiming) {
		if len(c.Load.Stages) > 0 || c.Load.Sweep != nil || c.Load.Warmup != nil {
			v.errf("load", "must be empty with workload.trace or workload.run (they bring their own timing)")
		}
	} else {
		v.load(&c.Load, !searchOnly(c))
	}
	v.search(&c.Search)
	for _, k := range ks {
		k.validate(v, c.Target.API)
	}
	validateAPIWorkload(v, c)
	v.limits(c)
}

// limits checks the SLO, the bias allowances and the capture options: none negative.
func (v *validator) limits(c *schemas.Config) {
	sl := c.SLO
	for _, d := range []struct {
		name string
		val  schemas.Duration
	}{{"ttft", sl.TTFT}, {"tpot", sl.TPOT}, {"itl", sl.ITL}, {"ntpot", sl.NTPOT}, {"e2e", sl.E2E}} {
		if d.val < 0 {
			v.errf("slo."+d.name, "must be >= 0")
		}
	}
	if b := c.Bias; b.Tolerance < 0 || b.ToleranceShare < 0 || b.StampAllowance < 0 {
		v.errf("bias", "values must be >= 0")
	}
	cp := c.Capture
	if cp.Workers < 0 || cp.Connections < 0 || cp.Shards < 0 || cp.MaxInflight < 0 || cp.MaxConnections < 0 || cp.PartRows < 0 || cp.PartInterval < 0 || cp.DrainTimeout < 0 {
		v.errf("capture", "values must be >= 0")
	}
}

func (v *validator) target(t *schemas.Target, tools bool) {
	if t.URL != "" {
		if err := checkURL(t.URL); err != nil {
			v.errf("target.url", "%v", err)
		}
	}
	v.endpoints(t)
	switch t.API {
	case schemas.APICompletions, schemas.APIChat, schemas.APIResponses, schemas.APIMessages, schemas.APIEmbeddings, schemas.APIRerank, schemas.APIScore, schemas.APITEIRerank:
	default:
		v.errf("target.api", "%q: want completions, chat, responses, messages, embeddings, rerank, score or tei_rerank", t.API)
	}
	v.models(t)
	if t.API == schemas.APIMessages && t.MaxTokens == schemas.MaxTokensNone {
		v.errf("target.max_tokens", "none: the messages API requires max_tokens")
	}
	switch t.MaxTokens {
	case schemas.MaxTokensWorkload, schemas.MaxTokensNone:
	default:
		v.errf("target.max_tokens", "%q: want workload or none", t.MaxTokens)
	}
	if t.Timeout != nil && *t.Timeout < 0 {
		v.errf("target.timeout", "must be >= 0 (0 = none)")
	}
	if t.ConnectTimeout < 0 {
		v.errf("target.connect_timeout", "must be >= 0")
	}
	if t.TTFTTimeout < 0 {
		v.errf("target.ttft_timeout", "must be >= 0")
	}
	if t.GapTimeout < 0 {
		v.errf("target.gap_timeout", "must be >= 0")
	}
	if t.MetricsURL != "" {
		if err := checkURL(t.MetricsURL); err != nil {
			v.errf("target.metrics_url", "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		field := "target.headers." + k
		if !secret.ValidHeaderName(k) {
			field = "target.headers" // the error quotes the name
		}
		if err := secret.CheckHeaderTemplate(k, t.Headers[k]); err != nil {
			v.errf(field, "%v", err)
		}
	}
	for k := range t.ExtraBody {
		if schemas.FixedBodyKey(t.API, tools, k) {
			v.errf("target.extra_body."+k, "is set by wirebench; remove it")
		}
	}
	if _, err := tlsclient.Config(t.TLS); err != nil {
		var te *tlsclient.Error
		if errors.As(err, &te) {
			v.errf("target.tls."+te.Field, "%v", te.Err)
		} else {
			v.errf("target.tls", "%v", err)
		}
	}
}

// models checks target.models: names, weights and no model field sent by two entries.
func (v *validator) models(t *schemas.Target) {
	if len(t.Models) > 0 && t.Model != "" {
		v.errf("target.models", "set target.model or target.models, not both")
	}
	seen := map[string]int{}
	for i, m := range t.Models {
		f := fmt.Sprintf("target.models[%d]", i)
		if m.Name == "" {
			v.errf(f+".name", "required")
		}
		if m.Weight < 0 || math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) {
			v.errf(f+".weight", "%v: want a number >= 0 (0 = 1)", m.Weight)
		}
		if j, ok := seen[m.Sent()]; ok {
			v.errf(f, "sends model %q as target.models[%d] does", m.Sent(), j)
		}
		seen[m.Sent()] = i
	}
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid URL %q: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid URL %q: want http://host:port or https://host:port", s)
	}
	return nil
}

// searchOnly reports whether the config leaves its load to `wirebench search`: a search section
// and no stages or sweep (a warmup alone is kept before every step).
func searchOnly(c *schemas.Config) bool {
	return c.Search != (schemas.Search{}) && len(c.Load.Stages) == 0 && c.Load.Sweep == nil
}

// search checks the search section, when there is one.
func (v *validator) search(s *schemas.Search) {
	if *s == (schemas.Search{}) {
		return
	}
	f := "search."
	if s.MinRate <= 0 {
		v.errf(f+"min_rate", "must be > 0")
	}
	if s.MaxRate <= s.MinRate {
		v.errf(f+"max_rate", "%g: must be > min_rate %g", s.MaxRate, s.MinRate)
	}
	if s.Goodput < 0 || s.Goodput > 1 {
		v.errf(f+"goodput", "%g: must be in (0, 1] (default 0.99)", s.Goodput)
	}
	if s.Precision < 0 || s.Precision >= 1 {
		v.errf(f+"precision", "%g: must be in (0, 1) (default 0.05)", s.Precision)
	}
	if s.Duration < 0 || (s.Duration > 0 && s.Duration.D() < time.Second) {
		v.errf(f+"duration", "%v: must be >= 1s (default 30s)", s.Duration.D())
	}
	v.planSize(f+"max_rate", s.MaxRate, s.WithDefaults().Duration.D())
	if s.Arrival != "" && s.Arrival != schemas.ArrivalConstant && s.Arrival != schemas.ArrivalPoisson {
		v.errf(f+"arrival", "%q: must be constant or poisson", s.Arrival)
	}
	if s.MaxSteps < 0 {
		v.errf(f+"max_steps", "%d: must be >= 0 (default 12)", s.MaxSteps)
	}
}

// load checks the load plan; needStages is false for a config whose stages `wirebench search`
// makes (searchOnly).
func (v *validator) load(l *schemas.Load, needStages bool) {
	if needStages && len(l.Stages) == 0 && l.Sweep == nil {
		v.errf("load", "needs stages or a sweep")
	}
	if l.Warmup != nil {
		v.stage(l.Warmup, "load.warmup")
	}
	for i := range l.Stages {
		v.stage(&l.Stages[i], fmt.Sprintf("load.stages[%d]", i))
	}
	// Stages are planned back to back in time, so a stage that ends by request count alone has
	// no planned end: only the last stage may be one.
	if w := l.Warmup; w != nil && w.Concurrency != 0 && w.Duration == 0 {
		v.errf("load.warmup.duration", "a closed-loop warmup needs a duration: the stages after it start when it ends")
	}
	for i, st := range l.Stages {
		if st.Concurrency != 0 && st.Duration == 0 && (i < len(l.Stages)-1 || l.Sweep != nil) {
			v.errf(fmt.Sprintf("load.stages[%d].duration", i), "a closed-loop stage ended by request count must be the last stage; give it a duration so later stages have a start time")
		}
	}
	if s := l.Sweep; s != nil {
		f := "load.sweep."
		if s.MinRate <= 0 {
			v.errf(f+"min_rate", "must be > 0")
		}
		if s.MaxRate < s.MinRate {
			v.errf(f+"max_rate", "%g < min_rate %g", s.MaxRate, s.MinRate)
		}
		if s.Stages <= 0 || s.Stages > schemas.MaxSweepStages {
			v.errf(f+"stages", "%d: must be in 1..%d", s.Stages, schemas.MaxSweepStages)
		}
		if s.Duration <= 0 {
			v.errf(f+"duration", "must be > 0")
		}
		v.planSize(f+"max_rate", s.MaxRate, s.Duration.D())
		if s.Scale != schemas.ScaleLinear && s.Scale != schemas.ScaleGeometric {
			v.errf(f+"scale", "%q: want linear or geometric", s.Scale)
		}
		checkArrival(v, f, s.Arrival, s.Burstiness)
	}
}

func checkArrival(v *validator, f, arrival string, burst float64) {
	switch arrival {
	case schemas.ArrivalConstant, schemas.ArrivalPoisson:
		if burst != 0 {
			v.errf(f+"burstiness", "only for arrival: gamma")
		}
	case schemas.ArrivalGamma:
		if burst <= 0 || math.IsNaN(burst) || math.IsInf(burst, 0) {
			v.errf(f+"burstiness", "must be > 0 (1 = Poisson, < 1 burstier)")
		}
	default:
		v.errf(f+"arrival", "%q: want constant, poisson or gamma", arrival)
	}
}

// MaxStageRequests is the most requests one stage may plan: far beyond any run measured
// (100,000 requests/s for an hour is 360 million), so that a mistyped rate or duration is an
// error naming the field, not hours of planning and a disk filled with schedule files.
const MaxStageRequests = 1 << 30

// planSize reports an open-loop stage of rate requests/s for d that plans more than
// MaxStageRequests.
func (v *validator) planSize(field string, rate float64, d time.Duration) {
	if n := rate * d.Seconds(); n > MaxStageRequests {
		v.errf(field, "%g requests/s for %v plans about %.3g requests; a stage plans at most %d: lower the rate or shorten the duration", rate, d, n, MaxStageRequests)
	}
}

func (v *validator) stage(s *schemas.StageSpec, f string) {
	open, closed := s.Rate != 0, s.Concurrency != 0
	f += "."
	switch {
	case open && closed:
		v.errf(f[:len(f)-1], "set rate (open loop) or concurrency (closed loop), not both")
	case open:
		if s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) {
			v.errf(f+"rate", "must be > 0")
		}
		if s.Duration <= 0 {
			v.errf(f+"duration", "must be > 0 for an open-loop stage")
		}
		v.planSize(f+"rate", s.Rate, s.Duration.D())
		if s.Requests != 0 {
			v.errf(f+"requests", "only for closed-loop stages (open loop sends rate × duration)")
		}
		if s.ThinkTime != 0 {
			v.errf(f+"think_time", "only for closed-loop stages")
		}
		checkArrival(v, f, s.Arrival, s.Burstiness)
	case closed:
		if s.Concurrency < 0 {
			v.errf(f+"concurrency", "must be > 0")
		}
		if s.Requests < 0 {
			v.errf(f+"requests", "must be > 0")
		}
		if s.Requests > MaxStageRequests {
			v.errf(f+"requests", "%d: a stage plans at most %d requests", s.Requests, MaxStageRequests)
		}
		if s.Duration < 0 {
			v.errf(f+"duration", "must be > 0")
		}
		if s.Requests == 0 && s.Duration == 0 {
			v.errf(f[:len(f)-1], "a closed-loop stage needs requests or duration")
		}
		if s.ThinkTime < 0 {
			v.errf(f+"think_time", "must be >= 0")
		}
		if s.Arrival != "" || s.Burstiness != 0 {
			v.errf(f+"arrival", "only for open-loop stages")
		}
	default:
		v.errf(f[:len(f)-1], "set rate (open loop) or concurrency (closed loop)")
	}
}

// MaxLength is the largest length (tokens, turns, documents) a config may ask for: beyond
// any model's context today, so that a mistyped length is an error, not a prompt that takes
// the machine's memory. A drawn length never exceeds it.
const MaxLength = 1 << 24

// atMost reports field's value n over limit.
func (v *validator) atMost(field string, n float64, limit int) {
	if n > float64(limit) {
		v.errf(field, "%g: at most %d", n, limit)
	}
}

// distAtMost reports each of d's lengths (min, max, value, mean; f ends in ".") over limit.
func (v *validator) distAtMost(f string, d schemas.LengthDist, limit int) {
	v.atMost(f+"min", float64(d.Min), limit)
	v.atMost(f+"max", float64(d.Max), limit)
	v.atMost(f+"value", float64(d.Value), limit)
	v.atMost(f+"mean", d.Mean, limit)
}

// MaxPerRequest bounds what a config puts into one request beside its prompt: images, tools,
// embeddings inputs, documents. Far past what servers accept (OpenAI: 128 tools, 2,048
// embeddings inputs), so that a mistyped count is an error, not a request body that takes the
// machine's memory.
const MaxPerRequest = 4096

func (v *validator) length(d *schemas.LengthDist, f string) {
	f += "."
	if d.Min == 0 {
		d.Min = 1
	}
	if d.Min < 0 {
		v.errf(f+"min", "must be >= 1")
	}
	if d.Max != 0 && d.Max < d.Min {
		v.errf(f+"max", "%d < min %d", d.Max, d.Min)
	}
	v.distAtMost(f, *d, MaxLength)
	switch d.Kind {
	case schemas.DistFixed:
		if d.Value <= 0 {
			v.errf(f+"value", "must be > 0")
		}
	case schemas.DistUniform:
		if d.Max == 0 {
			v.errf(f+"max", "required for uniform")
		}
	case schemas.DistNormal, schemas.DistLognormal:
		if d.Mean <= 0 {
			v.errf(f+"mean", "must be > 0")
		}
		if d.Std < 0 {
			v.errf(f+"std", "must be >= 0")
		}
	case schemas.DistExponential:
		if d.Mean <= 0 {
			v.errf(f+"mean", "must be > 0")
		}
	case schemas.DistEmpirical:
		if d.File == "" {
			v.errf(f+"file", "required for empirical")
		}
	case "":
		v.errf(f+"kind", "required: fixed, uniform, normal, lognormal, exponential or empirical")
	default:
		v.errf(f+"kind", "%q: want fixed, uniform, normal, lognormal, exponential or empirical", d.Kind)
	}
}
