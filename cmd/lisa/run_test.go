package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// runRef is the part of a llama.cpp reference file `lisa run` is checked against.
type runRef struct {
	Prompts []struct {
		Prompt        string  `json:"prompt"`
		PromptIDs     []int32 `json:"prompt_ids"`
		GeneratedIDs  []int32 `json:"generated_ids"`
		GeneratedText string  `json:"generated_text"`
		Positions     []struct {
			Position int          `json:"position"`
			Top      [][2]float64 `json:"top"`
		} `json:"positions"`
	} `json:"prompts"`
}

func readRunRef(t *testing.T, name string) runRef {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "ref/reference/"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r runRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// runLisaRun runs `lisa run --no-sandbox` in the test process (the
// sandboxed path re-executes the lisa binary: TestRunSandboxed).
func runLisaRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--no-sandbox"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// runJSON is the decoded --json output.
type runJSON struct {
	PromptIDs    []int32 `json:"prompt_ids"`
	GeneratedIDs []int32 `json:"generated_ids"`
	Text         string  `json:"text"`
	Positions    []struct {
		Position int          `json:"position"`
		Top      [][2]float64 `json:"top"`
	} `json:"positions"`
}

func decodeRunJSON(t *testing.T, s string) runJSON {
	t.Helper()
	var r runJSON
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	return r
}

func TestRunGreedyMatchesReference(t *testing.T) {
	modelPath := shared.Model(t, "stories260K.gguf")
	ref := readRunRef(t, "stories260K.gguf")
	for i, p := range ref.Prompts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			n := fmt.Sprint(len(p.GeneratedIDs))
			code, out, errs := runLisaRun("-m", modelPath, "-p", p.Prompt, "-n", n, "--temp", "0", "--threads", "2", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.Contains(errs, "--no-sandbox: the model is parsed in this process") {
				t.Errorf("no --no-sandbox warning on stderr: %q", errs)
			}
			got := decodeRunJSON(t, out)
			if !slices.Equal(got.PromptIDs, p.PromptIDs) {
				t.Errorf("prompt ids %v, llama.cpp %v", got.PromptIDs, p.PromptIDs)
			}
			if !slices.Equal(got.GeneratedIDs, p.GeneratedIDs) {
				t.Errorf("generated %v\nllama.cpp %v", got.GeneratedIDs, p.GeneratedIDs)
			}
			if got.Text != p.GeneratedText {
				t.Errorf("text %q\nllama.cpp %q", got.Text, p.GeneratedText)
			}
			if len(got.Positions) != len(p.Positions) {
				t.Fatalf("%d positions, llama.cpp %d", len(got.Positions), len(p.Positions))
			}
			for k, pos := range got.Positions {
				want := p.Positions[k]
				if pos.Position != want.Position || len(pos.Top) != len(want.Top) || pos.Top[0][0] != want.Top[0][0] {
					t.Fatalf("position %d: got %v, llama.cpp %v", k, pos, want)
				}
				if d := math.Abs(pos.Top[0][1] - want.Top[0][1]); d > 0.05 {
					t.Errorf("position %d: top logit differs by %g", pos.Position, d)
				}
			}
			// The plain output is the same text.
			code, out, errs = runLisaRun("-m", modelPath, "-p", p.Prompt, "-n", n, "--temp", "0", "--threads", "1")
			if code != 0 || out != p.GeneratedText+"\n" {
				t.Errorf("plain output (exit %d, %s): %q", code, errs, out)
			}
		})
	}
}

