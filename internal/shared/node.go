package shared

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodeTool prepares one of the repository's JavaScript checks (a folder
// with package.json and package-lock.json, such as tools/openai-check) and
// returns the path of node. When dir/node_modules/module is absent it runs
// npm ci in dir. Without node or npm, or when npm ci fails, it skips t,
// and fails it when CI is set (.ci/run installs them).
func NodeTool(t testing.TB, dir, module string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node not found: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", module)); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			unavailable("npm not found: %v", err)
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable("npm ci in %s failed: %v\n%s", dir, err, out)
		}
	}
	return node
}
