package broker

import "errors"

// ErrNotReady is returned by a Backend whose worker has not loaded the model.
var ErrNotReady = errors.New("worker not ready")

// ErrWorkerFailed is returned by a Backend whose worker died or broke the
// protocol during a request.
var ErrWorkerFailed = errors.New("worker failed")
