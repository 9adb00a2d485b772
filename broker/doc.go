// Package broker is LiSa-Go's network-facing side: the OpenAI-compatible
// HTTP API, its validation, authentication and limits. It never parses the
// model; it hands validated requests to a Backend (the sandboxed worker,
// through package supervisor).
//
// A server with several models (NewMultiServer) has a Models set instead
// of one Backend: every request whose body names a "model" (completions,
// chat, responses, embeddings, tokenize, detokenize) is pinned to that
// model before its handler runs, waiting within model_load_timeout for a
// load, and holds it (so it is not evicted) until the response ends; a
// body without a model is a 400 model_required. /v1/models lists every
// model and alias with its state, /health each model's state, /metrics
// the lisa_model_* families labelled model="ID".
//
// # Endpoints
//
//   - GET /v1/models: the one served model (config model_name, by default
//     the model file's name without ".gguf"), then its aliases
//     (model_aliases, --alias); GET /v1/models/{id} for any of them.
//   - POST /v1/chat/completions and POST /v1/completions, whole or with
//     "stream": true as server-sent events (one "data: {chunk}" per event,
//     "data: [DONE]" at the end; with stream_options.include_usage a last
//     chunk with empty choices carries usage). An error after the stream
//     started is sent as one event in the error shape, without [DONE].
//   - POST /v1/responses (OpenAI's Responses API): input as text or items
//     (role messages with input_text/output_text parts, function_call and
//     function_call_output items), instructions (a system message first),
//     max_output_tokens, temperature, top_p, function tools and
//     tool_choice (carried to the worker as a chat request's tools). The
//     Response object has status "incomplete" with incomplete_details
//     {"reason": "max_output_tokens"} when the output budget ran out.
//     "stream": true sends named events ("event: TYPE" and "data: {...}",
//     each with sequence_number): response.created, .in_progress,
//     .output_item.added, .content_part.added, .output_text.delta…,
//     .output_text.done, .content_part.done, .output_item.done, then
//     response.completed (or response.incomplete). Nothing is stored:
//     store is accepted and has no effect, previous_response_id,
//     conversation and background are refused with a 400, and GET
//     /v1/responses/{id} is a 404 saying so. Tool calls the model makes
//     arrive as output text until generation events carry calls.
//   - POST /v1/embeddings, only with the embeddings setting (--embeddings;
//     501 embeddings_disabled otherwise): input as a string, strings, token
//     ids or arrays of ids (at most MaxEmbedInputs, each within the
//     context), encoding_format float or base64, dimensions accepted only
//     when it is the model's size. Text is tokenized with BOS/EOS as the
//     vocabulary asks and special-token text left as text. The worker pools
//     the final hidden states (after the output norm) as the model's
//     <arch>.pooling_type says (mean, cls or last; mean when absent; none
//     and rank are refused) and L2-normalizes them, as llama.cpp does.
//   - POST /tokenize {"content", "parse_special", "with_pieces"} →
//     {"tokens": [...]}; POST /detokenize {"tokens": [...]} → {"content"}
//     (llama.cpp's shapes; "add_special": true is refused).
//   - GET /health: 200 {"status":"ok"} once the worker has loaded the model,
//     503 before ("loading"), {"status":"failed","reason"} while the
//     worker keeps failing (ErrFailed; restarts go on with backoff), and
//     "error" for any other failure.
//   - GET /metrics: Prometheus text format (requests by route and status,
//     queue depth, running generations, tokens, time to first token and
//     per-token histograms, connections, handshakes, worker restarts and
//     deaths by signal from a Backend that implements Stats).
//
// Every route but /health needs the API key when keys are configured.
// Every response carries X-Request-Id (the client's when sane, else a
// fresh one; the log line names it). Browser origins listed in
// cors_origins get CORS headers, and preflights (OPTIONS, no key needed)
// of the API routes are answered; by default no origin is allowed.
//
// # Requests
//
// See request.go for the decoding rules: strict JSON, every type and
// range checked; every field of OpenAI's request and message schemas is
// accepted (those without effect here ignored, those asking for what the
// server cannot do, such as best_of above 1, a 400 unsupported_value); unknown
// fields are refused with 400 naming them. Bodies are limited to
// MaxBodyBytes (413). The model name, when given, must be the served one
// or an alias (404). The request goes to the worker as one gen.Request;
// the worker renders and tokenizes the prompt once and refuses what it
// cannot serve with a typed error the broker answers as a 400 with that
// code: context_length_exceeded (the prompt, or the prompt with the
// client's max_tokens, does not fit the context), invalid_prompt,
// unsupported_for_model, invalid_request (a schema or grammar that does
// not compile, a tool_choice naming no tool, tools with a response
// format). Tool calls the worker parsed come back as message.tool_calls
// (content null when there is no text) or, streamed, as delta.tool_calls
// with index, id, type and the function's name and whole arguments in one
// delta per call; finish_reason is then "tool_calls" unless the budget
// ran out ("length"). A reply's reasoning (a thinking template's
// <think>…</think>, gpt-oss's analysis channel) comes back as
// message.reasoning_content or, streamed, delta.reasoning_content, as
// llama-server returns it with its default reasoning format; the server's
// reasoning_format (--reasoning-format none|auto|deepseek) and the
// request's reasoning_format say whether (none leaves it in the content),
// and an assistant's reasoning_content in the history reaches the
// template. The Responses API returns it as a reasoning item (one
// reasoning_text part), last of the output, streamed at the end as
// response.reasoning_text.delta; a reasoning item of the input is the
// reasoning of the assistant message before it, and reasoning.effort (as
// chat's reasoning_effort) reaches the template. Streams wait for the first event
// before sending headers, so such a refusal is a plain 400 there too.
// A chat message may spell the text of any of
// the model's special tokens ("<s>", "<|im_start|>"): the worker
// tokenizes message content with special parsing off, apart from the
// template's own text, so content never becomes a control token, even
// split across messages (a template that slices or splits content so that
// its bytes cannot be traced gets the prompt refused with 400 instead).
// Raw completion prompts are tokenized with special parsing off. A
// token-id prompt holding one of the ids the worker lists as control ids
// (BOS, EOS, turn markers: ModelInfo.ControlIDs) is a 400 naming its
// index unless allow_control_token_ids is set.
//
// # Authentication and limits
//
// Keys are configured only as SHA-256 digests (package config); the
// bearer key's digest is compared with every configured digest with
// crypto/subtle. Failures are 401 in the OpenAI error shape, close their
// connection, and count against the client address (auth_failure_rpm,
// auth_failure_burst): past those they are 429. Each key has
// a token bucket of rate_limit_rpm requests a minute (burst
// rate_limit_burst; without keys every client shares one bucket). At
// most max_running generations run at once, at most queue_size wait in
// arrival order (429 with Retry-After beyond; 503 after queue_timeout).
// Tokenizer calls take a slot like generations. Connections are capped by
// max_connections and max_connections_per_address, TLS handshakes in
// progress by max_handshakes and max_handshakes_per_address within
// handshake_timeout; Accept never waits: at a cap the oldest silent or idle
// connection (or handshake) makes room, else the newcomer gets a 503 at
// once (with TLS it is closed). A connection that has made no
// authenticated request is closed after unauthenticated_idle_timeout of
// idleness (see conns.go).
// The server sets read-header, read, write and idle timeouts; once a
// request's body is read its read deadline is lifted, and each streamed
// event gets write_timeout anew, so a client that stops reading fails the
// write and its generation is cancelled, and a client that leaves cancels
// its generation through the request context.
//
// # TLS
//
// With tls_cert_file and tls_key_file the server speaks HTTPS only, over
// HTTP/1.1: TLS 1.2 with ECDHE and AEAD suites, or TLS 1.3
// (tls_min_version "1.3" refuses 1.2), client certificates required and
// verified against tls_client_ca_file when set, and a
// Strict-Transport-Security header on every response.
//
// # Logs
//
// One log/slog line per request: method, route, status, duration, remote
// address, key index, stream, prompt and completion tokens, time to first
// token, and the error. Never the key; never the prompt unless log_prompts.
package broker