func TestRunTeacherForce(t *testing.T) {
	modelPath := shared.Model(t, "mini-24m-q8_0.gguf")
	ref := readRunRef(t, "mini-24m-q8_0.gguf")
	p := ref.Prompts[1]
	ids := make([]string, len(p.Positions))
	for i := range ids {
		ids[i] = fmt.Sprint(p.GeneratedIDs[i])
	}
	code, out, errs := runLisaRun("-m", modelPath, "-p", p.Prompt, "--teacher-force", strings.Join(ids, ","), "--json", "--top-logits", "5", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got := decodeRunJSON(t, out)
	if !slices.Equal(got.PromptIDs, p.PromptIDs) || len(got.GeneratedIDs) != len(ids) {
		t.Fatalf("ids %v %v", got.PromptIDs, got.GeneratedIDs)
	}
	if len(got.Positions) != len(p.Positions) {
		t.Fatalf("%d positions, want %d", len(got.Positions), len(p.Positions))
	}
	for k, pos := range got.Positions {
		want := p.Positions[k]
		if pos.Position != want.Position || len(pos.Top) != 5 {
			t.Fatalf("position %d: %v", k, pos)
		}
		for j, e := range pos.Top {
			if d := math.Abs(e[1] - want.Top[j][1]); d > 0.05 {
				t.Errorf("position %d rank %d: logit %g, llama.cpp %g", pos.Position, j, e[1], want.Top[j][1])
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	modelPath := shared.Model(t, "stories260K.gguf")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no model", []string{"-p", "x"}, 2, "-m MODEL is required"},
		{"extra argument", []string{"-m", modelPath, "oops"}, 2, "unexpected argument"},
		{"bad ids", []string{"-m", modelPath, "--teacher-force", "1,x"}, 2, "--teacher-force"},
		{"negative id", []string{"-m", modelPath, "--teacher-force", "-3"}, 2, "--teacher-force"},
		{"id outside vocabulary", []string{"-m", modelPath, "--teacher-force", "1,512"}, 1, "outside the vocabulary"},
		{"bad threads", []string{"-m", modelPath, "--threads", "0"}, 2, "--threads"},
		{"bad -n", []string{"-m", modelPath, "-n", "-1"}, 2, "-n"},
		{"bad temperature", []string{"-m", modelPath, "--temp", "NaN"}, 1, "Temperature"},
		{"missing file", []string{"-m", modelPath + ".absent"}, 1, "lisa run:"},
		{"stop with json", []string{"-m", modelPath, "--json", "--stop", "x"}, 2, "--stop applies to generation"},
		{"ignore-eos without json", []string{"-m", modelPath, "--ignore-eos"}, 2, "--ignore-eos needs --json"},
		{"five stops", []string{"-m", modelPath, "--stop", "a", "--stop", "b", "--stop", "c", "--stop", "d", "--stop", "e"}, 2, "at most 4 stop strings"},
	}
	for _, tc := range tests {
		code, _, errs := runLisaRun(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", tc.name, code, errs, tc.code, tc.msg)
		}
	}
	// Zero steps still prints valid JSON.
	code, out, errs := runLisaRun("-m", modelPath, "-p", "", "-n", "0", "--json")
	if code != 0 {
		t.Fatalf("-n 0: exit %d: %s", code, errs)
	}
	if got := decodeRunJSON(t, out); !slices.Equal(got.PromptIDs, []int32{1}) || len(got.GeneratedIDs) != 0 {
		t.Errorf("-n 0: %+v", got)
	}
}

func TestRunSeeded(t *testing.T) {
	modelPath := shared.Model(t, "stories260K.gguf")
	args := []string{"-m", modelPath, "-p", "The little dog", "-n", "24", "--temp", "1", "--seed", "7", "--json", "--top-logits", "0"}
	_, a, _ := runLisaRun(args...)
	_, b, _ := runLisaRun(args...)
	if a != b || a == "" {
		t.Fatalf("same seed, different output:\n%s\n%s", a, b)
	}
	args[len(args)-4] = "8"
	_, c, _ := runLisaRun(args...)
	if decodeRunJSON(t, c).Text == decodeRunJSON(t, a).Text {
		t.Errorf("seeds 7 and 8 gave the same text %q", decodeRunJSON(t, a).Text)
	}
}

// TestRunStop checks that generation ends before a stop string, as the
// serving engine ends it.
func TestRunStop(t *testing.T) {
	modelPath := shared.Model(t, "stories260K.gguf")
	ref := readRunRef(t, "stories260K.gguf")
	p := ref.Prompts[0]
	cut := strings.Index(p.GeneratedText, "Lily")
	if cut < 0 {
		t.Fatalf("reference text %q has no %q to stop at", p.GeneratedText, "Lily")
	}
	code, out, errs := runLisaRun("-m", modelPath, "-p", p.Prompt, "-n", fmt.Sprint(len(p.GeneratedIDs)), "--temp", "0", "--stop", "Lily")
	if code != 0 || out != p.GeneratedText[:cut]+"\n" {
		t.Errorf("exit %d (%s): %q, want %q", code, errs, out, p.GeneratedText[:cut]+"\n")
	}
}

// TestRunSandboxed runs the built binary: generation through the
// sandboxed serving worker, and the --json evaluation in a sandboxed
// worker of its own, both matching llama.cpp's greedy reference.
func TestRunSandboxed(t *testing.T) {
	modelPath := shared.Model(t, "stories260K.gguf")
	ref := readRunRef(t, "stories260K.gguf")
	bin := e2eBinary(t)
	p := ref.Prompts[0]
	n := fmt.Sprint(len(p.GeneratedIDs))
	lisaRun := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append([]string{"run", "-m", modelPath, "-p", p.Prompt, "-n", n, "--temp", "0"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lisa run %v: %v\n%s", args, err, errb.String())
		}
		if strings.Contains(errb.String(), "no-sandbox") {
			t.Errorf("the sandboxed run warns of --no-sandbox: %s", errb.String())
		}
		return out.String(), errb.String()
	}
	if out, _ := lisaRun(); out != p.GeneratedText+"\n" {
		t.Errorf("sandboxed generation %q\nllama.cpp %q", out, p.GeneratedText)
	}
	out, _ := lisaRun("--json", "--threads", "2")
	got := decodeRunJSON(t, out)
	if !slices.Equal(got.PromptIDs, p.PromptIDs) || !slices.Equal(got.GeneratedIDs, p.GeneratedIDs) {
		t.Errorf("sandboxed evaluation: ids %v %v, llama.cpp %v %v", got.PromptIDs, got.GeneratedIDs, p.PromptIDs, p.GeneratedIDs)
	}
}
