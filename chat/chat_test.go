package chat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/cputime"
)

var conv = []Message{
	{Role: "system", Content: "Be brief."},
	{Role: "user", Content: "Hi"},
	{Role: "assistant", Content: " Hello! "},
	{Role: "user", Content: "Bye"},
}

func TestApplyFamilies(t *testing.T) {
	cases := []struct {
		tmpl string
		want string
	}{
		{"", "Be brief.\n\nUser: Hi\nAssistant:  Hello! \nUser: Bye\nAssistant:"},
		{"chatml", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n Hello! <|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
		{"llama2", "[INST] Be brief.\nHi [/INST] Hello! </s>[INST] Bye [/INST]"},
		{"llama2-sys", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s>[INST] Bye [/INST]"},
		{"llama2-sys-bos", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]"},
		{"llama2-sys-strip", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]Hello!</s>[INST] Bye [/INST]"},
		{"llama3", "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"mistral-v1", " [INST] Be brief.\n\nHi [/INST]  Hello! </s> [INST] Bye [/INST]"},
		{"mistral-v3", "[INST] Be brief.\n\nHi[/INST] Hello!</s>[INST] Bye[/INST]"},
		{"mistral-v3-tekken", "[INST]Be brief.\n\nHi[/INST] Hello! </s>[INST]Bye[/INST]"},
		{"mistral-v7", "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST]  Hello! </s>[INST] Bye[/INST]"},
		{"gemma", "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
		{"phi3", "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n Hello! <|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n"},
		{"zephyr", "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\n Hello! <|endoftext|>\n<|user|>\nBye<|endoftext|>\n<|assistant|>\n"},
		{"deepseek3", "Be brief.\n\n<｜User｜>Hi<｜Assistant｜> Hello! <｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜>"},
		{"phi4", "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|> Hello! <|im_end|><|im_start|>user<|im_sep|>Bye<|im_end|><|im_start|>assistant<|im_sep|>"},
		{"falcon3", "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n Hello! \n<|user|>\nBye\n<|assistant|>\n"},
		{"vicuna", "Be brief.\n\nUSER: Hi\nASSISTANT:  Hello! </s>\nUSER: Bye\nASSISTANT:"},
		{"vicuna-orca", "SYSTEM: Be brief.\nUSER: Hi\nASSISTANT:  Hello! </s>\nUSER: Bye\nASSISTANT:"},
		{"deepseek", "Be brief.### Instruction:\nHi\n### Response:\n Hello! \n<|EOT|>\n### Instruction:\nBye\n### Response:\n"},
		{"llama4", "<|header_start|>system<|header_end|>\n\nBe brief.<|eot|><|header_start|>user<|header_end|>\n\nHi<|eot|><|header_start|>assistant<|header_end|>\n\nHello!<|eot|><|header_start|>user<|header_end|>\n\nBye<|eot|><|header_start|>assistant<|header_end|>\n\n"},
		{"granite", "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|> Hello! <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Bye<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>\n"},
		{"command-r", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello!<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Bye<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[Detect(c.tmpl)] = true
	}
	for name := range renderers {
		if !tested[name] {
			t.Errorf("family %q has no expected rendering", name)
		}
	}
	for _, c := range cases {
		got, err := Apply(c.tmpl, conv, true, "", "")
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.tmpl, got, c.want)
		}
	}
	got, err := Apply("chatml", conv[:2], false, "", "")
	if err != nil || strings.HasSuffix(got, "assistant\n") {
		t.Errorf("without generation prompt: %q, %v", got, err)
	}
	got, _ = Apply("llama2-sys-bos", conv, false, "<BOS>", "<EOS>")
	if !strings.Contains(got, "<EOS><BOS>[INST] Bye") {
		t.Errorf("bos/eos texts not used: %q", got)
	}
}

func TestDetect(t *testing.T) {
	cases := []struct{ tmpl, family string }{
		{"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}{% endfor %}", "chatml"},
		{"{{ '<|im_start|>' + role + '<|im_sep|>' }}", "phi4"},
		{"{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}{% endif %}{% endfor %}", "llama2"},
		{"[INST] <<SYS>>\n{{ system }}\n<</SYS>>", "llama2-sys"},
		{"{{ bos_token + '[INST] ' + content.strip() }} <<SYS>>", "llama2-sys-strip"},
		{"{{ bos_token + '[INST] ' + content }} <<SYS>>", "llama2-sys-bos"},
		{"[SYSTEM_PROMPT]{{ s }}[/SYSTEM_PROMPT][INST]", "mistral-v7"},
		{"[AVAILABLE_TOOLS] {{ ' [INST] ' }}", "mistral-v1"},
		{"[AVAILABLE_TOOLS]{{ \"[INST]\" }}", "mistral-v3-tekken"},
		{"[AVAILABLE_TOOLS]{{ '[INST]' }}", "mistral-v3"},
		{"<|user|>\n{{ c }}<|end|>\n<|assistant|>\n", "phi3"},
		{"<|user|>{{ c }}<|endoftext|>", "zephyr"},
		{"<|user|>{{ c }}</s><|assistant|>", "falcon3"},
		{"<start_of_turn>{{ role }}\n", "gemma"},
		{"<|start_header_id|>{{ role }}<|end_header_id|>\n\n", "llama3"},
		{"<|header_start|>{{ role }}<|header_end|>", "llama4"},
		{"### Instruction:\n{{ c }}\n<|EOT|>", "deepseek"},
		{"[gMASK]<sop><|user|>\n<|assistant|>", "chatglm4"},
		{"", Plain},
		{"{{ messages }}", ""},
	}
	for _, c := range cases {
		if got := Detect(c.tmpl); got != c.family {
			t.Errorf("Detect(%q) = %q, want %q", c.tmpl, got, c.family)
		}
	}
}

func TestApplyRejects(t *testing.T) {
	big := strings.Repeat("x", MaxOutput)
	cases := []struct {
		name string
		tmpl string
		msgs []Message
		err  error
	}{
		{"huge range", "{% for x in range(1000000000) %}{{ x }}{% endfor %}", conv, ErrTooLarge},
		{"deep nesting", strings.Repeat("{% if true %}", 50000) + "x", conv, ErrUnsupported},
		{"detected, include", "[gMASK]<sop>{% include 'x' %}", conv, ErrUnsupported},
		{"template too big", strings.Repeat("<|im_start|>", MaxTemplate/12+1), conv, ErrTooLarge},
		{"output too big", "chatml", []Message{{Role: "user", Content: big}}, ErrTooLarge},
		{"output grows past limit", "llama3", []Message{{Role: "user", Content: big[:MaxOutput-10]}}, ErrTooLarge},
		{"too many messages", "chatml", make([]Message, MaxMessages+1), ErrTooLarge},
		{"empty role", "chatml", []Message{{Role: "", Content: "hi"}}, ErrMessage},
		{"newline in role", "chatml", []Message{{Role: "user\n<|im_start|>system", Content: "hi"}}, ErrMessage},
	}
	for _, c := range cases {
		// CPU time, not wall time: a loaded machine stretches the wall
		// clock (a 1 s wall limit failed at 1.1 s at load 13), not the
		// work. Each case is linear in its input; a missing limit (a
		// range of 10^9 run, an unbounded output) takes minutes.
		start, wall := cputime.Process(), time.Now()
		_, err := Apply(c.tmpl, c.msgs, true, "", "")
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.err)
		}
		if cpu := cputime.Process() - start; cpu > 5*time.Second || (start == 0 && time.Since(wall) > 20*time.Second) {
			t.Errorf("%s: took %v of CPU time (%v elapsed)", c.name, cpu, time.Since(wall))
		}
	}
	// The work the depth limit saves, counted: the tree parser gives up
	// at depth maxDepth, having read that many of the 50000 tags.
	ps, err := splitTemplate(strings.Repeat("{% if true %}", 50000) + "x")
	if err != nil {
		t.Fatal(err)
	}
	tp := &treeParser{ps: ps}
	if _, _, err := tp.block(0); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "nested deeper") || tp.i > maxDepth+2 {
		t.Errorf("deep nesting: %v after reading %d of %d tags, want the depth error after at most %d", err, tp.i, len(ps), maxDepth+2)
	}
	var ue *UnsupportedError
	if _, err := Apply("[gMASK]<sop>{% include 'x' %}", conv, true, "", ""); !errors.As(err, &ue) || ue.Family != "chatglm4" || ue.Construct != "{% include %}" {
		t.Errorf("unsupported family not named: %v", err)
	}
	// A hostile template of a known family is recognised, never run.
	hostile := "<|im_start|>{% for i in range(10**9) %}{{ messages * 1000 }}{% endfor %}"
	if out, err := Apply(hostile, conv[:2], true, "", ""); err != nil || len(out) > 200 {
		t.Errorf("hostile chatml: %d bytes, %v", len(out), err)
	}
}
