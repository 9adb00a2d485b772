package vocab

import "testing"

// FuzzBuild checks Build never panics and that whatever it accepts is a
// consistent vocabulary: the size asked for, distinct tokens, special ids
// inside it.
func FuzzBuild(f *testing.F) {
	f.Add(uint8(Llama3), uint32(4096), uint32(3840))
	f.Add(uint8(Qwen3), uint32(4096), uint32(3840))
	f.Add(uint8(Granite), uint32(4099), uint32(4096))
	f.Add(uint8(Tekken), uint32(4096), uint32(0))
	f.Add(uint8(Qwen2), uint32(300), uint32(290))
	f.Fuzz(func(t *testing.T, fam uint8, n, at uint32) {
		s := Spec{Family: Family(fam % 10), NVocab: int(n % (1 << 15)), SpecialAt: int(int32(at))}
		v, err := Build(s)
		if err != nil {
			return
		}
		if len(v.Tokens) != s.NVocab || len(v.Types) != s.NVocab {
			t.Fatalf("%d tokens, %d types for %+v", len(v.Tokens), len(v.Types), s)
		}
		seen := make(map[string]bool, len(v.Tokens))
		for i, tok := range v.Tokens {
			if tok == "" || seen[tok] {
				t.Fatalf("token %d %q empty or repeated", i, tok)
			}
			seen[tok] = true
		}
		for _, id := range []int32{v.BOS, v.EOS, v.UNK, v.PAD} {
			if id < -1 || id >= int32(s.NVocab) {
				t.Fatalf("special id %d outside %d tokens", id, s.NVocab)
			}
		}
	})
}
