// Package llref reads the JSON references that bench/llamacpp/llref prints
// from llama.cpp, and compares `lisa run --json` documents against them
// with named tolerances.
//
// A logits reference holds, per prompt, llama.cpp's prompt ids, generated
// (or teacher-forced) ids and the top [id, logit] pairs of the output row
// at every position, in the field names of `lisa run --json`; so one Run
// type reads both, and Compare checks lisa's run against llama.cpp's:
// identical prompt and generated ids, top-1 identical at every position
// lisa reports, the leading logits within a tolerance.
package llref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxDocument bounds the size of a document Parse and ParseRun accept.
const MaxDocument = 256 << 20

// Pair is one [id, logit] entry of a position's top list; a JSON null
// logit (non-finite in the producer) reads as NaN.
type Pair struct {
	ID    int32
	Logit float32
}

// UnmarshalJSON reads a two-element array [id, logit|null].
func (p *Pair) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("top pair: %w", err)
	}
	if len(raw) != 2 {
		return fmt.Errorf("top pair: %d elements, want [id, logit]", len(raw))
	}
	var id int64
	if err := json.Unmarshal(raw[0], &id); err != nil || id < 0 || id > math.MaxInt32 {
		return fmt.Errorf("top pair: id %s is not a token id", raw[0])
	}
	p.ID = int32(id)
	if string(bytes.TrimSpace(raw[1])) == "null" {
		p.Logit = float32(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw[1])), 32)
	if err != nil {
		return fmt.Errorf("top pair: logit %s: %w", raw[1], err)
	}
	p.Logit = float32(v)
	return nil
}

// Position is the top list of the output row of the token at Position.
type Position struct {
	Position int    `json:"position"`
	Top      []Pair `json:"top"`
}

// Run is one prompt's answer: the whole document of `lisa run --json`, or
// one entry of a logits reference's "results".
type Run struct {
	// Prompt is the prompt text (reference only; nil when the case was
	// given as ids, or for lisa's document).
	Prompt *string `json:"prompt"`
	// TeacherForced says the generated ids were given, not generated
	// (reference only).
	TeacherForced bool `json:"teacher_forced"`
	// Report lists the [first, last] position ranges the reference was
	// asked for (reference only; nil: every position).
	Report       [][2]int   `json:"report"`
	PromptIDs    []int32    `json:"prompt_ids"`
	GeneratedIDs []int32    `json:"generated_ids"`
	Text         string     `json:"text"`
	Positions    []Position `json:"positions"`
}

// Settings are the llama.cpp settings a logits reference was made with.
type Settings struct {
	NCtx         int    `json:"n_ctx"`
	NBatch       int    `json:"n_batch"`
	GenBatch     int    `json:"gen_batch"` // teacher-forced ids per decode after the prompt (0: 1)
	NUbatch      int    `json:"n_ubatch"`
	NThreads     int    `json:"n_threads"`
	KVCacheType  string `json:"kv_cache_type"`
	FlashAttn    bool   `json:"flash_attn"`
	NGen         int    `json:"n_gen"`
	TopK         int    `json:"top_k"`
	AddSpecial   bool   `json:"add_special"`
	ParseSpecial bool   `json:"parse_special"`
}

// Reference is a document printed by `ref.sh logits`.
type Reference struct {
	Tool      string   `json:"tool"`
	Mode      string   `json:"mode"`
	LlamaCpp  string   `json:"llama_cpp"`
	ModelFile string   `json:"model_file"`
	ModelDesc string   `json:"model_desc"`
	NVocab    int      `json:"n_vocab"`
	BOS       int32    `json:"bos_id"`
	EOS       int32    `json:"eos_id"`
	AddBOS    bool     `json:"add_bos"`
	Settings  Settings `json:"settings"`
	Results   []Run    `json:"results"`
}

// Parse reads a logits reference and checks its shape.
func Parse(data []byte) (*Reference, error) {
	if len(data) > MaxDocument {
		return nil, fmt.Errorf("llref: reference of %d bytes, at most %d", len(data), MaxDocument)
	}
	var r Reference
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("llref: reference: %w", err)
	}
	if r.Tool != "llref" || r.Mode != "logits" {
		return nil, fmt.Errorf("llref: reference: tool %q mode %q, want llref logits", r.Tool, r.Mode)
	}
	for i := range r.Results {
		if err := r.Results[i].check(r.NVocab); err != nil {
			return nil, fmt.Errorf("llref: reference result %d: %w", i, err)
		}
	}
	return &r, nil
}

