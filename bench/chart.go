package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// Series is one set of results drawn in a comparison chart, such as this
// project's `lisa bench -o json` output or llama-bench's `-o json`.
type Series struct {
	Label   string
	Results []Result
}

// maxChartRows bounds the results ReadResults accepts: a chart or table
// of more rows is not one anybody reads, and the bound keeps a hostile
// file from costing more than its size.
const maxChartRows = 4096

// ReadResults decodes a JSON array of results in llama-bench's shape
// (this project's -o json, or llama-bench's own -o json: unknown fields
// are ignored). Each result must name its test (n_prompt or n_gen
// positive, both for a pg test, neither negative), a depth in [0,
// MaxContext], a positive thread count and finite, non-negative rates.
func ReadResults(r io.Reader) ([]Result, error) {
	var rs []Result
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	if err := dec.Decode(&rs); err != nil {
		return nil, fmt.Errorf("bench: results: %w", err)
	}
	if len(rs) > maxChartRows {
		return nil, fmt.Errorf("bench: results: %d rows, at most %d", len(rs), maxChartRows)
	}
	for i, x := range rs {
		switch {
		case (x.NPrompt <= 0 && x.NGen <= 0) || x.NPrompt < 0 || x.NGen < 0:
			return nil, fmt.Errorf("bench: results[%d]: n_prompt %d and n_gen %d: want one positive, neither negative", i, x.NPrompt, x.NGen)
		case x.NDepth < 0 || x.NDepth > MaxContext:
			return nil, fmt.Errorf("bench: results[%d]: n_depth %d out of range [0, %d]", i, x.NDepth, MaxContext)
		case x.NThreads <= 0:
			return nil, fmt.Errorf("bench: results[%d]: n_threads %d", i, x.NThreads)
		case !(x.AvgTs >= 0 && x.AvgTs < 1e9) || !(x.StddevTs >= 0 && x.StddevTs < 1e9):
			return nil, fmt.Errorf("bench: results[%d]: avg_ts %v, stddev_ts %v", i, x.AvgTs, x.StddevTs)
		}
	}
	return rs, nil
}

// quantName is the weight type part of a llama-bench model_type, which
// is "<arch> <size> <type>" ("llama 1.1B Q4_K - Medium" → "Q4_K - Medium"),
// so that files of one shape compare across engines that round the size
// differently.
func quantName(modelType string) string {
	f := strings.SplitN(modelType, " ", 3)
	if len(f) < 3 {
		return modelType
	}
	return f[2]
}

// chartKey groups results that measure the same thing.
type chartKey struct {
	quant   string
	test    string
	threads int
}

