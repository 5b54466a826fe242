package html

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
)

// The charts are SVG drawn here, inline in the page: no script, no
// request. Every text that comes from a record is escaped; colours come
// from the stylesheet's classes (c0..c5), so printing can restyle them.

const (
	chartW             = 760
	padL, padR         = 86, 30
	padT, padB         = 14, 40
	lineH              = 220 // plot area of a line chart
	rowH               = 22  // a row of a dot plot
	legendH            = 18
	plotW              = chartW - padL - padR
	maxSeries          = 12
	maxPointsPerSeries = 600
	fmtFloatPrecision  = 1
	seriesClasses      = 6
	markerR            = 4.0
	minLogSpanDecades  = 1.0
	lineChartTickCount = 5
	timeAxisTickCount  = 6
)

var esc = template.HTMLEscapeString

// f1 formats a coordinate. It is where a figure no measurement gives (a
// saved run is a file anyone can write: ±1e308, or what arithmetic makes
// of it, ±Inf and NaN) would reach the page as NaN or a 300-digit number;
// lineChart leaves such points out, and f1 holds whatever else slips
// through inside the chart.
func f1(v float64) string {
	switch {
	case math.IsNaN(v):
		v = 0
	case v > maxCoord:
		v = maxCoord
	case v < -maxCoord:
		v = -maxCoord
	}
	return fmt.Sprintf("%.*f", fmtFloatPrecision, v)
}

// maxCoord bounds a coordinate: ten charts' width off the page either way.
const maxCoord = 10 * chartW

// maxPlotted is the largest magnitude a line chart plots: beyond a
// petabit per second, a petabyte queued or thirty million years into a
// run, a figure is no measurement but a broken or forged file.
const maxPlotted = 1e15

// plotted says whether v is a figure a chart can place.
func plotted(v float64) bool { return !math.IsNaN(v) && math.Abs(v) <= maxPlotted }

// plottable is ss without the points it cannot place.
func plottable(ss []series) []series {
	out := make([]series, len(ss))
	for i, s := range ss {
		out[i].name = s.name
		for _, p := range s.pts {
			if plotted(p.x) && plotted(p.y) {
				out[i].pts = append(out[i].pts, p)
			}
		}
	}
	return out
}

type point struct{ x, y float64 }

type series struct {
	name string
	pts  []point
}

// hline is a horizontal reference line, e.g. the link's rate.
type hline struct {
	y     float64
	label string
}

// vline is a vertical mark at x, e.g. a sweep's knee.
type vline struct {
	x     float64
	label string
}

// xAxis is a line chart's horizontal axis: seconds into the run, linear
// from 0 (the zero value), or the values at, each a tick, on a log2 scale
// (a sweep's queue depths: 1, 2, 4 … 64 evenly apart).
type xAxis struct {
	label string
	at    []float64
}

// lineChart draws series of values over time (x in seconds) on a linear
// axis from 0, with reference lines. yfmt formats the axis.
func lineChart(id, class, title string, ss []series, refs []hline, yfmt func(float64) string) template.HTML {
	return axesChart(id, class, title, ss, refs, nil, yfmt, xAxis{})
}

