package chat

import "strings"

// renderer writes msgs in one family's format.
type renderer func(b *strings.Builder, msgs []Message, addAss bool, bos, eos string)

// renderers are the families Apply renders, by name.
var renderers = map[string]renderer{
	Plain:               renderPlain,
	"chatml":            renderChatML,
	"phi4":              renderPhi4,
	"mistral-v7":        renderMistralV7,
	"mistral-v1":        mistralV1to3(" ", " ", false),
	"mistral-v3":        mistralV1to3("", " ", true),
	"mistral-v3-tekken": mistralV1to3("", "", false),
	"llama2":            llama2(false, false, false),
	"llama2-sys":        llama2(true, false, false),
	"llama2-sys-bos":    llama2(true, true, false),
	"llama2-sys-strip":  llama2(true, false, true),
	"phi3":              renderPhi3,
	"falcon3":           renderFalcon3,
	"zephyr":            renderZephyr,
	"gemma":             renderGemma,
	"vicuna":            vicuna(false),
	"vicuna-orca":       vicuna(true),
	"deepseek":          renderDeepseek,
	"command-r":         renderCommandR,
	"llama3":            headers("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
	"llama4":            headers("<|header_start|>", "<|header_end|>", "<|eot|>"),
	"deepseek3":         renderDeepseek3,
	"granite":           renderGranite,
}

func write(b *strings.Builder, parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
}

// renderPlain is a transcript for models without a template.
func renderPlain(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			write(b, m.Content, "\n\n")
		case "user":
			write(b, "User: ", m.Content, "\n")
		case "assistant":
			write(b, "Assistant: ", m.Content, "\n")
		default:
			write(b, m.Role, ": ", m.Content, "\n")
		}
	}
	if addAss {
		b.WriteString("Assistant:")
	}
}

func renderChatML(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|im_start|>", m.Role, "\n", m.Content, "<|im_end|>\n")
	}
	if addAss {
		b.WriteString("<|im_start|>assistant\n")
	}
}

func renderPhi4(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|im_start|>", m.Role, "<|im_sep|>", m.Content, "<|im_end|>")
	}
	if addAss {
		b.WriteString("<|im_start|>assistant<|im_sep|>")
	}
}

func renderMistralV7(b *strings.Builder, msgs []Message, _ bool, _, eos string) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			write(b, "[SYSTEM_PROMPT] ", m.Content, "[/SYSTEM_PROMPT]")
		case "user":
			write(b, "[INST] ", m.Content, "[/INST]")
		default:
			write(b, " ", m.Content, eos)
		}
	}
}

// mistralV1to3 renders Mistral's v1, v3 and v3-tekken formats, which
// differ in the spaces around [INST] and in trimming assistant replies.
func mistralV1to3(lead, trail string, trimAss bool) renderer {
	return func(b *strings.Builder, msgs []Message, _ bool, _, eos string) {
		inTurn := false
		for _, m := range msgs {
			if !inTurn {
				write(b, lead, "[INST]", trail)
				inTurn = true
			}
			switch m.Role {
			case "system":
				write(b, m.Content, "\n\n")
			case "user":
				write(b, m.Content, lead, "[/INST]")
			default:
				c := m.Content
				if trimAss {
					c = trim(c)
				}
				write(b, trail, c, eos)
				inTurn = false
			}
		}
	}
}

// llama2 renders Llama 2's [INST] format and its variants: with a
// <<SYS>> block, with BOS before each later turn, with trimmed messages.
func llama2(sys, bosInside, strip bool) renderer {
	return func(b *strings.Builder, msgs []Message, _ bool, bos, eos string) {
		inTurn := true // the first [INST] follows the BOS the tokenizer adds
		b.WriteString("[INST] ")
		for _, m := range msgs {
			c := m.Content
			if strip {
				c = trim(c)
			}
			if !inTurn {
				inTurn = true
				if bosInside {
					b.WriteString(bos)
				}
				b.WriteString("[INST] ")
			}
			switch m.Role {
			case "system":
				if sys {
					write(b, "<<SYS>>\n", c, "\n<</SYS>>\n\n")
				} else {
					write(b, c, "\n")
				}
			case "user":
				write(b, c, " [/INST]")
			default:
				write(b, c, eos)
				inTurn = false
			}
		}
	}
}

