// Package grammar constrains generation to a formal language: llama.cpp's
// GBNF grammars, JSON Schemas compiled to such grammars, and the grammar of
// any JSON object (OpenAI's response_format json_object).
//
// A Grammar is parsed (ParseGBNF) or compiled (FromJSONSchema, JSONObject)
// once per request and is immutable. A Matcher follows one generation
// through it code point by code point with a set of stacks, as llama.cpp's
// grammar sampler does: each stack is a path of rule positions whose top is
// a character class the next code point must match. A Vocab is a byte trie
// over a model's token texts, built once per model and shared; a
// Constraint joins a Matcher and a Vocab and gives, for the current state,
// the mask of tokens whose bytes the grammar can take next (walking shared
// token prefixes once) and advances over the token chosen.
//
// A token mask walks the trie from the state (about a millisecond on a
// 32k vocabulary when most tokens fit, as inside a string); a Constraint
// remembers the masks of the states it met, and a MaskCache shares them
// between the Constraints of one Grammar, so requests with the same
// grammar pay each walk once. With model/sample's check of the freely
// sampled token first, constrained decoding on mini-24m (32k vocabulary,
// engine.BenchmarkConstrainedDecode, December 2026, 2 shared cores, three
// runs each) added -1% to +4% CPU time per token for json_object and -2%
// to +4% for a json_schema over free decoding at load average 7 to 8, and
// +1% to +7% and -3% to +2% at load average 25 (the goal: at most 15%).
// Per step (BenchmarkConstrainedStep, load 7): a forward pass 344 µs,
// free sampling 83 µs, constrained sampling at a JSON structural state
// 122 µs with the state's mask cached and 508 µs on the state's first
// visit (the walk), inside a string 90 µs.
//
// Grammars and schemas come from clients, so everything is bounded (see
// Limits): source size, rule and element counts, nesting, repetition
// counts, and the number and depth of the matcher's stacks. Left recursion
// that would grow a stack forever (*LeftRecursionError) and a start rule
// that matches no text (*NoTextError) are refused when the grammar is
// built; a star of something that may be empty is accepted, as llama.cpp
// does. Other errors are typed too: *SyntaxError (with a byte offset),
// *LimitError, *UnsupportedError (naming the schema keyword and its path)
// and *SchemaError.
//
// Wiring into a generation (what the engine does with a request's
// response_format, json_schema or grammar field):
//
//	v, _ := grammar.NewVocab(tok.NVocab(), tok.Piece, isControl, eogIDs) // once per model
//	g, err := grammar.FromJSONSchema(schema, grammar.DefaultLimits())   // or ParseGBNF, JSONObject
//	// err is a client error (400): *SyntaxError, *LimitError, *UnsupportedError, *SchemaError, *LeftRecursionError
//	c, err := grammar.NewConstraint(g, v, tok.Piece, grammar.DefaultLimits())
//	c.ShareMasks(mc) // optional: mc := grammar.NewMaskCache(g, v, budget), kept with g for later requests
//	c.EndWith(ids)   // optional: only these EOS tokens end it (a Harmony call's <|call|>)
//	smp.SetConstraint(c) // model/sample
//	// per generated token: id := smp.Sample(row); c.Accept(id); smp.Accept(id)
//	// stop at an EOS (allowed only once c.Matcher().Complete()) or when c.Matcher().Done().
package grammar
