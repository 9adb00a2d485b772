// Package chat renders chat messages into a prompt with a model's chat
// template.
//
// tokenizer.chat_template is untrusted model data. Apply first recognises
// the common template families by characteristic substrings, as
// llama.cpp does, and renders the family in Go: ChatML, Llama 2 (and its
// system/BOS/strip variants), Llama 3, Llama 4, Mistral
// v1/v3/v3-tekken/v7, Gemma, Phi-3, Phi-4, Zephyr, Falcon 3, DeepSeek
// Coder, DeepSeek V3, Command R, Vicuna and Granite; with no template it
// uses a plain "User:/Assistant:" transcript.
//
// Any other template goes to a small Jinja-subset interpreter of this
// package (RenderJinja): text, {{ }}, {% if/elif/else %}, {% for %} with
// else, loop filters, tuples (as lists) and tuple unpacking, break and
// continue, {% macro %} and {% call %} blocks (bounded calls), {% set %}
// (also of a block) with namespace(), {% filter %} blocks, the loop
// variables, string concatenation, arithmetic and comparisons, subscripts
// and slices (with steps), a few string and dict methods,
// common filters (trim, length, upper, lower, default, join, tojson, …)
// and tests (defined, none, string, …), raise_exception, and Hugging
// Face's trim_blocks/lstrip_blocks whitespace rules. The template sees
// nothing but messages (an assistant's reasoning as reasoning_content, and
// for gpt-oss's Harmony template as thinking, as llama.cpp passes it),
// bos_token, eos_token, add_generation_prompt, tools, date_string,
// datetime, strftime_now and reasoning_effort: no attribute of a Go
// value, no file, no environment. Everything is bounded: template size, nesting depth
// (blocks and expressions), loop iterations, evaluation steps, the work
// done on strings and lists, their sizes, and the output (MaxOutput).
// Dicts keep insertion order, as Python and llama.cpp's runtime do (tool
// schemas are printed with tojson, in the order the client wrote them).
//
// Tools (Options.Tools), assistant tool calls and tool responses reach
// the template in llama.cpp's shapes (see tools.go). A template that
// does not show tools renders without them, as the current llama.cpp
// renders it; calls and responses it does not show become plain messages
// holding JSON, and a family rendered in Go also gets the tools in
// llama.cpp's generic JSON tool format. DescribesTools says whether a
// template shows tools (and so which call syntax to parse, see package
// toolcall); ToolStrings lists the client text tools bring
// into the prompt, which RenderTraced cannot trace. A construct outside the subset
// (includes, raw blocks, tuple assignments, unknown filters) fails with an *UnsupportedError
// naming it.
//
// RenderTraced also says which bytes of the rendering came from message
// content, so that a server can keep client text out of special-token
// parsing; it finds them with a second, marked rendering rather than by
// tracking taint through every string operation of the interpreter, which
// covers the Go renderers too and fails safe (ErrUntraceable) on any
// transformation it cannot follow.
//
// An interpreter was chosen over a Go Jinja library because the
// libraries available are large, reflect over Go values and have no
// limits on loops or output; a few hundred lines that only know strings,
// numbers, lists and dicts are easier to bound and to audit.
package chat
