// Package engine is the serving engine that runs inside the sandboxed
// worker: it loads the model from the verified file the broker passed,
// and serves generations from several clients at once.
//
// # Slots and continuous batching
//
// The engine has Options.Parallel slots; each owns one sequence of the KV
// cache, of Options.CtxSize positions, preallocated at start-up. A
// generation waits in a first-come-first-served queue until a slot is
// free. One goroutine, the scheduler, owns the model runner and the cache:
// every step it gathers the next token of every decoding slot and chunks
// of the prompts still being read (at most Options.BatchSize tokens in
// all, decoding slots first so that a long prompt never holds them back
// by more than one step), runs one forward pass over the whole batch,
// samples each slot's next token with the slot's own sampler, and hands
// the new text to the request's goroutine. A slot that finishes is free
// for the next step; a request that arrives joins at the next step.
//
// Every token's computation is independent of the others in its batch
// (the matrix kernels compute each activation row alone, attention reads
// only the token's own sequence), so a request's output does not depend on
// what else is being served: the tests hold the engine to that.
//
// # Chat prompts
//
// Messages are rendered with the model's chat template as llama-server
// renders them, but tokenized so that no byte of client content can be
// part of a control token, whatever the template does with it: the
// content's bytes in the rendering are found by chat.RenderTraced and
// kept out of special-token parsing by tokenizer.EncodeGuarded (only when
// a special token would take some of them, so benign prompts get
// llama.cpp's exact ids). A template that slices or splits content so
// that its bytes cannot be traced gets the prompt refused (ErrPrompt
// wrapping chat.ErrUntraceable) rather than tokenized unsafely.
//
// # Prompt-prefix reuse
//
// A free slot keeps the tokens whose keys and values its cache region
// holds. A new request goes to the free slot that shares the longest
// prefix with its prompt (the least recently used one on a tie) and only
// the rest of the prompt is computed; the reused count is reported as
// Usage.CachedTokens.
//
// # Several choices (n)
//
// A request for n > 1 choices waits until n slots are free (n above the
// slots is refused with a typed error naming n) and takes them at once.
// Its prompt is evaluated once, in the first slot; then the keys and
// values of its positions are copied into the other slots (only the part
// a slot's own cache does not share with the prompt already), and every
// choice samples its first token from a copy of the prompt's last logits.
// From there each choice is a generation of its own in the batch: its own
// sampler, seeded gen.ChoiceSeed(seed, i) so that choice i says what a
// request with n = 1 and that seed says, its own stop strings, grammar and
// tool-call parser. The request ends when every choice has, with each
// choice's finish reason; a failure of one choice fails the request.
//
// # Ending a generation
//
// A generation ends with finish reason "stop" at an end-of-generation token
// or a stop string, and "length" at max_tokens or when its slot's context
// is full. Stop strings are matched across token boundaries: text that may
// be the start of a stop string is held back until it is known not to be,
// so the broker is never sent text that is later cut. A cancelled context
// (the broker's cancel) ends the generation before its slot's next step.
//
// # Memory
//
// The KV cache is F16 by default, as in llama.cpp: half the memory of F32
// for the same context, and the accuracy the model tests measure against
// llama.cpp's own F16 cache. Keys and values may each be Q8_0 instead
// (hello's cache_type_k and cache_type_v, lisa serve's --cache-type-k and
// --cache-type-v): 34 bytes per 32 values, 53% of F16. Its size and the runner's scratch are checked
// against the memory limit in force before anything is allocated; a
// configuration that cannot fit is a start-up error with the numbers.
package engine
