package replay

import (
	"context"
	mrand "math/rand/v2"
	"strings"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

// workloadKind is one kind of workload, a section of the config's workload (synthetic,
// shared_prefix, conversations, dataset, trace, run), with everything replay does with it: its
// defaults, the files it names, the checks of its fields and its plan. A new kind is a type in
// a file of its own and a row of kinds; what goes with any kind (images, tools, documents,
// cancel, batch) stays with the workload.
type workloadKind interface {
	setDefaults()
	// files lists the paths it names, to resolve against the config's directory and open.
	files() []fileField
	// validate checks its fields for target.api api; errors name workload.KEY.FIELD.
	validate(v *validator, api string)
	// ownTiming reports whether it brings its own send times (a trace's, an earlier run's), so
	// that the config's load must be empty; otherwise it draws the requests of the load.
	ownTiming() bool
	// plan writes its requests and prompts to p.o and returns the stages with their offsets.
	plan(p *planner) ([]schemas.StageInfo, error)
}

// kinds is every workload kind, in the order errors list them: its key under workload and its
// section of a config as a workloadKind (nil when the config does not set it).
var kinds = []struct {
	key string
	of  func(*schemas.Workload) workloadKind
}{
	{"synthetic", syntheticOf},
	{"shared_prefix", sharedPrefixOf},
	{"conversations", conversationsOf},
	{"dataset", datasetOf},
	{"trace", traceOf},
	{"run", runOf},
}

// workloadKinds returns the kinds w sets, in the order of kinds; a valid config sets one.
func workloadKinds(w *schemas.Workload) []workloadKind {
	var out []workloadKind
	for _, k := range kinds {
		if wk := k.of(w); wk != nil {
			out = append(out, wk)
		}
	}
	return out
}

// kindKeys lists the keys of kinds: "synthetic, shared_prefix, ...".
func kindKeys() string {
	keys := make([]string, len(kinds))
	for i, k := range kinds {
		keys[i] = k.key
	}
	return strings.Join(keys, ", ")
}

// planner is what a workload kind plans with.
type planner struct {
	ctx context.Context
	cfg *schemas.Config
	tok tokenizer.Tokenizer
	o   *output
}

// plan draws the config's workload into o; it returns the stages with their offsets.
func plan(ctx context.Context, cfg *schemas.Config, tok tokenizer.Tokenizer, o *output) ([]schemas.StageInfo, error) {
	o.models, o.perModel = newModelPicker(&cfg.Target, cfg.Seed), map[string]int64{}
	p := &planner{ctx: ctx, cfg: cfg, tok: tok, o: o}
	return workloadKinds(&cfg.Workload)[0].plan(p) // validated: exactly one
}

// newSourceFunc makes a kind's source of units from the corpus text generator, the workload's
// random stream and the output its prompts go to.
type newSourceFunc func(gen *textGen, rng *mrand.Rand, so *output) (source, error)

// planLoad plans the config's load: its stages back to back, each request a unit of the source
// newSource makes. Embeddings requests carry a batch of its prompts (see batched), a ranking
// API's its prompt as the query and documents (see ranked).
func (p *planner) planLoad(newSource newSourceFunc) ([]schemas.StageInfo, error) {
	cfg, o, w := p.cfg, p.o, &p.cfg.Workload
	gen := newTextGen(p.tok)
	stages := expandStages(cfg.Load)
	o.stats = make([]*stageStats, len(stages))
	for i := range o.stats {
		o.stats[i] = newStageStats()
	}
	rng := mrand.New(mrand.NewPCG(uint64(cfg.Seed), 1))
	if w.Images != nil {
		o.images = newImagePicker(w.Images, cfg.Seed)
	}
	// Embeddings: the source's prompts go to a private output and each request carries a batch
	// of them (see batched).
	so := o
	if (cfg.Target.API == schemas.APIEmbeddings && w.Batch > 1) || schemas.RankAPI(cfg.Target.API) {
		so = &output{keep: true}
	}
	src, err := newSource(gen, rng, so)
	if err != nil {
		return nil, err
	}
	if cfg.Target.API == schemas.APIEmbeddings {
		src = &batched{inner: src, n: w.Batch, o: o, priv: so}
	}
	if schemas.RankAPI(cfg.Target.API) {
		if src, err = newRanked(src, w, gen, cfg.Seed, o, so); err != nil {
			return nil, err
		}
	}
	if err := planStages(p.ctx, stages, src, cfg.Seed, o); err != nil {
		return nil, err
	}
	out := make([]schemas.StageInfo, len(stages))
	for i, s := range stages {
		out[i] = s.info
	}
	return out, nil
}
