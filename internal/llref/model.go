package llref

import (
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/tokenizer"
)

// Evaluate runs want's case through package model as llama.cpp ran it
// for the reference: the prompt (tokenized by tok as llama.cpp does for
// raw text, special tokens added and special-token parsing off; or want's
// ids when the case was given as ids) in batches of n_batch, then the
// generated ids in batches of gen_batch, every reported row's logits, in
// llama.cpp's batched summation order, with an F16 cache and one thread.
// It returns lisa's answer in the reference's shape, with the topN
// highest [id, logit] pairs of each row.
func Evaluate(m *model.Model, tok *tokenizer.Tokenizer, want Run, set Settings, topN int) (Run, error) {
	prompt := want.PromptIDs
	if want.Prompt != nil {
		prompt = tok.Encode(*want.Prompt, true, false)
	}
	ids := append(append([]int32(nil), prompt...), want.GeneratedIDs...)
	c, err := model.NewCache(m.Config, model.KVF16, 1, len(ids)+1)
	if err != nil {
		return Run{}, err
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	nBatch, genBatch := max(set.NBatch, 1), max(set.GenBatch, 1)
	r := model.NewRunner(m, c, pool, max(nBatch, genBatch))
	r.SetLlamaOrder(true)
	got := Run{PromptIDs: prompt, GeneratedIDs: want.GeneratedIDs}
	var buf []sample.TokenLogprob
	decode := func(start, k int) error {
		b := model.Batch{Tokens: ids[start : start+k], Pos: make([]int32, k), Seq: make([]int32, k), Logits: make([]bool, k)}
		for i := range k {
			b.Pos[i], b.Logits[i] = int32(start+i), want.Reports(start+i)
		}
		rows, err := r.Decode(b)
		if err != nil {
			return err
		}
		j := 0
		for i := range k {
			if !b.Logits[i] {
				continue
			}
			row := rows[j]
			j++
			_, top, err := sample.Logprobs(row, 0, topN, buf)
			if err != nil {
				return err
			}
			buf = top
			p := Position{Position: start + i}
			for _, tl := range top {
				p.Top = append(p.Top, Pair{ID: tl.ID, Logit: row[tl.ID]})
			}
			got.Positions = append(got.Positions, p)
		}
		return nil
	}
	n := len(prompt)
	for start := 0; start < n; start += nBatch {
		if err := decode(start, min(nBatch, n-start)); err != nil {
			return Run{}, err
		}
	}
	// The last id is never fed: its row would follow the reference's end.
	for start := n; start < len(ids)-1; start += genBatch {
		if err := decode(start, min(genBatch, len(ids)-1-start)); err != nil {
			return Run{}, err
		}
	}
	return got, nil
}
