package worker

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lisa-llm/lisa/internal/gcbound"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/sandbox"
)

// Main is the worker process's whole life; args are its arguments after
// the --sandbox-worker flag (or including it). It locks the process down
// before a byte of the model is read, then runs the protocol on fd 3 with
// the model on fd 4 (and a split model's further shards on fds 5, 6, …). It returns the process exit status: 0 when the broker
// closed the socket, 1 on a failure (reported on stderr), 2 for bad flags.
func Main(args []string, load EngineLoader) int {
	wc, err := sandbox.WorkerFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa worker:", err)
		return 2
	}
	model, rep, err := sandbox.LockDown(wc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa worker: lock-down:", err)
		return 1
	}
	conn := os.NewFile(sandbox.FDIPC, "ipc")
	serving := func() ([]ipc.Layer, int, error) {
		warmRuntime()
		// The model is loaded and the cache made: return what loading
		// left free and keep serving's garbage from growing with the
		// cache (gcbound's doc says why).
		gcbound.Settle(gcbound.Garbage)
		if err := sandbox.EnterServing(&rep); err != nil {
			return nil, 0, fmt.Errorf("enter serving: %w", err)
		}
		return layers(rep), landlockABI(rep), nil
	}
	if err := Run(conn, model, load, serving); err != nil {
		fmt.Fprintln(os.Stderr, "lisa worker:", err)
		return 1
	}
	return 0
}

// warmRuntime makes the Go runtime set up, while stage 1 still allows it,
// what it would otherwise set up lazily under the serving filter: the
// first timer starts the netpoller (epoll_create1, eventfd2, epoll_ctl).
func warmRuntime() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	time.Sleep(time.Microsecond)
}

// layers converts the sandbox report for the ready message.
func layers(rep sandbox.Report) []ipc.Layer {
	out := make([]ipc.Layer, 0, len(rep.Layers))
	for _, l := range rep.Layers {
		out = append(out, ipc.Layer{Name: l.Name, Requested: l.Requested, Applied: l.Applied, Detail: l.Detail})
	}
	return out
}

// landlockABI finds the applied Landlock ABI in the report ("ABI 7: …").
func landlockABI(rep sandbox.Report) int {
	for _, l := range rep.Layers {
		if l.Name != "landlock" || !l.Applied {
			continue
		}
		var abi int
		if _, err := fmt.Sscanf(strings.TrimPrefix(l.Detail, "ABI "), "%d", &abi); err == nil && abi > 0 {
			return abi
		}
	}
	return 0
}
