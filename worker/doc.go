// Package worker is the sandboxed worker process's main loop.
//
// Main is the worker's whole life: it parses the flags the broker's
// sandbox.Start put on its command line, locks the process down with
// sandbox.LockDown before a byte of the model is read, reads the broker's
// hello from fd 3, loads the engine from the model (fd 4, and fds 5, 6, …
// for a split model's further shards) through an
// EngineLoader, stacks the serving seccomp stage with sandbox.EnterServing,
// answers ready and then serves requests until the broker closes the
// socket.
//
// The model engine sits behind the Engine interface so that the packages
// that implement it (model, tokenizer, chat) plug in through a loader.
// Requests are served concurrently: every generate runs in its own
// goroutine with its own context, which a cancel message ends; the engine
// may serialise work internally.
package worker