// axesChart is lineChart on axis xa, with vertical marks vs.
func axesChart(id, class, title string, ss []series, refs []hline, vs []vline, yfmt func(float64) string, xa xAxis) template.HTML {
	if len(ss) > maxSeries {
		ss = ss[:maxSeries]
	}
	ss = plottable(ss)
	logX := len(xa.at) > 0
	if logX {
		// A log scale places no x at or below 0.
		for i := range ss {
			ss[i].pts = slices.DeleteFunc(ss[i].pts, func(p point) bool { return p.x <= 0 })
		}
		xa.at = slices.DeleteFunc(slices.Clone(xa.at), func(v float64) bool { return !(v > 0 && plotted(v)) })
		vs = slices.DeleteFunc(slices.Clone(vs), func(v vline) bool { return !(v.x > 0 && plotted(v.x)) })
		logX = len(xa.at) > 0
	}
	maxX, maxY := 0.0, 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			maxX, maxY = math.Max(maxX, p.x), math.Max(maxY, p.y)
		}
	}
	// A reference far above the data (a 10 Gbit/s link under a 30 Mbit/s
	// stream) would flatten the data against the axis: it is named at the
	// top instead, off the scale.
	var off []hline
	var on []hline
	for _, r := range refs {
		if !plotted(r.y) {
			continue
		}
		if maxY > 0 && r.y > 4*maxY {
			off = append(off, r)
			continue
		}
		on = append(on, r)
		maxY = math.Max(maxY, r.y)
	}
	refs = on
	if maxX <= 0 {
		maxX = 1
	}
	xStep := niceCeil(maxX / timeAxisTickCount)
	maxX = math.Max(1, math.Ceil(maxX/xStep-0.02)) * xStep // a tail of a few ms past a tick does not add one
	x := func(v float64) float64 { return padL + v/maxX*plotW }
	if logX {
		lo, hi := math.Log2(slices.Min(xa.at)), math.Log2(slices.Max(xa.at))
		for _, s := range ss {
			for _, p := range s.pts {
				lo, hi = math.Min(lo, math.Log2(p.x)), math.Max(hi, math.Log2(p.x))
			}
		}
		if hi-lo < 1 {
			hi = lo + 1
		}
		x = func(v float64) float64 { return padL + (math.Log2(v)-lo)/(hi-lo)*plotW }
	}
	yTop := niceCeil(maxY * 1.05)
	if yTop <= 0 {
		yTop = 1
	}
	yTop = distinctTop(yTop, yfmt)
	legendRows := (len(ss) + 2) / 3
	h := padT + lineH + padB + legendRows*legendH
	var b strings.Builder
	open(&b, id, class, title, h)
	y := func(v float64) float64 { return padT + lineH - v/yTop*lineH }
	// Axes and grid.
	for i := 0; i <= lineChartTickCount; i++ {
		v := yTop * float64(i) / lineChartTickCount
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padL, f1(y(v)), chartW-padR, f1(y(v)))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, padL-6, f1(y(v)+4), esc(yfmt(v)))
	}
	if logX {
		for _, v := range xa.at {
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, f1(x(v)), padT+lineH+16, esc(trimSeconds(v)))
		}
	} else {
		for v := 0.0; v <= maxX+xStep/2; v += xStep {
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, f1(x(v)), padT+lineH+16, esc(trimSeconds(v)))
		}
	}
	xLabel := "seconds into the run"
	if xa.label != "" {
		xLabel = xa.label
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">%s</text>`, padL+plotW/2, padT+lineH+32, esc(xLabel))
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, padT+lineH, chartW-padR, padT+lineH)
	for i, r := range off {
		fmt.Fprintf(&b, `<text class="reflabel offscale" x="%d" y="%d" text-anchor="end">↑ %s: %.0f× the top of this scale</text>`, chartW-padR-4, padT+10+i*14, esc(r.label), r.y/yTop)
	}
	for _, r := range refs {
		fmt.Fprintf(&b, `<line class="ref" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padL, f1(y(r.y)), chartW-padR, f1(y(r.y)))
		fmt.Fprintf(&b, `<text class="reflabel" x="%d" y="%s" text-anchor="end">%s</text>`, chartW-padR-4, f1(y(r.y)-4), esc(r.label))
	}
	for i, v := range vs {
		fmt.Fprintf(&b, `<line class="vmark" x1="%s" y1="%d" x2="%s" y2="%d"/>`, f1(x(v.x)), padT, f1(x(v.x)), padT+lineH)
		anchor, dx := "start", 4.0
		if x(v.x) > padL+plotW*0.6 {
			anchor, dx = "end", -4
		}
		fmt.Fprintf(&b, `<text class="vmarklabel" x="%s" y="%d" text-anchor="%s">%s</text>`, f1(x(v.x)+dx), padT+24+i*14, anchor, esc(v.label))
	}
	for i, s := range ss {
		pts := s.pts
		if len(pts) > maxPointsPerSeries {
			pts = thin(pts, maxPointsPerSeries)
		}
		var path strings.Builder
		for j, p := range pts {
			if j > 0 {
				path.WriteByte(' ')
			}
			path.WriteString(f1(x(p.x)) + "," + f1(y(p.y)))
		}
		c := i % seriesClasses
		fmt.Fprintf(&b, `<polyline class="series c%d" points="%s"/>`, c, path.String())
		if len(pts) <= 60 {
			for _, p := range pts {
				fmt.Fprintf(&b, `<circle class="dot c%d" cx="%s" cy="%s" r="2.5"/>`, c, f1(x(p.x)), f1(y(p.y)))
			}
		}
		lx, ly := padL+(i%3)*(plotW/3), padT+lineH+padB+(i/3)*legendH+12
		fmt.Fprintf(&b, `<rect class="key c%d" x="%d" y="%d" width="14" height="4"/>`, c, lx, ly-5)
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text>`, lx+20, ly, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// mark is one value of a distribution on a dot plot.
type mark struct {
	name string
	v    time.Duration
}

// distRow is one distribution: a line from its least to its greatest
// mark, a marker at each.
type distRow struct {
	label string
	marks []mark
}

// markNames are the percentiles the dot plots show, each with its own
// shape so that the chart reads in black and white.
var markNames = []string{"min", "p50", "p90", "p99", "p99.9", "max"}

// logDotPlot draws distributions of durations on a log scale, one row
// each.
func logDotPlot(id, class, title string, rows []distRow) template.HTML {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, m := range r.marks {
			if m.v > 0 {
				v := math.Log10(float64(m.v))
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 3, 6
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi-lo < minLogSpanDecades {
		hi = lo + minLogSpanDecades
	}
	left := padL + 80
	pw := float64(chartW - left - padR)
	x := func(d time.Duration) float64 {
		v := math.Log10(math.Max(float64(d), 1))
		return float64(left) + (v-lo)/(hi-lo)*pw
	}
	h := padT + len(rows)*rowH + padB + legendH
	var b strings.Builder
	open(&b, id, class, title, h)
	bottom := padT + len(rows)*rowH
	for d := lo; d <= hi; d++ {
		for _, k := range []float64{1, 2, 5} {
			v := math.Pow(10, d) * k
			if math.Log10(v) > hi+1e-9 {
				break
			}
			xv := x(time.Duration(v))
			cls := "grid"
			if k != 1 {
				cls = "grid minor"
			}
			fmt.Fprintf(&b, `<line class="%s" x1="%s" y1="%d" x2="%s" y2="%d"/>`, cls, f1(xv), padT, f1(xv), bottom)
			if k == 1 || hi-lo <= 2 {
				fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, f1(xv), bottom+16, esc(metric.FormatDuration(time.Duration(v))))
			}
		}
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">log scale</text>`, left+int(pw)/2, bottom+32)
	for i, r := range rows {
		cy := padT + i*rowH + rowH/2
		label := r.label
		fmt.Fprintf(&b, `<text class="rowlabel" x="%d" y="%d" text-anchor="end">%s</text>`, left-8, cy+4, esc(shorten(label, 30)))
		var min, max time.Duration
		for _, m := range r.marks {
			if m.v <= 0 {
				continue
			}
			if min == 0 || m.v < min {
				min = m.v
			}
			if m.v > max {
				max = m.v
			}
		}
		if max == 0 {
			continue
		}
		fmt.Fprintf(&b, `<line class="range" x1="%s" y1="%d" x2="%s" y2="%d"><title>%s</title></line>`, f1(x(min)), cy, f1(x(max)), cy, esc(label))
		for _, m := range r.marks {
			if m.v > 0 {
				marker(&b, m.name, x(m.v), float64(cy), label+" "+m.name+" "+metric.FormatDuration(m.v))
			}
		}
	}
	ly := bottom + padB + 8
	for i, n := range markNames {
		lx := float64(left + i*90)
		marker(&b, n, lx, float64(ly-4), n)
		fmt.Fprintf(&b, `<text class="legend" x="%s" y="%d">%s</text>`, f1(lx+8), ly, esc(n))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func marker(b *strings.Builder, name string, x, y float64, tip string) {
	t := `<title>` + esc(tip) + `</title>`
	switch name {
	case "min":
		fmt.Fprintf(b, `<line class="m-min" x1="%s" y1="%s" x2="%s" y2="%s">%s</line>`, f1(x), f1(y-6), f1(x), f1(y+6), t)
	case "p50":
		fmt.Fprintf(b, `<circle class="m-p50" cx="%s" cy="%s" r="%s">%s</circle>`, f1(x), f1(y), f1(markerR+1), t)
	case "p90":
		fmt.Fprintf(b, `<rect class="m-p90" x="%s" y="%s" width="8" height="8">%s</rect>`, f1(x-4), f1(y-4), t)
	case "p99":
		fmt.Fprintf(b, `<path class="m-p99" d="M%s %sl5 8h-10z">%s</path>`, f1(x), f1(y-5), t)
	case "p99.9":
		fmt.Fprintf(b, `<path class="m-p999" d="M%s %sl5 5l-5 5l-5 -5z">%s</path>`, f1(x), f1(y-5), t)
	default:
		fmt.Fprintf(b, `<line class="m-max" x1="%s" y1="%s" x2="%s" y2="%s">%s</line>`, f1(x), f1(y-6), f1(x), f1(y+6), t)
	}
}

func open(b *strings.Builder, id, class, title string, h int) {
	fmt.Fprintf(b, `<svg id="%s" class="chart %s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"><title>%s</title>`,
		esc(id), esc(class), chartW, h, chartW, h, esc(title), esc(title))
}

// niceCeil rounds up to 1, 2, 2.5 or 5 times a power of ten.
// distinctTop raises a scale's top until its ticks read apart: a queue of
// nothing on a 1-byte scale read "1 B, 0 B, 0 B, 0 B, 0 B, 0 B", five ticks
// saying 0 (issue 25, defect 12). Whole units then step by one at least.
func distinctTop(top float64, yfmt func(float64) string) float64 {
	for range 30 {
		seen := map[string]bool{}
		ok := true
		for i := 0; i <= lineChartTickCount && ok; i++ {
			l := yfmt(top * float64(i) / lineChartTickCount)
			ok = !seen[l]
			seen[l] = true
		}
		if ok {
			break
		}
		top = niceCeil(top * 1.5) // the next nice value past it
	}
	return top
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, k := range []float64{1, 2, 2.5, 5, 10} {
		if v <= k*p*(1+1e-9) {
			return k * p
		}
	}
	return 10 * p
}

func thin(pts []point, n int) []point {
	out := make([]point, 0, n)
	step := float64(len(pts)-1) / float64(n-1)
	for i := range n {
		out = append(out, pts[int(math.Round(float64(i)*step))])
	}
	return out
}

func trimSeconds(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func bitRateTick(v float64) string  { return metric.FormatBitRate(v) }
func byteTick(v float64) string     { return metric.FormatBytes(int64(v)) }
func byteRateTick(v float64) string { return metric.FormatByteRate(v) }