// ParseRun reads the document of `lisa run --json` and checks its shape
// against a vocabulary of nVocab tokens.
func ParseRun(data []byte, nVocab int) (Run, error) {
	var r Run
	if len(data) > MaxDocument {
		return r, fmt.Errorf("llref: run of %d bytes, at most %d", len(data), MaxDocument)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("llref: run: %w", err)
	}
	if err := r.check(nVocab); err != nil {
		return r, fmt.Errorf("llref: run: %w", err)
	}
	return r, nil
}

// check rejects ids outside the vocabulary and unordered or negative
// positions, so Compare can trust the shape.
func (r *Run) check(nVocab int) error {
	ids := func(field string, v []int32) error {
		for i, id := range v {
			if int(id) >= nVocab {
				return fmt.Errorf("%s[%d] = %d outside the vocabulary of %d", field, i, id, nVocab)
			}
		}
		return nil
	}
	if err := ids("prompt_ids", r.PromptIDs); err != nil {
		return err
	}
	if err := ids("generated_ids", r.GeneratedIDs); err != nil {
		return err
	}
	last := -1
	for i, p := range r.Positions {
		if p.Position <= last {
			return fmt.Errorf("positions[%d]: position %d after %d", i, p.Position, last)
		}
		last = p.Position
		for j, t := range p.Top {
			if int(t.ID) >= nVocab {
				return fmt.Errorf("positions[%d].top[%d]: id %d outside the vocabulary of %d", i, j, t.ID, nVocab)
			}
		}
	}
	return nil
}

// Tolerance says how close lisa's logits must be to llama.cpp's.
type Tolerance struct {
	// Name names the tolerance in mismatch reports.
	Name string
	// TopN is how many leading pairs of each row are compared.
	TopN int
	// Abs is the absolute logit tolerance.
	Abs float64
	// Rel, when positive, allows Rel times the largest absolute logit of
	// llama.cpp's row if that is more than Abs.
	Rel float64
	// NearTies, when set, accepts a top-1 id that differs from llama.cpp's
	// if llama.cpp lists it within the logit tolerance of its own top-1
	// (a near tie that numeric noise may flip; counted in Report.NearTies).
	// Off, top-1 must be identical.
	NearTies bool
}

// F16 is issue 18's tolerance for F16 weights: top-10 logits within 2e-3.
func F16() Tolerance { return Tolerance{Name: "f16", TopN: 10, Abs: 2e-3} }

// Quantized is issue 18's tolerance for quantized weights (whose
// activations llama.cpp quantizes to Q8 in its own order): top-10 logits
// within 0.05 or 1% of the largest logit.
func Quantized() Tolerance { return Tolerance{Name: "quantized", TopN: 10, Abs: 0.05, Rel: 0.01} }

// Mismatch is one difference Compare found.
type Mismatch struct {
	// Position is the sequence position, or -1 for the id lists.
	Position int
	What     string
}

// String formats the mismatch for a test log.
func (m Mismatch) String() string {
	if m.Position < 0 {
		return m.What
	}
	return fmt.Sprintf("position %d: %s", m.Position, m.What)
}

// Report is what Compare found.
type Report struct {
	// Compared counts the positions compared.
	Compared int
	// MaxDiff is the largest logit difference seen on ids both rows list.
	MaxDiff float64
	// NearTies counts the positions whose top-1 differed within a near
	// tie that the tolerance accepted.
	NearTies int
	// Mismatches lists every difference beyond the tolerance.
	Mismatches []Mismatch
}

// Err returns nil without mismatches, or an error listing up to ten.
func (r Report) Err() error {
	if len(r.Mismatches) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d mismatches over %d positions:", len(r.Mismatches), r.Compared)
	for i, m := range r.Mismatches {
		if i == 10 {
			fmt.Fprintf(&b, "\n  ... %d more", len(r.Mismatches)-i)
			break
		}
		b.WriteString("\n  " + m.String())
	}
	return errors.New(b.String())
}

// Compare checks got (lisa's run) against want (llama.cpp's reference
// for the same prompt): identical prompt ids and generated ids; every
// position got reports must be in want (unless want was asked only for
// other positions: see Run.Report), with the same top-1 id; and for
// the first tol.TopN pairs of each row, an id both rows list has logits
// within the tolerance, and an id only one row lists has a logit no more
// than the tolerance above the other row's cut-off (its smallest listed
// logit), since the other row ranks it below that.
func Compare(got, want Run, tol Tolerance) Report {
	var r Report
	add := func(pos int, format string, a ...any) {
		r.Mismatches = append(r.Mismatches, Mismatch{Position: pos, What: fmt.Sprintf(format, a...)})
	}
	if !equalIDs(got.PromptIDs, want.PromptIDs) {
		add(-1, "prompt ids %v, llama.cpp %v", got.PromptIDs, want.PromptIDs)
	}
	if !equalIDs(got.GeneratedIDs, want.GeneratedIDs) {
		add(-1, "generated ids %v, llama.cpp %v", got.GeneratedIDs, want.GeneratedIDs)
	}
	byPos := make(map[int]*Position, len(want.Positions))
	for i := range want.Positions {
		byPos[want.Positions[i].Position] = &want.Positions[i]
	}
	for _, gp := range got.Positions {
		wp, ok := byPos[gp.Position]
		if !ok {
			if want.Reports(gp.Position) {
				add(gp.Position, "not in the reference")
			}
			continue
		}
		r.Compared++
		comparePosition(&r, gp.Position, head(gp.Top, tol.TopN), head(wp.Top, tol.TopN), tol, add)
	}
	return r
}

