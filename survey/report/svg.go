package report

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Point is one plotted sample: time relative to the migration (µs), window
// (bytes, <0 when absent) and smoothed RTT (µs, <0 when absent).
type Point struct {
	T    int64
	Cwnd int64
	RTT  int64
}

// Mark is a vertical marker: the migration or a classified event.
type Mark struct {
	T     int64
	Label string
	Value int64 // window value at the mark (bytes), <0 for none
	Kind  string
}

// Plot is a timeline around a migration.
type Plot struct {
	Title            string
	FromUS, ToUS     int64 // relative to the migration
	ScopeFr, ScopeTo int64
	Points           []Point
	Marks            []Mark
}

var markColour = map[string]string{
	"MIGRATION":     "#000000",
	"RESET":         "#d62728",
	"LOSS_BACKOFF":  "#ff7f0e",
	"LOSS_FLOOR":    "#9467bd",
	"BELOW_INITIAL": "#8c564b",
	"MODEL_BOUND":   "#17becf",
	"UNEXPLAINED":   "#7f7f7f",
}

// WriteSVG draws the window (left axis) and the smoothed RTT (right axis)
// against time, with the classified interval shaded and every mark drawn.
func WriteSVG(w io.Writer, p Plot) error {
	const (
		W, H                  = 900, 420
		left, right, top, bot = 80, 80, 40, 60
		plotW, plotH          = W - left - right, H - top - bot
	)
	var maxC, maxR int64 = 1, 1
	for _, pt := range p.Points {
		if pt.T < p.FromUS || pt.T > p.ToUS {
			continue
		}
		maxC = max(maxC, pt.Cwnd)
		maxR = max(maxR, pt.RTT)
	}
	maxC = niceCeil(maxC)
	maxR = niceCeil(maxR)
	x := func(t int64) float64 {
		return float64(left) + float64(t-p.FromUS)/float64(p.ToUS-p.FromUS)*plotW
	}
	yc := func(v int64) float64 { return float64(top) + plotH - float64(v)/float64(maxC)*plotH }
	yr := func(v int64) float64 { return float64(top) + plotH - float64(v)/float64(maxR)*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", left, esc(p.Title))
	// classified scope
	sf, st := max(p.ScopeFr, p.FromUS), min(p.ScopeTo, p.ToUS)
	if st > sf {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f0f4ff"><title>classified interval</title></rect>`+"\n", x(sf), top, x(st)-x(sf), plotH)
	}
	// axes and ticks
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", left, top, plotW, plotH)
	for i := 0; i <= 4; i++ {
		v := maxC * int64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s</text>`+"\n", left-6, yc(v)+4, kb(v))
		r := maxR * int64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#2ca02c">%.0f ms</text>`+"\n", left+plotW+6, yr(r)+4, float64(r)/1000)
	}
	span := p.ToUS - p.FromUS
	step := int64(500_000)
	if span > 6_000_000 {
		step = 1_000_000
	}
	for t := (p.FromUS / step) * step; t <= p.ToUS; t += step {
		if t < p.FromUS {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(t), top, x(t), top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%+.1f s</text>`+"\n", x(t), top+plotH+16, float64(t)/1e6)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time relative to the migration</text>`+"\n", left+plotW/2, H-14)
	fmt.Fprintf(&b, `<text x="14" y="%d" fill="#1f77b4" transform="rotate(-90 14 %d)" text-anchor="middle">congestion window</text>`+"\n", top+plotH/2, top+plotH/2)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#2ca02c" transform="rotate(90 %d %d)" text-anchor="middle">smoothed RTT</text>`+"\n", W-14, top+plotH/2, W-14, top+plotH/2)
	// series (step lines: a value holds until the next sample)
	line := func(get func(Point) int64, y func(int64) float64, colour string) {
		var pts []string
		var lastY float64
		have := false
		for _, pt := range p.Points {
			v := get(pt)
			if v < 0 || pt.T < p.FromUS || pt.T > p.ToUS {
				continue
			}
			if have {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.T), lastY))
			}
			lastY = y(v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.T), lastY))
			have = true
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
		}
	}
	line(func(pt Point) int64 { return pt.Cwnd }, yc, "#1f77b4")
	line(func(pt Point) int64 { return pt.RTT }, yr, "#2ca02c")
	// marks
	for i, m := range p.Marks {
		if m.T < p.FromUS || m.T > p.ToUS {
			continue
		}
		c := markColour[m.Kind]
		if c == "" {
			c = "#333"
		}
		dash := "4,3"
		if m.Kind == "MIGRATION" {
			dash = ""
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="%s"/>`+"\n", x(m.T), top, x(m.T), top+plotH, c, dash)
		if m.Value >= 0 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s</title></circle>`+"\n", x(m.T), yc(m.Value), c, esc(m.Label))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s">%s</text>`+"\n", x(m.T)+3, top+12+12*(i%4), c, esc(m.Label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func niceCeil(v int64) int64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(float64(v))))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if float64(v) <= m*mag {
			return int64(m * mag)
		}
	}
	return int64(10 * mag)
}

func kb(v int64) string {
	if v >= 1_000_000 {
		return fmt.Sprintf("%.1f MB", float64(v)/1e6)
	}
	return fmt.Sprintf("%.0f kB", float64(v)/1e3)
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
