package replay

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

// row is one usable dataset entry.
type row struct {
	text   string
	msgs   string // MessagesJSON for chat
	images string // images_json; "" when none
	docs   string // jsonl "documents" as a JSON array (the ranking APIs' documents); "" when none
	input  int32
	output int32 // 0: none in the file
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// jsonError names the file, line and field of a JSON decoding error at base+offset.
func jsonError(path string, data []byte, base int64, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(row)"
		}
		return fmt.Errorf("%s:%d: %s: got JSON %s, want %s", path, lineAt(data, base+te.Offset), field, te.Value, jsonKind(te.Type.String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s:%d: invalid JSON: %v", path, lineAt(data, base+se.Offset), se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:%d: truncated JSON (unexpected end of file)", path, lineAt(data, int64(len(data))))
	}
	return fmt.Errorf("%s:%d: %v", path, lineAt(data, base), err)
}

func jsonKind(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "*int"):
		return "an integer"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return t
}

type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type shareGPTConv struct {
	Conversations []shareGPTTurn `json:"conversations"`
}

func shareGPTRole(from string) string {
	switch from {
	case "human", "user":
		return "user"
	case "system":
		return "system"
	}
	return "assistant"
}

// readShareGPT reads a ShareGPT JSON array. Conversations without a human turn followed by an
// answer are skipped; malformed ones are errors.
func readShareGPT(path string, whole, chat bool, tok tokenizer.Tokenizer) ([]row, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil {
		return nil, jsonError(path, data, dec.InputOffset(), err)
	} else if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%s:1: want a JSON array of conversations", path)
	}
	var rows []row
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		base := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError(path, data, base, err)
		}
		base += int64(bytes.Index(data[base:], raw[:1])) // skip the separator before the value
		var c shareGPTConv
		if err := json.Unmarshal(raw, &c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = fmt.Sprintf("[%d].%s", i, te.Field)
			}
			return nil, jsonError(path, data, base, err)
		}
		if c.Conversations == nil {
			return nil, fmt.Errorf("%s:%d: [%d].conversations: missing", path, lineAt(data, base), i)
		}
		for j, t := range c.Conversations {
			if t.From == "" {
				return nil, fmt.Errorf("%s:%d: [%d].conversations[%d].from: missing", path, lineAt(data, base), i, j)
			}
		}
		turns := c.Conversations
		ask := -1
		for j := 0; j+1 < len(turns); j++ {
			if shareGPTRole(turns[j].From) == "user" && shareGPTRole(turns[j+1].From) == "assistant" {
				ask = j
				if !whole {
					break
				}
			}
		}
		if ask < 0 {
			continue
		}
		r := row{text: turns[ask].Value, output: int32(tok.Count(turns[ask+1].Value))}
		n := tok.Count(r.text)
		if whole && chat {
			ms := make([]message, ask)
			for j := range ask {
				ms[j] = message{shareGPTRole(turns[j].From), turns[j].Value}
				n += tok.Count(turns[j].Value)
			}
			r.msgs = messagesJSON(ms)
		}
		r.input = int32(n)
		rows = append(rows, r)
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(path, data, dec.InputOffset(), err)
	}
	return rows, nil
}

type jsonlRow struct {
	Prompt    *string   `json:"prompt"`
	Messages  []message `json:"messages"`
	MaxTokens *int      `json:"max_tokens"`
	Images    []string  `json:"images"`
	Documents []string  `json:"documents"` // ranking APIs: the documents scored against prompt
}

