// Package toolcall finds function calls in a model's output, per family,
// and describes the call syntax a forced call must follow.
//
// Formats (Detect picks one from the chat template's text):
//
//   - Hermes: Qwen2.5, Qwen3 and Hermes-style templates;
//     <tool_call>{"name": ..., "arguments": {...}}</tool_call>, repeated
//     for parallel calls.
//   - Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...]
//     (Mistral Nemo and v3 templates with [AVAILABLE_TOOLS]).
//   - Llama3: Llama 3.1/3.2/3.3 answer a call with the bare object
//     {"name": ..., "parameters": {...}} as the whole reply, or after
//     <|python_tag|>; <|python_tag|>name.call(key=value) is a built-in
//     tool call.
//   - Generic: llama.cpp's JSON format for templates without tool
//     support (chat.Render describes it to the model):
//     {"tool_call": {"name", "arguments"}}, {"tool_calls": [...]} or
//     {"response": "..."}.
//   - Harmony: gpt-oss's channels, read with its reasoning and content by
//     a ReplyStream (see reply.go).
//
// A ReplyStream (ParseReply for a whole output) also separates the
// reasoning of a reply, as llama-server's default --reasoning-format
// does: <think>…</think> opening the reply of a thinking template
// (DetectThinking), Harmony's analysis channel; the content left goes
// through the call parser of the format.
//
// Parse reads a whole output; Stream reads it piece by piece and yields
// OpenAI-shaped deltas (content text, and pieces of calls: a call's
// first piece carries its index, id, name and the start of its
// arguments, later pieces more argument text). Both apply the same rules,
// so a stream split anywhere gives the same content and calls as Parse,
// and the pieces of a call join to its arguments exactly:
//
//   - Text that may still turn out to be markup (a partial "<tool_c",
//     white space before it, an unfinished call) is held back, never
//     sent as content.
//   - A call's arguments stream once the call is committed: its object
//     gave a valid name (and any string-valued keys, such as an id)
//     before its arguments key, and the arguments opened an object.
//     From there, each byte that keeps the arguments a valid JSON
//     prefix is theirs and is sent, compact (white space outside
//     strings dropped, as json.Compact) and never ending inside a UTF-8
//     sequence. Other layouts (arguments before the name or as a JSON
//     string, Llama's built-in <|python_tag|> calls, calls the generic
//     format's object does not open with) come whole once complete.
//   - White space next to call markup is dropped; other text around
//     calls is content (llama.cpp keeps the text before a Hermes call
//     too).
//   - Output is untrusted. A call whose JSON is malformed, has no name
//     or non-object arguments, names a function not offered (when
//     Options.Tools is set), or exceeds the limits is not a call: from
//     its markup on, the rest of the output is content, as llama.cpp's
//     Hermes parser falls back to the whole text as content (its Llama
//     and Mistral parsers fail the request instead; a fallback keeps
//     the reply readable and cannot be worse than a 500). A committed
//     call is a call whatever follows, as a stream has sent it: when
//     the output breaks it off (the token budget ends inside it, a
//     syntax error, a repeated key), it keeps the arguments read up to
//     the break (cut, as OpenAI's call cut by max_tokens) and the rest
//     of the output is content. Result.Err says why, for logs; it is
//     never a reason to fail the request.
//
// Call ids are generated (call_ and 24 random letters and digits; for
// Mistral nine letters and digits, as its template wants them back)
// unless the model wrote a plausible one before the arguments (a
// streamed call's id goes with its first piece).
//
// Constraint gives, for tool_choice "required" or a named function, the
// literal text around the call and the JSON Schema of the call's JSON,
// so a grammar compiler can force a valid call. Harmony's is one
// alternative per function (its name is in the message header, before
// the arguments, which the function's own schema then holds), after an
// optional analysis message of at most MaxLead characters, and ends
// with <|call|>.
package toolcall
