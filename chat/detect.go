package chat

import "strings"

// Plain is the family used when a model has no chat template.
const Plain = "plain"

// Detect returns the family of tmpl: a family name given directly, the
// family recognised by characteristic substrings (checked in llama.cpp's
// order, so that templates of similar families are told apart the same
// way), Plain for "", or "" when nothing matches.
func Detect(tmpl string) string {
	if tmpl == "" {
		return Plain
	}
	if _, ok := renderers[tmpl]; ok {
		return tmpl
	}
	has := func(s string) bool { return strings.Contains(tmpl, s) }
	switch {
	case has("<|im_start|>"):
		switch {
		case has("<|im_sep|>"):
			return "phi4"
		case has("<end_of_utterance>"):
			return "smolvlm"
		}
		return "chatml"
	case strings.HasPrefix(tmpl, "mistral") || has("[INST]"):
		return detectInst(has)
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("[gMASK]<sop>"):
		return "chatglm4"
	case has("<|assistant|>") && has("<|user|>"):
		if has("</s>") {
			return "falcon3"
		}
		return "glmedge"
	case has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>"):
		return "glmedge"
	case has("<|user|>") && has("<|endoftext|>"):
		return "zephyr"
	case has("bos_token + message['role']"):
		return "monarch"
	case has("<start_of_turn>"):
		return "gemma"
	}
	return detectLater(has)
}

// detectInst tells the [INST] families apart: Mistral v7, v1, v3,
// v3-tekken and the Llama 2 variants.
func detectInst(has func(string) bool) string {
	switch {
	case has("[SYSTEM_PROMPT]"):
		return "mistral-v7"
	case has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"):
		switch {
		case has(" [INST]"):
			return "mistral-v1"
		case has(`"[INST]"`):
			return "mistral-v3-tekken"
		}
		return "mistral-v3"
	case has("content.strip()"):
		return "llama2-sys-strip"
	case has("bos_token + '[INST]"):
		return "llama2-sys-bos"
	case has("<<SYS>>"):
		return "llama2-sys"
	}
	return "llama2"
}

// detectLater continues Detect with the less common families.
func detectLater(has func(string) bool) string {
	switch {
	case has(`'\n\nAssistant: ' + eos_token`):
		return "orion"
	case has("GPT4 Correct "):
		return "openchat"
	case has("USER: ") && has("ASSISTANT: "):
		if has("SYSTEM: ") {
			return "vicuna-orca"
		}
		return "vicuna"
	case has("### Instruction:") && has("<|EOT|>"):
		return "deepseek"
	case has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>"):
		return "command-r"
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return "llama3"
	case has("[gMASK]sop"):
		return "chatglm3"
	case has("<用户>"):
		return "minicpm"
	case has("'Assistant: ' + message['content'] + eos_token"):
		return "deepseek2"
	case has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"):
		return "deepseek3"
	case has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]"):
		return "exaone"
	case has("<|start_of_role|>"):
		return "granite"
	case has("<|header_start|>") && has("<|header_end|>"):
		return "llama4"
	}
	return ""
}
