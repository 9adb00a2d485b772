package broker

import (
	"strings"
	"testing"
)

func TestHistogramText(t *testing.T) {
	h := newHistogram([]float64{0.1, 1})
	h.observeN(0.05, 2)
	h.observeN(0.5, 1)
	h.observeN(7, 3)
	var b strings.Builder
	h.write(&b, "x_seconds", "help.")
	want := "# HELP x_seconds help.\n# TYPE x_seconds histogram\n" +
		"x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"1\"} 3\nx_seconds_bucket{le=\"+Inf\"} 6\n" +
		"x_seconds_sum 21.6\nx_seconds_count 6\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if got := escapeLabel("a\"b\\c\nd"); got != `a\"b\\c\nd` {
		t.Fatalf("escapeLabel = %s", got)
	}
}
