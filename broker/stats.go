package broker

// Stats is what the supervisor reports about its workers for /metrics. A
// Backend that also implements Stats has its figures exported; the others
// show zeros.
type Stats interface {
	WorkerStats() WorkerStats
}

// WorkerStats counts worker restarts and deaths.
type WorkerStats struct {
	Restarts uint64            // workers started again after a death
	Deaths   map[string]uint64 // deaths by cause: a signal name ("SIGSYS", "SIGKILL") or "exit" for a non-zero exit status
	// BudgetSpent counts the restarts the restart budget refused (each
	// then waits with backoff instead).
	BudgetSpent uint64
	// StderrDroppedLines and StderrDroppedBytes count the worker's stderr
	// not logged because it came faster than the log's rate limit.
	StderrDroppedLines, StderrDroppedBytes uint64
}