// readJSONLines decodes one JSON object a non-blank line of path into a T and hands it to fn
// with its line number; errors name the file and line. what prefixes an error opening the file.
func readJSONLines[T any](path, what string, maxLine int, fn func(line int, v *T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return lineJSONError(path, line, err)
		}
		if err := fn(line, &v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readJSONL reads one {"prompt"|"messages", "max_tokens"?} object a line.
func readJSONL(path string, chat bool, tok tokenizer.Tokenizer) ([]row, error) {
	var rows []row
	err := readJSONLines(path, "dataset", 256<<20, func(line int, j *jsonlRow) error {
		var r row
		switch {
		case j.Prompt != nil && j.Messages != nil:
			return fmt.Errorf("%s:%d: prompt, messages: set one, not both", path, line)
		case j.Prompt != nil:
			r.text = *j.Prompt
			r.input = int32(tok.Count(r.text))
		case len(j.Messages) > 0:
			last := j.Messages[len(j.Messages)-1]
			if last.Role != "user" {
				return fmt.Errorf("%s:%d: messages[%d].role: the last message must be \"user\", got %q", path, line, len(j.Messages)-1, last.Role)
			}
			n := 0
			for k, m := range j.Messages {
				if m.Role == "" {
					return fmt.Errorf("%s:%d: messages[%d].role: missing", path, line, k)
				}
				n += tok.Count(m.Content)
			}
			if chat {
				r.text, r.msgs = last.Content, messagesJSON(j.Messages[:len(j.Messages)-1])
			} else {
				parts := make([]string, len(j.Messages))
				for k, m := range j.Messages {
					parts[k] = m.Content
				}
				r.text = strings.Join(parts, "\n\n")
				n = tok.Count(r.text)
			}
			r.input = int32(n)
		default:
			return fmt.Errorf("%s:%d: prompt: missing (want \"prompt\" or \"messages\")", path, line)
		}
		if j.MaxTokens != nil {
			if *j.MaxTokens <= 0 {
				return fmt.Errorf("%s:%d: max_tokens: %d, want > 0", path, line, *j.MaxTokens)
			}
			r.output = int32(*j.MaxTokens)
		}
		var err error
		if r.images, err = imagesJSON(j.Images); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if j.Documents != nil {
			if len(j.Documents) == 0 {
				return fmt.Errorf("%s:%d: documents: empty; want at least one, or no documents key", path, line)
			}
			b, _ := json.Marshal(j.Documents) // strings only: cannot fail
			r.docs = string(b)
		}
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

func lineJSONError(path string, line int, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s:%d: %s: got JSON %s, want %s", path, line, te.Field, te.Value, jsonKind(te.Type.String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s:%d: invalid JSON at column %d: %v", path, line, se.Offset, se)
	}
	return fmt.Errorf("%s:%d: %v", path, line, err)
}

// readCSV reads a CSV with a header naming promptCol and, optionally, maxCol and imageCol (one
// image a row: an http(s) URL, a data: URL or base64).
func readCSV(path, promptCol, maxCol, imageCol string, tok tokenizer.Tokenizer) ([]row, error) {
	var rows []row
	err := readCSVColumns(path, "dataset", []string{promptCol, maxCol, imageCol}, 1, func(line int, f []string) error {
		x := row{text: f[0], input: int32(tok.Count(f[0]))}
		if img := strings.TrimSpace(f[2]); img != "" {
			var err error
			if x.images, err = imagesJSON([]string{img}); err != nil {
				return fmt.Errorf("%s:%d: %s: %w", path, line, imageCol, err)
			}
		}
		if m := strings.TrimSpace(f[1]); m != "" {
			v, err := strconv.Atoi(m)
			if err != nil || v <= 0 {
				return fmt.Errorf("%s:%d: %s: %q is not a positive integer", path, line, maxCol, f[1])
			}
			x.output = int32(v)
		}
		rows = append(rows, x)
		return nil
	})
	return rows, err
}

// readCSVColumns reads a CSV whose header names the wanted columns (a UTF-8 byte-order mark and
// surrounding spaces are ignored). The first required columns of want must be present; a later
// one may be missing, and its field is then "". fn gets each row's wanted fields, in the order
// of want, with the row's line number. what prefixes an error opening the file.
func readCSVColumns(path, what string, want []string, required int, fn func(line int, f []string) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer fh.Close()
	r := csv.NewReader(bufio.NewReaderSize(fh, 1<<20))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return csvError(path, err)
	}
	idx := make([]int, len(want))
	for i, w := range want {
		idx[i] = -1
		for j, h := range header {
			if w != "" && strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) == w {
				idx[i] = j
			}
		}
		if idx[i] < 0 && i < required {
			return fmt.Errorf("%s:1: header: no %q column (have %s)", path, w, strings.Join(header, ","))
		}
	}
	fields := make([]string, len(want))
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		for i, j := range idx {
			fields[i] = ""
			if j >= 0 {
				fields[i] = rec[j]
			}
		}
		if err := fn(line, fields); err != nil {
			return err
		}
	}
}

func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: column %d: %v", path, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// datasetKind is workload.dataset: prompts (and output lengths, when they have them) from a
// ShareGPT, JSON Lines or CSV file.
type datasetKind struct{ *schemas.Dataset }

func datasetOf(w *schemas.Workload) workloadKind {
	if w.Dataset == nil {
		return nil
	}
	return datasetKind{w.Dataset}
}

func (k datasetKind) ownTiming() bool { return false }

func (k datasetKind) setDefaults() {
	if k.PromptColumn == "" {
		k.PromptColumn = "prompt"
	}
	if k.MaxTokensColumn == "" {
		k.MaxTokensColumn = "max_tokens"
	}
}

func (k datasetKind) files() []fileField {
	out := []fileField{{"workload.dataset.file", &k.File, true}}
	if k.Output != nil {
		out = append(out, distFile("workload.dataset.output", k.Output))
	}
	return out
}

