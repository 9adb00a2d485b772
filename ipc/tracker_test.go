package ipc

import "testing"

func TestTracker(t *testing.T) {
	tr := NewTracker()
	hello := tr.Issue(ReqHello)
	gen := tr.Issue(ReqGenerate)
	tok := tr.Issue(ReqTokenize)
	det := tr.Issue(ReqDetokenize)
	if hello != 1 || gen != 2 || tok != 3 || det != 4 || tr.Live() != 4 {
		t.Fatalf("ids %d %d %d %d, live %d", hello, gen, tok, det, tr.Live())
	}
	steps := []struct {
		name string
		m    Message
		kind Kind // 0: accepted
	}{
		{"progress for generate", &Progress{ID: gen}, KindOutOfOrder},
		{"progress answers hello", &Progress{ID: hello}, 0},
		{"more progress", &Progress{ID: hello}, 0},
		{"ready answers hello", &Ready{ID: hello}, 0},
		{"progress after ready", &Progress{ID: hello}, KindFinishedID},
		{"hello finished", &Ready{ID: hello}, KindFinishedID},
		{"tokens", &Tokens{ID: gen}, 0},
		{"more tokens", &Tokens{ID: gen}, 0},
		{"tokenized for generate", &Tokenized{ID: gen}, KindOutOfOrder},
		{"ready for generate", &Ready{ID: gen}, KindOutOfOrder},
		{"done", &Done{ID: gen}, 0},
		{"tokens after done", &Tokens{ID: gen}, KindFinishedID},
		{"done twice", &Done{ID: gen}, KindFinishedID},
		{"detokenized for tokenize", &Detokenized{ID: tok}, KindOutOfOrder},
		{"tokens for tokenize", &Tokens{ID: tok}, KindOutOfOrder},
		{"tokenized", &Tokenized{ID: tok}, 0},
		{"error for detokenize", &Error{ID: det}, 0},
		{"never issued", &Tokens{ID: 5}, KindUnknownID},
		{"zero", &Error{ID: 0}, KindUnknownID},
		{"huge", &Done{ID: 1 << 63}, KindUnknownID},
	}
	for _, s := range steps {
		_, err := tr.Check(s.m)
		if KindOf(err) != s.kind || (s.kind == 0 && err != nil) {
			t.Fatalf("%s: got %v, want kind %v", s.name, err, s.kind)
		}
	}
	if tr.Live() != 0 {
		t.Fatalf("%d ids still live", tr.Live())
	}
	g2 := tr.Issue(ReqGenerate)
	if tr.Kind(g2) != ReqGenerate {
		t.Fatal("kind of a live id")
	}
	tr.Finish(g2)
	if _, err := tr.Check(&Done{ID: g2}); KindOf(err) != KindFinishedID {
		t.Fatalf("reply after Finish: %v", err)
	}
}