func renderPhi3(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|", m.Role, "|>\n", m.Content, "<|end|>\n")
	}
	if addAss {
		b.WriteString("<|assistant|>\n")
	}
}

func renderFalcon3(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|", m.Role, "|>\n", m.Content, "\n")
	}
	if addAss {
		b.WriteString("<|assistant|>\n")
	}
}

func renderZephyr(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|", m.Role, "|>\n", m.Content, "<|endoftext|>\n")
	}
	if addAss {
		b.WriteString("<|assistant|>\n")
	}
}

// renderGemma merges system messages into the next user turn (Gemma
// has no system role) and calls the assistant "model".
func renderGemma(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	system := ""
	for _, m := range msgs {
		if m.Role == "system" {
			system += trim(m.Content)
			continue
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		write(b, "<start_of_turn>", role, "\n")
		if system != "" && role != "model" {
			write(b, system, "\n\n")
			system = ""
		}
		write(b, trim(m.Content), "<end_of_turn>\n")
	}
	if addAss {
		b.WriteString("<start_of_turn>model\n")
	}
}

func vicuna(orca bool) renderer {
	return func(b *strings.Builder, msgs []Message, addAss bool, _, eos string) {
		for _, m := range msgs {
			switch m.Role {
			case "system":
				if orca {
					write(b, "SYSTEM: ", m.Content, "\n")
				} else {
					write(b, m.Content, "\n\n")
				}
			case "user":
				write(b, "USER: ", m.Content, "\n")
			case "assistant":
				write(b, "ASSISTANT: ", m.Content, eos, "\n")
			}
		}
		if addAss {
			b.WriteString("ASSISTANT:")
		}
	}
}

func renderDeepseek(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString(m.Content)
		case "user":
			write(b, "### Instruction:\n", m.Content, "\n")
		case "assistant":
			write(b, "### Response:\n", m.Content, "\n<|EOT|>\n")
		}
	}
	if addAss {
		b.WriteString("### Response:\n")
	}
}

func renderCommandR(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		tag := ""
		switch m.Role {
		case "system":
			tag = "<|SYSTEM_TOKEN|>"
		case "user":
			tag = "<|USER_TOKEN|>"
		case "assistant":
			tag = "<|CHATBOT_TOKEN|>"
		default:
			continue
		}
		write(b, "<|START_OF_TURN_TOKEN|>", tag, trim(m.Content), "<|END_OF_TURN_TOKEN|>")
	}
	if addAss {
		b.WriteString("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
	}
}

// headers renders the Llama 3 / Llama 4 formats: a role header, a blank
// line, the trimmed content and an end-of-turn token.
func headers(start, end, eot string) renderer {
	return func(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
		for _, m := range msgs {
			write(b, start, m.Role, end, "\n\n", trim(m.Content), eot)
		}
		if addAss {
			write(b, start, "assistant", end, "\n\n")
		}
	}
}

func renderDeepseek3(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			write(b, m.Content, "\n\n")
		case "user":
			write(b, "<｜User｜>", m.Content)
		case "assistant":
			write(b, "<｜Assistant｜>", m.Content, "<｜end▁of▁sentence｜>")
		}
	}
	if addAss {
		b.WriteString("<｜Assistant｜>")
	}
}

func renderGranite(b *strings.Builder, msgs []Message, addAss bool, _, _ string) {
	for _, m := range msgs {
		write(b, "<|start_of_role|>", m.Role, "<|end_of_role|>")
		if m.Role == "assistant_tool_call" {
			b.WriteString("<|tool_call|>")
		}
		write(b, m.Content, "<|end_of_text|>\n")
	}
	if addAss {
		b.WriteString("<|start_of_role|>assistant<|end_of_role|>\n")
	}
}