func (k datasetKind) validate(v *validator, api string) {
	f := "workload.dataset."
	switch k.Format {
	case schemas.DatasetShareGPT, schemas.DatasetJSONL, schemas.DatasetCSV:
	default:
		v.errf(f+"format", "%q: want sharegpt, jsonl or csv", k.Format)
	}
	if k.File == "" {
		v.errf(f+"file", "required")
	}
	if k.WholeConversation && (k.Format != schemas.DatasetShareGPT || !schemas.MessageAPI(api)) {
		v.errf(f+"whole_conversation", "needs format: sharegpt and target.api chat, responses or messages")
	}
	if k.MaxInputTokens > 0 && k.MaxInputTokens < k.MinInputTokens {
		v.errf(f+"max_input_tokens", "%d < min_input_tokens %d", k.MaxInputTokens, k.MinInputTokens)
	}
	if k.MaxOutputTokens > 0 && k.MaxOutputTokens < k.MinOutputTokens {
		v.errf(f+"max_output_tokens", "%d < min_output_tokens %d", k.MaxOutputTokens, k.MinOutputTokens)
	}
	if k.Output != nil {
		v.length(k.Output, f+"output")
	}
}

func (k datasetKind) plan(p *planner) ([]schemas.StageInfo, error) {
	return p.planLoad(func(_ *textGen, rng *rand.Rand, so *output) (source, error) {
		return newDataset(k.Dataset, p.cfg.Target.API, p.tok, rng, so)
	})
}

// dataset serves the filtered, shuffled rows in turn; a row's prompt is stored the first time
// it is used, so the prompts file holds only rows the plan uses.
type dataset struct {
	rows   []row
	out    *sampler
	rng    *rand.Rand
	o      *output
	first  int64
	next   int
	stored int
}

// newDataset reads the dataset for target.api api: a messages API keeps rows' messages, an API
// without output takes no output length, and only a ranking API sends a row's documents.
func newDataset(cfg *schemas.Dataset, api string, tok tokenizer.Tokenizer, rng *rand.Rand, o *output) (*dataset, error) {
	chat, needOut, docs := schemas.MessageAPI(api), schemas.OutputAPI(api), schemas.RankAPI(api)
	var rows []row
	var err error
	switch cfg.Format {
	case schemas.DatasetShareGPT:
		rows, err = readShareGPT(cfg.File, cfg.WholeConversation, chat, tok)
	case schemas.DatasetJSONL:
		rows, err = readJSONL(cfg.File, chat, tok)
	case schemas.DatasetCSV:
		rows, err = readCSV(cfg.File, cfg.PromptColumn, cfg.MaxTokensColumn, cfg.ImageColumn, tok)
	}
	if err != nil {
		return nil, err
	}
	d := &dataset{rng: rng, o: o, first: o.nPrompt}
	if cfg.Output != nil {
		if d.out, err = newSampler(*cfg.Output); err != nil {
			return nil, fmt.Errorf("workload.dataset.output: %w", err)
		}
	}
	total := len(rows)
	kept := rows[:0]
	for _, r := range rows {
		if !docs {
			r.docs = ""
		}
		if r.input < int32(cfg.MinInputTokens) || (cfg.MaxInputTokens > 0 && r.input > int32(cfg.MaxInputTokens)) {
			continue
		}
		if r.output > 0 && (r.output < int32(cfg.MinOutputTokens) || (cfg.MaxOutputTokens > 0 && r.output > int32(cfg.MaxOutputTokens))) {
			continue
		}
		if r.output == 0 && d.out == nil && needOut {
			return nil, fmt.Errorf("workload.dataset.output: required: %s has rows without max_tokens", cfg.File)
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s: none of its %d usable rows is within the token bounds of workload.dataset", cfg.File, total)
	}
	rng.Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
	d.rows = kept
	return d, nil
}

func (d *dataset) name() string    { return schemas.SourceDataset }
func (d *dataset) multiTurn() bool { return false }

func (d *dataset) unit(buf []turn, limit int64) ([]turn, error) {
	k := d.next % len(d.rows)
	d.next++
	r := &d.rows[k]
	if k == d.stored {
		var err error
		if r.docs != "" {
			err = d.o.addPromptRow(schemas.Prompt{PromptID: d.o.nPrompt, InputTokens: r.input, Text: r.text, MessagesJSON: r.msgs, InputsJSON: r.docs})
		} else {
			_, err = d.o.addPromptImages(r.text, r.msgs, r.images, int(r.input))
		}
		if err != nil {
			return buf, err
		}
		d.stored++
	}
	out := r.output
	if out == 0 && d.out != nil {
		out = int32(d.out.draw(d.rng))
	}
	return append(buf, turn{promptID: d.first + int64(k), input: r.input, output: out, group: -1}), nil
}
