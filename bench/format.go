package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

// Formats lists the output formats Write accepts.
func Formats() []string { return []string{"md", "csv", "json", "svg"} }

// Write writes results in format md (llama-bench's markdown table), csv,
// json (an array of llama-bench-style objects) or svg (a bar chart of
// tokens per second).
func Write(w io.Writer, format string, rs []Result) error {
	switch format {
	case "md":
		return writeMarkdown(w, rs)
	case "csv":
		return writeCSV(w, rs)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	case "svg":
		return writeSVG(w, rs)
	}
	return fmt.Errorf("bench: output format %q: want %s", format, strings.Join(Formats(), ", "))
}

// ValidFormat reports whether Write knows format.
func ValidFormat(format string) bool {
	for _, f := range Formats() {
		if f == format {
			return true
		}
	}
	return false
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// writeMarkdown writes llama-bench's table: the batch sizes and cache
// types get columns only when a result's differ from llama-bench's
// defaults, as llama-bench shows them, and the test column carries the
// depth ("pp512 @ d4096").
func writeMarkdown(w io.Writer, rs []Result) error {
	var batches, types bool
	for _, r := range rs {
		batches = batches || r.NBatch != DefaultNBatch || r.NUBatch != DefaultNUBatch
		types = types || r.TypeK != "f16" || r.TypeV != "f16"
	}
	var b strings.Builder
	b.WriteString("| model | size | params | kernels | sandbox | threads |")
	align := "| --- | ---: | ---: | --- | --- | ---: |"
	if batches {
		b.WriteString(" n_batch | n_ubatch |")
		align += " ---: | ---: |"
	}
	if types {
		b.WriteString(" type_k | type_v |")
		align += " ---: | ---: |"
	}
	b.WriteString(" test | t/s | peak RSS |\n")
	b.WriteString(align + " ---: | ---: | ---: |\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %v | %d |",
			r.ModelType, mib(r.ModelSize), humanParams(r.ModelNParams), r.Kernels, r.Sandbox, r.NThreads)
		if batches {
			fmt.Fprintf(&b, " %d | %d |", r.NBatch, r.NUBatch)
		}
		if types {
			fmt.Fprintf(&b, " %s | %s |", r.TypeK, r.TypeV)
		}
		fmt.Fprintf(&b, " %s | %.2f ± %.2f | %s |\n", r.Test(), r.AvgTs, r.StddevTs, mib(r.PeakRSS))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// csvFields are writeCSV's columns: llama-bench's names and order for
// what both measure, then this project's.
var csvFields = []string{"model_filename", "model_type", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads",
	"type_k", "type_v", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
	"kernels", "sandbox", "kv_cache_bytes", "peak_rss_bytes"}

func writeCSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	cw.Write(csvFields)
	itoa := strconv.Itoa
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, r := range rs {
		cw.Write([]string{r.ModelFilename, r.ModelType, i64(r.ModelSize), i64(r.ModelNParams), itoa(r.NBatch), itoa(r.NUBatch),
			itoa(r.NThreads), r.TypeK, r.TypeV, itoa(r.NPrompt), itoa(r.NGen), itoa(r.NDepth), r.TestTime,
			i64(r.AvgNs), i64(r.StddevNs), strconv.FormatFloat(r.AvgTs, 'f', 6, 64), strconv.FormatFloat(r.StddevTs, 'f', 6, 64),
			r.Kernels, strconv.FormatBool(r.Sandbox), i64(r.KVCacheBytes), i64(r.PeakRSS)})
	}
	cw.Flush()
	return cw.Error()
}

// writeSVG draws one horizontal bar per result, its length the mean
// tokens per second, with a whisker of one standard deviation.
func writeSVG(w io.Writer, rs []Result) error {
	const left, width, barH, gap, top = 330, 420, 22, 8, 40
	maxTs := 1.0
	for _, r := range rs {
		maxTs = max(maxTs, r.AvgTs+r.StddevTs)
	}
	h := top + len(rs)*(barH+gap) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+90, h)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="14" font-weight="bold">tokens per second (mean ± stddev)</text>`+"\n")
	for i, r := range rs {
		y := top + i*(barH+gap)
		bw := r.AvgTs / maxTs * width
		sd := r.StddevTs / maxTs * width
		color := "#4e79a7"
		if r.NGen > 0 {
			color = "#f28e2b"
		}
		if r.NPrompt > 0 && r.NGen > 0 {
			color = "#59a14f"
		}
		label := fmt.Sprintf("%s, %s, %d thr, %s", r.ModelType, r.Test(), r.NThreads, r.Kernels)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+15, html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, bw, barH, color)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>`+"\n", left+bw-sd, left+bw+sd, y+barH/2, y+barH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.1f</text>`+"\n", left+bw+sd+6, y+15, r.AvgTs)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