// Reports says whether the reference was asked for position p.
func (r *Run) Reports(p int) bool {
	if r.Report == nil {
		return true
	}
	for _, span := range r.Report {
		if p >= span[0] && p <= span[1] {
			return true
		}
	}
	return false
}

func head(p []Pair, n int) []Pair {
	if n > 0 && len(p) > n {
		return p[:n]
	}
	return p
}

func comparePosition(r *Report, pos int, got, want []Pair, tol Tolerance, add func(int, string, ...any)) {
	if len(got) == 0 || len(want) == 0 {
		if len(got) != len(want) {
			add(pos, "%d top pairs, llama.cpp %d", len(got), len(want))
		}
		return
	}
	limit := tol.Abs
	if tol.Rel > 0 {
		var big float64
		for _, p := range want {
			if a := math.Abs(float64(p.Logit)); a > big {
				big = a
			}
		}
		limit = max(limit, tol.Rel*big)
	}
	gotAt := make(map[int32]float32, len(got))
	for _, p := range got {
		gotAt[p.ID] = p.Logit
	}
	wantAt := make(map[int32]float32, len(want))
	for _, p := range want {
		wantAt[p.ID] = p.Logit
	}
	if got[0].ID != want[0].ID {
		w, ok := wantAt[got[0].ID]
		if tol.NearTies && ok && float64(want[0].Logit)-float64(w) <= limit {
			r.NearTies++
		} else {
			add(pos, "top-1 id %d (%g), llama.cpp %d (%g)", got[0].ID, got[0].Logit, want[0].ID, want[0].Logit)
		}
	}
	gotCut, wantCut := float64(got[len(got)-1].Logit), float64(want[len(want)-1].Logit)
	for _, p := range want {
		w := float64(p.Logit)
		g, ok := gotAt[p.ID]
		switch {
		case math.IsNaN(w):
			if ok && !math.IsNaN(float64(g)) {
				add(pos, "id %d: logit %g, llama.cpp null", p.ID, g)
			}
		case !ok:
			if w-gotCut > limit {
				add(pos, "id %d (llama.cpp %g) missing from lisa's top %d (cut-off %g), beyond %s tolerance %g",
					p.ID, w, len(got), gotCut, tol.Name, limit)
			}
		default:
			d := math.Abs(float64(g) - w)
			if math.IsNaN(d) {
				add(pos, "id %d: logit %g, llama.cpp %g", p.ID, g, w)
				continue
			}
			r.MaxDiff = max(r.MaxDiff, d)
			if d > limit {
				add(pos, "id %d: logit %.9g, llama.cpp %.9g: differ by %.3g, beyond %s tolerance %g",
					p.ID, g, w, d, tol.Name, limit)
			}
		}
	}
	for _, p := range got {
		if _, ok := wantAt[p.ID]; ok {
			continue
		}
		if g := float64(p.Logit); math.IsNaN(g) || g-wantCut > limit {
			add(pos, "id %d (%g) missing from llama.cpp's top %d (cut-off %g), beyond %s tolerance %g",
				p.ID, g, len(want), wantCut, tol.Name, limit)
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// LisaArgs returns the arguments of `lisa run` that evaluate want's case
// teacher-forced (the model flag first): its prompt text, its generated
// ids forced, topN pairs per position, one thread. It fails for a case
// given as ids, which `lisa run` cannot take.
func LisaArgs(modelPath string, want Run, topN int) ([]string, error) {
	if want.Prompt == nil {
		return nil, errors.New("llref: the case was given as ids; lisa run takes prompt text")
	}
	args := []string{"-m", modelPath, "-p", *want.Prompt, "--json", "--threads", "1",
		"--top-logits", strconv.Itoa(topN), "--temp", "0"}
	if len(want.GeneratedIDs) == 0 {
		return append(args, "-n", "0"), nil
	}
	ids := make([]string, len(want.GeneratedIDs))
	for i, id := range want.GeneratedIDs {
		ids[i] = strconv.Itoa(int(id))
	}
	return append(args, "--teacher-force", strings.Join(ids, ",")), nil
}