// WriteComparisonSVG draws grouped horizontal bars: for every result of
// the first series (in its order), one bar per series that has a result
// of the same weight type, test and thread count. Bars are tokens per
// second with a one-standard-deviation whisker; the scale is shared.
func WriteComparisonSVG(w io.Writer, title string, ss []Series) error {
	if len(ss) == 0 || len(ss[0].Results) == 0 {
		return fmt.Errorf("bench: chart: no results to draw")
	}
	colors := []string{"#e15759", "#4e79a7", "#76b7b2", "#59a14f", "#edc948", "#b07aa1"}
	const left, width, barH, gap, top = 260, 440, 16, 14, 58
	byKey := make([]map[chartKey]Result, len(ss))
	maxTs := 1.0
	for i, s := range ss {
		byKey[i] = map[chartKey]Result{}
		for _, r := range s.Results {
			k := chartKey{quantName(r.ModelType), r.Test(), r.NThreads}
			if _, dup := byKey[i][k]; !dup {
				byKey[i][k] = r
			}
			maxTs = max(maxTs, r.AvgTs+r.StddevTs)
		}
	}
	var groups [][]int // per group, the series that have a bar
	var keys []chartKey
	seen := map[chartKey]bool{}
	for _, r := range ss[0].Results {
		k := chartKey{quantName(r.ModelType), r.Test(), r.NThreads}
		if seen[k] {
			continue
		}
		seen[k] = true
		var g []int
		for i := range ss {
			if _, ok := byKey[i][k]; ok {
				g = append(g, i)
			}
		}
		groups, keys = append(groups, g), append(keys, k)
	}
	h := top
	for _, g := range groups {
		h += len(g)*barH + gap
	}
	h += 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+70, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, s := range ss {
		x := 10 + i*220
		fmt.Fprintf(&b, `<rect x="%d" y="32" width="12" height="12" fill="%s"/><text x="%d" y="43">%s</text>`+"\n",
			x, colors[i%len(colors)], x+16, html.EscapeString(s.Label))
	}
	y := top
	for gi, g := range groups {
		k := keys[gi]
		label := fmt.Sprintf("%s %s, %d thread", k.quant, k.test, k.threads)
		if k.threads != 1 {
			label += "s"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+len(g)*barH/2+4, html.EscapeString(label))
		for _, i := range g {
			r := byKey[i][k]
			bw := r.AvgTs / maxTs * width
			sd := r.StddevTs / maxTs * width
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, bw, barH-2, colors[i%len(colors)])
			if sd > 0 {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>`+"\n", left+bw-sd, left+bw+sd, y+barH/2-1, y+barH/2-1)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11">%.1f</text>`+"\n", left+bw+sd+5, y+barH-4, r.AvgTs)
			y += barH
		}
		y += gap
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// depthLine is one line of a depth chart: one series' results of one
// weight type, test (without its depth) and thread count.
type depthLine struct {
	series  int
	quant   string
	test    string
	threads int
	points  []Result // by depth, one per depth
}

// HasDepths reports whether the series hold results at more than one
// context depth: what a depth chart draws.
func HasDepths(ss []Series) bool {
	seen := map[int]bool{}
	for _, s := range ss {
		for _, r := range s.Results {
			seen[r.NDepth] = true
		}
	}
	return len(seen) > 1
}

// depthLines groups the series' results into lines, in the order of
// their first results; a second result of a line at a depth it has is
// left out, as WriteComparisonSVG leaves out duplicates.
func depthLines(ss []Series) []depthLine {
	type key struct {
		series  int
		quant   string
		test    string
		threads int
	}
	var lines []depthLine
	index := map[key]int{}
	for si, s := range ss {
		for _, r := range s.Results {
			k := key{si, quantName(r.ModelType), r.baseTest(), r.NThreads}
			i, ok := index[k]
			if !ok {
				i = len(lines)
				index[k] = i
				lines = append(lines, depthLine{series: si, quant: k.quant, test: k.test, threads: k.threads})
			}
			if !slices.ContainsFunc(lines[i].points, func(p Result) bool { return p.NDepth == r.NDepth }) {
				lines[i].points = append(lines[i].points, r)
			}
		}
	}
	for i := range lines {
		slices.SortFunc(lines[i].points, func(a, b Result) int { return a.NDepth - b.NDepth })
	}
	return lines
}

// WriteDepthSVG draws tokens per second against the context depth: x is
// the depth (a linear scale from 0 to the deepest result), y tokens per
// second from 0, one line per series, weight type, test and thread count
// (the series' colour, a dash pattern per test and thread count), each
// point with a one-standard-deviation whisker.
func WriteDepthSVG(w io.Writer, title string, ss []Series) error {
	lines := depthLines(ss)
	if len(lines) == 0 {
		return fmt.Errorf("bench: chart: no results to draw")
	}
	colors := []string{"#e15759", "#4e79a7", "#76b7b2", "#59a14f", "#edc948", "#b07aa1"}
	dashes := []string{"", "6 4", "2 3", "10 3 2 3", "1 6", "12 6"}
	const left, top, width, height, legendRow = 70, 48, 560, 300, 18
	maxDepth, maxTs := 1, 1.0
	depths := map[int]bool{}
	for _, l := range lines {
		for _, p := range l.points {
			maxDepth = max(maxDepth, p.NDepth)
			maxTs = max(maxTs, p.AvgTs+p.StddevTs)
			depths[p.NDepth] = true
		}
	}
	yMax := niceCeil(maxTs * 1.05)
	x := func(d int) float64 { return left + float64(d)/float64(maxDepth)*width }
	y := func(ts float64) float64 { return top + height - ts/yMax*height }
	var b strings.Builder
	svgH := top + height + 50 + len(lines)*legendRow
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+40, svgH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	// Axes, y grid and ticks, x ticks at every measured depth.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+height, left+width, top+height)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+height)
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n",
			left, y(v), left+width, y(v), left-6, y(v)+4, v)
	}
	for _, d := range slices.Sorted(maps.Keys(depths)) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n",
			x(d), top+height, x(d), top+height+4, x(d), top+height+17, d)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">context depth (tokens in the KV cache before the test)</text>`+"\n", left+width/2, top+height+34)
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">tokens per second</text>`+"\n", top+height/2, top+height/2)
	style := map[[2]any]int{} // (test, threads) → dash pattern
	for li, l := range lines {
		sk := [2]any{l.test, l.threads}
		if _, ok := style[sk]; !ok {
			style[sk] = len(style)
		}
		color, dash := colors[l.series%len(colors)], dashes[style[sk]%len(dashes)]
		dashAttr := ""
		if dash != "" {
			dashAttr = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		var pts []string
		for _, p := range l.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.NDepth), y(p.AvgTs)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), color, dashAttr)
		for _, p := range l.points {
			px := x(p.NDepth)
			if p.StddevTs > 0 {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", px, y(p.AvgTs-p.StddevTs), px, y(p.AvgTs+p.StddevTs), color)
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%.1f t/s</title></circle>`+"\n", px, y(p.AvgTs), color, p.AvgTs)
		}
		ly := top + height + 50 + li*legendRow
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", left, ly-4, left+30, ly-4, color, dashAttr)
		label := fmt.Sprintf("%s: %s %s, %d thread", ss[l.series].Label, l.quant, l.test, l.threads)
		if l.threads != 1 {
			label += "s"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+38, ly, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v > 0 up to 1, 2 or 5 times a power of ten, for an
// axis whose five ticks are round numbers.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
