// Package supervisor runs LiSa-Go's sandboxed worker for the broker and
// implements broker.Backend over the IPC protocol of package ipc.
//
// A Supervisor starts a worker through a Launcher, sends it hello, waits
// (with a timeout) for ready, multiplexes requests over the socket by id,
// and streams each generation's chunks to the broker's channel through a
// per-request buffer that never blocks the socket reader: text arriving
// while the broker is slow is merged into one pending event, bounded by the
// per-generation limits below. When a request's context ends, the
// supervisor sends cancel at once; the worker must then end that request
// within Config.CancelGrace.
//
// While the worker loads the model it may send progress; the supervisor
// logs a "model loading" line at most once a second and, on ready, one
// "model loaded" line with the tensors validated, their bytes and the load
// time. Progress whose counts go back or whose totals change is a protocol
// violation. A worker stopped by Close is logged as "worker stopped" at
// INFO; any other end is a death.
//
// The worker is hostile. Any protocol violation — an oversized frame, bad
// JSON, an unknown type or field, a mistyped or missing field, an id never
// issued or already finished, a reply of the wrong kind or out of order,
// invalid UTF-8, more chunks or text than the request allows, a token id
// outside the vocabulary, progress out of order — as well as a stall (no frame for
// Config.StallTimeout while requests wait, no ready within
// Config.ReadyTimeout, no end within CancelGrace of a cancel) kills the
// worker. Its in-flight requests fail with broker.ErrWorkerFailed, the
// death is logged in one line with the exit status or signal, and a new
// worker is started, at most Config.MaxRestarts times per
// Config.RestartWindow. Past that budget Health, Info and Generate return
// a *GaveUpError (matching ErrGaveUp, broker.ErrFailed and
// broker.ErrNotReady: /health says "failed" with the reason, requests get
// 503), the refusal is counted in WorkerStats.BudgetSpent, and the next
// start waits with exponential backoff (Config.RestartBackoff doubling up
// to Config.MaxRestartBackoff): the budget limits the rate of restarts,
// never the life of the server.
package supervisor
