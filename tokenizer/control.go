package tokenizer

import "slices"

// ControlIDs returns, in increasing order, the ids that plain text never
// tokenizes to: tokens of the control and unknown types, and BOS, EOS,
// EOT, EOM and every end-of-generation token whatever their stored type.
// A server refuses them in client-supplied token-id prompts, where they
// would let a client forge turn boundaries.
func (t *Tokenizer) ControlIDs() []int32 {
	var ids []int32
	for i, ty := range t.types {
		if ty == TypeControl || ty == TypeUnknown {
			ids = append(ids, int32(i))
		}
	}
	for _, id := range []int32{t.bos, t.eos, t.eot, t.eom} {
		if id >= 0 && int(id) < len(t.tokens) {
			ids = append(ids, id)
		}
	}
	for id := range t.eog {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
