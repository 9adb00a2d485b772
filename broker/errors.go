package broker

import "errors"

// ErrNotReady is returned by a Backend whose worker has not loaded the model.
var ErrNotReady = errors.New("worker not ready")

// ErrFailed is matched by a Backend's error while its worker keeps
// failing: restarts go on with backoff, requests get 503 and /health says
// "failed". If the error also has a Reason() string method, /health shows
// that reason, so it must hold no text the worker wrote.
var ErrFailed = errors.New("worker keeps failing")

// ErrWorkerFailed is returned by a Backend whose worker died or broke the
// protocol during a request.
var ErrWorkerFailed = errors.New("worker failed")
